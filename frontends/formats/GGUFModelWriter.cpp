//===- GGUFModelWriter.cpp - Writing models as GGUF -----------------------===//
//
// Part of Kiln. The metadata keys are those llama.cpp's converters write and
// frontends/Importer.cpp reads; see ModelWriters.h.
//
//===----------------------------------------------------------------------===//

#include "frontends/formats/ModelFileOutput.h"
#include "frontends/formats/ModelWriters.h"

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

void addGGUFModelMetadata(GGUFWriter &gguf, const ModelConfig &c,
                          const GGUFModelOptions &options) {
  const std::string &a = c.architecture;
  if (a != "llama" && a != "qwen2")
    throw std::invalid_argument("GGUF architecture '" + a +
                                "' is not written (llama, qwen2)");
  if (c.ropeScaling && c.ropeScaling->kind != RopeScalingConfig::Kind::Linear)
    throw std::invalid_argument("GGUF holds Llama 3 RoPE scaling as a "
                                "rope_freqs tensor, which Kiln does not "
                                "write or read");
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
  if (c.ropeScaling) {
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
  try {
    addGGUFModelMetadata(meta, config, options);
  } catch (const std::invalid_argument &e) {
    throw std::invalid_argument(path + ": " + e.what());
  }

  // The tensors are declared with their sizes and streamed after the
  // header, each at the aligned offset the directory gives it.
  std::vector<ElementType> stored;
  for (const ModelTensor &t : weights.tensors()) {
    ElementType type = t.shape.size() == 1 ? ElementType::F32 : options.type;
    stored.push_back(type);
    meta.declareTensor(t.name, t.shape, type, storedBytes(t, type));
  }

  OutputFile out(path);
  out.write(meta.header());
  for (size_t i = 0; i < weights.tensors().size(); ++i) {
    writeTensorValues(out, weights, weights.tensors()[i], stored[i], config,
                      storedPairs(config));
    out.pad(meta.alignment());
  }
  return out.finish();
}

} // namespace kiln::formats
