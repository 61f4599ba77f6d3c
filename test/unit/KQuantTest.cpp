//===- KQuantTest.cpp - Quantized blocks as llama.cpp makes them ----------===//
//
// Part of Kiln's unit tests. The shared fixtures tiny-0.5M-q8_0/q4_0.gguf and
// tiny-k-q8_0/q4_0/q4_k/q5_k/q6_k.gguf are `llama-quantize --pure`'s output
// (llama.cpp c392e50, no importance matrix, so its quantize_row_*_ref) from
// their F32 files: Kiln's quantizer, given the F32 tensors, must produce
// every one of their blocks byte for byte. Then the round trip's error bound,
// the inputs refused, and the Q4_K_M mix's choice of type per tensor
// (llama_tensor_get_type).
//
//===----------------------------------------------------------------------===//

#include "frontends/formats/Quantize.h"

#include "TestData.h"
#include "frontends/formats/GGUF.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>
#include <set>
#include <unistd.h>

using namespace kiln::formats;

namespace {

const ElementType kKTypes[] = {ElementType::Q4_K, ElementType::Q5_K,
                               ElementType::Q6_K};

std::string model(const std::string &name) {
  return kiln::test::modelsDir() + "/" + name;
}

std::string tempPath(const std::string &suffix) {
  static std::atomic<int> counter{0};
  return ::testing::TempDir() + "kiln-kquant-test-" + std::to_string(getpid()) +
         "-" + std::to_string(counter++) + suffix;
}

std::vector<uint8_t> quantize(ElementType type, const std::vector<float> &x) {
  std::vector<uint8_t> out(*rowBytes(type, static_cast<int64_t>(x.size())));
  quantizeRow(type, x.data(), out.data(), static_cast<int64_t>(x.size()),
              "test.weight");
  return out;
}

std::vector<float> dequantized(ElementType type,
                               const std::vector<uint8_t> &blocks) {
  size_t n = blocks.size() / blockBytes(type) * blockSize(type);
  std::vector<float> out(n);
  dequantize(type, blocks.data(), out.data(), static_cast<int64_t>(n));
  return out;
}

/// The message of the std::invalid_argument `f` throws ("" if none).
template <typename F> std::string errorOf(F f) {
  try {
    f();
  } catch (const std::invalid_argument &e) {
    return e.what();
  }
  return "";
}

/// `n` weights drawn from N(0, sigma), as the fixtures' matrices are.
std::vector<float> normalWeights(size_t n, unsigned seed, float sigma) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, sigma);
  std::vector<float> x(n);
  for (float &v : x)
    v = normal(rng);
  return x;
}

//===----------------------------------------------------------------------===//
// Against llama-quantize's files
//===----------------------------------------------------------------------===//

struct Agreement {
  int tensors = 0;
  int64_t blocks = 0, differing = 0;
  float maxDequantizedDifference = 0;
};

/// Prints where block `b` of tensor `t` (rows of `perRow` blocks) first
/// differs from the reference.
void reportDifference(const std::string &reference, const TensorInfo &t,
                      uint64_t b, uint64_t perRow, const uint8_t *mine,
                      const uint8_t *theirs, int64_t bytes) {
  int64_t byte = 0;
  while (byte < bytes && mine[byte] == theirs[byte])
    ++byte;
  std::cout << reference << ": tensor '" << t.name << "' row " << b / perRow
            << " block " << b % perRow << " first differs at byte " << byte
            << " (ours " << int(mine[byte]) << ", theirs " << int(theirs[byte])
            << ")\n";
}

/// Dequantized difference of two blocks of `type`.
float blockDifference(ElementType type, const uint8_t *a, const uint8_t *b) {
  std::vector<float> x(static_cast<size_t>(blockSize(type)));
  std::vector<float> y(x.size());
  dequantize(type, a, x.data(), blockSize(type));
  dequantize(type, b, y.data(), blockSize(type));
  float largest = 0;
  for (size_t i = 0; i < x.size(); ++i)
    largest = std::max(largest, std::fabs(x[i] - y[i]));
  return largest;
}

/// Quantizes every tensor `reference` holds as `type` from `source`'s F32
/// values and compares the blocks byte for byte.
Agreement compareWithLlamaQuantize(const std::string &source,
                                   const std::string &reference,
                                   ElementType type) {
  GGUFFile f32 = GGUFFile::open(model(source));
  GGUFFile ref = GGUFFile::open(model(reference));
  Agreement a;
  int shown = 0;
  int64_t bytesPerBlock = blockBytes(type);
  for (const TensorInfo &t : ref.tensors()) {
    const TensorInfo *in = f32.findTensor(t.name);
    EXPECT_NE(in, nullptr) << t.name;
    if (!in)
      continue;
    EXPECT_EQ(t.type, pureQuantizedType(t.shape, type)) << t.name;
    if (t.type != type)
      continue;
    EXPECT_EQ(in->type, ElementType::F32) << t.name;
    EXPECT_EQ(in->shape, t.shape) << t.name;
    std::vector<float> values(static_cast<size_t>(in->numElements()));
    dequantize(in->type, f32.data(*in), values.data(), in->numElements());
    std::vector<uint8_t> ours =
        quantizeTensor(type, t.name, t.shape, values.data());
    EXPECT_EQ(ours.size(), t.bytes) << t.name;
    if (ours.size() != t.bytes)
      continue;
    ++a.tensors;
    uint64_t perRow = static_cast<uint64_t>(t.shape.back() / blockSize(type));
    const uint8_t *theirs = ref.data(t);
    for (uint64_t b = 0; b < t.bytes / bytesPerBlock; ++b, ++a.blocks) {
      const uint8_t *mine = ours.data() + b * bytesPerBlock;
      const uint8_t *other = theirs + b * bytesPerBlock;
      if (std::memcmp(mine, other, bytesPerBlock) == 0)
        continue;
      ++a.differing;
      a.maxDequantizedDifference = std::max(a.maxDequantizedDifference,
                                            blockDifference(type, mine, other));
      if (shown++ < 4)
        reportDifference(reference, t, b, perRow, mine, other, bytesPerBlock);
    }
  }
  std::cout << reference << ": " << a.tensors << " tensors, " << a.blocks
            << " blocks compared, " << a.differing << " differ (largest "
            << "dequantized difference " << a.maxDequantizedDifference << ")\n";
  return a;
}

struct Fixture {
  const char *source, *reference;
  ElementType type;
};

void PrintTo(const Fixture &f, std::ostream *os) { *os << f.reference; }

class LlamaQuantizeBlocks : public ::testing::TestWithParam<Fixture> {};

TEST_P(LlamaQuantizeBlocks, EveryBlockIsByteIdentical) {
  const Fixture &f = GetParam();
  KILN_REQUIRE_TEST_FILE(model(f.source));
  KILN_REQUIRE_TEST_FILE(model(f.reference));
  Agreement a = compareWithLlamaQuantize(f.source, f.reference, f.type);
  // token_embd, output and 7 matrices in each of 2 layers.
  EXPECT_EQ(a.tensors, 16);
  EXPECT_GT(a.blocks, 0);
  EXPECT_EQ(a.differing, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, LlamaQuantizeBlocks,
    ::testing::Values(
        Fixture{"tiny-0.5M-f32.gguf", "tiny-0.5M-q8_0.gguf", ElementType::Q8_0},
        Fixture{"tiny-0.5M-f32.gguf", "tiny-0.5M-q4_0.gguf", ElementType::Q4_0},
        Fixture{"tiny-k-f32.gguf", "tiny-k-q8_0.gguf", ElementType::Q8_0},
        Fixture{"tiny-k-f32.gguf", "tiny-k-q4_0.gguf", ElementType::Q4_0},
        Fixture{"tiny-k-f32.gguf", "tiny-k-q4_k.gguf", ElementType::Q4_K},
        Fixture{"tiny-k-f32.gguf", "tiny-k-q5_k.gguf", ElementType::Q5_K},
        Fixture{"tiny-k-f32.gguf", "tiny-k-q6_k.gguf", ElementType::Q6_K}),
    [](const auto &info) {
      std::string name = std::string(info.param.reference);
      for (char &c : name)
        if (!std::isalnum(static_cast<unsigned char>(c)))
          c = '_';
      return name;
    });

/// Expects `path`'s tensors to be `ref`'s (same types, same bytes) where
/// `ref` stores them as `type`.
void expectTensorsOf(const GGUFFile &ours, const GGUFFile &ref,
                     ElementType type, int expected) {
  int compared = 0;
  for (const TensorInfo &t : ref.tensors()) {
    const TensorInfo *mine = ours.findTensor(t.name);
    ASSERT_NE(mine, nullptr) << t.name;
    if (mine->type != type || t.type != type)
      continue;
    ++compared;
    EXPECT_EQ(mine->shape, t.shape) << t.name;
    ASSERT_EQ(mine->bytes, t.bytes) << t.name;
    EXPECT_EQ(std::memcmp(ours.data(*mine), ref.data(t), t.bytes), 0) << t.name;
  }
  EXPECT_EQ(compared, expected) << elementTypeName(type);
}

TEST(KQuantGGUF, PureFilesAreLlamaQuantizes) {
  KILN_REQUIRE_TEST_FILE(model("tiny-k-f32.gguf"));
  for (auto [reference, scheme, type] :
       {std::tuple{"tiny-k-q4_k.gguf", QuantizationScheme::Q4_K,
                   ElementType::Q4_K},
        std::tuple{"tiny-k-q6_k.gguf", QuantizationScheme::Q6_K,
                   ElementType::Q6_K}}) {
    KILN_REQUIRE_TEST_FILE(model(reference));
    std::string path = tempPath(".gguf");
    quantizeGGUFFile(model("tiny-k-f32.gguf"), path, scheme);
    GGUFFile ours = GGUFFile::open(path);
    GGUFFile ref = GGUFFile::open(model(reference));
    EXPECT_EQ(ours.getInt("general.file_type"),
              ref.getInt("general.file_type"));
    EXPECT_EQ(ours.tensors().size(), ref.tensors().size());
    expectTensorsOf(ours, ref, type, 16);
    std::remove(path.c_str());
  }
}

/// The tiny-k model has 2 layers: use_more_bits picks layer 1 (>= 7*2/8),
/// not layer 0. Its Q4_K tensors must be tiny-k-q4_k's, its Q6_K ones
/// tiny-k-q6_k's: the mix only chooses among the pure files' blocks.
TEST(KQuantGGUF, Q4_K_MMixesThePureFilesBlocks) {
  for (const char *name :
       {"tiny-k-f32.gguf", "tiny-k-q4_k.gguf", "tiny-k-q6_k.gguf"})
    KILN_REQUIRE_TEST_FILE(model(name));
  std::string path = tempPath(".gguf");
  quantizeGGUFFile(model("tiny-k-f32.gguf"), path, QuantizationScheme::Q4_K_M);
  GGUFFile ours = GGUFFile::open(path);
  EXPECT_EQ(ours.getInt("general.file_type"), 15);
  std::map<std::string, ElementType> expected = {
      {"output.weight", ElementType::Q6_K},
      {"token_embd.weight", ElementType::Q4_K},
      {"blk.0.attn_v.weight", ElementType::Q4_K},
      {"blk.1.attn_v.weight", ElementType::Q6_K},
      {"blk.0.ffn_down.weight", ElementType::Q4_K},
      {"blk.1.ffn_down.weight", ElementType::Q6_K},
      {"blk.1.attn_q.weight", ElementType::Q4_K},
      {"blk.0.attn_norm.weight", ElementType::F32},
      {"output_norm.weight", ElementType::F32}};
  for (const auto &[name, type] : expected) {
    const TensorInfo *t = ours.findTensor(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->type, type) << name;
  }
  // 16 matrices: output and layer 1's attn_v and ffn_down in Q6_K, the
  // other 13 in Q4_K.
  expectTensorsOf(ours, GGUFFile::open(model("tiny-k-q4_k.gguf")),
                  ElementType::Q4_K, 13);
  expectTensorsOf(ours, GGUFFile::open(model("tiny-k-q6_k.gguf")),
                  ElementType::Q6_K, 3);
  std::remove(path.c_str());
}

//===----------------------------------------------------------------------===//
// Hand-made rows
//===----------------------------------------------------------------------===//

TEST(KQuant, ZerosGiveAZeroBlock) {
  std::vector<float> zeros(256, 0.0f);
  for (ElementType type : kKTypes) {
    std::vector<uint8_t> q = quantize(type, zeros);
    for (size_t i = 0; i < q.size(); ++i)
      EXPECT_EQ(q[i], 0) << elementTypeName(type) << " byte " << i;
    for (float v : dequantized(type, q))
      EXPECT_EQ(v, 0.0f) << elementTypeName(type);
  }
}

/// Weights on Q6_K's grid come back exactly: in each sub-block of 16 the
/// first weight, -4, has the largest magnitude, so the levels are 8x, the
/// least-squares scale is 0.125 exactly (sums of small multiples of 2^-12),
/// no trial beats a perfect fit, d = 0.125 / -128 = -2^-10 is exact in f16
/// and every int8 scale is -128.
TEST(KQuant, Q6_KKeepsItsGrid) {
  std::vector<float> x(256);
  for (int i = 0; i < 256; ++i)
    x[i] = i % 16 == 0 ? -4.0f : static_cast<float>((i * 7) % 64 - 32) * 0.125f;
  std::vector<uint8_t> q = quantize(ElementType::Q6_K, x);
  EXPECT_EQ(halfToFloat(static_cast<uint16_t>(q[208] | q[209] << 8)),
            -1.0f / 1024.0f);
  for (int s = 0; s < 16; ++s)
    EXPECT_EQ(static_cast<int8_t>(q[192 + s]), -128) << s;
  EXPECT_EQ(dequantized(ElementType::Q6_K, q), x);
}

/// The round trip's error per weight, relative to the spread of its
/// sub-block: a level step of the fitted scale is range/nmax, the stored
/// scale and min are 6-bit multiples of f16 super-block scales, and the
/// least-squares fit may give up the extremes of a sub-block by up to about
/// a step. Bounds (measured maxima on N(0, 0.05) weights are 0.73, 0.97 and
/// 0.61 steps): 1.5 steps for Q4_K/Q5_K, 1.5 steps of amax/32 for Q6_K.
TEST(KQuant, RoundTripIsWithinAStepAndAHalf) {
  std::vector<float> x = normalWeights(256 * 64, 3, 0.05f);
  for (ElementType type : kKTypes) {
    std::vector<uint8_t> q = quantize(type, x);
    std::vector<float> back = dequantized(type, q);
    int group = type == ElementType::Q6_K ? 16 : 32;
    double squares = 0, errors = 0;
    float worst = 0;
    for (size_t g = 0; g < x.size(); g += group) {
      float lo = 0, hi = 0, amax = 0;
      for (int i = 0; i < group; ++i) {
        lo = std::min(lo, x[g + i]);
        hi = std::max(hi, x[g + i]);
        amax = std::max(amax, std::fabs(x[g + i]));
      }
      float step = type == ElementType::Q4_K   ? (hi - lo) / 15
                   : type == ElementType::Q5_K ? (hi - lo) / 31
                                               : amax / 32;
      for (int i = 0; i < group; ++i) {
        float error = std::fabs(back[g + i] - x[g + i]);
        EXPECT_LE(error, 1.5f * step)
            << elementTypeName(type) << " weight " << g + i;
        worst = std::max(worst, error / step);
        squares += double(x[g + i]) * x[g + i];
        errors += double(error) * error;
      }
    }
    double relative = std::sqrt(errors / squares);
    std::cout << elementTypeName(type) << ": worst error " << worst
              << " steps, relative RMS error " << relative << "\n";
    // 4, 5 and 6 bits: each bit about halves the error.
    EXPECT_LT(relative, type == ElementType::Q4_K   ? 0.12
                        : type == ElementType::Q5_K ? 0.06
                                                    : 0.03);
  }
}

TEST(KQuant, RefusesNaNAndInfinities) {
  for (ElementType type : kKTypes) {
    std::vector<float> x(512, 0.5f);
    x[256 + 37] = std::numeric_limits<float>::quiet_NaN();
    std::string error = errorOf([&] {
      quantizeTensor(type, "blk.0.ffn_up.weight", {2, 256}, x.data());
    });
    EXPECT_NE(error.find("tensor 'blk.0.ffn_up.weight': row 1, column 37 is "
                         "NaN"),
              std::string::npos)
        << error;
    x[256 + 37] = 0.5f;
    x[200] = -std::numeric_limits<float>::infinity();
    error = errorOf([&] {
      quantizeTensor(type, "blk.0.ffn_up.weight", {2, 256}, x.data());
    });
    EXPECT_NE(error.find("row 0, column 200 is infinite"), std::string::npos)
        << error;
    EXPECT_NE(error.find(elementTypeName(type)), std::string::npos) << error;
  }
}

TEST(KQuant, RefusesScalesBeyondF16) {
  // 1e10 in a sub-block of zeros: Q4_K's d is about 1e10/15/63, Q5_K's
  // 1e10/31/63, Q6_K's 1e10/32/128 -- all beyond 65504.
  std::vector<float> x(256, 0.0f);
  x[3] = 1e10f;
  for (ElementType type : kKTypes) {
    std::string error = errorOf(
        [&] { quantizeTensor(type, "token_embd.weight", {1, 256}, x.data()); });
    EXPECT_NE(error.find("token_embd.weight': row 0, column 0"),
              std::string::npos)
        << error;
    EXPECT_NE(error.find("beyond f16"), std::string::npos) << error;
  }
}

TEST(KQuant, RefusesRowsThatAreNotWholeBlocks) {
  std::vector<float> x(2 * 288, 0.1f);
  for (ElementType type : kKTypes) {
    std::string error = errorOf([&] {
      quantizeTensor(type, "blk.0.ffn_down.weight", {2, 288}, x.data());
    });
    EXPECT_NE(error.find("tensor 'blk.0.ffn_down.weight' has rows of 288 "
                         "weights, not a multiple of 256"),
              std::string::npos)
        << error;
  }
}

TEST(KQuant, NamesAndFileTypes) {
  EXPECT_EQ(parseQuantizedType("q4_k"), ElementType::Q4_K);
  EXPECT_EQ(parseQuantizedType("q5_k"), ElementType::Q5_K);
  EXPECT_EQ(parseQuantizedType("q6_k"), ElementType::Q6_K);
  EXPECT_EQ(parseQuantizedType("q4_k_m"), std::nullopt);
  for (ElementType type : kKTypes)
    EXPECT_TRUE(isBlockQuantized(type));
  EXPECT_EQ(llamaFileType(ElementType::Q4_K), 15u);
  EXPECT_EQ(llamaFileType(ElementType::Q5_K), 17u);
  EXPECT_EQ(llamaFileType(ElementType::Q6_K), 18u);

  for (const char *name : {"q8_0", "q4_0", "q4_k", "q5_k", "q6_k", "q4_k_m"}) {
    std::optional<QuantizationScheme> scheme = parseQuantizationScheme(name);
    ASSERT_TRUE(scheme) << name;
    EXPECT_STREQ(quantizationSchemeName(*scheme), name);
  }
  EXPECT_EQ(parseQuantizationScheme("q4_k_s"), std::nullopt);
  EXPECT_EQ(parseQuantizationScheme("f16"), std::nullopt);
  EXPECT_EQ(schemeBaseType(QuantizationScheme::Q4_K_M), ElementType::Q4_K);
  EXPECT_EQ(llamaFileType(QuantizationScheme::Q4_K_M), 15u);
  EXPECT_EQ(llamaFileType(QuantizationScheme::Q6_K), 18u);
  EXPECT_EQ(llamaFileType(QuantizationScheme::Q8_0), 7u);
}

//===----------------------------------------------------------------------===//
// The Q4_K_M mix
//===----------------------------------------------------------------------===//

ElementType q4KM(const std::string &name, std::vector<int64_t> shape,
                 int layer = 0, int layers = 32, bool hasOutput = true) {
  return schemeTensorType(QuantizationScheme::Q4_K_M, name, shape,
                          TensorPlacement{layer, layers, hasOutput});
}

TEST(Q4_K_M, MoreBitsInTheLayersLlamaCppPicks) {
  // use_more_bits(i, 32): i < 4, i >= 28, or (i - 4) % 3 == 2.
  const std::set<int> sixBit = {0,  1,  2,  3,  6,  9,  12, 15,
                                18, 21, 24, 27, 28, 29, 30, 31};
  for (int layer = 0; layer < 32; ++layer) {
    std::string blk = "blk." + std::to_string(layer) + ".";
    ElementType wanted =
        sixBit.count(layer) ? ElementType::Q6_K : ElementType::Q4_K;
    EXPECT_EQ(q4KM(blk + "attn_v.weight", {1024, 4096}, layer), wanted)
        << layer;
    EXPECT_EQ(q4KM(blk + "ffn_down.weight", {4096, 14336}, layer), wanted)
        << layer;
    for (const char *other :
         {"attn_q.weight", "attn_k.weight", "attn_output.weight",
          "ffn_gate.weight", "ffn_up.weight"})
      EXPECT_EQ(q4KM(blk + other, {4096, 4096}, layer), ElementType::Q4_K)
          << blk << other;
    EXPECT_EQ(q4KM(blk + "attn_norm.weight", {4096}, layer), ElementType::F32);
    EXPECT_EQ(q4KM(blk + "ffn_norm.weight", {4096}, layer), ElementType::F32);
  }
  // 2 layers (the tiny-k fixture): only layer 1 (>= 7*2/8).
  EXPECT_EQ(q4KM("blk.0.attn_v.weight", {128, 256}, 0, 2), ElementType::Q4_K);
  EXPECT_EQ(q4KM("blk.1.attn_v.weight", {128, 256}, 1, 2), ElementType::Q6_K);
}

TEST(Q4_K_M, ClassifierEmbeddingAndOthers) {
  EXPECT_EQ(q4KM("output.weight", {32000, 4096}), ElementType::Q6_K);
  EXPECT_EQ(q4KM("token_embd.weight", {32000, 4096}), ElementType::Q4_K);
  // Tied: the embedding is the classifier.
  EXPECT_EQ(q4KM("token_embd.weight", {32000, 4096}, 0, 32, false),
            ElementType::Q6_K);
  EXPECT_EQ(q4KM("blk.0.attn_qkv.weight", {12288, 4096}), ElementType::Q5_K);
  EXPECT_EQ(q4KM("output_norm.weight", {4096}), ElementType::F32);
  EXPECT_EQ(q4KM("blk.0.attn_q.bias", {4096, 1}), ElementType::F32);
  EXPECT_EQ(q4KM("blk.0.ffn_gate_inp.weight", {8, 4096}), ElementType::F32);
}

TEST(Q4_K_M, RowsThatAreNotWholeSuperBlocksFallBack) {
  // A multiple of 32: Q8_0 (llama.cpp: Q5_0 for Q4_K, Q5_1 for Q5_K, Q8_0
  // for Q6_K; Kiln has no Q5_0/Q5_1).
  EXPECT_EQ(q4KM("blk.5.attn_q.weight", {288, 288}), ElementType::Q8_0);
  EXPECT_EQ(q4KM("blk.0.attn_v.weight", {96, 288}), ElementType::Q8_0);
  EXPECT_EQ(q4KM("output.weight", {512, 288}), ElementType::Q8_0);
  EXPECT_EQ(q4KM("blk.0.attn_qkv.weight", {864, 288}), ElementType::Q8_0);
  // Not even 32: kept (llama.cpp: F16, or an error for output.weight).
  EXPECT_EQ(q4KM("blk.0.ffn_down.weight", {64, 172}), ElementType::F32);
  EXPECT_EQ(q4KM("output.weight", {512, 100}), ElementType::F32);
  // The columns do not matter, only the row length.
  EXPECT_EQ(q4KM("blk.5.attn_q.weight", {100, 256}), ElementType::Q4_K);
}

TEST(Q4_K_M, PureSchemesTakeEveryMatrix) {
  for (auto [scheme, type] :
       {std::pair{QuantizationScheme::Q4_K, ElementType::Q4_K},
        {QuantizationScheme::Q5_K, ElementType::Q5_K},
        {QuantizationScheme::Q6_K, ElementType::Q6_K},
        {QuantizationScheme::Q8_0, ElementType::Q8_0}}) {
    EXPECT_EQ(schemeTensorType(scheme, "output.weight", {512, 256}), type);
    EXPECT_EQ(schemeTensorType(scheme, "blk.1.attn_v.weight", {128, 256}),
              type);
    EXPECT_EQ(schemeTensorType(scheme, "output_norm.weight", {256}),
              ElementType::F32);
  }
}

} // namespace
