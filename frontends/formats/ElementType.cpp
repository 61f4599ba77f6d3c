//===- ElementType.cpp - Element types of stored tensors ------------------===//
//
// Part of Kiln. Sizes of the stored element types and their conversion to
// float. Everything is read byte by byte (little-endian, whatever the host),
// so a pointer into a memory-mapped file may have any alignment.
//
//===----------------------------------------------------------------------===//

#include "frontends/formats/ElementType.h"

#include <cstring>
#include <limits>

// The K-quant weights are d*sc*q - dmin*m: a multiply and a subtract that a
// compiler allowed to contract would fuse into one FMA, rounding once where
// llama.cpp rounds twice.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace kiln::formats {

namespace {

constexpr int64_t kQuantBlock = 32;
constexpr int64_t kSuperBlock = 256;

uint16_t loadU16(const uint8_t *p) {
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}

uint32_t loadU32(const uint8_t *p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}

float bitsToFloat(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint32_t floatToBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

} // namespace

const char *elementTypeName(ElementType type) {
  switch (type) {
  case ElementType::F32:
    return "f32";
  case ElementType::F16:
    return "f16";
  case ElementType::BF16:
    return "bf16";
  case ElementType::Q8_0:
    return "q8_0";
  case ElementType::Q4_0:
    return "q4_0";
  case ElementType::Q4_K:
    return "q4_k";
  case ElementType::Q5_K:
    return "q5_k";
  case ElementType::Q6_K:
    return "q6_k";
  }
  return "unknown";
}

int64_t blockSize(ElementType type) {
  switch (type) {
  case ElementType::F32:
  case ElementType::F16:
  case ElementType::BF16:
    return 1;
  case ElementType::Q8_0:
  case ElementType::Q4_0:
    return kQuantBlock;
  case ElementType::Q4_K:
  case ElementType::Q5_K:
  case ElementType::Q6_K:
    return kSuperBlock;
  }
  return 1;
}

int64_t blockBytes(ElementType type) {
  switch (type) {
  case ElementType::F32:
    return 4;
  case ElementType::F16:
  case ElementType::BF16:
    return 2;
  case ElementType::Q8_0:
    return 2 + kQuantBlock;
  case ElementType::Q4_0:
    return 2 + kQuantBlock / 2;
  case ElementType::Q4_K: // d, dmin, 12 scale bytes, 4-bit levels
    return 2 + 2 + 12 + kSuperBlock / 2;
  case ElementType::Q5_K: // as Q4_K, plus one high bit per weight
    return 2 + 2 + 12 + kSuperBlock / 8 + kSuperBlock / 2;
  case ElementType::Q6_K: // low nibbles, high 2 bits, 16 scales, d
    return kSuperBlock / 2 + kSuperBlock / 4 + kSuperBlock / 16 + 2;
  }
  return 4;
}

std::optional<uint64_t> rowBytes(ElementType type, int64_t n) {
  if (n < 0 || n % blockSize(type) != 0)
    return std::nullopt;
  uint64_t blocks = static_cast<uint64_t>(n / blockSize(type));
  uint64_t perBlock = static_cast<uint64_t>(blockBytes(type));
  if (blocks > std::numeric_limits<uint64_t>::max() / perBlock)
    return std::nullopt;
  return blocks * perBlock;
}

//===----------------------------------------------------------------------===//
// Half precision
//===----------------------------------------------------------------------===//

float halfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  if (exponent == 0x1f) // Inf, or NaN with its payload kept.
    return bitsToFloat(sign | 0x7f800000 | (mantissa << 13));
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in float (a 10-bit integer
    // times a power of two well inside float's range).
    float magnitude = static_cast<float>(mantissa) * bitsToFloat(0x33800000);
    return bitsToFloat(sign | floatToBits(magnitude));
  }
  // Normal: rebias the exponent from 15 to 127.
  return bitsToFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

uint16_t floatToHalf(float f) {
  uint32_t bits = floatToBits(f);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  uint32_t magnitude = bits & 0x7fffffff;

  if (magnitude >= 0x7f800000) {
    if (magnitude == 0x7f800000)
      return sign | 0x7c00;
    // NaN: keep the top payload bits and force the quiet bit so the result
    // cannot collapse to infinity.
    return static_cast<uint16_t>(sign | 0x7e00 | ((magnitude >> 13) & 0x3ff));
  }
  // 65520 = 65504 + half an ulp: the tie rounds to the even neighbour, which
  // is 2^16 -- out of range, so infinity.
  if (magnitude >= 0x477ff000)
    return sign | 0x7c00;

  if (magnitude < 0x38800000) {
    // Below 2^-14, the smallest normal half: the result is a subnormal
    // round(value / 2^-24). value = m * 2^(e - 150) with the implicit bit in
    // m, so the quotient is m >> (126 - e), rounded to nearest even.
    uint32_t e = magnitude >> 23;
    if (e < 102) // value < 2^-25: rounds to zero (ties impossible here).
      return sign;
    uint32_t m = (magnitude & 0x7fffff) | 0x800000;
    uint32_t shift = 126 - e; // 14..24
    uint32_t result = m >> shift;
    uint32_t rest = m & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (result & 1)))
      ++result; // May carry into 0x400, the smallest normal: still right.
    return static_cast<uint16_t>(sign | result);
  }

  // Normal: rebias the exponent (127 -> 15) and drop 13 mantissa bits with
  // round to nearest even; a carry out of the mantissa bumps the exponent,
  // which is the correctly rounded result.
  uint32_t result = (magnitude - 0x38000000) >> 13;
  uint32_t rest = magnitude & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (result & 1)))
    ++result;
  return static_cast<uint16_t>(sign | result);
}

//===----------------------------------------------------------------------===//
// bfloat16
//===----------------------------------------------------------------------===//

float bf16ToFloat(uint16_t b) {
  return bitsToFloat(static_cast<uint32_t>(b) << 16);
}

uint16_t floatToBf16(float f) {
  uint32_t bits = floatToBits(f);
  if ((bits & 0x7fffffff) > 0x7f800000) // NaN: truncating could give Inf.
    return static_cast<uint16_t>((bits >> 16) | 0x0040);
  // Round to nearest even on the 16 dropped bits. Cannot wrap: the largest
  // finite magnitude plus 0x8000 is still below 2^32, and it rounds to Inf
  // exactly when it should.
  uint32_t roundingBias = 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + roundingBias) >> 16);
}

//===----------------------------------------------------------------------===//
// Dequantization
//===----------------------------------------------------------------------===//

void unpackKScaleMin(const uint8_t *scales12, int j, uint8_t &scale,
                     uint8_t &min) {
  if (j < 4) {
    scale = scales12[j] & 63;
    min = scales12[j + 4] & 63;
    return;
  }
  scale = static_cast<uint8_t>((scales12[j + 4] & 0x0f) |
                               ((scales12[j - 4] >> 6) << 4));
  min =
      static_cast<uint8_t>((scales12[j + 4] >> 4) | ((scales12[j] >> 6) << 4));
}

namespace {

/// One Q4_K (`highBits` null) or Q5_K block: sub-block j's weights are
/// d*sc[j] * q - dmin*m[j], both products rounded to float first.
void dequantizeQ4Q5KBlock(const uint8_t *block, const uint8_t *highBits,
                          const uint8_t *nibbles, float *out) {
  float d = halfToFloat(loadU16(block));
  float dmin = halfToFloat(loadU16(block + 2));
  const uint8_t *scales = block + 4;
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    unpackKScaleMin(scales, j, sc, m);
    float scale = d * static_cast<float>(sc);
    float offset = dmin * static_cast<float>(m);
    // Sub-blocks 2c and 2c+1 share nibble bytes 32c..32c+31 (low, high)
    // and fifth bits 2c, 2c+1.
    const uint8_t *bytes = nibbles + 32 * (j / 2);
    int shift = (j % 2) * 4;
    for (int l = 0; l < 32; ++l) {
      int q = (bytes[l] >> shift) & 0x0f;
      if (highBits && (highBits[l] >> j) & 1)
        q += 16;
      out[32 * j + l] = scale * static_cast<float>(q) - offset;
    }
  }
}

/// Level (0..63) of weight i (0..255) of a Q6_K block.
int q6KLevel(const uint8_t *ql, const uint8_t *qh, int i) {
  int half = i / 128, k = (i % 128) / 32, l = i % 32;
  uint8_t low = ql[64 * half + 32 * (k & 1) + l];
  int nibble = k < 2 ? (low & 0x0f) : (low >> 4);
  int high = (qh[32 * half + l] >> (2 * k)) & 3;
  return nibble | (high << 4);
}

/// One Q6_K block: w = d*scale * (q - 32), d*scale rounded first.
void dequantizeQ6KBlock(const uint8_t *block, float *out) {
  const uint8_t *ql = block, *qh = block + 128, *scales = block + 192;
  float d = halfToFloat(loadU16(block + 208));
  for (int i = 0; i < kSuperBlock; ++i) {
    int scale = scales[i / 16];
    if (scale >= 128) // two's-complement int8
      scale -= 256;
    float ds = d * static_cast<float>(scale);
    out[i] = ds * static_cast<float>(q6KLevel(ql, qh, i) - 32);
  }
}

} // namespace

void dequantize(ElementType type, const uint8_t *src, float *dst, int64_t n) {
  if (n <= 0)
    return;
  switch (type) {
  case ElementType::F32:
    for (int64_t i = 0; i < n; ++i)
      dst[i] = bitsToFloat(loadU32(src + 4 * i));
    return;
  case ElementType::F16:
    for (int64_t i = 0; i < n; ++i)
      dst[i] = halfToFloat(loadU16(src + 2 * i));
    return;
  case ElementType::BF16:
    for (int64_t i = 0; i < n; ++i)
      dst[i] = bf16ToFloat(loadU16(src + 2 * i));
    return;
  case ElementType::Q8_0:
    for (int64_t b = 0; b < n / kQuantBlock; ++b) {
      const uint8_t *block = src + b * blockBytes(ElementType::Q8_0);
      float d = halfToFloat(loadU16(block));
      float *out = dst + b * kQuantBlock;
      for (int64_t i = 0; i < kQuantBlock; ++i) {
        // The byte is a two's-complement int8; convert without relying on
        // the implementation-defined narrowing cast.
        int q = static_cast<int>(block[2 + i]);
        if (q >= 128)
          q -= 256;
        out[i] = d * static_cast<float>(q);
      }
    }
    return;
  case ElementType::Q4_0:
    for (int64_t b = 0; b < n / kQuantBlock; ++b) {
      const uint8_t *block = src + b * blockBytes(ElementType::Q4_0);
      float d = halfToFloat(loadU16(block));
      float *out = dst + b * kQuantBlock;
      for (int64_t j = 0; j < kQuantBlock / 2; ++j) {
        int low = block[2 + j] & 0x0f;
        int high = block[2 + j] >> 4;
        out[j] = d * static_cast<float>(low - 8);
        out[j + kQuantBlock / 2] = d * static_cast<float>(high - 8);
      }
    }
    return;
  case ElementType::Q4_K:
  case ElementType::Q5_K: {
    bool five = type == ElementType::Q5_K;
    for (int64_t b = 0; b < n / kSuperBlock; ++b) {
      const uint8_t *block = src + b * blockBytes(type);
      const uint8_t *highBits = five ? block + 16 : nullptr;
      const uint8_t *nibbles = block + (five ? 48 : 16);
      dequantizeQ4Q5KBlock(block, highBits, nibbles, dst + b * kSuperBlock);
    }
    return;
  }
  case ElementType::Q6_K:
    for (int64_t b = 0; b < n / kSuperBlock; ++b)
      dequantizeQ6KBlock(src + b * blockBytes(type), dst + b * kSuperBlock);
    return;
  }
}

} // namespace kiln::formats
