//===- SyntheticModel.cpp - Llama models with random weights --------------===//
//
// Part of Kiln. The model files are written by ModelWriters.h's writers;
// tokenizer.bin's layout follows TokenizerLoaders.cpp, little-endian
// whatever the host.
//
//===----------------------------------------------------------------------===//

#include "frontends/formats/SyntheticModel.h"

#include "frontends/formats/ModelFileOutput.h"
#include "frontends/formats/ModelWriters.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <stdexcept>

namespace kiln::formats {

//===----------------------------------------------------------------------===//
// Configurations and tensors
//===----------------------------------------------------------------------===//

namespace {

ModelConfig llamaConfig(int64_t dim, int64_t hidden, int64_t layers,
                        int64_t heads, int64_t kvHeads, int64_t vocab,
                        int64_t context, bool tied) {
  ModelConfig c;
  c.architecture = "llama";
  c.dim = dim;
  c.hiddenDim = hidden;
  c.numLayers = layers;
  c.numHeads = heads;
  c.numKvHeads = kvHeads;
  c.headDim = dim / heads;
  c.vocabSize = vocab;
  c.contextLength = context;
  c.ropeTheta = 10000.0;
  c.ropePairs = RopePairs::Adjacent;
  c.normEpsilon = 1e-5;
  c.tiedClassifier = tied;
  return c;
}

/// "tiny" with Llama 3.1's rope scaling, trained (as it were) for 64
/// positions and stretched to 512: the original context is short enough
/// that a run quickly goes past it, and its head of 8 has a pair of each
/// kind (wavelengths 6.3, 62.8, 628 and 6283 against the kept band below
/// 64 / 4 = 16, the divided one above 64 / 1 and the blend between).
ModelConfig tinyLlama3() {
  ModelConfig c = llamaConfig(64, 172, 5, 8, 4, 512, 512, true);
  c.ropeScaling =
      RopeScalingConfig{RopeScalingConfig::Kind::Llama3, 8.0, 1.0, 4.0, 64};
  return c;
}

const std::map<std::string, ModelConfig> &namedConfigs() {
  static const std::map<std::string, ModelConfig> configs = {
      {"llama-110m", llamaConfig(768, 2048, 12, 12, 12, 32000, 1024, true)},
      {"llama-1b", llamaConfig(2048, 5632, 22, 32, 4, 32000, 2048, false)},
      {"tiny", llamaConfig(64, 172, 5, 8, 4, 512, 512, true)},
      {"tiny-llama3", tinyLlama3()},
  };
  return configs;
}

} // namespace

const std::vector<std::string> &syntheticConfigNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto &entry : namedConfigs())
      v.push_back(entry.first);
    return v;
  }();
  return names;
}

ModelConfig syntheticConfig(const std::string &name) {
  auto it = namedConfigs().find(name);
  if (it != namedConfigs().end())
    return it->second;
  std::string known;
  for (const std::string &n : syntheticConfigNames())
    known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("no synthetic model config named '" + name +
                              "' (known: " + known + ")");
}

std::vector<SyntheticTensor> syntheticTensors(const ModelConfig &config) {
  std::vector<SyntheticTensor> tensors;
  for (ModelTensor &t : modelTensors(config))
    tensors.push_back({{t.name, std::move(t.shape)}, isNormTensor(t.name)});
  return tensors;
}

uint64_t syntheticParameterCount(const ModelConfig &config) {
  uint64_t n = 0;
  for (const SyntheticTensor &t : syntheticTensors(config))
    n += static_cast<uint64_t>(t.numElements());
  return n;
}

//===----------------------------------------------------------------------===//
// Weights
//===----------------------------------------------------------------------===//

namespace {

/// SplitMix64's finalizer: spreads nearby seeds over the whole state space.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// FNV-1a of a tensor name: a stable hash (std::hash is not).
uint64_t hashName(const std::string &name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : name)
    h = (h ^ c) * 0x100000001b3ull;
  return h;
}

} // namespace

SyntheticTensorValues::SyntheticTensorValues(uint64_t seed,
                                             const SyntheticTensor &tensor)
    : isNorm(tensor.isNorm), rng(mix(seed ^ mix(hashName(tensor.name)))) {}

void SyntheticTensorValues::next(float *out, int64_t count) {
  if (isNorm) {
    std::fill(out, out + count, 1.0f);
    return;
  }
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  for (int64_t i = 0; i < count; ++i) {
    double z;
    if (hasSpare) {
      z = spare;
      hasSpare = false;
    } else {
      // Box-Muller on 53-bit uniforms; u1 in (0, 1] keeps the log finite.
      double u1 = static_cast<double>((rng() >> 11) + 1) * 0x1p-53;
      double u2 = static_cast<double>(rng() >> 11) * 0x1p-53;
      double r = std::sqrt(-2.0 * std::log(u1));
      z = r * std::cos(kTwoPi * u2);
      spare = r * std::sin(kTwoPi * u2);
      hasSpare = true;
    }
    out[i] = static_cast<float>(kSyntheticWeightStddev * z);
  }
}

SyntheticTensorSource::SyntheticTensorSource(const SyntheticModelSpec &spec)
    : seed(spec.seed), list(modelTensors(spec.config)) {}

std::unique_ptr<TensorValueStream>
SyntheticTensorSource::values(const ModelTensor &tensor) const {
  return std::make_unique<SyntheticTensorValues>(
      seed,
      SyntheticTensor{{tensor.name, tensor.shape}, isNormTensor(tensor.name)});
}

std::vector<float> syntheticTensorData(const SyntheticModelSpec &spec,
                                       const std::string &name) {
  for (const SyntheticTensor &t : syntheticTensors(spec.config))
    if (t.name == name) {
      std::vector<float> values(static_cast<size_t>(t.numElements()));
      SyntheticTensorValues(spec.seed, t).next(values.data(), t.numElements());
      return values;
    }
  throw std::invalid_argument("the synthetic model has no tensor '" + name +
                              "'");
}

//===----------------------------------------------------------------------===//
// Vocabulary
//===----------------------------------------------------------------------===//

runtime::TokenizerSpec syntheticVocabulary(int64_t vocabSize,
                                           const std::string &spaceSymbol) {
  using runtime::TokenType;
  constexpr int64_t kFixed = 3 + 256;
  if (vocabSize < kFixed)
    throw std::invalid_argument(
        "a synthetic vocabulary needs at least 259 tokens (<unk>, <s>, </s> "
        "and 256 byte tokens), got " +
        std::to_string(vocabSize));
  runtime::TokenizerSpec spec;
  spec.model = runtime::TokenizerSpec::Model::ScoreMerge;
  spec.spaceSymbol = spaceSymbol;
  spec.addSpacePrefix = true;
  spec.addBos = true;
  spec.bosId = 1;
  spec.eosId = 2;
  auto add = [&](std::string piece, TokenType type) {
    if (static_cast<int64_t>(spec.tokens.size()) >= vocabSize)
      return;
    bool special = type != TokenType::Normal;
    auto id = static_cast<int64_t>(spec.tokens.size());
    spec.scores.push_back(special ? 0.0f
                                  : -static_cast<float>(id - kFixed + 1));
    spec.tokens.push_back(std::move(piece));
    spec.types.push_back(type);
  };
  add("<unk>", TokenType::Unknown);
  add("<s>", TokenType::Control);
  add("</s>", TokenType::Control);
  for (int byte = 0; byte < 256; ++byte) {
    char piece[8];
    std::snprintf(piece, sizeof piece, "<0x%02X>", byte);
    add(piece, TokenType::Byte);
  }
  // Every piece below is a shorter piece plus one character, so the
  // score-merge tokenizer can build each from characters.
  add(spaceSymbol, TokenType::Normal);
  for (char c = '!'; c <= '~'; ++c)
    add(std::string(1, c), TokenType::Normal);
  for (const char *letters :
       {"abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"})
    for (const char *c = letters; *c; ++c)
      add(spaceSymbol + *c, TokenType::Normal);
  // Lowercase strings of length 2, 3, ... in order, each alone and after
  // the space symbol.
  for (size_t length = 2; static_cast<int64_t>(spec.tokens.size()) < vocabSize;
       ++length) {
    std::string word(length, 'a');
    for (;;) {
      add(word, TokenType::Normal);
      add(spaceSymbol + word, TokenType::Normal);
      if (static_cast<int64_t>(spec.tokens.size()) >= vocabSize)
        break;
      // The next word in lexicographic order; stop after "zz..z".
      size_t i = length;
      while (i > 0 && word[i - 1] == 'z')
        word[--i] = 'a';
      if (i == 0)
        break;
      ++word[i - 1];
    }
  }
  return spec;
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

namespace {

void checkConfig(const ModelConfig &config) {
  if (auto problem = config.validate())
    throw std::invalid_argument("synthetic model config: " + *problem);
}

} // namespace

uint64_t writeSyntheticLlama2c(const SyntheticModelSpec &spec,
                               const std::string &path, int version) {
  checkConfig(spec.config);
  if (!spec.chatTemplate.empty())
    throw std::invalid_argument(path + ": a llama2.c checkpoint has no place "
                                       "for a chat template (GGUF and "
                                       "Hugging Face files do)");
  return writeLlama2c(spec.config, SyntheticTensorSource(spec), path, version);
}

uint64_t writeSyntheticGGUF(const SyntheticModelSpec &spec,
                            const std::string &path, ElementType type) {
  checkConfig(spec.config);
  runtime::TokenizerSpec vocab = syntheticVocabulary(spec.config.vocabSize);
  vocab.chatTemplate = spec.chatTemplate;
  GGUFModelOptions options;
  options.type = type;
  options.name =
      "Kiln synthetic Llama (seed " + std::to_string(spec.seed) + ")";
  options.vocabulary = &vocab;
  return writeGGUFModel(spec.config, SyntheticTensorSource(spec), path,
                        options);
}

uint64_t writeSyntheticHuggingFace(const SyntheticModelSpec &spec,
                                   const std::string &dir, ElementType type,
                                   int shards) {
  checkConfig(spec.config);
  runtime::TokenizerSpec vocab = syntheticVocabulary(spec.config.vocabSize);
  vocab.chatTemplate = spec.chatTemplate;
  HuggingFaceOptions options;
  options.type = type;
  options.shards = shards;
  options.vocabulary = &vocab;
  return writeHuggingFaceModel(spec.config, SyntheticTensorSource(spec), dir,
                               options);
}

uint64_t writeLlama2cTokenizer(const runtime::TokenizerSpec &vocab,
                               const std::string &path) {
  if (vocab.scores.size() != vocab.tokens.size())
    throw std::invalid_argument(path + ": a tokenizer.bin needs one score per "
                                       "token");
  size_t maxLength = 0;
  for (const std::string &piece : vocab.tokens)
    maxLength = std::max(maxLength, piece.size());
  std::string bytes;
  appendLE(bytes, static_cast<uint32_t>(maxLength));
  for (size_t id = 0; id < vocab.tokens.size(); ++id) {
    appendLE(bytes, floatBits(vocab.scores[id]));
    appendLE(bytes, static_cast<uint32_t>(vocab.tokens[id].size()));
    bytes += vocab.tokens[id];
  }
  OutputFile out(path);
  out.write(bytes);
  return out.finish();
}

} // namespace kiln::formats
