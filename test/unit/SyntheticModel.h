//===- SyntheticModel.h - Random Llama models for tests ---------*- C++ -*-===//
//
// Part of Kiln's unit tests. A small Llama-family model with random weights,
// held in memory and written in each format Kiln imports, so tests can check
// that every importer builds the same IR and the interpreter gives the same
// logits for the same weights.
//
// The tensors are those of `kiln make-model`'s models
// (formats::syntheticTensors) plus Qwen2's QKV biases, and GGUF files are
// built with Kiln's GGUFWriter. The values are the tests' own: N(0, 0.1)
// matrices and norm weights near (not at) 1, so a norm applied in the wrong
// place changes the logits, where make-model's weights are N(0, 0.02) with
// norms of exactly 1. The llama2.c v0/v1 and Hugging Face serializers stay
// here because the production writers only write make-model's own weights.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TEST_UNIT_SYNTHETICMODEL_H
#define KILN_TEST_UNIT_SYNTHETICMODEL_H

#include "GGUFTestBytes.h"

#include "frontends/formats/GGUFWriter.h"
#include "frontends/formats/ModelConfig.h"
#include "frontends/formats/SyntheticModel.h"
#include "frontends/formats/TensorInfo.h"
#include "ir/WeightProvider.h"

#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace kiln::test {

struct SyntheticModel {
  formats::ModelConfig config;
  /// Weights by Kiln's canonical names, row-major float32.
  std::map<std::string, std::vector<float>> weights;
  std::map<std::string, std::vector<int64_t>> shapes;

  /// A model of `config` with N(0, 0.1) matrices and norms near 1.
  static SyntheticModel random(formats::ModelConfig config, uint32_t seed) {
    SyntheticModel m;
    m.config = config;
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 0.1f);
    auto add = [&](const std::string &name, std::vector<int64_t> shape,
                   bool norm) {
      int64_t n = 1;
      for (int64_t d : shape)
        n *= d;
      std::vector<float> v(n);
      for (float &x : v)
        x = norm ? 1.0f + normal(rng) : normal(rng);
      m.weights[name] = std::move(v);
      m.shapes[name] = std::move(shape);
    };
    const formats::ModelConfig &c = config;
    int64_t q = c.numHeads * c.headDim, kv = c.numKvHeads * c.headDim;
    const std::string vSuffix = ".attn_v.weight";
    for (const formats::SyntheticTensor &t : formats::syntheticTensors(c)) {
      add(t.name, t.shape, t.isNorm);
      // Qwen2's biases follow each layer's V projection.
      bool isV = t.name.size() > vSuffix.size() &&
                 t.name.compare(t.name.size() - vSuffix.size(), vSuffix.size(),
                                vSuffix) == 0;
      if (c.qkvBias && isV) {
        std::string layer = t.name.substr(0, t.name.size() - vSuffix.size());
        add(layer + ".attn_q.bias", {q}, false);
        add(layer + ".attn_k.bias", {kv}, false);
        add(layer + ".attn_v.bias", {kv}, false);
      }
    }
    return m;
  }

  /// The tensor directory an importer of an f32 file would produce (offsets
  /// are irrelevant in memory).
  std::vector<formats::TensorInfo> tensorInfos() const {
    std::vector<formats::TensorInfo> infos;
    for (const auto &[name, shape] : shapes) {
      formats::TensorInfo t;
      t.name = name;
      t.shape = shape;
      t.bytes = static_cast<uint64_t>(t.numElements()) * 4;
      infos.push_back(t);
    }
    return infos;
  }

  /// llama2.c's legacy checkpoint layout (models without QKV bias).
  std::string llama2cLegacyBytes() const {
    const formats::ModelConfig &c = config;
    std::string out;
    for (int64_t v :
         {c.dim, c.hiddenDim, c.numLayers, c.numHeads, c.numKvHeads,
          c.tiedClassifier ? c.vocabSize : -c.vocabSize, c.contextLength})
      out += le(static_cast<uint32_t>(static_cast<int32_t>(v)));
    put(out, "token_embd.weight");
    putLayers(out, "attn_norm.weight");
    putLayers(out, "attn_q.weight");
    putLayers(out, "attn_k.weight");
    putLayers(out, "attn_v.weight");
    putLayers(out, "attn_output.weight");
    putLayers(out, "ffn_norm.weight");
    putLayers(out, "ffn_gate.weight");
    putLayers(out, "ffn_down.weight");
    putLayers(out, "ffn_up.weight");
    put(out, "output_norm.weight");
    out += std::string(c.contextLength * c.headDim * 4, '\0'); // freq_cis
    if (!c.tiedClassifier)
      put(out, "output.weight");
    return out;
  }

  /// llama2.c's export version 1 (256-byte header, norms first).
  std::string llama2cV1Bytes() const {
    const formats::ModelConfig &c = config;
    std::string out = le<uint32_t>(0x616b3432);
    out += le<uint32_t>(1);
    for (int64_t v : {c.dim, c.hiddenDim, c.numLayers, c.numHeads, c.numKvHeads,
                      c.vocabSize, c.contextLength})
      out += le(static_cast<uint32_t>(static_cast<int32_t>(v)));
    out += static_cast<char>(c.tiedClassifier ? 1 : 0);
    out.resize(256, '\0');
    putLayers(out, "attn_norm.weight");
    putLayers(out, "ffn_norm.weight");
    put(out, "output_norm.weight");
    put(out, "token_embd.weight");
    putLayers(out, "attn_q.weight");
    putLayers(out, "attn_k.weight");
    putLayers(out, "attn_v.weight");
    putLayers(out, "attn_output.weight");
    putLayers(out, "ffn_gate.weight");
    putLayers(out, "ffn_down.weight");
    putLayers(out, "ffn_up.weight");
    if (!c.tiedClassifier)
      put(out, "output.weight");
    return out;
  }

  /// A GGUF file as llama.cpp writes one for `arch` ("llama" or "qwen2").
  formats::GGUFWriter gguf() const {
    const formats::ModelConfig &c = config;
    const std::string a = c.architecture;
    formats::GGUFWriter w;
    w.addString("general.architecture", a);
    w.addU32(a + ".context_length", static_cast<uint32_t>(c.contextLength));
    w.addU32(a + ".embedding_length", static_cast<uint32_t>(c.dim));
    w.addU32(a + ".feed_forward_length", static_cast<uint32_t>(c.hiddenDim));
    w.addU32(a + ".block_count", static_cast<uint32_t>(c.numLayers));
    w.addU32(a + ".attention.head_count", static_cast<uint32_t>(c.numHeads));
    w.addU32(a + ".attention.head_count_kv",
             static_cast<uint32_t>(c.numKvHeads));
    w.addU32(a + ".rope.dimension_count", static_cast<uint32_t>(c.headDim));
    w.addF32(a + ".rope.freq_base", static_cast<float>(c.ropeTheta));
    w.addF32(a + ".attention.layer_norm_rms_epsilon",
             static_cast<float>(c.normEpsilon));
    if (c.slidingWindow)
      w.addU32(a + ".attention.sliding_window",
               static_cast<uint32_t>(c.slidingWindow));
    for (const auto &[name, shape] : shapes)
      w.addTensor(name, shape, formats::ElementType::F32,
                  f32Bytes(weights.at(name)));
    return w;
  }

  /// A Hugging Face directory: config.json and the weights under HF names,
  /// in one model.safetensors or, with `shards` > 1, split across files
  /// listed by model.safetensors.index.json. Q and K rows are stored for
  /// rotate-half RoPE, as Hugging Face does: a model whose config says
  /// adjacent pairs has each head's rows (2i, 2i+1) moved to (i, i + d/2).
  void writeHuggingFace(const std::string &dir, int shards = 1) const {
    const formats::ModelConfig &c = config;
    std::ofstream(dir + "/config.json")
        << "{\"architectures\": [\""
        << (c.architecture == "qwen2" ? "Qwen2ForCausalLM" : "LlamaForCausalLM")
        << "\"], \"hidden_size\": " << c.dim
        << ", \"intermediate_size\": " << c.hiddenDim
        << ", \"num_hidden_layers\": " << c.numLayers
        << ", \"num_attention_heads\": " << c.numHeads
        << ", \"num_key_value_heads\": " << c.numKvHeads
        << ", \"vocab_size\": " << c.vocabSize
        << ", \"max_position_embeddings\": " << c.contextLength
        << ", \"rms_norm_eps\": " << c.normEpsilon
        << ", \"rope_theta\": " << c.ropeTheta << ", \"tie_word_embeddings\": "
        << (c.tiedClassifier ? "true" : "false") << "}\n";

    std::vector<std::pair<std::string, std::string>> hfTensors;
    for (const auto &[name, shape] : shapes)
      hfTensors.emplace_back(hfName(name), name);
    std::vector<std::string> shardNames;
    std::string index = "{\"weight_map\": {";
    for (int s = 0; s < shards; ++s) {
      std::string file = shards == 1 ? std::string("model.safetensors")
                                     : "model-0000" + std::to_string(s + 1) +
                                           "-of-0000" + std::to_string(shards) +
                                           ".safetensors";
      std::string header = "{", data;
      for (size_t i = s; i < hfTensors.size(); i += shards) {
        const auto &[hf, canonical] = hfTensors[i];
        std::string bytes = f32Bytes(hfLayout(canonical));
        header += std::string(header.size() > 1 ? ", " : "") + "\"" + hf +
                  "\": {\"dtype\": \"F32\", \"shape\": [";
        const std::vector<int64_t> &shape = shapes.at(canonical);
        for (size_t d = 0; d < shape.size(); ++d)
          header += (d ? ", " : "") + std::to_string(shape[d]);
        header += "], \"data_offsets\": [" + std::to_string(data.size()) +
                  ", " + std::to_string(data.size() + bytes.size()) + "]}";
        data += bytes;
        index += std::string(index.back() == '{' ? "" : ", ") + "\"" + hf +
                 "\": \"" + file + "\"";
      }
      header += "}";
      header.resize((header.size() + 7) / 8 * 8, ' ');
      writeFile(dir + "/" + file, le<uint64_t>(header.size()) + header + data);
    }
    if (shards > 1)
      std::ofstream(dir + "/model.safetensors.index.json") << index << "}}\n";
  }

private:
  static std::string hfName(const std::string &canonical) {
    static const std::map<std::string, std::string> names = {
        {"token_embd.weight", "model.embed_tokens.weight"},
        {"output_norm.weight", "model.norm.weight"},
        {"output.weight", "lm_head.weight"},
        {"attn_norm.weight", "input_layernorm.weight"},
        {"attn_q.weight", "self_attn.q_proj.weight"},
        {"attn_k.weight", "self_attn.k_proj.weight"},
        {"attn_v.weight", "self_attn.v_proj.weight"},
        {"attn_q.bias", "self_attn.q_proj.bias"},
        {"attn_k.bias", "self_attn.k_proj.bias"},
        {"attn_v.bias", "self_attn.v_proj.bias"},
        {"attn_output.weight", "self_attn.o_proj.weight"},
        {"ffn_norm.weight", "post_attention_layernorm.weight"},
        {"ffn_gate.weight", "mlp.gate_proj.weight"},
        {"ffn_up.weight", "mlp.up_proj.weight"},
        {"ffn_down.weight", "mlp.down_proj.weight"},
    };
    if (auto it = names.find(canonical); it != names.end())
      return it->second;
    // blk.<l>.<suffix>
    size_t dot = canonical.find('.', 4);
    return "model.layers." + canonical.substr(4, dot - 4) + "." +
           names.at(canonical.substr(dot + 1));
  }

  /// The weights of `name` as Hugging Face stores them (see
  /// writeHuggingFace).
  std::vector<float> hfLayout(const std::string &name) const {
    const std::vector<float> &w = weights.at(name);
    bool qk = name.find("attn_q.") != std::string::npos ||
              name.find("attn_k.") != std::string::npos;
    if (!qk || config.ropePairs != formats::RopePairs::Adjacent)
      return w;
    const std::vector<int64_t> &shape = shapes.at(name);
    int64_t rowSize = shape.size() > 1 ? shape[1] : 1;
    int64_t d = config.headDim, heads = shape[0] / d;
    std::vector<float> out(w.size());
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < d / 2; ++i)
        for (int64_t k = 0; k < rowSize; ++k) {
          out[(h * d + i) * rowSize + k] = w[(h * d + 2 * i) * rowSize + k];
          out[(h * d + i + d / 2) * rowSize + k] =
              w[(h * d + 2 * i + 1) * rowSize + k];
        }
    return out;
  }

  void put(std::string &out, const std::string &name) const {
    out += f32Bytes(weights.at(name));
  }
  void putLayers(std::string &out, const char *suffix) const {
    for (int64_t l = 0; l < config.numLayers; ++l)
      put(out, formats::layerTensorName(l, suffix));
  }
};

/// Serves a SyntheticModel's weights to the interpreter.
class InMemoryWeights : public WeightProvider {
public:
  explicit InMemoryWeights(const SyntheticModel &model) : model(model) {}
  const float *getWeight(llvm::StringRef name,
                         mlir::RankedTensorType) override {
    return model.weights.at(name.str()).data();
  }

private:
  const SyntheticModel &model;
};

} // namespace kiln::test

#endif // KILN_TEST_UNIT_SYNTHETICMODEL_H
