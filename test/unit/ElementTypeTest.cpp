//===- ElementTypeTest.cpp - Element sizes, half/bf16, dequantization -----===//
//
// Part of Kiln's unit tests. Conversions are checked against known bit
// patterns, exhaustively where the domain is small (all 65536 halves) and
// against an independent reference (the compiler's _Float16 where it has one,
// a nearest-neighbour search for bf16) over a large sample of floats.
//
//===----------------------------------------------------------------------===//

#include "frontends/formats/ElementType.h"

#include "GGUFTestBytes.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace kiln::formats;

namespace {

uint32_t bitsOf(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

float fromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

const float kInf = std::numeric_limits<float>::infinity();

//===----------------------------------------------------------------------===//
// Sizes
//===----------------------------------------------------------------------===//

TEST(ElementType, NamesAndBlockSizes) {
  EXPECT_STREQ(elementTypeName(ElementType::F32), "f32");
  EXPECT_STREQ(elementTypeName(ElementType::F16), "f16");
  EXPECT_STREQ(elementTypeName(ElementType::BF16), "bf16");
  EXPECT_STREQ(elementTypeName(ElementType::Q8_0), "q8_0");
  EXPECT_STREQ(elementTypeName(ElementType::Q4_0), "q4_0");
  EXPECT_STREQ(elementTypeName(ElementType::Q4_K), "q4_k");
  EXPECT_STREQ(elementTypeName(ElementType::Q5_K), "q5_k");
  EXPECT_STREQ(elementTypeName(ElementType::Q6_K), "q6_k");

  EXPECT_EQ(blockSize(ElementType::F32), 1);
  EXPECT_EQ(blockSize(ElementType::F16), 1);
  EXPECT_EQ(blockSize(ElementType::BF16), 1);
  EXPECT_EQ(blockSize(ElementType::Q8_0), 32);
  EXPECT_EQ(blockSize(ElementType::Q4_0), 32);
  EXPECT_EQ(blockSize(ElementType::Q4_K), 256);
  EXPECT_EQ(blockSize(ElementType::Q5_K), 256);
  EXPECT_EQ(blockSize(ElementType::Q6_K), 256);

  EXPECT_EQ(blockBytes(ElementType::F32), 4);
  EXPECT_EQ(blockBytes(ElementType::F16), 2);
  EXPECT_EQ(blockBytes(ElementType::BF16), 2);
  EXPECT_EQ(blockBytes(ElementType::Q8_0), 34);
  EXPECT_EQ(blockBytes(ElementType::Q4_0), 18);
  EXPECT_EQ(blockBytes(ElementType::Q4_K), 144);
  EXPECT_EQ(blockBytes(ElementType::Q5_K), 176);
  EXPECT_EQ(blockBytes(ElementType::Q6_K), 210);
}

TEST(ElementType, RowBytes) {
  EXPECT_EQ(rowBytes(ElementType::F32, 10), 40u);
  EXPECT_EQ(rowBytes(ElementType::F16, 7), 14u);
  EXPECT_EQ(rowBytes(ElementType::BF16, 3), 6u);
  EXPECT_EQ(rowBytes(ElementType::Q8_0, 64), 68u);
  EXPECT_EQ(rowBytes(ElementType::Q4_0, 4096), 128u * 18u);
  EXPECT_EQ(rowBytes(ElementType::Q4_0, 0), 0u);
  EXPECT_EQ(rowBytes(ElementType::Q4_K, 4096), 16u * 144u);
  EXPECT_EQ(rowBytes(ElementType::Q5_K, 256), 176u);
  EXPECT_EQ(rowBytes(ElementType::Q6_K, 14336), 56u * 210u);

  // Not whole blocks, negative lengths.
  EXPECT_EQ(rowBytes(ElementType::Q8_0, 33), std::nullopt);
  EXPECT_EQ(rowBytes(ElementType::Q4_0, 16), std::nullopt);
  EXPECT_EQ(rowBytes(ElementType::Q4_K, 288), std::nullopt);
  EXPECT_EQ(rowBytes(ElementType::Q5_K, 128), std::nullopt);
  EXPECT_EQ(rowBytes(ElementType::Q6_K, 32), std::nullopt);
  EXPECT_EQ(rowBytes(ElementType::F32, -1), std::nullopt);

  // Overflow of uint64: 4 * (2^63 - 1) does not fit, 2 * (2^63 - 1) does,
  // and so does every whole number of quantized blocks (34/32 < 2).
  const int64_t big = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(rowBytes(ElementType::F32, big), std::nullopt);
  // The exact edge: 4 * 2^62 = 2^64 overflows, 4 * (2^62 - 1) does not.
  EXPECT_EQ(rowBytes(ElementType::F32, int64_t(1) << 62), std::nullopt);
  EXPECT_EQ(rowBytes(ElementType::F32, (int64_t(1) << 62) - 1),
            std::numeric_limits<uint64_t>::max() - 3);
  EXPECT_EQ(rowBytes(ElementType::F16, big), uint64_t(big) * 2);
  EXPECT_EQ(rowBytes(ElementType::Q8_0, big / 32 * 32),
            uint64_t(big / 32) * 34);
  EXPECT_EQ(rowBytes(ElementType::Q6_K, big / 256 * 256),
            uint64_t(big / 256) * 210);
}

//===----------------------------------------------------------------------===//
// Half precision
//===----------------------------------------------------------------------===//

TEST(Half, KnownValuesToFloat) {
  EXPECT_EQ(halfToFloat(0x3C00), 1.0f);
  EXPECT_EQ(halfToFloat(0xC000), -2.0f);
  EXPECT_EQ(halfToFloat(0x3555), 0.333251953125f);
  EXPECT_EQ(halfToFloat(0x7BFF), 65504.0f);
  EXPECT_EQ(halfToFloat(0x0400), std::ldexp(1.0f, -14)); // Smallest normal.
  EXPECT_EQ(halfToFloat(0x0001), std::ldexp(1.0f, -24)); // Smallest subnormal.
  EXPECT_EQ(halfToFloat(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_EQ(halfToFloat(0x8001), -std::ldexp(1.0f, -24));
  EXPECT_EQ(bitsOf(halfToFloat(0x0000)), 0u);
  EXPECT_EQ(bitsOf(halfToFloat(0x8000)), 0x80000000u); // -0 keeps its sign.
  EXPECT_EQ(halfToFloat(0x7C00), kInf);
  EXPECT_EQ(halfToFloat(0xFC00), -kInf);
  EXPECT_TRUE(std::isnan(halfToFloat(0x7E00)));
  EXPECT_TRUE(std::isnan(halfToFloat(0x7C01))); // Signalling NaN too.
  EXPECT_TRUE(std::isnan(halfToFloat(0xFFFF)));
}

TEST(Half, KnownValuesFromFloat) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3C00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xC000);
  EXPECT_EQ(floatToHalf(0.0f), 0x0000);
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -14)), 0x0400);
  EXPECT_EQ(floatToHalf(kInf), 0x7C00);
  EXPECT_EQ(floatToHalf(-kInf), 0xFC00);
}

TEST(Half, RoundsToNearestEven) {
  // Ties between normals go to the even mantissa.
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  EXPECT_EQ(floatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  EXPECT_EQ(floatToHalf(2049.0f), 0x6800); // 2048 (even) over 2050.
  EXPECT_EQ(floatToHalf(2051.0f), 0x6802); // 2052 (even) over 2050.
  // Just off a tie rounds to the nearer value.
  EXPECT_EQ(floatToHalf(std::nextafter(2049.0f, kInf)), 0x6801);
  EXPECT_EQ(floatToHalf(std::nextafter(2049.0f, 0.0f)), 0x6800);

  // Overflow: 65519.99 is below the midpoint to 65536 and stays finite;
  // the midpoint 65520 ties to the even neighbour 2^16, i.e. infinity.
  EXPECT_EQ(floatToHalf(std::nextafter(65520.0f, 0.0f)), 0x7BFF);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7C00);
  EXPECT_EQ(floatToHalf(-65520.0f), 0xFC00);
  EXPECT_EQ(floatToHalf(1e6f), 0x7C00);
  EXPECT_EQ(floatToHalf(std::numeric_limits<float>::max()), 0x7C00);

  // Subnormals: 2^-25 is the midpoint between 0 and the smallest subnormal
  // and ties to 0; anything above it rounds up; 3 * 2^-25 ties to 2 * 2^-24.
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(floatToHalf(-std::ldexp(1.0f, -25)), 0x8000);
  EXPECT_EQ(floatToHalf(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(floatToHalf(3 * std::ldexp(1.0f, -25)), 0x0002);
  EXPECT_EQ(floatToHalf(5 * std::ldexp(1.0f, -25)), 0x0002);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -30)), 0x0000);
  EXPECT_EQ(floatToHalf(std::numeric_limits<float>::denorm_min()), 0x0000);
  // The largest subnormal plus half an ulp ties up into the smallest normal.
  EXPECT_EQ(floatToHalf(std::ldexp(1023.5f, -24)), 0x0400);
  EXPECT_EQ(floatToHalf(std::ldexp(1022.5f, -24)), 0x03FE);
}

TEST(Half, NaNStaysNaN) {
  const float nans[] = {std::numeric_limits<float>::quiet_NaN(),
                        -std::numeric_limits<float>::quiet_NaN(),
                        fromBits(0x7F800001), // Payload only in low bits.
                        fromBits(0xFF800001), fromBits(0x7FC00000)};
  for (float nan : nans) {
    uint16_t h = floatToHalf(nan);
    EXPECT_EQ(h & 0x7C00, 0x7C00) << std::hex << bitsOf(nan);
    EXPECT_NE(h & 0x03FF, 0)
        << "NaN " << std::hex << bitsOf(nan) << " became infinity";
    EXPECT_EQ(h & 0x8000, (bitsOf(nan) >> 16) & 0x8000);
  }
}

TEST(Half, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    float f = halfToFloat(static_cast<uint16_t>(h));
    if ((h & 0x7C00) == 0x7C00 && (h & 0x3FF)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
      ASSERT_TRUE(std::isnan(halfToFloat(floatToHalf(f)))) << std::hex << h;
      continue;
    }
    ASSERT_EQ(floatToHalf(f), h) << std::hex << h;
  }
}

TEST(Half, HalfToFloatMatchesArithmetic) {
  // Decode each finite half by the formula (-1)^s * 2^(e-15) * (1 + m/1024)
  // or 2^-14 * m/1024 for subnormals, in double.
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    uint32_t e = (h >> 10) & 0x1F, m = h & 0x3FF;
    if (e == 0x1F)
      continue;
    double magnitude = e == 0 ? std::ldexp(double(m), -24)
                              : std::ldexp(1.0 + m / 1024.0, int(e) - 15);
    double expected = (h & 0x8000) ? -magnitude : magnitude;
    ASSERT_EQ(double(halfToFloat(static_cast<uint16_t>(h))), expected)
        << std::hex << h;
  }
}

#if defined(__FLT16_MAX__)
TEST(Half, FloatToHalfMatchesCompiler) {
  // The compiler's float -> _Float16 conversion is IEEE round to nearest
  // even: an independent reference over a spread of bit patterns covering
  // every exponent.
  int checked = 0;
  for (uint64_t bits = 0; bits <= 0xFFFFFFFFu; bits += 4099) {
    float f = fromBits(static_cast<uint32_t>(bits));
    if (std::isnan(f))
      continue;
    _Float16 reference = static_cast<_Float16>(f);
    uint16_t expected;
    std::memcpy(&expected, &reference, sizeof expected);
    ASSERT_EQ(floatToHalf(f), expected) << "float bits " << std::hex << bits;
    ++checked;
  }
  EXPECT_GT(checked, 1000000);
}
#endif

//===----------------------------------------------------------------------===//
// bfloat16
//===----------------------------------------------------------------------===//

TEST(BF16, KnownValues) {
  EXPECT_EQ(bf16ToFloat(0x3F80), 1.0f);
  EXPECT_EQ(bf16ToFloat(0x4049), 3.140625f);
  EXPECT_EQ(bf16ToFloat(0xC2F7), -123.5f);
  EXPECT_EQ(bf16ToFloat(0x0001), std::ldexp(1.0f, -133)); // Subnormal.
  EXPECT_EQ(bf16ToFloat(0x7F80), kInf);
  EXPECT_TRUE(std::isnan(bf16ToFloat(0x7FC0)));

  EXPECT_EQ(floatToBf16(1.0f), 0x3F80);
  EXPECT_EQ(floatToBf16(3.14159265f), 0x4049);
  EXPECT_EQ(floatToBf16(-0.0f), 0x8000);
  EXPECT_EQ(floatToBf16(kInf), 0x7F80);
  EXPECT_EQ(floatToBf16(-kInf), 0xFF80);
}

TEST(BF16, RoundsToNearestEven) {
  // 1 + 2^-8 is the midpoint between 1 and 1 + 2^-7: ties to even (1).
  EXPECT_EQ(floatToBf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);
  EXPECT_EQ(floatToBf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);
  EXPECT_EQ(floatToBf16(std::nextafter(1.0f + std::ldexp(1.0f, -8), 2.0f)),
            0x3F81);
  // The largest float is above the midpoint to 2^128: infinity.
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_EQ(floatToBf16(fromBits(0x7F7F7FFF)), 0x7F7F);
  // Subnormals round like everything else.
  EXPECT_EQ(floatToBf16(fromBits(0x00008000)), 0x0000); // Tie to even 0.
  EXPECT_EQ(floatToBf16(fromBits(0x00018000)), 0x0002); // Tie to even 2.
}

TEST(BF16, NaNStaysNaN) {
  // 0x7F800001 truncates to 0x7F80 (infinity) unless NaNs are special-cased.
  for (uint32_t bits : {0x7F800001u, 0xFF800001u, 0x7FC00000u, 0x7FFFFFFFu}) {
    uint16_t b = floatToBf16(fromBits(bits));
    EXPECT_TRUE(std::isnan(bf16ToFloat(b))) << std::hex << bits;
    EXPECT_EQ(b & 0x8000, (bits >> 16) & 0x8000);
  }
}

TEST(BF16, MatchesNearestNeighbourReference) {
  // Reference: of the two bf16 values around f (truncated and next up),
  // take the nearer in double arithmetic, the even one on a tie.
  std::mt19937 rng(7);
  for (int i = 0; i < 2000000; ++i) {
    uint32_t bits = rng();
    float f = fromBits(bits);
    if (std::isnan(f))
      continue;
    uint32_t low = bits & 0xFFFF0000u;
    uint32_t high = low + 0x10000u; // Away from zero; may reach infinity.
    double dl = std::fabs(double(fromBits(low)) - double(f));
    double dh = std::fabs(double(fromBits(high)) - double(f));
    if ((high & 0x7FFFFFFFu) == 0x7F800000u) {
      // Beyond the largest bf16, the "distance" to infinity is measured
      // to 2^128, where rounding would place it.
      dh = std::fabs(std::ldexp(1.0, 128) - std::fabs(double(f)));
    }
    uint32_t expected =
        (dl == 0 || dl < dh || (dl == dh && ((low >> 16) & 1) == 0)) ? low
                                                                     : high;
    ASSERT_EQ(floatToBf16(f), expected >> 16) << std::hex << bits;
  }
}

TEST(BF16, EveryBF16RoundTrips) {
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {
    float f = bf16ToFloat(static_cast<uint16_t>(b));
    EXPECT_EQ(bitsOf(f), b << 16);
    if (!std::isnan(f))
      ASSERT_EQ(floatToBf16(f), b) << std::hex << b;
  }
}

//===----------------------------------------------------------------------===//
// Dequantization
//===----------------------------------------------------------------------===//

/// Copies `bytes` to offset 1 of a buffer so dequantize sees an unaligned
/// pointer, as it will inside a memory-mapped file.
std::vector<uint8_t> unaligned(const std::string &bytes) {
  std::vector<uint8_t> buffer(bytes.size() + 1);
  std::memcpy(buffer.data() + 1, bytes.data(), bytes.size());
  return buffer;
}

TEST(Dequantize, PlainTypes) {
  std::vector<float> values = {1.0f, -2.5f, 0.0f, 65504.0f, 1e-3f};
  auto f32 = unaligned(kiln::test::f32Bytes(values));
  std::vector<float> out(values.size());
  dequantize(ElementType::F32, f32.data() + 1, out.data(), 5);
  EXPECT_EQ(out, values);

  // F16 from explicit little-endian bit patterns: 1.0, -2.0, 2^-24, 65504.
  auto f16 = unaligned(std::string("\x00\x3C\x00\xC0\x01\x00\xFF\x7B", 8));
  dequantize(ElementType::F16, f16.data() + 1, out.data(), 4);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -2.0f);
  EXPECT_EQ(out[2], std::ldexp(1.0f, -24));
  EXPECT_EQ(out[3], 65504.0f);

  // BF16: 1.0, pi rounded, -123.5.
  auto bf16 = unaligned(std::string("\x80\x3F\x49\x40\xF7\xC2", 6));
  dequantize(ElementType::BF16, bf16.data() + 1, out.data(), 3);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 3.140625f);
  EXPECT_EQ(out[2], -123.5f);
}

TEST(Dequantize, Q8_0) {
  // Block 0: d = 0.5 (f16 0x3800), q[i] = i - 16, so w = (i - 16) / 2.
  // Block 1: d = -0.25 (0xB400), q = 127, -128, then zeros.
  std::string bytes = kiln::test::le(uint16_t(0x3800));
  for (int i = 0; i < 32; ++i)
    bytes += static_cast<char>(static_cast<uint8_t>(i - 16));
  bytes += kiln::test::le(uint16_t(0xB400));
  bytes += '\x7F';
  bytes += '\x80';
  bytes += std::string(30, '\0');
  ASSERT_EQ(bytes.size(), 68u);

  auto buffer = unaligned(bytes);
  std::vector<float> out(64, -1.0f);
  dequantize(ElementType::Q8_0, buffer.data() + 1, out.data(), 64);
  for (int i = 0; i < 32; ++i)
    EXPECT_EQ(out[i], 0.5f * float(i - 16)) << i;
  EXPECT_EQ(out[32], -31.75f);
  EXPECT_EQ(out[33], 32.0f);
  for (int i = 34; i < 64; ++i)
    EXPECT_EQ(out[i], -0.0f) << i;
}

TEST(Dequantize, Q4_0) {
  // d = 0.25 (f16 0x3400); byte j holds q[j] = j in its low nibble and
  // q[j + 16] = 15 - j in its high nibble: w[j] = (j - 8) / 4,
  // w[j + 16] = (7 - j) / 4. The second block has d = 3 (0x4200) and all
  // nibbles 0x0 / 0xF: w = -24 and 21.
  std::string bytes = kiln::test::le(uint16_t(0x3400));
  for (int j = 0; j < 16; ++j)
    bytes += static_cast<char>(j | ((15 - j) << 4));
  bytes += kiln::test::le(uint16_t(0x4200));
  bytes += std::string(16, '\xF0');
  ASSERT_EQ(bytes.size(), 36u);

  auto buffer = unaligned(bytes);
  std::vector<float> out(64);
  dequantize(ElementType::Q4_0, buffer.data() + 1, out.data(), 64);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(out[j], 0.25f * float(j - 8)) << j;
    EXPECT_EQ(out[j + 16], 0.25f * float(7 - j)) << j;
    EXPECT_EQ(out[32 + j], -24.0f) << j;
    EXPECT_EQ(out[48 + j], 21.0f) << j;
  }
}

//===----------------------------------------------------------------------===//
// K-quants: blocks packed here by the layout ElementType.h documents
//===----------------------------------------------------------------------===//

// Sub-block scales and mins of the hand-made Q4_K/Q5_K blocks: the upper
// four use all six bits, so their top two bits land in bytes 0..7.
const uint8_t kScales[8] = {1, 2, 3, 63, 17, 33, 48, 63};
const uint8_t kMins[8] = {0, 5, 10, 63, 16, 40, 50, 1};

/// The 12 scale bytes: bytes 0..3 scale j's low 6 bits (top 2 bits: scale
/// j+4's high bits), bytes 4..7 min j's (top: min j+4's), bytes 8..11 scale
/// j+4's low nibble and min j+4's low nibble above it.
std::string packedScales() {
  std::string bytes(12, '\0');
  for (int j = 0; j < 4; ++j) {
    bytes[j] = static_cast<char>(kScales[j] | ((kScales[j + 4] >> 4) << 6));
    bytes[j + 4] = static_cast<char>(kMins[j] | ((kMins[j + 4] >> 4) << 6));
    bytes[j + 8] =
        static_cast<char>((kScales[j + 4] & 0xf) | ((kMins[j + 4] & 0xf) << 4));
  }
  return bytes;
}

TEST(Dequantize, KScaleMinUnpacking) {
  std::string bytes = packedScales();
  for (int j = 0; j < 8; ++j) {
    uint8_t scale = 0, min = 0;
    unpackKScaleMin(reinterpret_cast<const uint8_t *>(bytes.data()), j, scale,
                    min);
    EXPECT_EQ(scale, kScales[j]) << j;
    EXPECT_EQ(min, kMins[j]) << j;
  }
}

/// Nibble byte 32c + l (Q4_K/Q5_K): low nibble l % 16 for weight 64c + l,
/// high nibble 15 - l % 16 for weight 64c + 32 + l.
std::string kNibbles() {
  std::string bytes;
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l)
      bytes += static_cast<char>((l % 16) | ((15 - l % 16) << 4));
  return bytes;
}

/// The level of weight i of kNibbles(), without Q5_K's fifth bit.
int kNibbleLevel(int i) {
  int l = i % 32;
  return (i % 64) < 32 ? l % 16 : 15 - l % 16;
}

TEST(Dequantize, Q4_K) {
  // d = 0.5 (f16 0x3800), dmin = 0.25 (0x3400): weight i of sub-block j is
  // 0.5*sc[j]*q - 0.25*m[j], exact in float. A second block is all zero.
  std::string bytes = kiln::test::le(uint16_t(0x3800)) +
                      kiln::test::le(uint16_t(0x3400)) + packedScales() +
                      kNibbles();
  bytes += std::string(144, '\0');
  ASSERT_EQ(bytes.size(), 288u);
  auto buffer = unaligned(bytes);
  std::vector<float> out(512, -1.0f);
  dequantize(ElementType::Q4_K, buffer.data() + 1, out.data(), 512);
  for (int i = 0; i < 256; ++i) {
    int j = i / 32;
    EXPECT_EQ(out[i], 0.5f * kScales[j] * kNibbleLevel(i) - 0.25f * kMins[j])
        << i;
    EXPECT_EQ(out[256 + i], 0.0f) << i;
  }
}

TEST(Dequantize, Q5_K) {
  // As Q4_K, with qh[l] = l: weight 64c + l takes bit 2c of l as its fifth
  // bit, weight 64c + 32 + l bit 2c + 1.
  std::string qh;
  for (int l = 0; l < 32; ++l)
    qh += static_cast<char>(l * 7);
  std::string bytes = kiln::test::le(uint16_t(0x3800)) +
                      kiln::test::le(uint16_t(0x3400)) + packedScales() + qh +
                      kNibbles();
  ASSERT_EQ(bytes.size(), 176u);
  auto buffer = unaligned(bytes);
  std::vector<float> out(256);
  dequantize(ElementType::Q5_K, buffer.data() + 1, out.data(), 256);
  for (int i = 0; i < 256; ++i) {
    int j = i / 32, l = i % 32;
    int q = kNibbleLevel(i) + 16 * (((l * 7) & 0xff) >> j & 1);
    EXPECT_EQ(out[i], 0.5f * kScales[j] * q - 0.25f * kMins[j]) << i;
  }
}

TEST(Dequantize, Q6_K) {
  // Levels q[i] = 5i mod 64 packed as ElementType.h says, int8 scales
  // i - 8 (negative ones too) per 16 weights, d = 0.25 at the end:
  // w = 0.25*scale * (q - 32).
  auto level = [](int i) { return (5 * i) % 64; };
  std::string ql(128, '\0'), qh(64, '\0'), scales;
  for (int i = 0; i < 256; ++i) {
    int half = i / 128, k = (i % 128) / 32, l = i % 32;
    int byte = 64 * half + 32 * (k & 1) + l;
    int nibble = level(i) & 0xf;
    ql[byte] = static_cast<char>(ql[byte] | (k < 2 ? nibble : nibble << 4));
    qh[32 * half + l] =
        static_cast<char>(qh[32 * half + l] | ((level(i) >> 4) << (2 * k)));
  }
  for (int s = 0; s < 16; ++s)
    scales += static_cast<char>(s - 8);
  std::string bytes = ql + qh + scales + kiln::test::le(uint16_t(0x3400));
  ASSERT_EQ(bytes.size(), 210u);
  auto buffer = unaligned(bytes);
  std::vector<float> out(256);
  dequantize(ElementType::Q6_K, buffer.data() + 1, out.data(), 256);
  for (int i = 0; i < 256; ++i)
    EXPECT_EQ(out[i], 0.25f * float(i / 16 - 8) * float(level(i) - 32)) << i;
}

/// The test writer's reference quantizers reproduce what the format
/// promises: after a round trip each weight is within the block's rounding
/// bound (see GGUFTest for the same bound on llama.cpp's own files).
TEST(Dequantize, ReferenceQuantizersRoundTrip) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<float> x(32 * 64);
  for (float &v : x)
    v = normal(rng);
  x[5] = 0.0f; // A few exact values that must survive.
  std::fill(x.begin() + 64, x.begin() + 96, 0.0f); // An all-zero block.

  std::vector<float> q8(x.size()), q4(x.size());
  std::string q8Bytes = kiln::test::q8_0Bytes(x);
  std::string q4Bytes = kiln::test::q4_0Bytes(x);
  ASSERT_EQ(q8Bytes.size(), *rowBytes(ElementType::Q8_0, int64_t(x.size())));
  ASSERT_EQ(q4Bytes.size(), *rowBytes(ElementType::Q4_0, int64_t(x.size())));
  dequantize(ElementType::Q8_0,
             reinterpret_cast<const uint8_t *>(q8Bytes.data()), q8.data(),
             int64_t(x.size()));
  dequantize(ElementType::Q4_0,
             reinterpret_cast<const uint8_t *>(q4Bytes.data()), q4.data(),
             int64_t(x.size()));

  for (size_t b = 0; b < x.size(); b += 32) {
    float amax = 0;
    for (size_t i = 0; i < 32; ++i)
      amax = std::max(amax, std::fabs(x[b + i]));
    // |d| in f16 differs from the exact d by at most 2^-11 relative, and
    // that error is multiplied by |q| <= 127 (Q8_0) or 8 (Q4_0).
    float d8 = amax / 127, d4 = amax / 8;
    for (size_t i = 0; i < 32; ++i) {
      EXPECT_LE(std::fabs(q8[b + i] - x[b + i]),
                d8 * (0.5f + 127 * std::ldexp(1.0f, -11)) * 1.001f)
          << "q8_0 element " << b + i;
      EXPECT_LE(std::fabs(q4[b + i] - x[b + i]),
                d4 * (1.0f + 8 * std::ldexp(1.0f, -11)) * 1.001f)
          << "q4_0 element " << b + i;
    }
  }
  EXPECT_EQ(q8[5], 0.0f);
  EXPECT_EQ(q4[5], 0.0f);
  for (int i = 64; i < 96; ++i) {
    EXPECT_EQ(q8[i], 0.0f);
    EXPECT_EQ(q4[i], 0.0f);
  }
}

} // namespace
