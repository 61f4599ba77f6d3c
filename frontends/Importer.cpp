//===- Importer.cpp - From model files to kiln IR -------------------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "frontends/Importer.h"

#include "frontends/formats/FormatError.h"
#include "frontends/formats/GGUF.h"
#include "frontends/formats/HuggingFace.h"
#include "frontends/formats/Llama2c.h"
#include "frontends/formats/TokenizerLoaders.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

using namespace kiln;
using formats::FormatError;
using formats::ModelConfig;

namespace {

/// GGUF architectures Kiln builds, and the rotary layout each uses: llama.cpp
/// converters permute Llama's Q/K rows for adjacent pairs, Qwen2 keeps
/// Hugging Face's halves.
formats::RopePairs ropePairsFor(const std::string &arch) {
  return arch == "qwen2" ? formats::RopePairs::Halves
                         : formats::RopePairs::Adjacent;
}

/// A float metadata value as its writer meant it. GGUF stores
/// hyperparameters such as 1e-5 as f32; widening that to double gives
/// 9.9999997e-06. The shortest decimal that reads back as the same f32 is the
/// number the converter was given, and is what IR from other formats holds.
std::optional<double> intendedFloat(const formats::GGUFFile &gguf,
                                    const std::string &key) {
  std::optional<double> value = gguf.getFloat(key);
  const formats::GGUFValue *raw = gguf.find(key);
  if (!value || !raw || raw->type != formats::GGUFType::F32)
    return value;
  float f = static_cast<float>(*value);
  for (int digits = 6; digits <= 9; ++digits) {
    char text[32];
    std::snprintf(text, sizeof text, "%.*g", digits, static_cast<double>(f));
    double shortest = std::strtod(text, nullptr);
    if (static_cast<float>(shortest) == f)
      return shortest;
  }
  return value;
}

/// The values of GGUF's rope_freqs tensor (llama.cpp's converter stores Llama
/// 3 scaling as one frequency divisor per rotated pair): F32 or F16, 1-D,
/// headDim / 2 positive finite values. It is a parameter of kiln.rope, not
/// a weight the step reads.
std::vector<float> readRopeFreqFactors(const formats::GGUFFile &gguf,
                                       const formats::TensorInfo &t,
                                       int64_t headDim,
                                       const std::string &path) {
  auto bad = [&](const std::string &what) {
    return FormatError(path, "tensor '" + t.name + "' (Llama 3 rope scaling) " +
                                 what);
  };
  if (t.type != formats::ElementType::F32 &&
      t.type != formats::ElementType::F16)
    throw bad(std::string("is ") + formats::elementTypeName(t.type) +
              "; expected f32 or f16");
  if (t.shape.size() != 1 || t.shape[0] != headDim / 2) {
    std::string shape;
    for (int64_t d : t.shape)
      shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    throw bad("has shape [" + shape + "]; expected [" +
              std::to_string(headDim / 2) +
              "], one factor per rotated pair of a head of size " +
              std::to_string(headDim));
  }
  std::vector<float> factors(static_cast<size_t>(t.shape[0]));
  const uint8_t *data = gguf.data(t);
  for (size_t i = 0; i < factors.size(); ++i) {
    if (t.type == formats::ElementType::F32) {
      std::memcpy(&factors[i], data + 4 * i, 4);
    } else {
      uint16_t half;
      std::memcpy(&half, data + 2 * i, 2);
      factors[i] = formats::halfToFloat(half);
    }
    if (!(factors[i] > 0.0f) || !std::isfinite(factors[i]))
      throw bad("has value " + std::to_string(factors[i]) + " at " +
                std::to_string(i) +
                "; every factor must be positive and "
                "finite");
  }
  return factors;
}

ImportedModel readGGUF(const std::string &path) {
  formats::GGUFFile gguf = formats::GGUFFile::open(path);
  ImportedModel model;
  model.location = {WeightsFormat::GGUF, path};
  model.tensors = gguf.tensors();
  for (const std::string &key : gguf.keys())
    model.metadata.emplace_back(key, gguf.describe(key));

  std::string arch = gguf.getString("general.architecture").value_or("");
  if (arch != "llama" && arch != "qwen2")
    throw FormatError(path, "architecture '" + arch +
                                "' is not supported (expected llama or "
                                "qwen2)");
  auto required = [&](const std::string &key) {
    std::optional<int64_t> v = gguf.getInt(arch + "." + key);
    if (!v)
      throw FormatError(path,
                        "missing metadata key '" + arch + "." + key + "'");
    return *v;
  };
  ModelConfig &c = model.config;
  c.architecture = arch;
  c.dim = required("embedding_length");
  c.hiddenDim = required("feed_forward_length");
  c.numLayers = required("block_count");
  c.numHeads = required("attention.head_count");
  c.numKvHeads =
      gguf.getInt(arch + ".attention.head_count_kv").value_or(c.numHeads);
  c.contextLength = required("context_length");
  if (c.numHeads <= 0)
    throw FormatError(path, "attention.head_count must be positive");
  c.headDim =
      gguf.getInt(arch + ".attention.key_length").value_or(c.dim / c.numHeads);
  if (auto rotary = gguf.getInt(arch + ".rope.dimension_count");
      rotary && *rotary != c.headDim)
    throw FormatError(path, "partial rotary embedding (rope.dimension_count " +
                                std::to_string(*rotary) + " of head size " +
                                std::to_string(c.headDim) +
                                ") is not supported");
  c.ropeTheta = intendedFloat(gguf, arch + ".rope.freq_base").value_or(10000.0);
  c.normEpsilon =
      intendedFloat(gguf, arch + ".attention.layer_norm_rms_epsilon")
          .value_or(1e-5);
  c.slidingWindow = gguf.getInt(arch + ".attention.sliding_window").value_or(0);
  c.ropePairs = ropePairsFor(arch);
  if (auto type = gguf.getString(arch + ".rope.scaling.type");
      type && *type != "none") {
    if (*type != "linear")
      throw FormatError(path, "rope scaling '" + *type +
                                  "' is not supported (expected linear)");
    formats::RopeScalingConfig s;
    s.factor = intendedFloat(gguf, arch + ".rope.scaling.factor").value_or(1.0);
    c.ropeScaling = s;
  }
  if (const formats::TensorInfo *freqs = gguf.findTensor("rope_freqs.weight"))
    c.ropeFreqFactors = readRopeFreqFactors(gguf, *freqs, c.headDim, path);
  const formats::TensorInfo *embedding = gguf.findTensor("token_embd.weight");
  if (!embedding || embedding->shape.size() != 2)
    throw FormatError(path, "tensor 'token_embd.weight' is missing or not a "
                            "matrix");
  c.vocabSize = gguf.getInt(arch + ".vocab_size").value_or(embedding->shape[0]);
  c.tiedClassifier = gguf.findTensor("output.weight") == nullptr;
  c.qkvBias = gguf.findTensor("blk.0.attn_q.bias") != nullptr;
  if (gguf.getString("tokenizer.ggml.model"))
    model.tokenizer = formats::tokenizerFromGGUF(gguf);
  return model;
}

ImportedModel readLlama2cModel(const std::string &path) {
  formats::Llama2cCheckpoint ckpt = formats::readLlama2c(path);
  ImportedModel model;
  model.location = {WeightsFormat::Llama2c, path};
  model.config = ckpt.config;
  model.tensors = std::move(ckpt.tensors);
  model.metadata.emplace_back("llama2c.version",
                              ckpt.version ? std::to_string(ckpt.version)
                                           : std::string("legacy"));
  return model;
}

/// A Hugging Face model directory: config.json, safetensors weights and, if
/// present, tokenizer.json.
ImportedModel readHuggingFace(const std::string &dir) {
  namespace fs = std::filesystem;
  ImportedModel model;
  model.location = {WeightsFormat::Safetensors, dir};
  model.config =
      formats::readHFConfig((fs::path(dir) / "config.json").string());
  std::unique_ptr<formats::WeightFile> weights =
      formats::WeightFile::open(formats::WeightFileFormat::Safetensors, dir);
  model.tensors = weights->tensors();
  model.metadata.emplace_back("hf.architecture", model.config.architecture);
  std::string tokenizerJson = (fs::path(dir) / "tokenizer.json").string();
  if (fs::exists(tokenizerJson))
    model.tokenizer = formats::tokenizerFromJson(tokenizerJson);
  return model;
}

} // namespace

ImportedModel kiln::readModel(const std::string &path) {
  if (std::filesystem::is_directory(path))
    return readHuggingFace(path);
  auto file = formats::MappedFile::open(path);
  if (formats::hasGGUFMagic(*file))
    return readGGUF(path);
  // llama2.c exports (version 1+) start with "ak42"; legacy files with dim.
  return readLlama2cModel(path);
}

mlir::OwningOpRef<mlir::ModuleOp>
kiln::importModel(mlir::MLIRContext *context, const ImportedModel &model) {
  return buildLlamaModule(context, model.config, model.tensors, model.location);
}

formats::WeightFileFormat kiln::toWeightFileFormat(WeightsFormat format) {
  switch (format) {
  case WeightsFormat::Llama2c:
    return formats::WeightFileFormat::Llama2c;
  case WeightsFormat::GGUF:
    return formats::WeightFileFormat::GGUF;
  case WeightsFormat::Safetensors:
    return formats::WeightFileFormat::Safetensors;
  }
  return formats::WeightFileFormat::GGUF;
}
