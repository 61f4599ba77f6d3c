//===- Llama2cWriter.cpp - Writing llama2.c checkpoints -------------------===//
//
// Part of Kiln. The two float32 layouts Llama2c.cpp reads; see
// ModelWriters.h.
//
//===----------------------------------------------------------------------===//

#include "frontends/formats/Llama2c.h"
#include "frontends/formats/ModelFileOutput.h"
#include "frontends/formats/ModelWriters.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace kiln::formats {

namespace {

/// The tensors of each layer in the order the legacy layout stores them.
const char *const kLegacyLayerOrder[] = {
    "attn_norm.weight", "attn_q.weight",      "attn_k.weight",
    "attn_v.weight",    "attn_output.weight", "ffn_norm.weight",
    "ffn_gate.weight",  "ffn_down.weight",    "ffn_up.weight"};

std::string shortest(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

/// What the llama2.c header cannot say; the reader assumes the rest.
void requireLlama2cConfig(const ModelConfig &c, const std::string &path) {
  auto refuse = [&](const std::string &what) {
    throw std::invalid_argument(path + ": a llama2.c checkpoint cannot hold " +
                                what);
  };
  if (c.headDim * c.numHeads != c.dim)
    throw std::invalid_argument(
        path + ": a llama2.c checkpoint needs head size dim / n_heads (" +
        std::to_string(c.dim) + " / " + std::to_string(c.numHeads) +
        "), the config has " + std::to_string(c.headDim));
  if (c.qkvBias)
    refuse("QKV biases (Qwen2); write GGUF or a Hugging Face directory");
  if (c.slidingWindow)
    refuse("a sliding window");
  if (c.ropeScaling || !c.ropeFreqFactors.empty())
    refuse("RoPE scaling");
  if (c.ropeTheta != 10000.0)
    refuse("RoPE theta " + shortest(c.ropeTheta) +
           " (the reader assumes 10000)");
  if (c.normEpsilon != 1e-5)
    refuse("RMSNorm epsilon " + shortest(c.normEpsilon) +
           " (the reader assumes 1e-5)");
}

/// freq_cis_real and freq_cis_imag, [seq_len, head_size / 2] each: Kiln and
/// today's llama2.c skip them, older llama2.c builds rotate with them.
void writeRopeTables(OutputFile &out, const ModelConfig &c) {
  int64_t half = c.headDim / 2;
  std::string table;
  for (bool imag : {false, true})
    for (int64_t pos = 0; pos < c.contextLength; ++pos) {
      table.clear();
      for (int64_t i = 0; i < half; ++i) {
        double freq = 1.0 / std::pow(c.ropeTheta,
                                     2.0 * static_cast<double>(i) / c.headDim);
        double angle = static_cast<double>(pos) * freq;
        appendLE(table, floatBits(static_cast<float>(imag ? std::sin(angle)
                                                          : std::cos(angle))));
      }
      out.write(table);
    }
}

} // namespace

uint64_t writeLlama2c(const ModelConfig &config, const TensorSource &weights,
                      const std::string &path, int version) {
  const ModelConfig &c = config;
  requireValidConfig(c, path);
  if (version != 0 && version != 1)
    throw std::invalid_argument(path + ": llama2.c export version " +
                                std::to_string(version) +
                                " is not written (0 legacy, 1 float32)");
  requireLlama2cConfig(c, path);

  // Every tensor the layout needs, with the shape the header implies.
  std::vector<ModelTensor> expected = modelTensors(c);
  for (const ModelTensor &want : expected) {
    const ModelTensor *have = weights.find(want.name);
    if (!have)
      throw std::invalid_argument(path + ": the model has no tensor '" +
                                  want.name + "'");
    if (have->shape != want.shape)
      throw std::invalid_argument(path + ": tensor '" + want.name +
                                  "' has the wrong shape for the config");
  }

  std::string header;
  if (version == 1) {
    appendLE(header, kLlama2cMagic);
    appendLE(header, uint32_t(1));
  }
  int64_t vocab =
      version == 0 && !c.tiedClassifier ? -c.vocabSize : c.vocabSize;
  for (int64_t v : {c.dim, c.hiddenDim, c.numLayers, c.numHeads, c.numKvHeads,
                    vocab, c.contextLength})
    appendLE(header, static_cast<uint32_t>(static_cast<int32_t>(v)));
  if (version == 1) {
    header += static_cast<char>(c.tiedClassifier ? 1 : 0);
    header.resize(256, '\0');
  }

  OutputFile out(path);
  out.write(header);
  auto put = [&](const std::string &name) {
    writeTensorValues(out, weights, *weights.find(name), ElementType::F32, c,
                      RopePairs::Adjacent);
  };
  auto putLayers = [&](const char *suffix) {
    for (int64_t l = 0; l < c.numLayers; ++l)
      put(layerTensorName(l, suffix));
  };
  if (version == 1) {
    putLayers("attn_norm.weight");
    putLayers("ffn_norm.weight");
    put("output_norm.weight");
    put("token_embd.weight");
    for (const char *suffix :
         {"attn_q.weight", "attn_k.weight", "attn_v.weight",
          "attn_output.weight", "ffn_gate.weight", "ffn_down.weight",
          "ffn_up.weight"})
      putLayers(suffix);
  } else {
    put("token_embd.weight");
    for (const char *suffix : kLegacyLayerOrder)
      putLayers(suffix);
    put("output_norm.weight");
    writeRopeTables(out, c);
  }
  if (!c.tiedClassifier)
    put("output.weight");
  return out.finish();
}

} // namespace kiln::formats
