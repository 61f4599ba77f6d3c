//===- SyntheticModelTest.cpp - Synthetic models read back ----------------===//
//
// Part of Kiln's unit tests (MLIR-free). Writes synthetic models with the
// production writers of frontends/formats/SyntheticModel.h and reads them
// back through Kiln's ordinary readers (GGUF, llama2.c, Hugging Face,
// tokenizer.bin, tokenizer.json): the configuration, every weight and the
// vocabulary must come back as written. ModelWritersTest.cpp tests the
// writers underneath with weights of its own.
//
//===----------------------------------------------------------------------===//

#include "frontends/formats/SyntheticModel.h"

#include "frontends/formats/GGUF.h"
#include "frontends/formats/HuggingFace.h"
#include "frontends/formats/Llama2c.h"
#include "frontends/formats/TokenizerLoaders.h"
#include "frontends/formats/WeightFile.h"
#include "runtime/Tokenizer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <unistd.h>

using namespace kiln::formats;
using kiln::runtime::TokenType;

namespace {

/// A fresh path in the test temp directory, removed with the object.
struct TempFile {
  explicit TempFile(const std::string &suffix) {
    static std::atomic<int> counter{0};
    path = ::testing::TempDir() + "kiln-synthetic-" + std::to_string(getpid()) +
           "-" + std::to_string(counter++) + suffix;
  }
  ~TempFile() { std::remove(path.c_str()); }
  std::string path;
};

std::string readAll(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

SyntheticModelSpec tinySpec(uint64_t seed) {
  return {syntheticConfig("tiny"), seed};
}

/// A tiny model with an untied classifier (like llama-1b, but small).
SyntheticModelSpec untiedSpec(uint64_t seed) {
  SyntheticModelSpec spec = tinySpec(seed);
  spec.config.numLayers = 2;
  spec.config.tiedClassifier = false;
  return spec;
}

/// Every tensor of `file` holds exactly the values the spec generates (as
/// f16 where the file stores f16), and the file holds no other tensor.
void expectWeights(const SyntheticModelSpec &spec, const WeightFile &file) {
  std::vector<SyntheticTensor> tensors = syntheticTensors(spec.config);
  EXPECT_EQ(file.tensors().size(), tensors.size());
  for (const SyntheticTensor &t : tensors) {
    const TensorInfo *info = file.find(t.name);
    ASSERT_NE(info, nullptr) << t.name;
    EXPECT_EQ(info->shape, t.shape) << t.name;
    std::vector<float> got(static_cast<size_t>(t.numElements()));
    dequantize(info->type, file.data(*info), got.data(), t.numElements());
    std::vector<float> want = syntheticTensorData(spec, t.name);
    for (size_t i = 0; i < want.size(); ++i) {
      float expected = info->type == ElementType::F16
                           ? halfToFloat(floatToHalf(want[i]))
                           : want[i];
      ASSERT_EQ(got[i], expected) << t.name << "[" << i << "]";
    }
  }
}

//===----------------------------------------------------------------------===//
// Configurations and weights
//===----------------------------------------------------------------------===//

TEST(SyntheticModelTest, NamedConfigs) {
  EXPECT_EQ(syntheticConfigNames(),
            (std::vector<std::string>{"llama-110m", "llama-1b", "tiny",
                                      "tiny-llama3"}));
  for (const std::string &name : syntheticConfigNames())
    EXPECT_FALSE(syntheticConfig(name).validate()) << name;

  ModelConfig m = syntheticConfig("llama-110m");
  EXPECT_EQ(m.dim, 768);
  EXPECT_EQ(m.hiddenDim, 2048);
  EXPECT_EQ(m.numLayers, 12);
  EXPECT_EQ(m.numHeads, 12);
  EXPECT_EQ(m.numKvHeads, 12);
  EXPECT_EQ(m.vocabSize, 32000);
  EXPECT_EQ(m.contextLength, 1024);
  EXPECT_TRUE(m.tiedClassifier);
  // 32000*768 + 12 * (4*768*768 + 3*768*2048 + 2*768) + 768.
  EXPECT_EQ(syntheticParameterCount(m), 109529856u);

  ModelConfig b = syntheticConfig("llama-1b");
  EXPECT_EQ(b.dim, 2048);
  EXPECT_EQ(b.hiddenDim, 5632);
  EXPECT_EQ(b.numLayers, 22);
  EXPECT_EQ(b.numHeads, 32);
  EXPECT_EQ(b.numKvHeads, 4);
  EXPECT_EQ(b.headDim, 64);
  EXPECT_EQ(b.contextLength, 2048);
  EXPECT_FALSE(b.tiedClassifier);
  // TinyLlama's 1.1B: two 32000x2048 embeddings, 22 blocks with k and v of
  // 256 rows.
  EXPECT_EQ(syntheticParameterCount(b), 1100048384u);

  ModelConfig t = syntheticConfig("tiny");
  EXPECT_EQ(t.dim, 64);
  EXPECT_EQ(t.hiddenDim, 172);
  EXPECT_EQ(t.numLayers, 5);
  EXPECT_EQ(t.numHeads, 8);
  EXPECT_EQ(t.numKvHeads, 4);
  EXPECT_EQ(t.vocabSize, 512);
  EXPECT_EQ(t.contextLength, 512);

  ModelConfig l3 = syntheticConfig("tiny-llama3");
  EXPECT_EQ(l3.dim, t.dim);
  ASSERT_TRUE(l3.ropeScaling);
  EXPECT_EQ(l3.ropeScaling->kind, RopeScalingConfig::Kind::Llama3);
  EXPECT_EQ(l3.ropeScaling->originalContext, 64);

  try {
    syntheticConfig("llama-7b");
    FAIL() << "expected an error";
  } catch (const std::invalid_argument &e) {
    EXPECT_NE(std::string(e.what()).find("'llama-7b' (known: llama-110m, "
                                         "llama-1b, tiny, tiny-llama3)"),
              std::string::npos)
        << e.what();
  }
}

TEST(SyntheticModelTest, WeightsAreNormalAndNormsAreOne) {
  SyntheticModelSpec spec = tinySpec(3);
  std::vector<float> emb = syntheticTensorData(spec, "token_embd.weight");
  ASSERT_EQ(emb.size(), 512u * 64u);
  double sum = 0, squares = 0;
  for (float v : emb) {
    sum += v;
    squares += double(v) * v;
  }
  double mean = sum / emb.size();
  double stddev = std::sqrt(squares / emb.size() - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.001);
  EXPECT_NEAR(stddev, 0.02, 0.001);
  for (float v : syntheticTensorData(spec, "blk.3.ffn_norm.weight"))
    EXPECT_EQ(v, 1.0f);
  EXPECT_THROW(syntheticTensorData(spec, "output.weight"),
               std::invalid_argument);
}

TEST(SyntheticModelTest, SeedsDetermineWeights) {
  std::vector<float> a =
      syntheticTensorData(tinySpec(1), "blk.0.attn_q.weight");
  EXPECT_EQ(a, syntheticTensorData(tinySpec(1), "blk.0.attn_q.weight"));
  EXPECT_NE(a, syntheticTensorData(tinySpec(2), "blk.0.attn_q.weight"));
  EXPECT_NE(a, syntheticTensorData(tinySpec(1), "blk.1.attn_q.weight"));

  // Generating in slices gives the values generating at once does.
  SyntheticTensor q = syntheticTensors(tinySpec(1).config)[2];
  ASSERT_EQ(q.name, "blk.0.attn_q.weight");
  SyntheticTensorValues values(1, q);
  std::vector<float> sliced(a.size());
  values.next(sliced.data(), 3);
  values.next(sliced.data() + 3, 1000);
  values.next(sliced.data() + 1003, static_cast<int64_t>(a.size()) - 1003);
  EXPECT_EQ(sliced, a);

  // The generator is Kiln's own (mt19937_64 and Box-Muller): files made
  // today and tomorrow agree. A change here changes every synthetic model.
  EXPECT_NEAR(a[0], 0.00304082f, 1e-6);
  EXPECT_NEAR(a[1], 0.0129033f, 1e-6);
  EXPECT_NEAR(a[2], 0.00571091f, 1e-6);
}

//===----------------------------------------------------------------------===//
// Vocabulary
//===----------------------------------------------------------------------===//

TEST(SyntheticModelTest, Vocabulary) {
  for (int64_t size : {259, 512, 32000}) {
    kiln::runtime::TokenizerSpec v = syntheticVocabulary(size);
    ASSERT_EQ(v.tokens.size(), size_t(size));
    ASSERT_EQ(v.scores.size(), size_t(size));
    ASSERT_EQ(v.types.size(), size_t(size));
    EXPECT_EQ(std::set<std::string>(v.tokens.begin(), v.tokens.end()).size(),
              size_t(size))
        << "pieces repeat";
    EXPECT_EQ(v.tokens[0], "<unk>");
    EXPECT_EQ(v.types[0], TokenType::Unknown);
    EXPECT_EQ(v.tokens[1], "<s>");
    EXPECT_EQ(v.tokens[2], "</s>");
    EXPECT_EQ(v.types[2], TokenType::Control);
    EXPECT_EQ(v.tokens[3], "<0x00>");
    EXPECT_EQ(v.tokens[258], "<0xFF>");
    EXPECT_EQ(v.types[258], TokenType::Byte);
    for (int64_t id = 1; id < size; ++id)
      ASSERT_LE(v.scores[id], v.scores[id - 1]) << "token " << id;
  }
  EXPECT_THROW(syntheticVocabulary(258), std::invalid_argument);

  kiln::runtime::Tokenizer tokenizer(syntheticVocabulary(32000));
  std::vector<int32_t> ids = tokenizer.encode("hello world, Kiln!", true);
  EXPECT_EQ(ids.front(), 1);
  EXPECT_LT(ids.size(), 12u) << "the pieces should merge";
  EXPECT_EQ(tokenizer.decode(ids), "hello world, Kiln!");
}

//===----------------------------------------------------------------------===//
// Files read back
//===----------------------------------------------------------------------===//

TEST(SyntheticModelTest, GGUFReadsBack) {
  for (ElementType type : {ElementType::F32, ElementType::F16}) {
    SCOPED_TRACE(elementTypeName(type));
    SyntheticModelSpec spec = tinySpec(7);
    TempFile file(".gguf");
    uint64_t bytes = writeSyntheticGGUF(spec, file.path, type);
    EXPECT_EQ(bytes, readAll(file.path).size());

    GGUFFile gguf = GGUFFile::open(file.path);
    EXPECT_EQ(gguf.version(), 3u);
    EXPECT_EQ(gguf.getString("general.architecture"), "llama");
    EXPECT_EQ(gguf.getInt("llama.embedding_length"), 64);
    EXPECT_EQ(gguf.getInt("llama.feed_forward_length"), 172);
    EXPECT_EQ(gguf.getInt("llama.block_count"), 5);
    EXPECT_EQ(gguf.getInt("llama.attention.head_count"), 8);
    EXPECT_EQ(gguf.getInt("llama.attention.head_count_kv"), 4);
    EXPECT_EQ(gguf.getInt("llama.rope.dimension_count"), 8);
    EXPECT_EQ(gguf.getInt("llama.context_length"), 512);
    EXPECT_EQ(gguf.getInt("llama.vocab_size"), 512);
    EXPECT_EQ(gguf.getInt("general.file_type"),
              type == ElementType::F16 ? 1 : 0);
    EXPECT_EQ(gguf.findTensor("output.weight"), nullptr) << "tied classifier";
    EXPECT_EQ(gguf.findTensor("blk.0.attn_q.weight")->type, type);
    EXPECT_EQ(gguf.findTensor("blk.0.attn_norm.weight")->type,
              ElementType::F32);

    kiln::runtime::TokenizerSpec vocab = tokenizerFromGGUF(gguf);
    kiln::runtime::TokenizerSpec want = syntheticVocabulary(512);
    EXPECT_EQ(vocab.tokens, want.tokens);
    EXPECT_EQ(vocab.scores, want.scores);
    EXPECT_EQ(vocab.types, want.types);
    EXPECT_EQ(vocab.bosId, 1);
    EXPECT_EQ(vocab.eosId, 2);

    expectWeights(spec, *WeightFile::open(WeightFileFormat::GGUF, file.path));
  }
}

TEST(SyntheticModelTest, Llama2cReadsBack) {
  for (SyntheticModelSpec spec : {tinySpec(7), untiedSpec(8)}) {
    const ModelConfig &c = spec.config;
    SCOPED_TRACE(c.tiedClassifier ? "tied" : "untied");
    TempFile file(".bin");
    uint64_t bytes = writeSyntheticLlama2c(spec, file.path);
    EXPECT_EQ(bytes, readAll(file.path).size());

    Llama2cCheckpoint ckpt = readLlama2c(file.path);
    EXPECT_EQ(ckpt.version, 0);
    EXPECT_EQ(ckpt.config.dim, c.dim);
    EXPECT_EQ(ckpt.config.hiddenDim, c.hiddenDim);
    EXPECT_EQ(ckpt.config.numLayers, c.numLayers);
    EXPECT_EQ(ckpt.config.numHeads, c.numHeads);
    EXPECT_EQ(ckpt.config.numKvHeads, c.numKvHeads);
    EXPECT_EQ(ckpt.config.headDim, c.headDim);
    EXPECT_EQ(ckpt.config.vocabSize, c.vocabSize);
    EXPECT_EQ(ckpt.config.contextLength, c.contextLength);
    EXPECT_EQ(ckpt.config.tiedClassifier, c.tiedClassifier);
    // The classifier (untied) is the last tensor and ends the file.
    const TensorInfo &last = ckpt.tensors.back();
    if (!c.tiedClassifier) {
      EXPECT_EQ(last.name, "output.weight");
      EXPECT_EQ(last.offset + last.bytes, bytes);
    }

    expectWeights(spec,
                  *WeightFile::open(WeightFileFormat::Llama2c, file.path));
  }
}

TEST(SyntheticModelTest, BothFormatsHoldTheSameWeights) {
  SyntheticModelSpec spec = untiedSpec(11);
  TempFile bin(".bin"), gguf(".gguf");
  writeSyntheticLlama2c(spec, bin.path);
  writeSyntheticGGUF(spec, gguf.path);
  auto a = WeightFile::open(WeightFileFormat::Llama2c, bin.path);
  auto b = WeightFile::open(WeightFileFormat::GGUF, gguf.path);
  for (const char *name :
       {"token_embd.weight", "blk.1.ffn_down.weight", "output.weight"}) {
    const TensorInfo *ta = a->find(name), *tb = b->find(name);
    ASSERT_TRUE(ta && tb) << name;
    ASSERT_EQ(ta->bytes, tb->bytes) << name;
    EXPECT_EQ(std::memcmp(a->data(*ta), b->data(*tb), ta->bytes), 0) << name;
  }
}

/// export.py's version 1 and Hugging Face's safetensors hold the legacy
/// checkpoint's values; Hugging Face's Q and K rows are in rotate-half order
/// and its vocabulary, tokenizer.json, tokenizes as the GGUF's does.
TEST(SyntheticModelTest, Llama2cV1AndHuggingFaceHoldTheSameWeights) {
  namespace fs = std::filesystem;
  SyntheticModelSpec spec = untiedSpec(12);
  TempFile v0(".bin"), v1(".bin"), hfName(".hf");
  writeSyntheticLlama2c(spec, v0.path);
  uint64_t bytes = writeSyntheticLlama2c(spec, v1.path, /*version=*/1);
  EXPECT_EQ(bytes, readAll(v1.path).size());
  EXPECT_EQ(readLlama2c(v1.path).version, 1);
  expectWeights(spec, *WeightFile::open(WeightFileFormat::Llama2c, v1.path));

  std::string hf = hfName.path;
  bytes = writeSyntheticHuggingFace(spec, hf, ElementType::F32, /*shards=*/2);
  ModelConfig config = readHFConfig(hf + "/config.json");
  EXPECT_EQ(config.ropePairs, RopePairs::Halves);
  EXPECT_EQ(config.tiedClassifier, false);
  EXPECT_EQ(config.numKvHeads, spec.config.numKvHeads);
  auto a = WeightFile::open(WeightFileFormat::Llama2c, v0.path);
  auto b = WeightFile::open(WeightFileFormat::Safetensors, hf);
  EXPECT_EQ(b->tensors().size(), a->tensors().size());
  for (const char *name : {"token_embd.weight", "blk.1.ffn_down.weight",
                           "blk.0.attn_norm.weight", "output.weight"}) {
    const TensorInfo *ta = a->find(name), *tb = b->find(name);
    ASSERT_TRUE(ta && tb) << name;
    ASSERT_EQ(ta->bytes, tb->bytes) << name;
    EXPECT_EQ(std::memcmp(a->data(*ta), b->data(*tb), ta->bytes), 0) << name;
  }
  // Head 1's row 1 (i = 1 of the second half) was adjacent row 2*1 + 1.
  const TensorInfo *qa = a->find("blk.0.attn_k.weight"),
                   *qb = b->find("blk.0.attn_k.weight");
  ASSERT_TRUE(qa && qb);
  int64_t d = spec.config.headDim, row = spec.config.dim * 4;
  EXPECT_EQ(std::memcmp(a->data(*qa) + (d + 3) * row,
                        b->data(*qb) + (d + 1 + d / 2) * row, row),
            0);
  EXPECT_NE(std::memcmp(a->data(*qa), b->data(*qb), qa->bytes), 0);

  kiln::runtime::Tokenizer json(tokenizerFromJson(hf + "/tokenizer.json"));
  kiln::runtime::Tokenizer gguf(syntheticVocabulary(spec.config.vocabSize));
  EXPECT_EQ(json.encode("the cat sat, Once upon a time", true),
            gguf.encode("the cat sat, Once upon a time", true));
  fs::remove_all(hf);
}

TEST(SyntheticModelTest, Llama2cTokenizerReadsBack) {
  kiln::runtime::TokenizerSpec want = syntheticVocabulary(512, " ");
  TempFile file(".tokenizer.bin");
  uint64_t bytes = writeLlama2cTokenizer(want, file.path);
  EXPECT_EQ(bytes, readAll(file.path).size());
  kiln::runtime::TokenizerSpec got = loadLlama2cTokenizer(file.path);
  EXPECT_EQ(got.tokens, want.tokens);
  EXPECT_EQ(got.scores, want.scores);
  EXPECT_EQ(got.types, want.types);
  EXPECT_EQ(got.bosId, 1);
  EXPECT_EQ(got.eosId, 2);
  kiln::runtime::Tokenizer tokenizer(std::move(got));
  std::vector<int32_t> ids = tokenizer.encode("the cat sat", true);
  EXPECT_EQ(tokenizer.decode(ids), "the cat sat");
}

TEST(SyntheticModelTest, SameSeedSameBytes) {
  TempFile a(".gguf"), b(".gguf"), c(".gguf");
  writeSyntheticGGUF(tinySpec(5), a.path, ElementType::F16);
  writeSyntheticGGUF(tinySpec(5), b.path, ElementType::F16);
  writeSyntheticGGUF(tinySpec(6), c.path, ElementType::F16);
  EXPECT_EQ(readAll(a.path), readAll(b.path));
  EXPECT_NE(readAll(a.path), readAll(c.path));
}

TEST(SyntheticModelTest, RejectsWhatItCannotWrite) {
  SyntheticModelSpec spec = tinySpec(1);
  TempFile file(".gguf");
  EXPECT_THROW(writeSyntheticGGUF(spec, file.path, ElementType::Q8_0),
               std::invalid_argument);
  spec.config.numKvHeads = 3; // 8 heads cannot share 3 kv heads.
  EXPECT_THROW(writeSyntheticGGUF(spec, file.path), std::invalid_argument);
  EXPECT_THROW(writeSyntheticLlama2c(tinySpec(1), "/nonexistent-dir/m.bin"),
               std::runtime_error);
  EXPECT_THROW(writeSyntheticHuggingFace(tinySpec(1), file.path,
                                         ElementType::F32, /*shards=*/0),
               std::invalid_argument);
}

} // namespace
