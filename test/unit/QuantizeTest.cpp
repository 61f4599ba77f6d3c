//===- QuantizeTest.cpp - Q8_0 and Q4_0 blocks as llama.cpp makes them ----===//
//
// Part of Kiln's unit tests. The shared fixtures tiny-0.5M-q8_0/q4_0.gguf and
// tiny-k-q8_0/q4_0.gguf are llama-quantize --pure's output (llama.cpp
// c392e50) from the F32 files beside them: Kiln's quantizer, given the F32
// tensors, must produce every one of their blocks byte for byte, and
// quantizeGGUFFile the same tensors with the same types. Hand-made rows
// pin down each rule of the reference (docs/quantization.md): zero blocks,
// roundf's halfway cases, Q4_0's signed maximum and its clamp to 15, the f16
// scale, and the inputs refused (NaN, infinities, scales beyond f16, rows
// that are not whole blocks).
//
//===----------------------------------------------------------------------===//

#include "frontends/formats/Quantize.h"

#include "TestData.h"
#include "frontends/formats/GGUF.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>
#include <unistd.h>

using namespace kiln::formats;

namespace {

std::string model(const std::string &name) {
  return kiln::test::modelsDir() + "/" + name;
}

std::string tempPath(const std::string &suffix) {
  static std::atomic<int> counter{0};
  return ::testing::TempDir() + "kiln-quantize-test-" +
         std::to_string(getpid()) + "-" + std::to_string(counter++) + suffix;
}

std::vector<uint8_t> quantize(ElementType type, const std::vector<float> &x) {
  std::vector<uint8_t> out(*rowBytes(type, static_cast<int64_t>(x.size())));
  quantizeRow(type, x.data(), out.data(), static_cast<int64_t>(x.size()),
              "test.weight");
  return out;
}

std::vector<float> dequantized(ElementType type,
                               const std::vector<uint8_t> &blocks, size_t n) {
  std::vector<float> out(n);
  dequantize(type, blocks.data(), out.data(), static_cast<int64_t>(n));
  return out;
}

/// The f16 bits of the first block's scale.
uint16_t scaleBits(const std::vector<uint8_t> &blocks) {
  return static_cast<uint16_t>(blocks[0] | (blocks[1] << 8));
}

/// Q4_0's stored level of weight j (0..31) of the first block.
int level(const std::vector<uint8_t> &blocks, int j) {
  uint8_t byte = blocks[2 + (j % 16)];
  return j < 16 ? (byte & 0x0f) : (byte >> 4);
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

// Every block of the Q8_0 and Q4_0 fixtures against Kiln's quantizer: in
// test/unit/KQuantTest.cpp (LlamaQuantizeBlocks), with the K-quants'.

TEST(QuantizeGGUF, WritesWhatLlamaQuantizeWrites) {
  for (auto [reference, type] :
       {std::pair{"tiny-0.5M-q8_0.gguf", ElementType::Q8_0},
        {"tiny-0.5M-q4_0.gguf", ElementType::Q4_0}}) {
    KILN_REQUIRE_TEST_FILE(model("tiny-0.5M-f32.gguf"));
    KILN_REQUIRE_TEST_FILE(model(reference));
    std::string path = tempPath(".gguf");
    quantizeGGUFFile(model("tiny-0.5M-f32.gguf"), path, type);
    GGUFFile ours = GGUFFile::open(path);
    GGUFFile ref = GGUFFile::open(model(reference));
    EXPECT_EQ(ours.getInt("general.file_type"),
              ref.getInt("general.file_type"));
    EXPECT_EQ(ours.getInt("general.quantization_version"),
              ref.getInt("general.quantization_version"));
    EXPECT_EQ(ours.getStringArray("tokenizer.ggml.tokens"),
              ref.getStringArray("tokenizer.ggml.tokens"));
    ASSERT_EQ(ours.tensors().size(), ref.tensors().size());
    for (const TensorInfo &t : ref.tensors()) {
      const TensorInfo *mine = ours.findTensor(t.name);
      ASSERT_NE(mine, nullptr) << t.name;
      EXPECT_EQ(mine->type, t.type) << t.name;
      EXPECT_EQ(mine->shape, t.shape) << t.name;
      ASSERT_EQ(mine->bytes, t.bytes) << t.name;
      EXPECT_EQ(std::memcmp(ours.data(*mine), ref.data(t), t.bytes), 0)
          << t.name;
    }
    std::remove(path.c_str());
  }
}

TEST(QuantizeGGUF, RefusesQuantizedInput) {
  KILN_REQUIRE_TEST_FILE(model("tiny-0.5M-q8_0.gguf"));
  std::string path = tempPath(".gguf");
  std::string error = errorOf([&] {
    quantizeGGUFFile(model("tiny-0.5M-q8_0.gguf"), path, ElementType::Q4_0);
  });
  EXPECT_NE(error.find("is already q8_0"), std::string::npos) << error;
  EXPECT_FALSE(kiln::test::fileExists(path));
}

//===----------------------------------------------------------------------===//
// Edge rows
//===----------------------------------------------------------------------===//

TEST(Quantize, ZerosGiveAZeroScale) {
  std::vector<float> zeros(32, 0.0f);
  std::vector<uint8_t> q8 = quantize(ElementType::Q8_0, zeros);
  for (uint8_t byte : q8)
    EXPECT_EQ(byte, 0);
  // Q4_0: d = 0 / -8 is -0 in IEEE arithmetic, stored as f16 0x8000 (the
  // reference's bytes too), and id = 0, so every weight is trunc(0 + 8.5) =
  // level 8, which dequantizes to 0.
  std::vector<uint8_t> q4 = quantize(ElementType::Q4_0, zeros);
  EXPECT_EQ(scaleBits(q4), 0x8000);
  for (size_t j = 2; j < q4.size(); ++j)
    EXPECT_EQ(q4[j], 0x88);
  for (float v : dequantized(ElementType::Q4_0, q4, 32))
    EXPECT_EQ(v, 0.0f);
}

TEST(Quantize, OneHugeValueTakesTheScale) {
  std::vector<float> x(32, 0.001f);
  x[5] = 1000.0f;
  // Q8_0: d = 1000/127 (f16: 7.875); the others round to 0.
  std::vector<uint8_t> q8 = quantize(ElementType::Q8_0, x);
  EXPECT_EQ(scaleBits(q8), floatToHalf(1000.0f / 127.0f));
  EXPECT_EQ(q8[2 + 5], 127);
  for (int j = 0; j < 32; ++j)
    if (j != 5)
      EXPECT_EQ(q8[2 + j], 0) << j;
  // Q4_0: d = 1000 / -8 = -125; the huge value is level 0 (-8 * -125), the
  // others trunc(0.001 / -125 + 8.5) = 8, zero.
  std::vector<uint8_t> q4 = quantize(ElementType::Q4_0, x);
  EXPECT_EQ(halfToFloat(scaleBits(q4)), -125.0f);
  EXPECT_EQ(level(q4, 5), 0);
  for (int j = 0; j < 32; ++j)
    if (j != 5)
      EXPECT_EQ(level(q4, j), 8) << j;
  std::vector<float> back = dequantized(ElementType::Q4_0, q4, 32);
  EXPECT_EQ(back[5], 1000.0f);
}

TEST(Quantize, Q8_0RoundsHalfwayAwayFromZero) {
  // amax 127 gives d = 1 exactly: q = round(x), and 2.5 -> 3, -2.5 -> -3
  // (roundf), where round-half-even would give 2 and -2.
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;
  x[1] = 2.5f;
  x[2] = -2.5f;
  x[3] = 0.5f;
  x[4] = -126.5f;
  std::vector<uint8_t> q = quantize(ElementType::Q8_0, x);
  EXPECT_EQ(halfToFloat(scaleBits(q)), 1.0f);
  EXPECT_EQ(int8_t(q[2]), 127);
  EXPECT_EQ(int8_t(q[3]), 3);
  EXPECT_EQ(int8_t(q[4]), -3);
  EXPECT_EQ(int8_t(q[5]), 1);
  EXPECT_EQ(int8_t(q[6]), -127);
}

TEST(Quantize, Q8_0ScaleIsRoundedToF16ButProductsUseTheFloat) {
  // amax 1: d = 1/127 = 0.007874016 in float; f16 holds 0.007873535.
  // q uses 1/d (exactly 127 in float here), not the f16 scale (whose
  // inverse is 127.0078).
  std::vector<float> x(32, 0.0f);
  x[0] = 1.0f;
  x[1] = 0.5f; // 63.5: roundf gives 64
  std::vector<uint8_t> q = quantize(ElementType::Q8_0, x);
  EXPECT_EQ(scaleBits(q), floatToHalf(1.0f / 127.0f));
  EXPECT_EQ(int8_t(q[2]), 127);
  EXPECT_EQ(int8_t(q[3]), 64);
}

TEST(Quantize, Q4_0UsesTheSignedMaximum) {
  // The largest magnitude is negative: d = -4 / -8 = 0.5 > 0, so -4 is
  // level 0 and 3 is level trunc(6 + 8.5) = 14.
  std::vector<float> x(32, 0.0f);
  x[0] = -4.0f;
  x[1] = 3.0f;
  x[20] = -1.0f;
  std::vector<uint8_t> q = quantize(ElementType::Q4_0, x);
  EXPECT_EQ(halfToFloat(scaleBits(q)), 0.5f);
  EXPECT_EQ(level(q, 0), 0);
  EXPECT_EQ(level(q, 1), 14);
  EXPECT_EQ(level(q, 20), 6); // trunc(-2 + 8.5)
  std::vector<float> back = dequantized(ElementType::Q4_0, q, 32);
  EXPECT_EQ(back[0], -4.0f);
  EXPECT_EQ(back[1], 3.0f);
  EXPECT_EQ(back[20], -1.0f);

  // A positive maximum: d = -0.5, and the opposite extreme -4 would be
  // level 16, clamped to 15 (-3.5): the format's asymmetry.
  x[0] = 4.0f;
  x[1] = -4.0f; // equal magnitude, later: the first one sets the sign
  q = quantize(ElementType::Q4_0, x);
  EXPECT_EQ(halfToFloat(scaleBits(q)), -0.5f);
  EXPECT_EQ(level(q, 0), 0);
  EXPECT_EQ(level(q, 1), 15);
  back = dequantized(ElementType::Q4_0, q, 32);
  EXPECT_EQ(back[0], 4.0f);
  EXPECT_EQ(back[1], -3.5f);
}

TEST(Quantize, RoundTripIsWithinHalfAStep) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<float> x(32 * 64);
  for (float &v : x)
    v = normal(rng);
  for (ElementType type : {ElementType::Q8_0, ElementType::Q4_0}) {
    std::vector<uint8_t> q = quantize(type, x);
    std::vector<float> back = dequantized(type, q, x.size());
    for (size_t b = 0; b < x.size() / 32; ++b) {
      uint16_t bits = static_cast<uint16_t>(q[b * blockBytes(type)] |
                                            q[b * blockBytes(type) + 1] << 8);
      float d = std::fabs(halfToFloat(bits));
      for (size_t j = b * 32; j < b * 32 + 32; ++j)
        // Half a step, plus f16's rounding of d (2^-11 relative) times the
        // largest level, plus Q4_0's clamp of the opposite extreme (a full
        // step).
        EXPECT_LE(std::fabs(back[j] - x[j]),
                  (type == ElementType::Q4_0 ? 1.0f : 0.5f) * d +
                      8.0f * 128.0f * d / 2048.0f)
            << elementTypeName(type) << " " << j;
    }
  }
}

TEST(Quantize, RefusesNaNAndInfinities) {
  for (ElementType type : {ElementType::Q8_0, ElementType::Q4_0}) {
    std::vector<float> x(64, 0.5f);
    x[37] = std::numeric_limits<float>::quiet_NaN();
    std::string error = errorOf([&] {
      quantizeTensor(type, "blk.0.ffn_up.weight", {2, 32}, x.data());
    });
    EXPECT_NE(error.find("tensor 'blk.0.ffn_up.weight': row 1, column 5 is "
                         "NaN"),
              std::string::npos)
        << error;
    x[37] = -std::numeric_limits<float>::infinity();
    error = errorOf([&] {
      quantizeTensor(type, "blk.0.ffn_up.weight", {2, 32}, x.data());
    });
    EXPECT_NE(error.find("row 1, column 5 is infinite"), std::string::npos)
        << error;
    EXPECT_NE(error.find(elementTypeName(type)), std::string::npos) << error;
  }
}

TEST(Quantize, RefusesScalesBeyondF16) {
  std::vector<float> x(32, 0.0f);
  x[3] = 1e7f; // d = 78740 for Q8_0, -1.25e6 for Q4_0: beyond 65504
  for (ElementType type : {ElementType::Q8_0, ElementType::Q4_0}) {
    std::string error = errorOf(
        [&] { quantizeTensor(type, "token_embd.weight", {1, 32}, x.data()); });
    EXPECT_NE(error.find("token_embd.weight"), std::string::npos) << error;
    EXPECT_NE(error.find("beyond f16"), std::string::npos) << error;
  }
  // Q8_0's largest: 65504 * 127 has the f16 scale 65504.
  x[3] = 65504.0f * 127.0f;
  std::vector<uint8_t> q = quantize(ElementType::Q8_0, x);
  EXPECT_EQ(halfToFloat(scaleBits(q)), 65504.0f);
}

TEST(Quantize, RefusesRowsThatAreNotWholeBlocks) {
  std::vector<float> x(172 * 2, 0.1f);
  std::string error = errorOf([&] {
    quantizeTensor(ElementType::Q4_0, "blk.0.ffn_down.weight", {2, 172},
                   x.data());
  });
  EXPECT_NE(error.find("tensor 'blk.0.ffn_down.weight' has rows of 172 "
                       "weights, not a multiple of 32"),
            std::string::npos)
      << error;
}

TEST(Quantize, PureTypes) {
  EXPECT_EQ(pureQuantizedType({128}, ElementType::Q8_0), ElementType::F32);
  EXPECT_EQ(pureQuantizedType({512, 128}, ElementType::Q8_0),
            ElementType::Q8_0);
  EXPECT_EQ(parseQuantizedType("q4_0"), ElementType::Q4_0);
  EXPECT_EQ(parseQuantizedType("f16"), std::nullopt);
  EXPECT_EQ(llamaFileType(ElementType::Q8_0), 7u);
  EXPECT_EQ(llamaFileType(ElementType::Q4_0), 2u);
}

} // namespace
