//===- QuantizeK.cpp - Float weights into Q4_K, Q5_K and Q6_K blocks ------===//
//
// Part of Kiln. The K-quant block quantizers of Quantize.h: llama.cpp's
// quantize_row_q{4,5,6}_K_ref (c392e50), what `llama-quantize` runs when it
// has no importance matrix. Byte identity with the reference needs its exact
// float semantics, so every expression here keeps the reference's operand
// order and types (an int level times a float is a float multiply), sums run
// in index order, and ties keep the first of equals. docs/quantization.md
// says the rules in words.
//
//===----------------------------------------------------------------------===//

#include "frontends/formats/Quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

// Each multiply and add is rounded on its own, as in the reference: a fused
// multiply-add (sum += w * x) would round once and change the fitted scales.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace kiln::formats::detail {

namespace {

constexpr int kSuperBlock = 256;

/// The reference's smallest group maximum that is not "all zero"
/// (GROUP_MAX_EPS).
constexpr float kGroupMaxEps = 1e-15f;

/// llama.cpp's nearest_int: adding 1.5 * 2^23 leaves the rounded integer
/// (to nearest, ties to even) in the low mantissa bits. Outside +-2^22 the
/// reference asserts, compiled out in release builds: the same bits are
/// returned here, whatever they mean, so that the clamp after it agrees.
int nearestInt(float value) {
  float shifted = value + 12582912.0f;
  uint32_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  return static_cast<int>(bits & 0x007fffff) - 0x00400000;
}

void storeHalf(float value, uint8_t *out) {
  uint16_t bits = floatToHalf(value);
  out[0] = static_cast<uint8_t>(bits & 0xff);
  out[1] = static_cast<uint8_t>(bits >> 8);
}

float loadHalf(const uint8_t *in) {
  return halfToFloat(static_cast<uint16_t>(in[0] | (in[1] << 8)));
}

//===----------------------------------------------------------------------===//
// Q4_K and Q5_K: asymmetric sub-blocks of 32
//===----------------------------------------------------------------------===//

/// The search of make_qkx2_quants: which grid offsets to try.
struct MinSearch {
  int nmax;     ///< the largest level (15, 31)
  float rmin;   ///< the first offset added to nmax
  float rdelta; ///< the step between offsets
  int nstep;    ///< offsets tried: nstep + 1
};

/// Weighted squared error of levels `levels` under x ~ scale*l + min.
float fitError(const float *x, const float *weights, const uint8_t *levels,
               float scale, float min) {
  float error = 0;
  for (int i = 0; i < 32; ++i) {
    float diff = scale * static_cast<float>(levels[i]) + min - x[i];
    diff = diff * diff;
    error += weights[i] * diff;
  }
  return error;
}

/// make_qkx2_quants for 32 weights, without its mean-absolute-error mode
/// (the _ref quantizers never use it): fits x ~ scale*L + min with min <= 0
/// by least squares over nstep + 1 grids, keeping the first best. Returns
/// the scale; `negMin` gets -min. Note that `min` itself moves when a grid
/// wins, and later grids are laid over the new range, as in the reference.
float fitScaleAndMin(const float *x, const float *weights, uint8_t *levels,
                     float &negMin, const MinSearch &search) {
  float min = x[0], max = x[0];
  float sumW = weights[0];
  float sumX = sumW * x[0];
  for (int i = 1; i < 32; ++i) {
    if (x[i] < min)
      min = x[i];
    if (x[i] > max)
      max = x[i];
    sumW += weights[i];
    sumX += weights[i] * x[i];
  }
  if (min > 0)
    min = 0;
  if (max == min) {
    std::fill(levels, levels + 32, 0);
    negMin = -min;
    return 0.0f;
  }
  const float nmax = static_cast<float>(search.nmax);
  auto levelOf = [&](float iscale, float v) {
    return std::clamp(nearestInt(iscale * (v - min)), 0, search.nmax);
  };
  float iscale = nmax / (max - min);
  float scale = 1 / iscale;
  for (int i = 0; i < 32; ++i)
    levels[i] = static_cast<uint8_t>(levelOf(iscale, x[i]));
  float bestError = fitError(x, weights, levels, scale, min);

  uint8_t trial[32];
  for (int step = 0; step <= search.nstep; ++step) {
    iscale = (search.rmin + search.rdelta * static_cast<float>(step) + nmax) /
             (max - min);
    float sumL = 0, sumL2 = 0, sumXL = 0;
    for (int i = 0; i < 32; ++i) {
      int l = levelOf(iscale, x[i]);
      trial[i] = static_cast<uint8_t>(l);
      float wl = weights[i] * static_cast<float>(l);
      sumL += wl;
      sumL2 += wl * static_cast<float>(l);
      sumXL += wl * x[i];
    }
    float det = sumW * sumL2 - sumL * sumL;
    if (!(det > 0))
      continue;
    float trialScale = (sumW * sumXL - sumX * sumL) / det;
    float trialMin = (sumL2 * sumX - sumL * sumXL) / det;
    if (trialMin > 0) {
      trialMin = 0;
      trialScale = sumXL / sumL2;
    }
    float error = fitError(x, weights, trial, trialScale, trialMin);
    if (error < bestError) {
      std::copy(trial, trial + 32, levels);
      bestError = error;
      scale = trialScale;
      min = trialMin;
    }
  }
  negMin = -min;
  return scale;
}

/// Packs the 6-bit scale and min of the 8 sub-blocks into 12 bytes, the
/// inverse of unpackKScaleMin.
void packScalesAndMins(const uint8_t *scales, const uint8_t *mins,
                       uint8_t *out) {
  for (int j = 0; j < 4; ++j) {
    out[j] = scales[j];
    out[j + 4] = mins[j];
  }
  for (int j = 4; j < 8; ++j) {
    out[j + 4] = static_cast<uint8_t>((scales[j] & 0x0f) | (mins[j] << 4));
    out[j - 4] |= static_cast<uint8_t>((scales[j] >> 4) << 6);
    out[j] |= static_cast<uint8_t>((mins[j] >> 4) << 6);
  }
}

/// A sub-block scale or min as a 6-bit multiple of the super-block's:
/// nearest_int into a uint8_t (a negative fit wraps, as in the reference),
/// then at most 63.
uint8_t sixBitLevel(float inverse, float value) {
  uint8_t level = static_cast<uint8_t>(nearestInt(inverse * value));
  return std::min<uint8_t>(63, level);
}

/// Q4_K (nmax 15) or Q5_K (nmax 31) levels of one 256-weight block: fits
/// each sub-block, stores d, dmin and the packed scales at out[0..15], and
/// leaves each weight's level in `levels`.
void quantizeAsymmetric(const float *x, uint8_t *out, uint8_t *levels,
                        const MinSearch &search) {
  float scales[8], mins[8];
  float maxScale = 0, maxMin = 0;
  for (int j = 0; j < 8; ++j) {
    const float *xs = x + 32 * j;
    float sumX2 = 0;
    for (int l = 0; l < 32; ++l)
      sumX2 += xs[l] * xs[l];
    float meanAbs = std::sqrt(sumX2 / 32.0f);
    float weights[32];
    for (int l = 0; l < 32; ++l)
      weights[l] = meanAbs + std::fabs(xs[l]);
    scales[j] = fitScaleAndMin(xs, weights, levels + 32 * j, mins[j], search);
    if (scales[j] > maxScale)
      maxScale = scales[j];
    if (mins[j] > maxMin)
      maxMin = mins[j];
  }

  float inverseScale = maxScale > 0 ? 63.0f / maxScale : 0.0f;
  float inverseMin = maxMin > 0 ? 63.0f / maxMin : 0.0f;
  uint8_t scaleLevels[8], minLevels[8];
  for (int j = 0; j < 8; ++j) {
    scaleLevels[j] = sixBitLevel(inverseScale, scales[j]);
    minLevels[j] = sixBitLevel(inverseMin, mins[j]);
  }
  storeHalf(maxScale / 63.0f, out);
  storeHalf(maxMin / 63.0f, out + 2);
  packScalesAndMins(scaleLevels, minLevels, out + 4);

  // Requantize against the stored (rounded) scales; a sub-block whose scale
  // is 0 keeps the levels of its fit.
  float d = loadHalf(out), dmin = loadHalf(out + 2);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    unpackKScaleMin(out + 4, j, sc, m);
    float scale = d * static_cast<float>(sc);
    if (scale == 0.0f)
      continue;
    float offset = dmin * static_cast<float>(m);
    for (int l = 0; l < 32; ++l) {
      int q = nearestInt((x[32 * j + l] + offset) / scale);
      levels[32 * j + l] = static_cast<uint8_t>(std::clamp(q, 0, search.nmax));
    }
  }
}

/// Low nibbles of weights 64c + l and 64c + 32 + l share byte 32c + l.
void packNibbles(const uint8_t *levels, uint8_t *nibbles) {
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l)
      nibbles[32 * c + l] =
          static_cast<uint8_t>((levels[64 * c + l] & 0x0f) |
                               ((levels[64 * c + 32 + l] & 0x0f) << 4));
}

void quantizeQ4K(const float *x, uint8_t *out) {
  uint8_t levels[kSuperBlock];
  quantizeAsymmetric(x, out, levels, MinSearch{15, -1.0f, 0.1f, 20});
  packNibbles(levels, out + 16);
}

void quantizeQ5K(const float *x, uint8_t *out) {
  uint8_t levels[kSuperBlock];
  quantizeAsymmetric(x, out, levels, MinSearch{31, -0.5f, 0.1f, 15});
  // The fifth bit of weight 64c + l is bit 2c of qh[l]; of 64c + 32 + l,
  // bit 2c + 1.
  uint8_t *highBits = out + 16;
  std::fill(highBits, highBits + 32, 0);
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) {
      highBits[l] |= static_cast<uint8_t>((levels[64 * c + l] >> 4) << (2 * c));
      highBits[l] |=
          static_cast<uint8_t>((levels[64 * c + 32 + l] >> 4) << (2 * c + 1));
    }
  packNibbles(levels, out + 48);
}

//===----------------------------------------------------------------------===//
// Q6_K: symmetric sub-blocks of 16
//===----------------------------------------------------------------------===//

constexpr int kQ6Max = 32;

/// Sums of make_qx_quants' weighted least-squares fit (weights x^2) of
/// levels round(iscale * x) clamped to -32..31.
struct SymmetricSums {
  float sumLX = 0, sumL2 = 0;
};

int symmetricLevel(float iscale, float v) {
  return std::clamp(nearestInt(iscale * v), -kQ6Max, kQ6Max - 1);
}

SymmetricSums symmetricSums(const float *x, float iscale) {
  SymmetricSums s;
  for (int i = 0; i < 16; ++i) {
    float l = static_cast<float>(symmetricLevel(iscale, x[i]));
    float w = x[i] * x[i];
    s.sumLX += w * x[i] * l;
    s.sumL2 += w * l * l;
  }
  return s;
}

void storeSymmetricLevels(const float *x, float iscale, uint8_t *levels) {
  for (int i = 0; i < 16; ++i)
    levels[i] = static_cast<uint8_t>(kQ6Max + symmetricLevel(iscale, x[i]));
}

/// make_qx_quants(16, 32, x, L, rmse_type 1, no weights): the signed scale
/// of 16 weights, trying iscale = -(32 + 0.1*k)/max for k = -9..9 and keeping
/// the first that fits better. Levels (0..63, i.e. l + 32) go to `levels`.
float fitSymmetricScale(const float *x, uint8_t *levels) {
  float max = 0, amax = 0;
  for (int i = 0; i < 16; ++i) {
    float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    std::fill(levels, levels + 16, 0);
    return 0.0f;
  }
  float iscale = static_cast<float>(-kQ6Max) / max;
  storeSymmetricLevels(x, iscale, levels);
  SymmetricSums s = symmetricSums(x, iscale);
  float scale = s.sumL2 != 0.0f ? s.sumLX / s.sumL2 : 0.0f;
  float best = scale * s.sumLX;
  for (int step = -9; step <= 9; ++step) {
    if (step == 0)
      continue;
    iscale =
        -(static_cast<float>(kQ6Max) + 0.1f * static_cast<float>(step)) / max;
    SymmetricSums t = symmetricSums(x, iscale);
    if (t.sumL2 > 0 && t.sumLX * t.sumLX > best * t.sumL2) {
      storeSymmetricLevels(x, iscale, levels);
      scale = t.sumLX / t.sumL2;
      best = scale * t.sumLX;
    }
  }
  return scale;
}

/// Packs 256 levels (0..63) into ql (low nibbles) and qh (high 2 bits).
void packQ6Levels(const uint8_t *levels, uint8_t *ql, uint8_t *qh) {
  for (int half = 0; half < 2; ++half) {
    const uint8_t *L = levels + 128 * half;
    uint8_t *low = ql + 64 * half, *high = qh + 32 * half;
    for (int l = 0; l < 32; ++l) {
      low[l] = static_cast<uint8_t>((L[l] & 0x0f) | ((L[l + 64] & 0x0f) << 4));
      low[l + 32] =
          static_cast<uint8_t>((L[l + 32] & 0x0f) | ((L[l + 96] & 0x0f) << 4));
      high[l] = static_cast<uint8_t>((L[l] >> 4) | ((L[l + 32] >> 4) << 2) |
                                     ((L[l + 64] >> 4) << 4) |
                                     ((L[l + 96] >> 4) << 6));
    }
  }
}

void quantizeQ6K(const float *x, uint8_t *out) {
  uint8_t levels[kSuperBlock];
  float scales[16];
  float maxScale = 0, maxAbsScale = 0;
  for (int ib = 0; ib < 16; ++ib) {
    scales[ib] = fitSymmetricScale(x + 16 * ib, levels + 16 * ib);
    float absScale = std::fabs(scales[ib]);
    if (absScale > maxAbsScale) {
      maxAbsScale = absScale;
      maxScale = scales[ib];
    }
  }
  uint8_t *ql = out, *qh = out + 128, *subScales = out + 192;
  if (maxAbsScale < kGroupMaxEps) {
    std::fill(out, out + blockBytes(ElementType::Q6_K), 0); // d = +0 too
    return;
  }

  float iscale = -128.0f / maxScale;
  storeHalf(1 / iscale, out + 208);
  for (int ib = 0; ib < 16; ++ib) {
    int level = std::min(127, nearestInt(iscale * scales[ib]));
    subScales[ib] = static_cast<uint8_t>(level & 0xff); // two's-complement
  }

  // Requantize against the stored scales; a sub-block whose scale is 0
  // keeps the levels of its fit.
  float d = loadHalf(out + 208);
  for (int j = 0; j < 16; ++j) {
    int8_t sc;
    std::memcpy(&sc, &subScales[j], 1);
    float scale = d * static_cast<float>(sc);
    if (scale == 0.0f)
      continue;
    for (int i = 0; i < 16; ++i) {
      int q = std::clamp(nearestInt(x[16 * j + i] / scale), -32, 31);
      levels[16 * j + i] = static_cast<uint8_t>(q + 32);
    }
  }
  packQ6Levels(levels, ql, qh);
}

} // namespace

void quantizeKBlock(ElementType type, const float *x, uint8_t *out) {
  switch (type) {
  case ElementType::Q4_K:
    quantizeQ4K(x, out);
    return;
  case ElementType::Q5_K:
    quantizeQ5K(x, out);
    return;
  case ElementType::Q6_K:
    quantizeQ6K(x, out);
    return;
  case ElementType::F32:
  case ElementType::F16:
  case ElementType::BF16:
  case ElementType::Q8_0:
  case ElementType::Q4_0:
    break;
  }
}

} // namespace kiln::formats::detail
