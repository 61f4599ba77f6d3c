//===- GGUFModelWriter.cpp - Writing models as GGUF -----------------------===//
//
// Part of Kiln. The metadata keys are those llama.cpp's converters write and
// frontends/Importer.cpp reads; see ModelWriters.h.
//
//===----------------------------------------------------------------------===//

#include "frontends/formats/ModelFileOutput.h"
#include "frontends/formats/ModelWriters.h"

#include <cmath>
#include <stdexcept>

namespace kiln::formats {

namespace {

using runtime::TokenizerSpec;
using runtime::TokenType;

/// llama.cpp's LLAMA_FTYPE for a model stored as `type`.
uint32_t fileType(ElementType type) {
  switch (type) {
  case ElementType::F16:
    return 1; // MOSTLY_F16
  case ElementType::BF16:
    return 32; // MOSTLY_BF16
  default:
    return 0; // ALL_F32
  }
}

/// llama.cpp stores Llama's Q and K for adjacent pairs (its converter
/// permutes Hugging Face's rows) and Qwen2's as Hugging Face does.
RopePairs storedPairs(const ModelConfig &config) {
  return config.architecture == "qwen2" ? RopePairs::Halves
                                        : RopePairs::Adjacent;
}

void addVocabulary(GGUFWriter &gguf, const TokenizerSpec &vocab) {
  bool scoreMerge = vocab.model == TokenizerSpec::Model::ScoreMerge;
  if (scoreMerge && vocab.spaceSymbol != "\xE2\x96\x81")
    throw std::invalid_argument("a GGUF 'llama' vocabulary spells spaces "
                                "\"\xE2\x96\x81\", this one \"" +
                                vocab.spaceSymbol + "\"");
  if (!scoreMerge && !vocab.preTokenizerPatterns.empty())
    throw std::invalid_argument("GGUF names a vocabulary's pre-tokenizer "
                                "(tokenizer.ggml.pre); one with expressions "
                                "of its own cannot be written");
  std::vector<int32_t> types;
  int32_t unknownId = -1;
  for (size_t id = 0; id < vocab.tokens.size(); ++id) {
    TokenType t = id < vocab.types.size() ? vocab.types[id] : TokenType::Normal;
    types.push_back(static_cast<int32_t>(t));
    if (t == TokenType::Unknown && unknownId < 0)
      unknownId = static_cast<int32_t>(id);
  }

  gguf.addString("tokenizer.ggml.model", scoreMerge ? "llama" : "gpt2");
  if (!scoreMerge)
    gguf.addString("tokenizer.ggml.pre", vocab.preTokenizer);
  gguf.addStringArray("tokenizer.ggml.tokens", vocab.tokens);
  if (scoreMerge)
    gguf.addF32Array("tokenizer.ggml.scores", vocab.scores);
  gguf.addI32Array("tokenizer.ggml.token_type", types);
  if (!scoreMerge)
    gguf.addStringArray("tokenizer.ggml.merges", vocab.merges);
  if (unknownId >= 0)
    gguf.addU32("tokenizer.ggml.unknown_token_id",
                static_cast<uint32_t>(unknownId));
  for (auto [key, id] : {std::pair{"tokenizer.ggml.bos_token_id", vocab.bosId},
                         {"tokenizer.ggml.eos_token_id", vocab.eosId},
                         {"tokenizer.ggml.eot_token_id", vocab.eotId}})
    if (id >= 0)
      gguf.addU32(key, static_cast<uint32_t>(id));
  gguf.addBool("tokenizer.ggml.add_bos_token", vocab.addBos);
  gguf.addBool("tokenizer.ggml.add_eos_token", false);
  // The reader's default for 'llama' is true and for 'gpt2' false.
  if (vocab.addSpacePrefix != scoreMerge)
    gguf.addBool("tokenizer.ggml.add_space_prefix", vocab.addSpacePrefix);
  if (!vocab.chatTemplate.empty())
    gguf.addString("tokenizer.chat_template", vocab.chatTemplate);
}

} // namespace

std::vector<float> ggufRopeFreqFactors(const ModelConfig &c) {
  if (!c.ropeFreqFactors.empty())
    return c.ropeFreqFactors;
  if (!c.ropeScaling || c.ropeScaling->kind != RopeScalingConfig::Kind::Llama3)
    return {};
  // The converter's arithmetic (convert_hf_to_gguf.py, LlamaModel): torch
  // f32 tensors, Python numbers rounded to f32 where they meet one. `x / t`
  // for a number x and tensor t is torch's reciprocal(t) * x; `t / x` is a
  // true division. Factors outside the blend are the exact numbers 1 and
  // `factor`.
  const RopeScalingConfig &s = *c.ropeScaling;
  if (!(s.lowFreqFactor > 0.0) || !(s.highFreqFactor > s.lowFreqFactor) ||
      s.originalContext <= 0 || !(s.factor > 0.0))
    throw std::invalid_argument(
        "llama3 rope scaling needs factor > 0, 0 < low_freq_factor < "
        "high_freq_factor and a positive original context");
  const double context = static_cast<double>(s.originalContext);
  const float lowWavelength = static_cast<float>(context / s.lowFreqFactor);
  const float highWavelength = static_cast<float>(context / s.highFreqFactor);
  const float twoPi = static_cast<float>(2 * M_PI);
  const float factor = static_cast<float>(s.factor);
  std::vector<float> factors;
  for (int64_t i = 0; i < c.headDim / 2; ++i) {
    float exponent = static_cast<float>(2 * i) / static_cast<float>(c.headDim);
    float freq = 1.0f / std::pow(static_cast<float>(c.ropeTheta), exponent);
    float wavelength = (1.0f / freq) * twoPi;
    if (wavelength < highWavelength) {
      factors.push_back(1.0f);
    } else if (wavelength > lowWavelength) {
      factors.push_back(factor);
    } else {
      float smooth = ((1.0f / wavelength) * static_cast<float>(context) -
                      static_cast<float>(s.lowFreqFactor)) /
                     static_cast<float>(s.highFreqFactor - s.lowFreqFactor);
      factors.push_back(1.0f / ((1.0f - smooth) / factor + smooth));
    }
  }
  return factors;
}

void addGGUFModelMetadata(GGUFWriter &gguf, const ModelConfig &c,
                          const GGUFModelOptions &options) {
  const std::string &a = c.architecture;
  if (a != "llama" && a != "qwen2")
    throw std::invalid_argument("GGUF architecture '" + a +
                                "' is not written (llama, qwen2)");
  auto addU32 = [&](const std::string &key, int64_t v) {
    gguf.addU32(key, static_cast<uint32_t>(v));
  };
  gguf.addString("general.architecture", a);
  if (!options.name.empty())
    gguf.addString("general.name", options.name);
  gguf.addU32("general.file_type", fileType(options.type));
  addU32(a + ".context_length", c.contextLength);
  addU32(a + ".embedding_length", c.dim);
  addU32(a + ".feed_forward_length", c.hiddenDim);
  addU32(a + ".block_count", c.numLayers);
  addU32(a + ".attention.head_count", c.numHeads);
  addU32(a + ".attention.head_count_kv", c.numKvHeads);
  addU32(a + ".rope.dimension_count", c.headDim);
  gguf.addF32(a + ".rope.freq_base", static_cast<float>(c.ropeTheta));
  gguf.addF32(a + ".attention.layer_norm_rms_epsilon",
              static_cast<float>(c.normEpsilon));
  if (c.slidingWindow)
    addU32(a + ".attention.sliding_window", c.slidingWindow);
  // Llama 3 scaling is no metadata key: llama.cpp's converter writes none
  // and stores the rope_freqs tensor (writeGGUFModel) instead.
  if (c.ropeScaling && c.ropeScaling->kind == RopeScalingConfig::Kind::Linear) {
    gguf.addString(a + ".rope.scaling.type", "linear");
    gguf.addF32(a + ".rope.scaling.factor",
                static_cast<float>(c.ropeScaling->factor));
  }
  addU32(a + ".vocab_size", c.vocabSize);
  if (c.headDim * c.numHeads != c.dim) {
    addU32(a + ".attention.key_length", c.headDim);
    addU32(a + ".attention.value_length", c.headDim);
  }
  if (options.vocabulary)
    addVocabulary(gguf, *options.vocabulary);
}

uint64_t writeGGUFModel(const ModelConfig &config, const TensorSource &weights,
                        const std::string &path,
                        const GGUFModelOptions &options) {
  requireValidConfig(config, path);
  requireStorableType(options.type, "GGUF");
  GGUFWriter meta;
  std::vector<float> ropeFreqs;
  try {
    addGGUFModelMetadata(meta, config, options);
    ropeFreqs = ggufRopeFreqFactors(config);
  } catch (const std::invalid_argument &e) {
    throw std::invalid_argument(path + ": " + e.what());
  }

  // The tensors are declared with their sizes and streamed after the
  // header, each at the aligned offset the directory gives it. rope_freqs
  // comes first, where llama.cpp's converter puts its generated tensors.
  const std::string ropeFreqsName = "rope_freqs.weight";
  if (!ropeFreqs.empty())
    meta.declareTensor(ropeFreqsName, {static_cast<int64_t>(ropeFreqs.size())},
                       ElementType::F32, ropeFreqs.size() * sizeof(float));
  std::vector<ElementType> stored;
  for (const ModelTensor &t : weights.tensors()) {
    if (!ropeFreqs.empty() && t.name == ropeFreqsName)
      throw std::invalid_argument(path + ": tensor '" + ropeFreqsName +
                                  "' is in the weights and made from the "
                                  "config's rope scaling too");
    ElementType type = t.shape.size() == 1 ? ElementType::F32 : options.type;
    stored.push_back(type);
    meta.declareTensor(t.name, t.shape, type, storedBytes(t, type));
  }

  OutputFile out(path);
  out.write(meta.header());
  if (!ropeFreqs.empty()) {
    out.write(ropeFreqs.data(), ropeFreqs.size() * sizeof(float));
    out.pad(meta.alignment());
  }
  for (size_t i = 0; i < weights.tensors().size(); ++i) {
    writeTensorValues(out, weights, weights.tensors()[i], stored[i], config,
                      storedPairs(config));
    out.pad(meta.alignment());
  }
  return out.finish();
}

} // namespace kiln::formats
