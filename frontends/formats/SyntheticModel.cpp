//===- SyntheticModel.cpp - Llama models with random weights --------------===//
//
// Part of Kiln. Byte layouts follow the readers (Llama2c.cpp, GGUF.cpp,
// TokenizerLoaders.cpp); everything is written little-endian whatever the
// host.
//
//===----------------------------------------------------------------------===//

#include "frontends/formats/SyntheticModel.h"

#include "frontends/formats/GGUFWriter.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
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

const std::map<std::string, ModelConfig> &namedConfigs() {
  static const std::map<std::string, ModelConfig> configs = {
      {"llama-110m", llamaConfig(768, 2048, 12, 12, 12, 32000, 1024, true)},
      {"llama-1b", llamaConfig(2048, 5632, 22, 32, 4, 32000, 2048, false)},
      {"tiny", llamaConfig(64, 172, 5, 8, 4, 512, 512, true)},
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

int64_t SyntheticTensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::vector<SyntheticTensor> syntheticTensors(const ModelConfig &c) {
  std::vector<SyntheticTensor> tensors;
  auto add = [&](std::string name, std::vector<int64_t> shape, bool norm) {
    tensors.push_back({std::move(name), std::move(shape), norm});
  };
  int64_t q = c.numHeads * c.headDim, kv = c.numKvHeads * c.headDim;
  add("token_embd.weight", {c.vocabSize, c.dim}, false);
  for (int64_t l = 0; l < c.numLayers; ++l) {
    auto name = [&](const char *suffix) { return layerTensorName(l, suffix); };
    add(name("attn_norm.weight"), {c.dim}, true);
    add(name("attn_q.weight"), {q, c.dim}, false);
    add(name("attn_k.weight"), {kv, c.dim}, false);
    add(name("attn_v.weight"), {kv, c.dim}, false);
    add(name("attn_output.weight"), {c.dim, q}, false);
    add(name("ffn_norm.weight"), {c.dim}, true);
    add(name("ffn_gate.weight"), {c.hiddenDim, c.dim}, false);
    add(name("ffn_down.weight"), {c.dim, c.hiddenDim}, false);
    add(name("ffn_up.weight"), {c.hiddenDim, c.dim}, false);
  }
  add("output_norm.weight", {c.dim}, true);
  if (!c.tiedClassifier)
    add("output.weight", {c.vocabSize, c.dim}, false);
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

/// An output file that counts what it writes and throws, naming the path,
/// when a write fails.
class FileSink {
public:
  explicit FileSink(const std::string &path)
      : path(path), file(std::fopen(path.c_str(), "wb")) {
    if (!file)
      fail("cannot create");
  }
  ~FileSink() {
    if (file)
      std::fclose(file);
  }
  FileSink(const FileSink &) = delete;
  FileSink &operator=(const FileSink &) = delete;

  void write(const void *data, size_t n) {
    if (n && std::fwrite(data, 1, n, file) != n)
      fail("cannot write");
    written += n;
  }
  void write(const std::string &bytes) { write(bytes.data(), bytes.size()); }

  /// Zero bytes up to the next multiple of `alignment`.
  void pad(uint64_t alignment) {
    static const char zeros[64] = {};
    while (written % alignment)
      write(zeros,
            std::min<uint64_t>(sizeof zeros, alignment - written % alignment));
  }

  /// Closes the file; returns the bytes written.
  uint64_t finish() {
    std::FILE *f = file;
    file = nullptr;
    if (std::fclose(f) != 0)
      fail("cannot write");
    return written;
  }

  uint64_t size() const { return written; }

private:
  [[noreturn]] void fail(const char *what) {
    throw std::runtime_error(path + ": " + what + " (" + std::strerror(errno) +
                             ")");
  }

  std::string path;
  std::FILE *file;
  uint64_t written = 0;
};

/// Little-endian bytes of an unsigned integer.
template <typename T> void appendLE(std::string &out, T v) {
  for (size_t i = 0; i < sizeof(T); ++i)
    out += static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff);
}

uint32_t floatBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

/// Elements generated and written at a time.
constexpr int64_t kSlice = int64_t(1) << 16;

/// Streams a tensor's values to `out` as `type` (F32 or F16).
void writeTensor(FileSink &out, uint64_t seed, const SyntheticTensor &tensor,
                 ElementType type) {
  SyntheticTensorValues values(seed, tensor);
  std::vector<float> slice;
  std::string bytes;
  for (int64_t done = 0, n = tensor.numElements(); done < n;) {
    int64_t count = std::min(kSlice, n - done);
    slice.resize(static_cast<size_t>(count));
    values.next(slice.data(), count);
    int width = type == ElementType::F16 ? 2 : 4;
    bytes.resize(static_cast<size_t>(count) * width);
    char *p = bytes.data();
    for (float f : slice) {
      uint32_t bits = type == ElementType::F16 ? floatToHalf(f) : floatBits(f);
      for (int b = 0; b < width; ++b)
        *p++ = static_cast<char>((bits >> (8 * b)) & 0xff);
    }
    out.write(bytes);
    done += count;
  }
}

void checkConfig(const ModelConfig &config) {
  if (auto problem = config.validate())
    throw std::invalid_argument("synthetic model config: " + *problem);
}

} // namespace

uint64_t writeSyntheticLlama2c(const SyntheticModelSpec &spec,
                               const std::string &path) {
  const ModelConfig &c = spec.config;
  checkConfig(c);
  if (c.headDim * c.numHeads != c.dim)
    throw std::invalid_argument(
        "a llama2.c checkpoint needs head size dim / n_heads (" +
        std::to_string(c.dim) + " / " + std::to_string(c.numHeads) +
        "), the config has " + std::to_string(c.headDim));
  std::vector<SyntheticTensor> tensors = syntheticTensors(c);
  auto find = [&](const std::string &name) -> const SyntheticTensor & {
    return *std::find_if(
        tensors.begin(), tensors.end(),
        [&](const SyntheticTensor &t) { return t.name == name; });
  };

  FileSink out(path);
  std::string header;
  for (int64_t v :
       {c.dim, c.hiddenDim, c.numLayers, c.numHeads, c.numKvHeads,
        c.tiedClassifier ? c.vocabSize : -c.vocabSize, c.contextLength})
    appendLE(header, static_cast<uint32_t>(static_cast<int32_t>(v)));
  out.write(header);

  auto put = [&](const std::string &name) {
    writeTensor(out, spec.seed, find(name), ElementType::F32);
  };
  auto putLayers = [&](const char *suffix) {
    for (int64_t l = 0; l < c.numLayers; ++l)
      put(layerTensorName(l, suffix));
  };
  put("token_embd.weight");
  for (const char *suffix :
       {"attn_norm.weight", "attn_q.weight", "attn_k.weight", "attn_v.weight",
        "attn_output.weight", "ffn_norm.weight", "ffn_gate.weight",
        "ffn_down.weight", "ffn_up.weight"})
    putLayers(suffix);
  put("output_norm.weight");

  // freq_cis_real and freq_cis_imag, [seq_len, head_size / 2] each: Kiln and
  // today's llama2.c skip them, older llama2.c builds rotate with them.
  int64_t half = c.headDim / 2;
  for (bool imag : {false, true}) {
    std::string table;
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
  if (!c.tiedClassifier)
    put("output.weight");
  return out.finish();
}

uint64_t writeSyntheticGGUF(const SyntheticModelSpec &spec,
                            const std::string &path, ElementType type) {
  const ModelConfig &c = spec.config;
  checkConfig(c);
  if (type != ElementType::F32 && type != ElementType::F16)
    throw std::invalid_argument(std::string("synthetic GGUF models are f32 or "
                                            "f16, not ") +
                                elementTypeName(type));

  GGUFWriter meta;
  meta.addString("general.architecture", "llama");
  meta.addString("general.name", "Kiln synthetic Llama (seed " +
                                     std::to_string(spec.seed) + ")");
  // llama.cpp's LLAMA_FTYPE: 0 all F32, 1 mostly F16.
  meta.addU32("general.file_type", type == ElementType::F16 ? 1 : 0);
  auto addU32 = [&](const std::string &key, int64_t v) {
    meta.addU32(key, static_cast<uint32_t>(v));
  };
  addU32("llama.context_length", c.contextLength);
  addU32("llama.embedding_length", c.dim);
  addU32("llama.feed_forward_length", c.hiddenDim);
  addU32("llama.block_count", c.numLayers);
  addU32("llama.attention.head_count", c.numHeads);
  addU32("llama.attention.head_count_kv", c.numKvHeads);
  addU32("llama.rope.dimension_count", c.headDim);
  meta.addF32("llama.rope.freq_base", static_cast<float>(c.ropeTheta));
  meta.addF32("llama.attention.layer_norm_rms_epsilon",
              static_cast<float>(c.normEpsilon));
  addU32("llama.vocab_size", c.vocabSize);
  if (c.headDim * c.numHeads != c.dim) {
    addU32("llama.attention.key_length", c.headDim);
    addU32("llama.attention.value_length", c.headDim);
  }

  runtime::TokenizerSpec vocab = syntheticVocabulary(c.vocabSize);
  std::vector<int32_t> types;
  for (runtime::TokenType t : vocab.types)
    types.push_back(static_cast<int32_t>(t));
  meta.addString("tokenizer.ggml.model", "llama");
  meta.addStringArray("tokenizer.ggml.tokens", vocab.tokens);
  meta.addF32Array("tokenizer.ggml.scores", vocab.scores);
  meta.addI32Array("tokenizer.ggml.token_type", types);
  meta.addU32("tokenizer.ggml.unknown_token_id", 0);
  addU32("tokenizer.ggml.bos_token_id", vocab.bosId);
  addU32("tokenizer.ggml.eos_token_id", vocab.eosId);
  meta.addBool("tokenizer.ggml.add_bos_token", true);
  meta.addBool("tokenizer.ggml.add_eos_token", false);

  // The tensors are declared with their sizes and streamed after the
  // header, each at the aligned offset the directory gives it.
  std::vector<SyntheticTensor> tensors = syntheticTensors(c);
  std::vector<ElementType> stored;
  for (const SyntheticTensor &t : tensors) {
    // 1-D tensors (the norms) stay F32, as llama.cpp writes them.
    ElementType tensorType = t.shape.size() == 1 ? ElementType::F32 : type;
    stored.push_back(tensorType);
    meta.declareTensor(t.name, t.shape, tensorType,
                       static_cast<uint64_t>(t.numElements()) *
                           (tensorType == ElementType::F16 ? 2 : 4));
  }

  FileSink out(path);
  out.write(meta.header());
  for (size_t i = 0; i < tensors.size(); ++i) {
    writeTensor(out, spec.seed, tensors[i], stored[i]);
    out.pad(meta.alignment());
  }
  return out.finish();
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
  FileSink out(path);
  out.write(bytes);
  return out.finish();
}

} // namespace kiln::formats
