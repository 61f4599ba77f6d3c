//===- ModelWritersTest.cpp - Model writers read back ---------------------===//
//
// Part of Kiln's unit tests (MLIR-free). Writes models with the production
// writers of frontends/formats/ModelWriters.h -- llama2.c v0 and v1, GGUF,
// Hugging Face directories whole and sharded, tokenizer.json -- and reads
// them back through Kiln's ordinary readers: the configuration and every
// value must come back as written, Q and K rows in the layout each format
// stores, and what a format cannot hold must be refused by name.
//
//===----------------------------------------------------------------------===//

#include "frontends/formats/ModelWriters.h"
#include "frontends/formats/GGUF.h"
#include "frontends/formats/HuggingFace.h"
#include "frontends/formats/Llama2c.h"
#include "frontends/formats/SyntheticModel.h"
#include "frontends/formats/TokenizerLoaders.h"
#include "frontends/formats/WeightFile.h"
#include "runtime/Tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <unistd.h>

using namespace kiln::formats;
namespace fs = std::filesystem;
namespace runtime = kiln::runtime;

namespace {

/// A fresh directory in the test temp directory, removed with the object.
struct TempDir {
  TempDir() {
    static std::atomic<int> counter{0};
    path = fs::path(::testing::TempDir()) /
           ("kiln-writers-" + std::to_string(getpid()) + "-" +
            std::to_string(counter++));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string &name) const {
    return (path / name).string();
  }
  fs::path path;
};

ModelConfig smallConfig() {
  ModelConfig c;
  c.dim = 16;
  c.hiddenDim = 24;
  c.numLayers = 2;
  c.numHeads = 4;
  c.numKvHeads = 2;
  c.headDim = 4;
  c.vocabSize = 40;
  c.contextLength = 8;
  return c;
}

/// Qwen2 as Hugging Face and GGUF hold it: biases, rotate-half pairs, and
/// the rest of what the writers describe away from the defaults.
ModelConfig qwen2Config() {
  ModelConfig c = smallConfig();
  c.architecture = "qwen2";
  c.qkvBias = true;
  c.ropePairs = RopePairs::Halves;
  c.ropeTheta = 1e6;
  c.normEpsilon = 1e-6;
  c.slidingWindow = 6;
  c.headDim = 8; // not dim / heads
  c.tiedClassifier = false;
  return c;
}

/// Distinct values for every tensor of `config`, exact in f16 and bf16 too
/// (small multiples of 1/64), so every format keeps them.
InMemoryTensorSource::Values valuesFor(const ModelConfig &config,
                                       uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> step(-64, 64);
  InMemoryTensorSource::Values values;
  for (const ModelTensor &t : modelTensors(config)) {
    std::vector<float> &v = values[t.name];
    v.resize(static_cast<size_t>(t.numElements()));
    for (float &x : v)
      x = static_cast<float>(step(rng)) / 64.0f;
  }
  return values;
}

/// Every value of `name` in `file`, as float.
std::vector<float> read(const WeightFile &file, const std::string &name) {
  const TensorInfo *info = file.find(name);
  if (!info)
    ADD_FAILURE() << "no tensor " << name << " in " << file.path();
  if (!info)
    return {};
  std::vector<float> out(static_cast<size_t>(info->numElements()));
  dequantize(info->type, file.data(*info), out.data(), info->numElements());
  return out;
}

/// `values` of a Q or K tensor of heads of `d` rows with each head's rows
/// moved from adjacent pairs (2i, 2i+1) to halves (i, i + d/2).
std::vector<float> toHalves(const std::vector<float> &values, int64_t rows,
                            int64_t d) {
  int64_t rowSize = static_cast<int64_t>(values.size()) / rows;
  std::vector<float> out(values.size());
  for (int64_t h = 0; h < rows / d; ++h)
    for (int64_t i = 0; i < d; ++i) {
      int64_t from = h * d + (i < d / 2 ? 2 * i : 2 * (i - d / 2) + 1);
      std::copy_n(values.begin() + from * rowSize, rowSize,
                  out.begin() + (h * d + i) * rowSize);
    }
  return out;
}

bool isQueryOrKey(const std::string &name) {
  return name.find("attn_q.") != std::string::npos ||
         name.find("attn_k.") != std::string::npos;
}

/// The file holds exactly the source's tensors and values, Q and K moved to
/// halves when `toHalvesFromAdjacent`.
void expectValues(const WeightFile &file, const ModelConfig &config,
                  const InMemoryTensorSource::Values &values,
                  bool toHalvesFromAdjacent = false) {
  std::vector<ModelTensor> tensors = modelTensors(config);
  EXPECT_EQ(file.tensors().size(), tensors.size());
  for (const ModelTensor &t : tensors) {
    SCOPED_TRACE(t.name);
    const TensorInfo *info = file.find(t.name);
    ASSERT_NE(info, nullptr);
    EXPECT_EQ(info->shape, t.shape);
    std::vector<float> want = values.at(t.name);
    if (toHalvesFromAdjacent && isQueryOrKey(t.name))
      want = toHalves(want, t.shape[0], config.headDim);
    EXPECT_EQ(read(file, t.name), want);
  }
}

template <typename F> std::string errorOf(F f) {
  try {
    f();
  } catch (const std::exception &e) {
    return e.what();
  }
  return "(no error)";
}

//===----------------------------------------------------------------------===//
// llama2.c
//===----------------------------------------------------------------------===//

TEST(ModelWriters, Llama2cReadsBack) {
  TempDir dir;
  for (int version : {0, 1})
    for (bool tied : {true, false}) {
      SCOPED_TRACE("version " + std::to_string(version) +
                   (tied ? ", tied" : ", untied"));
      ModelConfig c = smallConfig();
      c.tiedClassifier = tied;
      InMemoryTensorSource::Values values = valuesFor(c, 1);
      std::string path = dir / "model.bin";
      uint64_t bytes =
          writeLlama2c(c, InMemoryTensorSource(c, values), path, version);
      EXPECT_EQ(bytes, fs::file_size(path));

      Llama2cCheckpoint ckpt = readLlama2c(path);
      EXPECT_EQ(ckpt.version, version);
      EXPECT_EQ(ckpt.config.dim, c.dim);
      EXPECT_EQ(ckpt.config.hiddenDim, c.hiddenDim);
      EXPECT_EQ(ckpt.config.numLayers, c.numLayers);
      EXPECT_EQ(ckpt.config.numKvHeads, c.numKvHeads);
      EXPECT_EQ(ckpt.config.vocabSize, c.vocabSize);
      EXPECT_EQ(ckpt.config.contextLength, c.contextLength);
      EXPECT_EQ(ckpt.config.tiedClassifier, tied);
      // The last tensor ends the file: nothing written that the reader
      // does not account for.
      const TensorInfo &last = ckpt.tensors.back();
      if (!tied)
        EXPECT_EQ(last.offset + last.bytes, bytes);
      expectValues(*WeightFile::open(WeightFileFormat::Llama2c, path), c,
                   values);
    }
}

TEST(ModelWriters, Llama2cRefusesWhatItCannotHold) {
  TempDir dir;
  std::string path = dir / "x.bin";
  ModelConfig c = smallConfig();
  InMemoryTensorSource::Values values = valuesFor(c, 2);

  // A tensor the layout needs is missing.
  std::vector<ModelTensor> partial = modelTensors(c);
  partial.erase(partial.begin() + 3); // blk.0.attn_k.weight
  EXPECT_EQ(errorOf([&] {
              writeLlama2c(c, InMemoryTensorSource(partial, values), path);
            }),
            path + ": the model has no tensor 'blk.0.attn_k.weight'");
  EXPECT_FALSE(fs::exists(path)) << "checked before the file is created";

  ModelConfig wide = c;
  wide.headDim = 8;
  InMemoryTensorSource::Values wideValues = valuesFor(wide, 2);
  EXPECT_NE(errorOf([&] {
              writeLlama2c(wide, InMemoryTensorSource(wide, wideValues), path);
            }).find("needs head size dim / n_heads (16 / 4), the config has 8"),
            std::string::npos);

  ModelConfig biased = c;
  biased.qkvBias = true;
  InMemoryTensorSource::Values biasedValues = valuesFor(biased, 2);
  EXPECT_NE(errorOf([&] {
              writeLlama2c(biased, InMemoryTensorSource(biased, biasedValues),
                           path);
            }).find("cannot hold QKV biases"),
            std::string::npos);

  ModelConfig theta = c;
  theta.ropeTheta = 5e5;
  EXPECT_NE(errorOf([&] {
              writeLlama2c(theta, InMemoryTensorSource(theta, values), path);
            }).find("cannot hold RoPE theta 500000"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              writeLlama2c(c, InMemoryTensorSource(c, values), path, 2);
            }).find("export version 2 is not written"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              writeLlama2c(c, InMemoryTensorSource(c, values),
                           dir / "no/such/dir/x.bin");
            }).find("x.bin: cannot create"),
            std::string::npos);
}

//===----------------------------------------------------------------------===//
// GGUF
//===----------------------------------------------------------------------===//

TEST(ModelWriters, GGUFReadsBack) {
  TempDir dir;
  for (ElementType type :
       {ElementType::F32, ElementType::F16, ElementType::BF16}) {
    SCOPED_TRACE(elementTypeName(type));
    ModelConfig c = smallConfig();
    InMemoryTensorSource::Values values = valuesFor(c, 3);
    runtime::TokenizerSpec vocab = syntheticVocabulary(300);
    GGUFModelOptions options;
    options.type = type;
    options.name = "test model";
    options.vocabulary = &vocab;
    std::string path = dir / "model.gguf";
    uint64_t bytes =
        writeGGUFModel(c, InMemoryTensorSource(c, values), path, options);
    EXPECT_EQ(bytes, fs::file_size(path));

    GGUFFile gguf = GGUFFile::open(path);
    EXPECT_EQ(gguf.getString("general.architecture"), "llama");
    EXPECT_EQ(gguf.getString("general.name"), "test model");
    EXPECT_EQ(gguf.getInt("general.file_type"), type == ElementType::F32 ? 0
                                                : type == ElementType::F16
                                                    ? 1
                                                    : 32);
    EXPECT_EQ(gguf.getInt("llama.embedding_length"), 16);
    EXPECT_EQ(gguf.getInt("llama.feed_forward_length"), 24);
    EXPECT_EQ(gguf.getInt("llama.block_count"), 2);
    EXPECT_EQ(gguf.getInt("llama.attention.head_count"), 4);
    EXPECT_EQ(gguf.getInt("llama.attention.head_count_kv"), 2);
    EXPECT_EQ(gguf.getInt("llama.context_length"), 8);
    EXPECT_EQ(gguf.getInt("llama.vocab_size"), 40);
    EXPECT_FALSE(gguf.find("llama.attention.key_length"));
    EXPECT_FALSE(gguf.find("llama.attention.sliding_window"));
    EXPECT_EQ(gguf.findTensor("blk.0.attn_q.weight")->type, type);
    EXPECT_EQ(gguf.findTensor("blk.1.ffn_norm.weight")->type, ElementType::F32);

    runtime::TokenizerSpec got = tokenizerFromGGUF(gguf);
    EXPECT_EQ(got.tokens, vocab.tokens);
    EXPECT_EQ(got.scores, vocab.scores);
    EXPECT_EQ(got.types, vocab.types);
    EXPECT_EQ(got.bosId, 1);
    EXPECT_EQ(got.eosId, 2);
    EXPECT_FALSE(gguf.find("tokenizer.chat_template")) << "none was given";
    EXPECT_EQ(got.chatTemplate, "");

    expectValues(*WeightFile::open(WeightFileFormat::GGUF, path), c, values);
  }
}

/// A vocabulary's chat template is tokenizer.chat_template, read back into
/// the vocabulary.
TEST(ModelWriters, GGUFChatTemplateReadsBack) {
  TempDir dir;
  ModelConfig c = smallConfig();
  runtime::TokenizerSpec vocab = syntheticVocabulary(300);
  vocab.chatTemplate = "{% for m in messages %}{{ bos_token }}[{{ m.role }}] "
                       "{{ m.content }}\n{% endfor %}";
  GGUFModelOptions options;
  options.vocabulary = &vocab;
  std::string path = dir / "chat.gguf";
  InMemoryTensorSource::Values values = valuesFor(c, 3);
  writeGGUFModel(c, InMemoryTensorSource(c, values), path, options);
  GGUFFile gguf = GGUFFile::open(path);
  EXPECT_EQ(gguf.getString("tokenizer.chat_template"), vocab.chatTemplate);
  EXPECT_EQ(tokenizerFromGGUF(gguf).chatTemplate, vocab.chatTemplate);
}

/// Qwen2 keeps Hugging Face's rotate-half rows; a Llama given in that
/// layout is written with adjacent pairs, as llama.cpp's converter does.
TEST(ModelWriters, GGUFQwen2AndRowLayouts) {
  TempDir dir;
  ModelConfig c = qwen2Config();
  c.ropeScaling = RopeScalingConfig{RopeScalingConfig::Kind::Linear, 4.0};
  InMemoryTensorSource::Values values = valuesFor(c, 4);
  std::string path = dir / "qwen2.gguf";
  writeGGUFModel(c, InMemoryTensorSource(c, values), path);
  GGUFFile gguf = GGUFFile::open(path);
  EXPECT_EQ(gguf.getString("general.architecture"), "qwen2");
  EXPECT_EQ(gguf.getInt("qwen2.attention.key_length"), 8);
  EXPECT_EQ(gguf.getInt("qwen2.attention.value_length"), 8);
  EXPECT_EQ(gguf.getInt("qwen2.attention.sliding_window"), 6);
  EXPECT_EQ(gguf.getString("qwen2.rope.scaling.type"), "linear");
  EXPECT_EQ(gguf.getFloat("qwen2.rope.scaling.factor"), 4.0);
  EXPECT_EQ(gguf.getFloat("qwen2.rope.freq_base"), 1e6);
  EXPECT_FALSE(gguf.find("tokenizer.ggml.model")) << "no vocabulary given";
  EXPECT_EQ(gguf.findTensor("blk.1.attn_k.bias")->type, ElementType::F32);
  expectValues(*WeightFile::open(WeightFileFormat::GGUF, path), c, values);

  // The same Llama given with adjacent pairs and with halves: one file.
  ModelConfig adjacent = smallConfig();
  InMemoryTensorSource::Values a = valuesFor(adjacent, 5), h = a;
  for (auto &[name, v] : h)
    if (isQueryOrKey(name))
      v = toHalves(v, static_cast<int64_t>(v.size()) / adjacent.dim,
                   adjacent.headDim);
  ModelConfig halves = adjacent;
  halves.ropePairs = RopePairs::Halves;
  writeGGUFModel(adjacent, InMemoryTensorSource(adjacent, a), dir / "a.gguf");
  writeGGUFModel(halves, InMemoryTensorSource(halves, h), dir / "h.gguf");
  expectValues(*WeightFile::open(WeightFileFormat::GGUF, dir / "h.gguf"),
               adjacent, a);
}

/// Tests build their own variants on the model's metadata.
TEST(ModelWriters, GGUFMetadataFillsAWriter) {
  ModelConfig c = smallConfig();
  GGUFWriter w;
  addGGUFModelMetadata(w, c);
  w.addU32("test.extra", 7);
  w.addTensor("token_embd.weight", {2, 2}, ElementType::F32,
              std::string(16, '\0'));
  std::string bytes = w.bytes();
  GGUFFile gguf = GGUFFile::read(MappedFile::borrow(
      "m.gguf", reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size()));
  EXPECT_EQ(gguf.getInt("llama.block_count"), 2);
  EXPECT_EQ(gguf.getInt("test.extra"), 7);
  EXPECT_FALSE(gguf.find("general.name"));

  ModelConfig phi = c;
  phi.architecture = "phi3";
  GGUFWriter unused;
  EXPECT_NE(errorOf([&] {
              addGGUFModelMetadata(unused, phi);
            }).find("architecture 'phi3' is not written"),
            std::string::npos);
  // Llama 3 scaling is the rope_freqs tensor, not a key: none is written.
  ModelConfig llama3 = c;
  llama3.ropeScaling =
      RopeScalingConfig{RopeScalingConfig::Kind::Llama3, 8, 1, 4, 8192};
  GGUFWriter l3;
  addGGUFModelMetadata(l3, llama3);
  std::string l3Bytes = l3.bytes();
  GGUFFile l3File = GGUFFile::read(MappedFile::borrow(
      "l3.gguf", reinterpret_cast<const uint8_t *>(l3Bytes.data()),
      l3Bytes.size()));
  EXPECT_FALSE(l3File.find("llama.rope.scaling.type"));
  EXPECT_FALSE(l3File.find("llama.rope.scaling.factor"));
}

/// llama.cpp's converter stores Llama 3 scaling as rope_freqs: per pair, 1
/// for wavelengths under original_context / high_freq_factor, `factor` over
/// original_context / low_freq_factor, the blend's reciprocal between.
TEST(ModelWriters, GGUFWritesLlama3ScalingAsRopeFreqs) {
  TempDir dir;
  ModelConfig c = smallConfig();
  c.dim = 32;
  c.headDim = 16; // wavelengths 2π·10^(i/2): 6.3, 19.9, 62.8, ...
  c.hiddenDim = 24;
  c.contextLength = 128;
  c.ropeScaling =
      RopeScalingConfig{RopeScalingConfig::Kind::Llama3, 8, 1, 4, 32};
  std::vector<float> factors = ggufRopeFreqFactors(c);
  ASSERT_EQ(factors.size(), 8u);
  EXPECT_EQ(factors[0], 1.0f); // 6.3 < 32 / 4
  // 19.9 is in the blend: s = (32 / 19.87 - 1) / 3, 1 / ((1 - s) / 8 + s).
  double wavelength = 2 * M_PI * std::sqrt(10.0);
  double smooth = (32 / wavelength - 1) / 3;
  EXPECT_NEAR(factors[1], 1 / ((1 - smooth) / 8 + smooth), 1e-5);
  for (size_t i = 2; i < factors.size(); ++i)
    EXPECT_EQ(factors[i], 8.0f) << i; // 62.8 and up > 32 / 1

  InMemoryTensorSource::Values values = valuesFor(c, 4);
  std::string path = dir / "llama3.gguf";
  writeGGUFModel(c, InMemoryTensorSource(c, values), path);
  GGUFFile gguf = GGUFFile::open(path);
  ASSERT_FALSE(gguf.tensors().empty());
  const TensorInfo &freqs = gguf.tensors().front();
  EXPECT_EQ(freqs.name, "rope_freqs.weight");
  EXPECT_EQ(freqs.type, ElementType::F32);
  EXPECT_EQ(freqs.shape, (std::vector<int64_t>{8}));
  std::vector<float> stored(8);
  std::memcpy(stored.data(), gguf.data(freqs), 8 * sizeof(float));
  EXPECT_EQ(stored, factors);
  EXPECT_FALSE(gguf.find("llama.rope.scaling.type"));
  EXPECT_EQ(gguf.tensors().size(), modelTensors(c).size() + 1);

  // Factors a GGUF gave are written back as they are, beside linear
  // scaling; Hugging Face and llama2.c have no place for them.
  ModelConfig given = smallConfig();
  given.ropeFreqFactors = {1.0f, 3.5f};
  given.ropeScaling = RopeScalingConfig{RopeScalingConfig::Kind::Linear, 2};
  EXPECT_EQ(ggufRopeFreqFactors(given), given.ropeFreqFactors);
  InMemoryTensorSource::Values plain = valuesFor(given, 5);
  EXPECT_NE(errorOf([&] {
              writeHuggingFaceModel(given, InMemoryTensorSource(given, plain),
                                    dir / "hf");
            }).find("no place for per-pair rope frequency factors"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              writeLlama2c(given, InMemoryTensorSource(given, plain),
                           dir / "l.bin");
            }).find("RoPE scaling"),
            std::string::npos);
  ModelConfig wrong = given;
  wrong.ropeFreqFactors = {1.0f};
  EXPECT_NE(errorOf([&] {
              writeGGUFModel(wrong, InMemoryTensorSource(wrong, plain),
                             dir / "wrong.gguf");
            })
                .find("rope frequency factors: 1 given, a head of size 4 "
                      "rotates 2 pairs"),
            std::string::npos);
}

TEST(ModelWriters, GGUFRefusesQuantizedTypes) {
  TempDir dir;
  ModelConfig c = smallConfig();
  InMemoryTensorSource::Values values = valuesFor(c, 6);
  GGUFModelOptions options;
  options.type = ElementType::Q8_0;
  EXPECT_NE(errorOf([&] {
              writeGGUFModel(c, InMemoryTensorSource(c, values), dir / "q.gguf",
                             options);
            }).find("not q8_0 (Kiln does not quantize)"),
            std::string::npos);
}

//===----------------------------------------------------------------------===//
// Hugging Face
//===----------------------------------------------------------------------===//

TEST(ModelWriters, HuggingFaceReadsBack) {
  TempDir dir;
  ModelConfig c = smallConfig(); // adjacent pairs: Q and K rows move
  InMemoryTensorSource::Values values = valuesFor(c, 7);
  std::string hf = dir / "hf";
  uint64_t bytes =
      writeHuggingFaceModel(c, InMemoryTensorSource(c, values), hf);
  EXPECT_EQ(bytes, fs::file_size(hf + "/config.json") +
                       fs::file_size(hf + "/model.safetensors"));
  EXPECT_FALSE(fs::exists(hf + "/tokenizer.json")) << "no vocabulary given";

  ModelConfig got = readHFConfig(hf + "/config.json");
  EXPECT_EQ(got.architecture, "llama");
  EXPECT_EQ(got.dim, c.dim);
  EXPECT_EQ(got.hiddenDim, c.hiddenDim);
  EXPECT_EQ(got.numLayers, c.numLayers);
  EXPECT_EQ(got.numHeads, c.numHeads);
  EXPECT_EQ(got.numKvHeads, c.numKvHeads);
  EXPECT_EQ(got.headDim, c.headDim);
  EXPECT_EQ(got.vocabSize, c.vocabSize);
  EXPECT_EQ(got.contextLength, c.contextLength);
  EXPECT_EQ(got.normEpsilon, c.normEpsilon);
  EXPECT_EQ(got.ropeTheta, c.ropeTheta);
  EXPECT_EQ(got.ropePairs, RopePairs::Halves);
  EXPECT_EQ(got.tiedClassifier, c.tiedClassifier);
  EXPECT_FALSE(got.qkvBias);
  expectValues(*WeightFile::open(WeightFileFormat::Safetensors, hf), c, values,
               /*toHalvesFromAdjacent=*/true);
}

TEST(ModelWriters, HuggingFaceShardsAndQwen2) {
  TempDir dir;
  ModelConfig c = qwen2Config();
  c.ropeScaling =
      RopeScalingConfig{RopeScalingConfig::Kind::Llama3, 8, 1, 4, 8192};
  InMemoryTensorSource::Values values = valuesFor(c, 8);
  HuggingFaceOptions options;
  options.shards = 3;
  options.type = ElementType::BF16;
  std::string hf = dir / "hf3";
  writeHuggingFaceModel(c, InMemoryTensorSource(c, values), hf, options);
  for (const char *file :
       {"model.safetensors.index.json", "model-00001-of-00003.safetensors",
        "model-00002-of-00003.safetensors", "model-00003-of-00003.safetensors"})
    EXPECT_TRUE(fs::exists(hf + "/" + file)) << file;
  EXPECT_FALSE(fs::exists(hf + "/model.safetensors"));

  ModelConfig got = readHFConfig(hf + "/config.json");
  EXPECT_EQ(got.architecture, "qwen2");
  EXPECT_TRUE(got.qkvBias);
  EXPECT_EQ(got.headDim, 8);
  EXPECT_EQ(got.slidingWindow, 6);
  EXPECT_EQ(got.normEpsilon, 1e-6);
  EXPECT_EQ(got.ropeTheta, 1e6);
  EXPECT_FALSE(got.tiedClassifier);
  ASSERT_TRUE(got.ropeScaling);
  EXPECT_EQ(got.ropeScaling->kind, RopeScalingConfig::Kind::Llama3);
  EXPECT_EQ(got.ropeScaling->originalContext, 8192);

  auto file = WeightFile::open(WeightFileFormat::Safetensors, hf);
  std::vector<uint32_t> shards;
  for (const TensorInfo &t : file->tensors()) {
    EXPECT_EQ(t.type, ElementType::BF16) << t.name;
    shards.push_back(t.shard);
  }
  std::sort(shards.begin(), shards.end());
  EXPECT_EQ(shards.front(), 0u);
  EXPECT_EQ(shards.back(), 2u) << "every shard holds tensors";
  // Qwen2's rows are rotate-half already: stored as given.
  expectValues(*file, c, values);
}

TEST(ModelWriters, HuggingFaceRefusesWhatItCannotHold) {
  TempDir dir;
  std::string hf = dir / "hf";
  ModelConfig biased = smallConfig();
  biased.qkvBias = true;
  InMemoryTensorSource::Values values = valuesFor(biased, 9);
  EXPECT_NE(errorOf([&] {
              writeHuggingFaceModel(biased,
                                    InMemoryTensorSource(biased, values), hf);
            }).find("LlamaForCausalLM has no QKV biases"),
            std::string::npos);
  ModelConfig qwen2 = qwen2Config();
  qwen2.qkvBias = false;
  InMemoryTensorSource::Values plain = valuesFor(qwen2, 9);
  EXPECT_NE(errorOf([&] {
              writeHuggingFaceModel(qwen2, InMemoryTensorSource(qwen2, plain),
                                    hf);
            }).find("Qwen2ForCausalLM always has QKV biases"),
            std::string::npos);
  ModelConfig c = smallConfig();
  InMemoryTensorSource::Values ok = valuesFor(c, 9);
  HuggingFaceOptions many;
  many.shards = 100;
  EXPECT_EQ(errorOf([&] {
              writeHuggingFaceModel(c, InMemoryTensorSource(c, ok), hf, many);
            }),
            hf + ": cannot split 20 tensors into 100 shards");
  EXPECT_FALSE(fs::exists(hf)) << "checked before the directory is made";

  InMemoryTensorSource::Values extra = ok;
  extra["rope_freqs.weight"] = {1, 2};
  std::vector<ModelTensor> tensors = modelTensors(c);
  tensors.push_back({"rope_freqs.weight", {2}});
  EXPECT_NE(errorOf([&] {
              writeHuggingFaceModel(c, InMemoryTensorSource(tensors, extra),
                                    hf);
            }).find("tensor 'rope_freqs.weight' has no Hugging Face name"),
            std::string::npos);
  EXPECT_EQ(hfTensorName("blk.12.attn_v.bias"),
            "model.layers.12.self_attn.v_proj.bias");
}

TEST(ModelWriters, TokenizerJsonTokenizesAsTheVocabulary) {
  TempDir dir;
  runtime::TokenizerSpec vocab = syntheticVocabulary(2000);
  uint64_t bytes = writeHFTokenizer(vocab, dir.path.string());
  EXPECT_EQ(bytes, fs::file_size(dir / "tokenizer.json") +
                       fs::file_size(dir / "tokenizer_config.json"));
  runtime::TokenizerSpec got = tokenizerFromJson(dir / "tokenizer.json");
  EXPECT_EQ(got.tokens, vocab.tokens);
  EXPECT_EQ(got.types, vocab.types);
  EXPECT_EQ(got.bosId, 1);
  EXPECT_EQ(got.eosId, 2);
  EXPECT_TRUE(got.addBos);
  EXPECT_TRUE(got.addSpacePrefix);
  EXPECT_EQ(got.chatTemplate, "");
  runtime::Tokenizer a(vocab), b(std::move(got));
  for (const char *text : {"hello world, Kiln!", "  the cat sat on the mat",
                           "Once upon a time", "zzz\xC3\xA9 <0x41>"})
    EXPECT_EQ(b.encode(text, true), a.encode(text, true)) << text;

  // The chat template goes into tokenizer_config.json.
  vocab.chatTemplate = "{{ messages[0]['content'] }}";
  writeHFTokenizer(vocab, dir.path.string());
  EXPECT_EQ(tokenizerFromJson(dir / "tokenizer.json").chatTemplate,
            vocab.chatTemplate);

  runtime::TokenizerSpec bpe;
  bpe.model = runtime::TokenizerSpec::Model::ByteLevelBPE;
  bpe.tokens = {"a"};
  EXPECT_NE(errorOf([&] {
              writeHFTokenizer(bpe, dir.path.string());
            }).find("only score-merge"),
            std::string::npos);
}

//===----------------------------------------------------------------------===//
// Sources
//===----------------------------------------------------------------------===//

/// Synthetic weights, remembering the largest slice a writer asked for.
class CountingSource : public TensorSource {
public:
  explicit CountingSource(const SyntheticModelSpec &spec) : inner(spec) {}
  const std::vector<ModelTensor> &tensors() const override {
    return inner.tensors();
  }
  std::unique_ptr<TensorValueStream>
  values(const ModelTensor &tensor) const override {
    struct Stream : TensorValueStream {
      std::unique_ptr<TensorValueStream> inner;
      int64_t *largest;
      void next(float *out, int64_t count) override {
        *largest = std::max(*largest, count);
        inner->next(out, count);
      }
    };
    auto stream = std::make_unique<Stream>();
    stream->inner = inner.values(tensor);
    stream->largest = &largest;
    return stream;
  }
  mutable int64_t largest = 0;

private:
  SyntheticTensorSource inner;
};

/// The writers stream: a tensor of 4 * 2^16 values is read in slices, and
/// Q and K a head at a time.
TEST(ModelWriters, WritersReadASliceAtATime) {
  TempDir dir;
  SyntheticModelSpec spec{smallConfig(), 1};
  spec.config.dim = 256;
  spec.config.vocabSize = 1024;
  spec.config.headDim = 64;
  ASSERT_FALSE(spec.config.validate());
  CountingSource gguf(spec), hf(spec);
  writeGGUFModel(spec.config, gguf, dir / "m.gguf");
  EXPECT_EQ(gguf.largest, int64_t(1) << 16);
  writeHuggingFaceModel(spec.config, hf, dir / "hf");
  EXPECT_EQ(hf.largest, int64_t(1) << 16);
}

TEST(ModelWriters, InMemorySourceChecksItsValues) {
  ModelConfig c = smallConfig();
  InMemoryTensorSource::Values values = valuesFor(c, 10);
  values.erase("blk.1.ffn_up.weight");
  EXPECT_EQ(errorOf([&] { InMemoryTensorSource source(c, values); }),
            "in-memory weights: no values for tensor 'blk.1.ffn_up.weight'");
  values = valuesFor(c, 10);
  values["output_norm.weight"].pop_back();
  EXPECT_EQ(errorOf([&] { InMemoryTensorSource source(c, values); }),
            "in-memory weights: tensor 'output_norm.weight' has 15 values, "
            "its shape needs 16");
}

} // namespace
