//===- KernelTest.cpp - The CPU kernels against naive loops ---------------===//
//
// Part of Kiln's CPU kernel tests. Every kernel family of codegen/cpu/kernels/
// (GEMM with its rms_norm prologue, bias, activations, residual, swiglu,
// f16 and bf16 weights in each panel layout, Q8_0 and Q4_0 blocks, and the
// batch invariance of its rows; fused attention over the KV
// cache; the unfused attention pieces; rope; rms_norm and layer_norm; the
// element-wise ops and softmax; embedding (from a table and from each kind
// of GEMM panels), gather_rows, split, transpose,
// kv_append and kv_read), as KernelInstances.cpp instantiates it for one
// ISA, run on random inputs of odd sizes, single-threaded and on a pool of 3
// threads, and compared with a naive loop written here from the reference
// interpreter's definition of the op (ir/interpreter/Interpreter.cpp),
// accumulating in double. Never with the same template at another vector
// width: the point is to catch what tiles, tails, masks and packing get
// wrong, and odd sizes reach every tail.
//
// Tolerances: a computed value must be within 1e-5 of the reference relative
// to a bound on the magnitudes of the terms it sums (so cancellation cannot
// make a test flaky, while a wrong term still fails it); data movement must
// be exact, bit for bit. f16 and bf16 weights are rounded before the
// reference sees them, and bf16 dot products (BF16_DOT) also round the
// activations to bf16, as the kernel does, so those compare as tightly;
// Q8_0 and Q4_0 GEMMs quantize the activations here as the definition says
// (llama.cpp's quantize_row_q8_0) and compare as tightly too.
// Outputs start as NaN, so an element a kernel forgets to write fails.
// Random inputs come from std::mt19937 with fixed seeds: failures reproduce.
//
// This file is compiled without the ISA's flags and must not include the
// kernel headers (see KernelInstances.cpp). Each test first checks that the
// CPU has KILN_TEST_FEATURES and skips, naming what is missing, if not.
//
//===----------------------------------------------------------------------===//

#include "test/kernels/KernelInstances.h"

#include "runtime/CpuFeatures.h"
#include "runtime/ThreadPool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iomanip>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#if !defined(KILN_TEST_ISA) || !defined(KILN_TEST_FEATURES)
#error                                                                         \
    "test/kernels/CMakeLists.txt defines KILN_TEST_ISA and KILN_TEST_FEATURES"
#endif

namespace kt = kiln::kernel_test;

namespace {

constexpr double kTolerance = 1e-5;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
/// Rows (tokens) per run: decode sizes, partial register blocks, several m
/// blocks with a partial one.
const int64_t kRowCounts[] = {1, 2, 3, 5, 17, 69};

//===--- Harness ----------------------------------------------------------===//

std::vector<std::string> requiredFeatures() {
  std::vector<std::string> features;
  std::stringstream list(KILN_TEST_FEATURES);
  std::string feature;
  while (std::getline(list, feature, ','))
    if (!feature.empty())
      features.push_back(feature);
  return features;
}

/// How a kernel runs: inline (no pool) or on the runtime's pool.
struct Threading {
  const char *name;
  const kiln_parallel *parallel;
};
std::vector<Threading> threadings() {
  static kiln::runtime::ThreadPool pool(3);
  static kiln_parallel abi = pool.abi();
  return {{"single-threaded", nullptr}, {"3 threads", &abi}};
}

class KernelTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::vector<std::string> missing =
        kiln::runtime::missingCpuFeatures(requiredFeatures());
    if (!missing.empty()) {
      std::string names;
      for (const std::string &m : missing)
        names += (names.empty() ? "" : ", ") + m;
      GTEST_SKIP() << "the " KILN_TEST_ISA
                      " kernels need CPU features this host lacks: "
                   << names;
    }
    V = kt::vector_floats();
  }
  int V = 0; // floats per vector of the kernels under test
};

std::vector<float> uniform(std::mt19937 &rng, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

int64_t pick(std::mt19937 &rng, int64_t lo, int64_t hi) { // in [lo, hi]
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

std::string describe(float x) {
  std::ostringstream os;
  os << std::setprecision(9) << x;
  return os.str();
}

/// Whether |got[i] - want[i]| <= tolerance * scale[i] for every i (scale: a
/// bound on the magnitude of what the value sums); if not, the first few
/// that are not.
::testing::AssertionResult near(const float *got,
                                const std::vector<double> &want,
                                const std::vector<double> &scale,
                                double tolerance = kTolerance) {
  size_t bad = 0;
  std::ostringstream os;
  for (size_t i = 0; i < want.size(); ++i) {
    double diff = std::fabs(double(got[i]) - want[i]);
    if (diff <= tolerance * scale[i])
      continue;
    if (bad++ < 5)
      os << "\n  [" << i << "] got " << describe(got[i]) << ", want "
         << std::setprecision(9) << want[i] << " (allowed error "
         << tolerance * scale[i] << ")";
  }
  if (!bad)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << bad << " of " << want.size() << " values differ:" << os.str();
}
::testing::AssertionResult near(const std::vector<float> &got,
                                const std::vector<double> &want,
                                const std::vector<double> &scale,
                                double tolerance = kTolerance) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure()
           << got.size() << " values, want " << want.size();
  return near(got.data(), want, scale, tolerance);
}

/// Whether got and want hold the same bits.
::testing::AssertionResult same(const std::vector<float> &got,
                                const std::vector<float> &want) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure()
           << got.size() << " values, want " << want.size();
  size_t bad = 0;
  std::ostringstream os;
  for (size_t i = 0; i < want.size(); ++i) {
    if (!std::memcmp(&got[i], &want[i], sizeof(float)))
      continue;
    if (bad++ < 5)
      os << "\n  [" << i << "] got " << describe(got[i]) << ", want "
         << describe(want[i]);
  }
  if (!bad)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << bad << " of " << want.size() << " values differ:" << os.str();
}

std::string runName(int64_t rows, const Threading &th) {
  return "rows " + std::to_string(rows) + ", " + th.name;
}

//===--- Naive definitions ------------------------------------------------===//

double silu(double x) { return x / (1.0 + std::exp(-x)); }
double gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double geluTanh(double x) {
  const double c = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
}
double activate(kt::Unary op, double x) {
  switch (op) {
  case kt::Unary::Identity:
    return x;
  case kt::Unary::Silu:
    return silu(x);
  case kt::Unary::Gelu:
    return gelu(x);
  case kt::Unary::GeluTanh:
    return geluTanh(x);
  case kt::Unary::Relu:
    return x > 0.0 ? x : 0.0;
  case kt::Unary::Scale:
    return double(kt::kScaleFactor) * x;
  }
  return x;
}
/// A bound on |f'| of the activations (gelu's is about 1.13).
constexpr double kActivationSlope = 1.2;

/// rms_norm rows of [rows, d]: g * x / sqrt(mean(x^2) + eps).
std::vector<double> rmsNorm(const std::vector<float> &x,
                            const std::vector<float> &g, int64_t rows,
                            int64_t d, double eps) {
  std::vector<double> y(rows * d);
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < d; ++i)
      ss += double(x[r * d + i]) * x[r * d + i];
    double s = 1.0 / std::sqrt(ss / double(d) + eps);
    for (int64_t i = 0; i < d; ++i)
      y[r * d + i] = double(g[i]) * s * x[r * d + i];
  }
  return y;
}

//===--- Weight types and the panel layout --------------------------------===//

float bf16ToFloat(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
uint16_t floatToBf16(float f) { // nearest even; f finite
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return uint16_t((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}
float roundBf16(float f) { return bf16ToFloat(floatToBf16(f)); }

float halfToFloat(uint16_t h) { // finite halves
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
  return float(h & 0x8000 ? -v : v);
}
uint16_t floatToHalf(float f) { // nearest even; |f| < 65504
  uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  double a = std::fabs(double(f));
  if (a < std::ldexp(1.0, -14)) // subnormal (rounding up to 0x400 is right)
    return uint16_t(sign | uint16_t(std::nearbyint(std::ldexp(a, 24))));
  int e;
  std::frexp(a, &e);                                // a in [2^(e-1), 2^e)
  double m = std::nearbyint(std::ldexp(a, 11 - e)); // in [1024, 2048]
  if (m == 2048) {
    m = 1024;
    ++e;
  }
  return uint16_t(sign | ((e - 1 + 15) << 10) | (int(m) - 1024));
}

float roundTo(kt::WeightType type, float v) {
  switch (type) {
  case kt::WeightType::F32:
    return v;
  case kt::WeightType::F16:
    return halfToFloat(floatToHalf(v));
  case kt::WeightType::BF16:
    return roundBf16(v);
  case kt::WeightType::Q8_0: // blocks, not values: see QuantWeight
  case kt::WeightType::Q4_0:
  case kt::WeightType::Q4_K:
  case kt::WeightType::Q5_K:
  case kt::WeightType::Q6_K:
    return v;
  }
  return v;
}

/// W[n, k] (already representable in `type`) as codegen/WeightPacker.cpp
/// packs it, re-implemented from its documentation: panel p holds rows
/// [p * nr, p * nr + nr) of W as k rows of nr values (rows past n zero).
/// LanePairs: within each group of 2V columns, 32-bit lane l holds columns
/// (l, l + V). KPairs: k rows in pairs, column c's values (k, k + 1) in
/// 32-bit lane c, k padded with zero to even. The stored bytes, in words.
std::vector<uint32_t> packPanels(const std::vector<float> &w, int64_t n,
                                 int64_t k, int64_t nr, kt::WeightType type,
                                 kt::PanelLayout layout, int V) {
  const int64_t kp = layout == kt::PanelLayout::KPairs ? k + (k & 1) : k;
  const int64_t panels = (n + nr - 1) / nr;
  std::vector<float> values(panels * kp * nr, 0.0f);
  for (int64_t p = 0; p < panels; ++p)
    for (int64_t kk = 0; kk < k; ++kk)
      for (int64_t r = 0; r < nr && p * nr + r < n; ++r) {
        int64_t at;
        if (layout == kt::PanelLayout::KPairs) {
          at = (p * kp + kk / 2 * 2) * nr + 2 * r + kk % 2;
        } else if (layout == kt::PanelLayout::LanePairs) {
          int64_t group = r / (2 * V) * (2 * V), l = r % (2 * V);
          at = (p * kp + kk) * nr + group + (l < V ? 2 * l : 2 * (l - V) + 1);
        } else {
          at = (p * kp + kk) * nr + r;
        }
        values[at] = w[(p * nr + r) * k + kk];
      }
  std::vector<uint32_t> words;
  if (type == kt::WeightType::F32) {
    words.resize(values.size());
    std::memcpy(words.data(), values.data(), values.size() * sizeof(float));
    return words;
  }
  std::vector<uint16_t> halves(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    halves[i] = type == kt::WeightType::F16 ? floatToHalf(values[i])
                                            : floatToBf16(values[i]);
  words.resize((halves.size() + 1) / 2);
  std::memcpy(words.data(), halves.data(), halves.size() * sizeof(uint16_t));
  return words;
}

//===--- Q8_0 and Q4_0 ----------------------------------------------------===//

bool isKQuant(kt::WeightType type) {
  return type == kt::WeightType::Q4_K || type == kt::WeightType::Q5_K ||
         type == kt::WeightType::Q6_K;
}
bool isQuant(kt::WeightType type) {
  return type == kt::WeightType::Q8_0 || type == kt::WeightType::Q4_0 ||
         isKQuant(type);
}

/// W[n, k] as a GGUF tensor stores it (docs/quantization.md): row after
/// row, k / 32 blocks of an f16 scale d (little-endian) and the levels.
/// Q8_0: 32 int8 q, a weight is d * q. Q4_0: 16 bytes, byte j holding
/// q[j] in its low nibble and q[j + 16] in its high one, a weight is
/// d * (q - 8). K-quants: k / 256 super-blocks (the k* accessors).
struct QuantWeight {
  kt::WeightType type = kt::WeightType::Q8_0;
  int64_t n = 0, k = 0;
  std::vector<uint8_t> blocks;

  int64_t blockSize() const { return isKQuant(type) ? 256 : 32; }
  int64_t blockBytes() const {
    switch (type) {
    case kt::WeightType::Q8_0:
      return 34;
    case kt::WeightType::Q4_K:
      return 144;
    case kt::WeightType::Q5_K:
      return 176;
    case kt::WeightType::Q6_K:
      return 210;
    default:
      return 18;
    }
  }
  const uint8_t *block(int64_t row, int64_t b) const {
    return blocks.data() + (row * (k / blockSize()) + b) * blockBytes();
  }
  static double half(const uint8_t *p) {
    return halfToFloat(uint16_t(p[0] | p[1] << 8));
  }

  // K-quants (GGUF's layouts, docs/quantization.md). Q4_K / Q5_K: f16 d,
  // f16 dmin, 12 bytes of 6-bit scales and mins, (Q5_K: 32 bytes of fifth
  // bits,) 128 nibble bytes; weight l of sub-block j (32 each) is
  // d * sc[j] * q - dmin * m[j]. Q6_K: ql[128], qh[64], int8 sc[16], f16
  // d; weight i is d * sc[i / 16] * (q - 32).
  double kD(int64_t row, int64_t s) const {
    const uint8_t *b = block(row, s);
    return half(type == kt::WeightType::Q6_K ? b + 208 : b);
  }
  double kDmin(int64_t row, int64_t s) const { return half(block(row, s) + 2); }
  /// Sub-block j's scale (Q6_K: of 16 weights) and min (not Q6_K).
  int kScale(int64_t row, int64_t s, int j) const {
    const uint8_t *b = block(row, s);
    if (type == kt::WeightType::Q6_K)
      return int8_t(b[192 + j]);
    const uint8_t *q = b + 4;
    return j < 4 ? q[j] & 63 : (q[j + 4] & 15) | ((q[j - 4] >> 6) << 4);
  }
  int kMin(int64_t row, int64_t s, int j) const {
    const uint8_t *q = block(row, s) + 4;
    return j < 4 ? q[j + 4] & 63 : (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
  /// Weight i's unsigned level of super-block s.
  int kLevel(int64_t row, int64_t s, int i) const {
    const uint8_t *b = block(row, s);
    if (type == kt::WeightType::Q6_K) {
      int n = i / 128, r = i % 128, part = r / 32, l = r % 32;
      int ql = b[64 * n + (part % 2) * 32 + l];
      int low = part < 2 ? ql & 15 : ql >> 4;
      return low | (((b[128 + 32 * n + l] >> (2 * part)) & 3) << 4);
    }
    int j = i / 32, l = i % 32;
    const uint8_t *qs = b + (type == kt::WeightType::Q5_K ? 48 : 16);
    int q = (qs[32 * (j / 2) + l] >> (4 * (j % 2))) & 15;
    if (type == kt::WeightType::Q5_K)
      q |= ((b[16 + l] >> j) & 1) << 4;
    return q;
  }
  /// The weight as GGUF's dequantization computes it, in float.
  float kValue(int64_t row, int64_t col) const {
    int64_t s = col / 256;
    int i = int(col % 256);
    float d = float(kD(row, s));
    if (type == kt::WeightType::Q6_K)
      return d * float(kScale(row, s, i / 16)) * float(kLevel(row, s, i) - 32);
    float d1 = d * float(kScale(row, s, i / 32));
    float m1 = float(kDmin(row, s)) * float(kMin(row, s, i / 32));
    return d1 * float(kLevel(row, s, i)) - m1;
  }
  double scale(int64_t row, int64_t b) const {
    const uint8_t *bl = block(row, b);
    return halfToFloat(uint16_t(bl[0] | bl[1] << 8));
  }
  /// The weight's level less the zero level: q, or q - 8 for Q4_0.
  int level(int64_t row, int64_t col) const {
    const uint8_t *bl = block(row, col / 32);
    int j = int(col % 32);
    if (type == kt::WeightType::Q8_0)
      return int8_t(bl[2 + j]);
    int byte = bl[2 + j % 16];
    return (j < 16 ? byte & 15 : byte >> 4) - 8;
  }
  /// The zero level of the levels as unsigned (Q8_0's q + 128, Q4_0's q).
  int offset() const { return type == kt::WeightType::Q8_0 ? 128 : 8; }
};

/// Random blocks: scales of either sign and magnitudes in [0.002, 0.05]
/// (rounded to f16), every level equally likely (Q8_0's -128 too).
QuantWeight randomQuant(std::mt19937 &rng, kt::WeightType type, int64_t n,
                        int64_t k) {
  QuantWeight w;
  w.type = type;
  w.n = n;
  w.k = k;
  w.blocks.resize(n * (k / w.blockSize()) * w.blockBytes());
  std::uniform_real_distribution<float> magnitude(0.002f, 0.05f);
  std::uniform_int_distribution<int> byte(0, 255);
  auto setHalf = [&](size_t at) {
    uint16_t h = floatToHalf(magnitude(rng) * (byte(rng) & 1 ? -1.0f : 1.0f));
    w.blocks[at] = uint8_t(h & 0xff);
    w.blocks[at + 1] = uint8_t(h >> 8);
  };
  for (size_t at = 0; at < w.blocks.size(); at += w.blockBytes()) {
    // Every byte random (K-quants' scales, mins and levels of every value),
    // then the f16 scales (d; dmin for Q4_K and Q5_K) of either sign.
    for (int64_t i = 0; i < w.blockBytes(); ++i)
      w.blocks[at + i] = uint8_t(byte(rng));
    if (type == kt::WeightType::Q6_K) {
      setHalf(at + 208);
    } else {
      setHalf(at);
      if (isKQuant(type))
        setHalf(at + 2);
    }
  }
  return w;
}

/// W's blocks packed as codegen/cpu/kernels/Quant.h describes (and
/// codegen/WeightPacker.cpp writes), re-implemented from that description:
/// panels of nr rows (rows past n zero bytes); per panel and block of 32 k,
/// nr f16 scales, then groups of 4 * nr bytes, column c's 4 at 4c: Q8_0's
/// group g holds q[4g .. 4g + 3] ^ 0x80, Q4_0's chunk p the block's quant
/// bytes [4p, 4p + 4) as they are. The stored bytes, in words.
std::vector<uint32_t> packKQuantPanels(const QuantWeight &w, int64_t nr);
std::vector<uint32_t> packQuantPanels(const QuantWeight &w, int64_t nr) {
  if (isKQuant(w.type))
    return packKQuantPanels(w, nr);
  const int64_t bb = w.blockBytes(), kb = w.k / 32;
  const int64_t panels = (w.n + nr - 1) / nr;
  std::vector<uint8_t> bytes(panels * kb * nr * bb, 0);
  for (int64_t p = 0; p < panels; ++p)
    for (int64_t b = 0; b < kb; ++b)
      for (int64_t r = 0; r < nr && p * nr + r < w.n; ++r) {
        uint8_t *out = bytes.data() + (p * kb + b) * nr * bb;
        const uint8_t *src = w.block(p * nr + r, b);
        out[2 * r] = src[0];
        out[2 * r + 1] = src[1];
        uint8_t *levels = out + 2 * nr + 4 * r;
        for (int i = 0; i < 4; ++i) {
          if (w.type == kt::WeightType::Q8_0) {
            for (int g = 0; g < 8; ++g)
              levels[g * 4 * nr + i] = uint8_t(src[2 + 4 * g + i] ^ 0x80);
          } else {
            for (int chunk = 0; chunk < 4; ++chunk)
              levels[chunk * 4 * nr + i] = src[2 + 4 * chunk + i];
          }
        }
      }
  std::vector<uint32_t> words((bytes.size() + 3) / 4);
  std::memcpy(words.data(), bytes.data(), bytes.size());
  return words;
}

/// W's super-blocks packed as codegen/cpu/kernels/KQuant.h describes,
/// re-implemented from that description: per panel and super-block, each
/// column's part c of every run over the panel's nr columns. Q4_K / Q5_K:
/// d, dmin (f16), the sub-blocks' scales and mins as byte pairs (2t, 2t +
/// 1), (Q5_K: qh in groups of 4 bytes,) qs in groups of 4 bytes; Q6_K: d,
/// the int8 scales as pairs, ql and qh in groups of 4 bytes.
std::vector<uint32_t> packKQuantPanels(const QuantWeight &w, int64_t nr) {
  const int64_t kb = w.k / 256, panels = (w.n + nr - 1) / nr;
  const int64_t cb = w.type == kt::WeightType::Q4_K   ? 148
                     : w.type == kt::WeightType::Q5_K ? 180
                                                      : 210;
  std::vector<uint8_t> bytes(panels * kb * nr * cb, 0);
  for (int64_t row = 0; row < w.n; ++row)
    for (int64_t s = 0; s < kb; ++s) {
      const uint8_t *src = w.block(row, s);
      uint8_t *out = bytes.data() + ((row / nr) * kb + s) * nr * cb;
      const int64_t c = row % nr;
      auto put4 = [&](int64_t at, int64_t group, const uint8_t *from) {
        for (int i = 0; i < 4; ++i)
          out[at + group * 4 * nr + 4 * c + i] = from[i];
      };
      if (w.type == kt::WeightType::Q6_K) {
        out[2 * c] = src[208];
        out[2 * c + 1] = src[209];
        for (int j = 0; j < 16; ++j)
          out[2 * nr + (j / 2) * 2 * nr + 2 * c + j % 2] = src[192 + j];
        // Slots of 4 bytes in reading order: per half n of the block, the
        // ql and qh groups of the same 4 k alternate, then the ql groups
        // of the second 32 k (docs/artifact.md).
        for (int n = 0; n < 2; ++n)
          for (int g = 0; g < 8; ++g) {
            put4(18 * nr, 24 * n + 2 * g, src + 4 * (16 * n + g));
            put4(18 * nr, 24 * n + 2 * g + 1, src + 128 + 4 * (8 * n + g));
            put4(18 * nr, 24 * n + 16 + g, src + 4 * (16 * n + 8 + g));
          }
        continue;
      }
      for (int i = 0; i < 2; ++i) {
        out[2 * c + i] = src[i];
        out[2 * nr + 2 * c + i] = src[2 + i];
      }
      for (int j = 0; j < 8; ++j) {
        out[4 * nr + (j / 2) * 2 * nr + 2 * c + j % 2] =
            uint8_t(w.kScale(row, s, j));
        out[12 * nr + (j / 2) * 2 * nr + 2 * c + j % 2] =
            uint8_t(w.kMin(row, s, j));
      }
      const bool five = w.type == kt::WeightType::Q5_K;
      if (five)
        for (int g = 0; g < 8; ++g)
          put4(20 * nr, g, src + 16 + 4 * g);
      for (int g = 0; g < 32; ++g)
        put4((five ? 52 : 20) * nr, g, src + (five ? 48 : 16) + 4 * g);
    }
  std::vector<uint32_t> words((bytes.size() + 3) / 4);
  std::memcpy(words.data(), bytes.data(), bytes.size());
  return words;
}

/// Rows of x [rows, k] quantized per super-block of 256 as llama.cpp's
/// quantize_row_q8_K_ref: m the first x of the largest magnitude, iscale
/// = -127 / m, levels min(127, round(iscale * x)) (ties to even), d = 1 /
/// iscale, all in float.
struct KQuantRows {
  std::vector<int> q;    // [rows, k]
  std::vector<double> d; // [rows, k / 256]
};
KQuantRows quantizeRowsK(const std::vector<float> &x, int64_t rows, int64_t k) {
  KQuantRows out;
  out.q.assign(rows * k, 0);
  out.d.assign(rows * (k / 256), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t s = 0; s < k / 256; ++s) {
      const float *xs = x.data() + r * k + s * 256;
      float amax = 0.0f, top = 0.0f;
      for (int i = 0; i < 256; ++i)
        if (std::fabs(xs[i]) > amax) {
          amax = std::fabs(xs[i]);
          top = xs[i];
        }
      if (amax == 0.0f)
        continue;
      float iscale = -127.0f / top;
      for (int i = 0; i < 256; ++i)
        out.q[r * k + s * 256 + i] =
            std::min(127, int(std::nearbyint(iscale * xs[i])));
      out.d[r * (k / 256) + s] = 1.0f / iscale;
    }
  return out;
}

/// Rows of x [rows, k] quantized per block of 32 as llama.cpp's
/// quantize_row_q8_0 (its AVX path) does: amax = max |x|; the scale is
/// amax / 127 rounded to f16; the levels are x * (127 / amax) (0 when amax
/// is 0) rounded to nearest, ties to even. In float where the kernel must
/// agree bit for bit (the product x * id), as the definition says.
struct QuantRows {
  std::vector<int> q;    // [rows, k]
  std::vector<double> d; // [rows, k / 32]
};
QuantRows quantizeRows(const std::vector<float> &x, int64_t rows, int64_t k) {
  QuantRows out;
  out.q.resize(rows * k);
  out.d.resize(rows * (k / 32));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < k / 32; ++b) {
      const float *xb = x.data() + r * k + b * 32;
      float amax = 0.0f;
      for (int i = 0; i < 32; ++i)
        amax = std::max(amax, std::fabs(xb[i]));
      out.d[r * (k / 32) + b] = halfToFloat(floatToHalf(amax / 127.0f));
      float id = amax != 0.0f ? 127.0f / amax : 0.0f;
      for (int i = 0; i < 32; ++i) {
        float v = xb[i] * id;
        out.q[r * k + b * 32 + i] = int(std::nearbyint(v));
      }
    }
  return out;
}

//===--- GEMM -------------------------------------------------------------===//

/// A GEMM case's weights: random floats rounded to the weight type, or
/// random Q8_0 / Q4_0 blocks; and their panels (gate and up for swiglu).
struct GemmWeights {
  std::vector<float> w, w2;
  QuantWeight q, q2;
  std::vector<uint32_t> packed, packed2;
};
GemmWeights gemmWeights(const kt::GemmCase &gc, int64_t nr, int V,
                        std::mt19937 &rng) {
  GemmWeights g;
  const int64_t n = gc.n, k = gc.k;
  if (isQuant(gc.wtype)) {
    g.q = randomQuant(rng, gc.wtype, n, k);
    g.packed = packQuantPanels(g.q, nr);
    if (gc.swiglu) {
      g.q2 = randomQuant(rng, gc.wtype, n, k);
      g.packed2 = packQuantPanels(g.q2, nr);
    }
    return g;
  }
  g.w = uniform(rng, n * k, -1, 1);
  for (float &v : g.w)
    v = roundTo(gc.wtype, v);
  if (gc.swiglu) {
    g.w2 = uniform(rng, n * k, -1, 1);
    for (float &v : g.w2)
      v = roundTo(gc.wtype, v);
  }
  g.packed = packPanels(g.w, n, k, nr, gc.wtype, gc.layout, V);
  if (gc.swiglu)
    g.packed2 = packPanels(g.w2, n, k, nr, gc.wtype, gc.layout, V);
  return g;
}

/// Runs kGemmCases[c] on `rows` rows of x into a fresh y (NaN first), with
/// the step's weight_prefetch `weightPrefetch` (KILN_WEIGHT_PREFETCH_*).
std::vector<float>
runGemm(int c, const GemmWeights &g, int64_t rows, const Threading &th,
        const float *x, const std::vector<float> &normWeight,
        const std::vector<float> &bias, const float *residual,
        std::vector<float> &scratch,
        int32_t weightPrefetch = KILN_WEIGHT_PREFETCH_LINES) {
  const kt::GemmCase &gc = kt::kGemmCases[c];
  kiln_step_args a{};
  a.tokens = rows;
  a.parallel = th.parallel;
  a.weight_prefetch = weightPrefetch;
  scratch.assign(kt::gemm_scratch_bytes(c, rows) / 4 + 16, kNaN);
  std::vector<float> y(rows * gc.n, kNaN);
  kt::gemm(c, &a, rows, x, gc.prologue ? normWeight.data() : nullptr,
           scratch.data(), g.packed.data(),
           gc.swiglu ? g.packed2.data() : nullptr,
           gc.bias ? bias.data() : nullptr, gc.residual ? residual : nullptr,
           y.data());
  return y;
}

// Each configuration of kGemmCases (odd N and K, partial panels, k blocks,
// partial register blocks, each fused part and weight layout, Q8_0 and
// Q4_0) at each row count, decode and prefill tiles both.
//
// Q8_0 and Q4_0 are checked against their definition, from the GGUF blocks:
// the activation rows quantized here (quantizeRows), then
// y = sum over blocks of d_w * d_x * sum_k level_w * level_x in double,
// then the epilogue. The kernel's integer sums are exact (the weights' zero
// level is taken out in integers, Quant.h), so only the float products of
// the scales and the sum over blocks round: at most 1e-5 of the sum of the
// blocks' magnitudes, sum_b |d_w d_x sum_k level_w level_x|.
TEST_F(KernelTest, Gemm) {
  for (int c = 0; c < kt::kGemmCaseCount; ++c) {
    const kt::GemmCase &gc = kt::kGemmCases[c];
    SCOPED_TRACE(gc.name);
    if (!kt::gemm_available(c)) {
      std::printf("[   NOTE   ] %s: BF16_DOT is built only for avx512bf16 at "
                  "V = 16 or with AMX tiles; not here\n",
                  gc.name);
      continue;
    }
    const bool dot = gc.layout == kt::PanelLayout::KPairs;
    const bool quant = isQuant(gc.wtype);
    const int64_t n = gc.n, k = gc.k;
    const int64_t nr = gc.nr > 0 ? gc.nr : -gc.nr * V;
    std::mt19937 rng(1000 + c);
    GemmWeights g = gemmWeights(gc, nr, V, rng);
    std::vector<float> bias = uniform(rng, n, -1, 1);
    std::vector<float> normWeight = uniform(rng, k, 0.5f, 1.5f);

    for (int64_t rows : kRowCounts) {
      std::vector<float> x = uniform(rng, rows * k, -1, 1);
      if (quant && rows > 1) // a block of zeros: scale 0, levels 0
        std::fill(x.begin() + k,
                  x.begin() + k + (isKQuant(gc.wtype) ? 256 : 32), 0.0f);
      std::vector<float> residual = uniform(rng, rows * n, -1, 1);
      std::vector<double> normalized;
      if (gc.prologue)
        normalized = rmsNorm(x, normWeight, rows, k, kt::kGemmEpsilon);
      for (const Threading &th : threadings()) {
        SCOPED_TRACE(runName(rows, th));
        std::vector<float> scratch;
        std::vector<float> y = runGemm(c, g, rows, th, x.data(), normWeight,
                                       bias, residual.data(), scratch);

        // The activations the product reads: x, or the prologue's rows
        // (which the kernel leaves in scratch: checked first), rounded to
        // bf16 for bf16 dot products or quantized for Q8_0 and Q4_0.
        // Rounding the kernel's own normalized rows keeps a 1-ulp
        // difference from flipping a rounding.
        std::vector<double> in(rows * k);
        std::vector<float> rounded(rows * k);
        if (gc.prologue) {
          std::vector<double> scale(rows * k);
          for (size_t i = 0; i < scale.size(); ++i)
            scale[i] = std::fabs(normalized[i]);
          EXPECT_TRUE(near(scratch.data(), normalized, scale))
              << "the prologue's normalized rows";
        }
        for (int64_t i = 0; i < rows * k; ++i) {
          float v = gc.prologue ? scratch[i] : x[i];
          rounded[i] = v;
          in[i] = dot ? roundBf16(v) : gc.prologue ? normalized[i] : v;
        }
        QuantRows xq;
        KQuantRows xk;
        if (isKQuant(gc.wtype))
          xk = quantizeRowsK(rounded, rows, k);
        else if (quant)
          xq = quantizeRows(rounded, rows, k);

        // x_m · W_j: the sum and a bound on its terms' magnitudes.
        auto product = [&](int64_t m, int64_t j, const std::vector<float> &w,
                           const QuantWeight &q, double &sum, double &mag) {
          sum = mag = 0;
          if (!quant) {
            for (int64_t l = 0; l < k; ++l) {
              double t = in[m * k + l] * w[j * k + l];
              sum += t;
              mag += std::fabs(t);
            }
            return;
          }
          if (isKQuant(gc.wtype)) {
            // Per super-block: d_x (d sum_j sc_j dot_j - dmin sum_j m_j
            // bsum_j), Q6_K's levels less 32, in exact integers.
            const bool six = gc.wtype == kt::WeightType::Q6_K;
            const int width = six ? 16 : 32;
            for (int64_t sb = 0; sb < k / 256; ++sb) {
              const int *xl = xk.q.data() + m * k + sb * 256;
              int64_t main = 0, mins = 0;
              for (int sub = 0; sub < 256 / width; ++sub) {
                int64_t dot = 0, bsum = 0;
                for (int l = sub * width; l < (sub + 1) * width; ++l) {
                  dot += int64_t(q.kLevel(j, sb, l) - (six ? 32 : 0)) * xl[l];
                  bsum += xl[l];
                }
                main += int64_t(q.kScale(j, sb, sub)) * dot;
                if (!six)
                  mins += int64_t(q.kMin(j, sb, sub)) * bsum;
              }
              double dx = xk.d[m * (k / 256) + sb];
              double a = dx * q.kD(j, sb) * double(main);
              double b = six ? 0.0 : dx * q.kDmin(j, sb) * double(mins);
              sum += a - b;
              mag += std::fabs(a) + std::fabs(b);
            }
            return;
          }
          for (int64_t b = 0; b < k / 32; ++b) {
            double ds = q.scale(j, b) * xq.d[m * (k / 32) + b];
            int64_t levels = 0;
            for (int64_t l = b * 32; l < b * 32 + 32; ++l) {
              int xl = xq.q[m * k + l], wl = q.level(j, l);
              levels += int64_t(wl) * xl;
            }
            sum += ds * double(levels);
            mag += std::fabs(ds * double(levels));
          }
        };
        std::vector<double> want(rows * n), scale(rows * n);
        for (int64_t m = 0; m < rows; ++m)
          for (int64_t j = 0; j < n; ++j) {
            double sum, mag, sum2 = 0, mag2 = 0;
            product(m, j, g.w, g.q, sum, mag);
            if (gc.swiglu)
              product(m, j, g.w2, g.q2, sum2, mag2);
            double v, bound;
            if (gc.swiglu) {
              v = silu(sum) * sum2;
              bound = kActivationSlope * std::fabs(sum2) * mag +
                      std::fabs(silu(sum)) * mag2;
            } else {
              double b = gc.bias ? bias[j] : 0.0;
              double r = gc.residual ? residual[m * n + j] : 0.0;
              v = activate(gc.activation, sum + b) + r;
              bound = kActivationSlope * (mag + std::fabs(b)) + std::fabs(r);
            }
            want[m * n + j] = v;
            scale[m * n + j] = bound + std::fabs(v);
          }
        EXPECT_TRUE(near(y, want, scale));
      }
    }
  }
}

// The amx and amxemu binaries exist to test the tile path: it must be the
// one their bf16, Q8_0 and Q4_0 cases take (Gemm and GemmBatchInvariance
// then check it), or the binary would pass while testing the vector path.
TEST_F(KernelTest, AmxTilePathTaken) {
#ifndef KILN_TEST_AMX
  GTEST_SKIP() << "the " KILN_TEST_ISA " kernels have no AMX tile path (the "
                  "amx and amxemu binaries test it)";
#else
  int bf16 = 0, int8 = 0;
  for (int c = 0; c < kt::kGemmCaseCount; ++c) {
    const kt::GemmCase &gc = kt::kGemmCases[c];
    const int64_t nr = gc.nr > 0 ? gc.nr : -gc.nr * V;
    const bool eligible =
        nr % 16 == 0 &&
        (gc.layout == kt::PanelLayout::KPairs ||
         gc.wtype == kt::WeightType::Q8_0 || gc.wtype == kt::WeightType::Q4_0);
    EXPECT_EQ(kt::gemm_uses_amx(c), eligible) << gc.name;
    if (kt::gemm_uses_amx(c))
      ++(gc.layout == kt::PanelLayout::KPairs ? bf16 : int8);
  }
  EXPECT_GE(bf16, 3) << "bf16 cases in tiles";
  EXPECT_GE(int8, 6) << "Q8_0 / Q4_0 cases in tiles";
#endif
}

/// The k block a phase's GEMM runs with: its tile, rounded up to whole
/// pairs (bf16 dot products) or blocks of 32 (Q8_0, Q4_0) as the kernel
/// rounds it.
int64_t kBlockOf(const kt::GemmCase &gc, int64_t tile) {
  if (isKQuant(gc.wtype))
    return (tile + 255) / 256 * 256;
  if (isQuant(gc.wtype))
    return (tile + 31) / 32 * 32;
  return gc.layout == kt::PanelLayout::KPairs ? tile + (tile & 1) : tile;
}

// Batch invariance: a row's output does not depend on the rows computed
// with it. Each row computed alone (a decode step of one token) gives the
// same bits as inside a decode batch, and inside a prefill batch where
// prefill's k block is decode's (the k block is what orders a row's sums);
// on every thread count; and alone with each of the step's weight_prefetch
// modes.
// Every case, float and quantized.
TEST_F(KernelTest, GemmBatchInvariance) {
  const int64_t kRows = 17;
  for (int c = 0; c < kt::kGemmCaseCount; ++c) {
    const kt::GemmCase &gc = kt::kGemmCases[c];
    SCOPED_TRACE(gc.name);
    if (!kt::gemm_available(c))
      continue;
    const int64_t n = gc.n, k = gc.k;
    const int64_t nr = gc.nr > 0 ? gc.nr : -gc.nr * V;
    std::mt19937 rng(16000 + c);
    GemmWeights g = gemmWeights(gc, nr, V, rng);
    std::vector<float> bias = uniform(rng, n, -1, 1);
    std::vector<float> normWeight = uniform(rng, k, 0.5f, 1.5f);
    std::vector<float> x = uniform(rng, kRows * k, -1, 1);
    std::vector<float> residual = uniform(rng, kRows * n, -1, 1);
    std::vector<float> scratch;

    std::vector<float> alone;
    for (int64_t r = 0; r < kRows; ++r) {
      std::vector<float> y =
          runGemm(c, g, 1, threadings()[0], x.data() + r * k, normWeight, bias,
                  residual.data() + r * n, scratch);
      alone.insert(alone.end(), y.begin(), y.end());
      // The runtime's choice of software prefetch (weight_prefetch) only
      // asks for cache lines: the result is bitwise the same with any.
      for (int32_t mode :
           {KILN_WEIGHT_PREFETCH_NONE, KILN_WEIGHT_PREFETCH_PAGES})
        EXPECT_TRUE(
            same(runGemm(c, g, 1, threadings()[0], x.data() + r * k, normWeight,
                         bias, residual.data() + r * n, scratch, mode),
                 y))
            << "row " << r << " differs with weight_prefetch " << mode;
    }
    std::vector<int64_t> batches;
    if (gc.prefillFrom > 2)
      batches.push_back(gc.prefillFrom - 1); // decode, several rows
    if (kBlockOf(gc, gc.prefillK) == kBlockOf(gc, gc.decodeK))
      batches.push_back(kRows); // prefill
    ASSERT_FALSE(batches.empty()) << "the case has no batch to compare";
    for (int64_t rows : batches)
      for (const Threading &th : threadings()) {
        SCOPED_TRACE(runName(rows, th));
        std::vector<float> y = runGemm(c, g, rows, th, x.data(), normWeight,
                                       bias, residual.data(), scratch);
        EXPECT_TRUE(same(
            y, std::vector<float>(alone.begin(), alone.begin() + rows * n)));
      }
  }
}

//===--- Attention --------------------------------------------------------===//

/// A paged KV cache for tests: 2 layers, 3 sequences of 96 positions in
/// blocks of 16 (whole vectors of every ISA), their blocks scattered through
/// a pool with spare blocks by a random permutation, random entries
/// everywhere (the kernels must mask what a token does not see), and strides
/// padded past the rows so that a kernel confusing them fails. Keys are
/// transposed within a block (runtime/StepABI.h).
struct TestCache {
  static constexpr int64_t kLayers = 2, kSeqs = 3, kPositions = 96,
                           kBlockPositions = 16,
                           kBlocksPerSeq = kPositions / kBlockPositions,
                           kPoolBlocks = kSeqs * kBlocksPerSeq + 5;
  int64_t hkv, d;
  std::vector<float> keys, values;
  std::vector<int32_t> tables;
  kiln_kv_cache cache{};

  TestCache(int64_t hkv, int64_t d, std::mt19937 &rng) : hkv(hkv), d(d) {
    // Padded strides, so that a kernel that assumes one fails.
    cache.position_stride = d + 5;
    cache.value_head_stride = kBlockPositions * cache.position_stride + 2;
    cache.key_stride = kBlockPositions + 3;
    cache.layer_stride =
        std::max(hkv * cache.value_head_stride, hkv * d * cache.key_stride) + 7;
    cache.block_stride = kLayers * cache.layer_stride + 11;
    std::vector<int32_t> blocks(kPoolBlocks);
    for (int32_t i = 0; i < kPoolBlocks; ++i)
      blocks[i] = i;
    std::shuffle(blocks.begin(), blocks.end(), rng);
    tables.assign(blocks.begin(), blocks.begin() + kSeqs * kBlocksPerSeq);
    cache.block_tables = tables.data();
    cache.max_blocks_per_seq = kBlocksPerSeq;
    cache.block_positions = kBlockPositions;
    cache.max_seqs = kSeqs;
    cache.max_positions = kPositions;
    keys = uniform(rng, kPoolBlocks * cache.block_stride, -1, 1);
    values = uniform(rng, kPoolBlocks * cache.block_stride, -1, 1);
    cache.keys = keys.data();
    cache.values = values.data();
  }
  int64_t slot(int64_t layer, int64_t seq, int64_t pos) const {
    int64_t block = tables[seq * kBlocksPerSeq + pos / kBlockPositions];
    return block * cache.block_stride + layer * cache.layer_stride;
  }
  /// Where element i of head `head`'s key at (layer, seq, pos) is in keys.
  int64_t keyAt(int64_t layer, int64_t seq, int64_t pos, int64_t head,
                int64_t i) const {
    return slot(layer, seq, pos) + (head * d + i) * cache.key_stride +
           pos % kBlockPositions;
  }
  /// Where element i of head `head`'s value at (layer, seq, pos) is in values.
  int64_t valueAt(int64_t layer, int64_t seq, int64_t pos, int64_t head,
                  int64_t i) const {
    return slot(layer, seq, pos) + head * cache.value_head_stride +
           pos % kBlockPositions * cache.position_stride + i;
  }
  float key(int64_t layer, int64_t seq, int64_t pos, int64_t head,
            int64_t i) const {
    return keys[keyAt(layer, seq, pos, head, i)];
  }
  float value(int64_t layer, int64_t seq, int64_t pos, int64_t head,
              int64_t i) const {
    return values[valueAt(layer, seq, pos, head, i)];
  }
};

/// The tokens of one step: sequence ids and positions.
struct Batch {
  std::string name;
  std::vector<int32_t> seqIds, positions;
  void add(int32_t seq, int32_t from, int32_t count) {
    for (int32_t i = 0; i < count; ++i) {
      seqIds.push_back(seq);
      positions.push_back(from + i);
    }
  }
  int64_t tokens() const { return int64_t(positions.size()); }
};

std::vector<Batch> attentionBatches() {
  std::vector<Batch> batches(6);
  batches[0].name = "decode, several sequences";
  for (auto [seq, pos] : {std::pair{2, 0}, {0, 41}, {1, 95}, {2, 17}, {0, 6}})
    batches[0].add(seq, pos, 1);
  batches[1].name = "prefill from position 0";
  batches[1].add(1, 0, 23);
  batches[2].name = "prefill chunk after a cached prefix";
  batches[2].add(2, 37, 19);
  batches[3].name = "prefill chunk, then decode tokens";
  batches[3].add(0, 5, 11);
  batches[3].add(1, 40, 1);
  batches[3].add(2, 63, 1);
  batches[3].add(0, 70, 1);
  batches[4].name = "a long chunk";
  batches[4].add(0, 20, 71);
  batches[5].name = "two chunks of two sequences";
  batches[5].add(1, 3, 10);
  batches[5].add(2, 0, 10);
  return batches;
}

// kiln.attention over the cache, decode (one token per job), prefill chunks
// (blocks of query rows) and batches that mix them, with and without a
// window, head sizes that are and are not whole vectors.
TEST_F(KernelTest, Attention) {
  for (int c = 0; c < kt::kAttentionCaseCount; ++c) {
    const kt::AttentionCase &ac = kt::kAttentionCases[c];
    SCOPED_TRACE(ac.name);
    std::mt19937 rng(2000 + c);
    const int64_t H = ac.h, HKV = ac.hkv, D = ac.d, group = H / HKV;
    TestCache cache(HKV, D, rng);
    const int64_t layer = 1;
    for (const Batch &batch : attentionBatches()) {
      SCOPED_TRACE(batch.name);
      const int64_t T = batch.tokens();
      std::vector<float> q = uniform(rng, T * H * D, -2, 2);
      std::vector<double> want(T * H * D), scale(T * H * D);
      for (int64_t t = 0; t < T; ++t)
        for (int64_t h = 0; h < H; ++h) {
          int64_t pos = batch.positions[t], seq = batch.seqIds[t];
          int64_t lo =
              ac.window ? std::max<int64_t>(0, pos - ac.window + 1) : 0;
          std::vector<double> p(pos + 1, 0.0);
          double top = -INFINITY, spread = 0;
          for (int64_t s = lo; s <= pos; ++s) {
            double dot = 0, mag = 0;
            for (int64_t i = 0; i < D; ++i) {
              double term = double(q[(t * H + h) * D + i]) *
                            cache.key(layer, seq, s, h / group, i);
              dot += term;
              mag += std::fabs(term);
            }
            p[s] = dot * ac.scale;
            top = std::max(top, p[s]);
            spread = std::max(spread, mag * ac.scale);
          }
          double sum = 0;
          for (int64_t s = lo; s <= pos; ++s)
            sum += p[s] = std::exp(p[s] - top);
          for (int64_t i = 0; i < D; ++i) {
            double v = 0, mag = 0;
            for (int64_t s = lo; s <= pos; ++s) {
              double value = cache.value(layer, seq, s, h / group, i);
              v += p[s] / sum * value;
              mag += p[s] / sum * std::fabs(value);
            }
            // Score errors move the weights by about spread * eps each.
            want[(t * H + h) * D + i] = v;
            scale[(t * H + h) * D + i] = mag * (1.0 + 2.0 * spread);
          }
        }
      for (const Threading &th : threadings()) {
        SCOPED_TRACE(th.name);
        kiln_step_args a{};
        a.tokens = T;
        a.positions = batch.positions.data();
        a.seq_ids = batch.seqIds.data();
        a.cache = &cache.cache;
        a.parallel = th.parallel;
        std::vector<float> y(T * H * D, kNaN);
        kt::attention(c, &a, layer, q.data(), y.data());
        EXPECT_TRUE(near(y, want, scale));
        // Batch invariance: each token alone gives bitwise what it gave in
        // the batch.
        for (int64_t t = 0; t < T; ++t) {
          kiln_step_args alone = a;
          alone.tokens = 1;
          alone.positions = &batch.positions[t];
          alone.seq_ids = &batch.seqIds[t];
          std::vector<float> one(H * D, kNaN);
          kt::attention(c, &alone, layer, &q[t * H * D], one.data());
          EXPECT_TRUE(
              same(one, std::vector<float>(y.begin() + t * H * D,
                                           y.begin() + (t + 1) * H * D)))
              << "token " << t << " alone differs from the batch";
        }
      }
    }
  }
}

// kiln.attention_scores, kiln.attention_mask and kiln.attention_output over
// [T, S, HKV, D] keys and values (S odd, a runtime count).
TEST_F(KernelTest, AttentionPieces) {
  for (int c = 0; c < kt::kAttentionCaseCount; ++c) {
    const kt::AttentionCase &ac = kt::kAttentionCases[c];
    SCOPED_TRACE(ac.name);
    std::mt19937 rng(3000 + c);
    const int64_t H = ac.h, HKV = ac.hkv, D = ac.d, group = H / HKV;
    for (int64_t T : {int64_t(1), int64_t(3), int64_t(17)})
      for (int64_t S : {int64_t(1), int64_t(7), int64_t(37)}) {
        std::vector<float> q = uniform(rng, T * H * D, -1, 1);
        std::vector<float> keys = uniform(rng, T * S * HKV * D, -1, 1);
        std::vector<float> values = uniform(rng, T * S * HKV * D, -1, 1);
        std::vector<float> probs = uniform(rng, T * H * S, 0, 1);
        std::vector<float> scores = uniform(rng, T * H * S, -3, 3);
        std::vector<int32_t> positions(T);
        for (int32_t &p : positions)
          p = int32_t(pick(rng, 0, S - 1));
        positions[0] = int32_t(S - 1);

        std::vector<double> wantScores(T * H * S), scoreScale(T * H * S);
        std::vector<double> wantOut(T * H * D), outScale(T * H * D);
        std::vector<float> wantMasked = scores;
        for (int64_t t = 0; t < T; ++t)
          for (int64_t h = 0; h < H; ++h) {
            for (int64_t p = 0; p < S; ++p) {
              double dot = 0, mag = 0;
              for (int64_t i = 0; i < D; ++i) {
                double term = double(q[(t * H + h) * D + i]) *
                              keys[((t * S + p) * HKV + h / group) * D + i];
                dot += term;
                mag += std::fabs(term);
              }
              wantScores[(t * H + h) * S + p] = dot;
              scoreScale[(t * H + h) * S + p] = mag;
              bool visible = p <= positions[t] &&
                             (!ac.window || p > positions[t] - ac.window);
              if (!visible)
                wantMasked[(t * H + h) * S + p] = -kInf;
            }
            for (int64_t i = 0; i < D; ++i) {
              double v = 0, mag = 0;
              for (int64_t p = 0; p < S; ++p) {
                double term = double(probs[(t * H + h) * S + p]) *
                              values[((t * S + p) * HKV + h / group) * D + i];
                v += term;
                mag += std::fabs(term);
              }
              wantOut[(t * H + h) * D + i] = v;
              outScale[(t * H + h) * D + i] = mag;
            }
          }
        for (const Threading &th : threadings()) {
          SCOPED_TRACE("T " + std::to_string(T) + ", S " + std::to_string(S) +
                       ", " + th.name);
          kiln_step_args a{};
          a.tokens = T;
          a.positions = positions.data();
          a.parallel = th.parallel;
          std::vector<float> got(T * H * S, kNaN);
          kt::attention_scores(c, &a, T, S, q.data(), keys.data(), got.data());
          EXPECT_TRUE(near(got, wantScores, scoreScale)) << "scores";
          std::fill(got.begin(), got.end(), kNaN);
          kt::attention_mask(c, &a, T, S, scores.data(), positions.data(),
                             got.data());
          EXPECT_TRUE(same(got, wantMasked)) << "mask";
          got = scores; // in place
          kt::attention_mask(c, &a, T, S, got.data(), positions.data(),
                             got.data());
          EXPECT_TRUE(same(got, wantMasked)) << "mask in place";
          std::vector<float> out(T * H * D, kNaN);
          kt::attention_output(c, &a, T, S, probs.data(), values.data(),
                               out.data());
          EXPECT_TRUE(near(out, wantOut, outScale)) << "output";
        }
      }
  }
}

//===--- Rope and norms ---------------------------------------------------===//

// kiln.rope, adjacent pairs and halves. The angle is pos * inv_freq rounded
// to float, as the interpreter computes it in f32; the rest in double.
TEST_F(KernelTest, Rope) {
  for (int c = 0; c < kt::kRopeCaseCount; ++c) {
    const kt::RopeCase &rc = kt::kRopeCases[c];
    SCOPED_TRACE(rc.name);
    std::mt19937 rng(4000 + c);
    const int64_t H = rc.h, D = rc.d;
    for (int64_t rows : kRowCounts) {
      std::vector<int32_t> positions(rows);
      for (int32_t &p : positions)
        p = int32_t(pick(rng, 0, 5000));
      positions[0] = 0;
      std::vector<float> x = uniform(rng, rows * H * D, -1, 1);
      std::vector<double> want(rows * H * D), scale(rows * H * D);
      for (int64_t t = 0; t < rows; ++t)
        for (int64_t i = 0; i < D / 2; ++i) {
          float angle = float(positions[t]) * kt::kRopeInvFreq[i];
          double co = std::cos(double(angle)), si = std::sin(double(angle));
          for (int64_t h = 0; h < H; ++h) {
            int64_t base = (t * H + h) * D;
            int64_t ia = base + (rc.adjacent ? 2 * i : i);
            int64_t ib = base + (rc.adjacent ? 2 * i + 1 : i + D / 2);
            double xa = x[ia], xb = x[ib];
            want[ia] = xa * co - xb * si;
            want[ib] = xa * si + xb * co;
            scale[ia] = scale[ib] = std::fabs(xa) + std::fabs(xb);
          }
        }
      for (const Threading &th : threadings()) {
        SCOPED_TRACE(runName(rows, th));
        kiln_step_args a{};
        a.tokens = rows;
        a.parallel = th.parallel;
        std::vector<float> y(rows * H * D, kNaN);
        kt::rope(c, &a, rows, positions.data(), x.data(), y.data());
        EXPECT_TRUE(near(y, want, scale));
      }
    }
  }
}

TEST_F(KernelTest, RmsNorm) {
  for (int c = 0; c < kt::kNormCaseCount; ++c) {
    const kt::NormCase &nc = kt::kNormCases[c];
    SCOPED_TRACE(nc.name);
    std::mt19937 rng(5000 + c);
    const int64_t D = nc.d;
    std::vector<float> g = uniform(rng, D, -1.5f, 1.5f);
    for (int64_t rows : kRowCounts) {
      std::vector<float> x = uniform(rng, rows * D, -2, 2);
      std::vector<double> want = rmsNorm(x, g, rows, D, nc.epsilon);
      std::vector<double> scale(want.size());
      for (size_t i = 0; i < want.size(); ++i)
        scale[i] = std::fabs(want[i]);
      for (const Threading &th : threadings()) {
        SCOPED_TRACE(runName(rows, th));
        kiln_step_args a{};
        a.parallel = th.parallel;
        std::vector<float> y(rows * D, kNaN);
        kt::rms_norm(c, &a, rows, x.data(), g.data(), y.data());
        EXPECT_TRUE(near(y, want, scale));
      }
    }
  }
}

// kiln.layer_norm, with and without bias; inputs off centre so the mean
// matters.
TEST_F(KernelTest, LayerNorm) {
  for (int c = 0; c < kt::kNormCaseCount; ++c) {
    const kt::NormCase &nc = kt::kNormCases[c];
    SCOPED_TRACE(nc.name);
    std::mt19937 rng(6000 + c);
    const int64_t D = nc.d;
    std::vector<float> g = uniform(rng, D, -1.5f, 1.5f);
    std::vector<float> b = uniform(rng, D, -1, 1);
    for (int64_t rows : kRowCounts) {
      std::vector<float> x = uniform(rng, rows * D, 1, 3);
      std::vector<double> want(rows * D), scale(rows * D);
      for (int64_t r = 0; r < rows; ++r) {
        double mean = 0, var = 0;
        for (int64_t i = 0; i < D; ++i)
          mean += x[r * D + i];
        mean /= double(D);
        for (int64_t i = 0; i < D; ++i)
          var += (x[r * D + i] - mean) * (x[r * D + i] - mean);
        var /= double(D);
        double s = 1.0 / std::sqrt(var + nc.epsilon);
        for (int64_t i = 0; i < D; ++i) {
          double bias = nc.bias ? b[i] : 0.0;
          want[r * D + i] = (x[r * D + i] - mean) * s * g[i] + bias;
          // x - mean cancels: its error scales with |x| + |mean|.
          scale[r * D + i] = (std::fabs(x[r * D + i]) + std::fabs(mean)) * s *
                                 std::fabs(g[i]) +
                             std::fabs(bias);
        }
      }
      for (const Threading &th : threadings()) {
        SCOPED_TRACE(runName(rows, th));
        kiln_step_args a{};
        a.parallel = th.parallel;
        std::vector<float> y(rows * D, kNaN);
        kt::layer_norm(c, &a, rows, x.data(), g.data(),
                       nc.bias ? b.data() : nullptr, y.data());
        EXPECT_TRUE(near(y, want, scale));
      }
    }
  }
}

//===--- Element-wise -----------------------------------------------------===//

/// Element counts: tails shorter than a vector, and more than one task
/// (Elementwise.h's 16384 elements per task) with a tail.
const int64_t kElementCounts[] = {1, 3, 7, 37, 16384 + 5, 2 * 16384 + 37};

// Each Unary, out of place and in place.
TEST_F(KernelTest, Unary) {
  const kt::Unary ops[] = {kt::Unary::Identity, kt::Unary::Silu,
                           kt::Unary::Gelu,     kt::Unary::GeluTanh,
                           kt::Unary::Relu,     kt::Unary::Scale};
  const char *names[] = {"identity",  "silu", "gelu",
                         "gelu_tanh", "relu", "scale"};
  std::mt19937 rng(7000);
  for (int o = 0; o < 6; ++o) {
    SCOPED_TRACE(names[o]);
    for (int64_t n : kElementCounts) {
      std::vector<float> x = uniform(rng, n, -6, 6);
      std::vector<double> want(n), scale(n);
      for (int64_t i = 0; i < n; ++i) {
        want[i] = activate(ops[o], x[i]);
        // gelu's 1 + erf(x) cancels for negative x: allow float rounding of
        // 1 there (0.5 * |x| * 2^-23), well below 1e-5 * 0.01 * |x|.
        scale[i] = std::fabs(want[i]) +
                   (ops[o] == kt::Unary::Gelu || ops[o] == kt::Unary::GeluTanh
                        ? 0.01 * std::fabs(x[i])
                        : 0.0);
      }
      for (const Threading &th : threadings()) {
        SCOPED_TRACE("n " + std::to_string(n) + ", " + th.name);
        kiln_step_args a{};
        a.parallel = th.parallel;
        std::vector<float> y(n, kNaN);
        kt::unary(ops[o], &a, n, x.data(), y.data());
        EXPECT_TRUE(near(y, want, scale));
        y = x;
        kt::unary(ops[o], &a, n, y.data(), y.data());
        EXPECT_TRUE(near(y, want, scale)) << "in place";
      }
    }
  }
}

// kiln.add and kiln.mul: one float operation per element, so exact.
TEST_F(KernelTest, Binary) {
  std::mt19937 rng(8000);
  for (kt::Binary op : {kt::Binary::Add, kt::Binary::Mul}) {
    SCOPED_TRACE(op == kt::Binary::Add ? "add" : "mul");
    for (int64_t n : kElementCounts) {
      std::vector<float> l = uniform(rng, n, -4, 4), r = uniform(rng, n, -4, 4);
      std::vector<float> want(n);
      for (int64_t i = 0; i < n; ++i)
        want[i] = op == kt::Binary::Add ? l[i] + r[i] : l[i] * r[i];
      for (const Threading &th : threadings()) {
        SCOPED_TRACE("n " + std::to_string(n) + ", " + th.name);
        kiln_step_args a{};
        a.parallel = th.parallel;
        std::vector<float> y(n, kNaN);
        kt::binary(op, &a, n, l.data(), r.data(), y.data());
        EXPECT_TRUE(same(y, want));
        y = l;
        kt::binary(op, &a, n, y.data(), r.data(), y.data());
        EXPECT_TRUE(same(y, want)) << "in place";
      }
    }
  }
}

// kiln.softmax over rows with -inf entries (masked positions, which must
// weigh exactly 0), in place too, including rows wider than a task.
TEST_F(KernelTest, Softmax) {
  std::mt19937 rng(9000);
  for (int64_t rows :
       {int64_t(1), int64_t(2), int64_t(3), int64_t(5), int64_t(17)})
    for (int64_t cols : {int64_t(1), int64_t(3), int64_t(7), int64_t(16),
                         int64_t(37), int64_t(69), int64_t(16384 + 3)}) {
      std::vector<float> x = uniform(rng, rows * cols, -8, 8);
      std::bernoulli_distribution masked(0.25);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < cols; ++j)
          if (masked(rng))
            x[r * cols + j] = -kInf;
        // At least one position is seen (as attention's own position is).
        int64_t keep = pick(rng, 0, cols - 1);
        if (x[r * cols + keep] == -kInf)
          x[r * cols + keep] = 0.5f;
      }
      std::vector<double> want(rows * cols), scale(rows * cols);
      for (int64_t r = 0; r < rows; ++r) {
        double top = -INFINITY, sum = 0;
        for (int64_t j = 0; j < cols; ++j)
          top = std::max(top, double(x[r * cols + j]));
        for (int64_t j = 0; j < cols; ++j)
          sum += want[r * cols + j] = std::exp(double(x[r * cols + j]) - top);
        for (int64_t j = 0; j < cols; ++j) {
          want[r * cols + j] /= sum;
          scale[r * cols + j] = want[r * cols + j]; // masked: exactly 0
        }
      }
      for (const Threading &th : threadings()) {
        SCOPED_TRACE("rows " + std::to_string(rows) + ", cols " +
                     std::to_string(cols) + ", " + th.name);
        kiln_step_args a{};
        a.parallel = th.parallel;
        std::vector<float> y(rows * cols, kNaN);
        kt::softmax(&a, rows, cols, x.data(), y.data());
        EXPECT_TRUE(near(y, want, scale));
        y = x;
        kt::softmax(&a, rows, cols, y.data(), y.data());
        EXPECT_TRUE(near(y, want, scale)) << "in place";
      }
    }
}

// The interpreter's softmax leaves a row that is -inf everywhere all zeros
// ("a row masked entirely has no distribution"), and so does the kernel,
// not -inf - -inf = NaN (no attention mask produces such a row: each token
// sees its own position; a user's mask might).
TEST_F(KernelTest, SoftmaxFullyMaskedRow) {
  for (int64_t cols : {int64_t(3), int64_t(37)}) {
    std::vector<float> x(2 * cols, -kInf);
    x[cols] = 1.0f; // row 1 sees one position
    std::vector<float> want(2 * cols, 0.0f);
    want[cols] = 1.0f;
    kiln_step_args a{};
    std::vector<float> y(2 * cols, kNaN);
    kt::softmax(&a, 2, cols, x.data(), y.data());
    EXPECT_TRUE(same(y, want)) << "cols " << cols;
  }
}

//===--- Gathers and layout copies ----------------------------------------===//

/// Checks an embedding kernel, `lookup(a, rows, ids, out)`, against
/// `table` [vocab, D] bit for bit at every row count and threading; the last
/// id of each run is the last row (a partial panel where there are panels).
template <class Lookup>
void expectEmbedding(std::mt19937 &rng, const std::vector<float> &table,
                     int64_t vocab, int64_t D, const Lookup &lookup) {
  for (int64_t rows : kRowCounts) {
    std::vector<int32_t> ids(rows);
    for (int32_t &id : ids)
      id = int32_t(pick(rng, 0, vocab - 1));
    ids.back() = int32_t(vocab - 1);
    std::vector<float> want(rows * D);
    for (int64_t t = 0; t < rows; ++t)
      for (int64_t i = 0; i < D; ++i)
        want[t * D + i] = table[ids[t] * D + i];
    for (const Threading &th : threadings()) {
      SCOPED_TRACE(runName(rows, th));
      kiln_step_args a{};
      a.tokens = rows;
      a.token_ids = ids.data();
      a.parallel = th.parallel;
      std::vector<float> out(rows * D, kNaN);
      lookup(&a, rows, ids.data(), out.data());
      EXPECT_TRUE(same(out, want));
    }
  }
}

TEST_F(KernelTest, Embedding) {
  std::mt19937 rng(10000);
  const int64_t D = kt::kGatherD, vocab = 50;
  std::vector<float> table = uniform(rng, vocab * D, -1, 1);
  expectEmbedding(
      rng, table, vocab, D,
      [&](const kiln_step_args *a, int64_t rows, const int32_t *ids,
          float *out) { kt::embedding(a, rows, ids, table.data(), out); });
}

// kiln.embedding from a GEMM's panels (a tied model's classifier weight):
// each panel layout and weight type, against the table before packing, bit
// for bit (f16 and bf16 widen exactly; Q8_0 and Q4_0 are d * level, one
// float product of exact values).
TEST_F(KernelTest, EmbeddingPanels) {
  for (int c = 0; c < kt::kEmbeddingPanelsCaseCount; ++c) {
    const kt::EmbeddingPanelsCase &ec = kt::kEmbeddingPanelsCases[c];
    SCOPED_TRACE(ec.name);
    std::mt19937 rng(17000 + c);
    const int64_t D = ec.d, vocab = 50;
    const int64_t nr = ec.nr > 0 ? ec.nr : -ec.nr * V;
    std::vector<float> table;
    std::vector<uint32_t> packed;
    if (isQuant(ec.wtype)) {
      QuantWeight q = randomQuant(rng, ec.wtype, vocab, D);
      for (int64_t i = 0; i < vocab; ++i)
        for (int64_t j = 0; j < D; ++j)
          table.push_back(isKQuant(ec.wtype)
                              ? q.kValue(i, j)
                              : float(q.scale(i, j / 32) * q.level(i, j)));
      packed = packQuantPanels(q, nr);
    } else {
      table = uniform(rng, vocab * D, -1, 1);
      for (float &v : table)
        v = roundTo(ec.wtype, v);
      packed = packPanels(table, vocab, D, nr, ec.wtype, ec.layout, V);
    }
    expectEmbedding(rng, table, vocab, D,
                    [&](const kiln_step_args *a, int64_t rows,
                        const int32_t *ids, float *out) {
                      kt::embedding_panels(c, a, rows, ids, packed.data(), out);
                    });
  }
}

// kiln.gather_rows: the a->rows rows that need logits.
TEST_F(KernelTest, GatherRows) {
  std::mt19937 rng(11000);
  const int64_t D = kt::kGatherD, tokens = 23;
  std::vector<float> x = uniform(rng, tokens * D, -1, 1);
  for (int64_t rows : {int64_t(1), int64_t(3), int64_t(7), int64_t(23)}) {
    std::vector<int32_t> which(rows);
    for (int32_t &r : which)
      r = int32_t(pick(rng, 0, tokens - 1));
    std::vector<float> want(rows * D);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < D; ++i)
        want[r * D + i] = x[which[r] * D + i];
    for (const Threading &th : threadings()) {
      SCOPED_TRACE(runName(rows, th));
      kiln_step_args a{};
      a.tokens = tokens;
      a.rows = rows;
      a.logit_rows = which.data();
      a.parallel = th.parallel;
      std::vector<float> out(rows * D, kNaN);
      kt::gather_rows(&a, which.data(), x.data(), out.data());
      EXPECT_TRUE(same(out, want));
    }
  }
}

// kiln.split of [outer, 9, inner] into 3 + 5 + 1 along the middle.
TEST_F(KernelTest, Split) {
  std::mt19937 rng(12000);
  for (int64_t outer : {int64_t(1), int64_t(2), int64_t(5), int64_t(17)})
    for (int64_t inner : {int64_t(1), int64_t(3), int64_t(16)}) {
      std::vector<float> x =
          uniform(rng, outer * kt::kSplitAxis * inner, -1, 1);
      std::vector<std::vector<float>> want(kt::kSplitParts);
      int64_t offset = 0;
      for (int64_t part = 0; part < kt::kSplitParts; ++part) {
        int64_t width = kt::kSplitWidths[part];
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t i = 0; i < width; ++i)
            for (int64_t j = 0; j < inner; ++j)
              want[part].push_back(
                  x[(o * kt::kSplitAxis + offset + i) * inner + j]);
        offset += width;
      }
      for (const Threading &th : threadings()) {
        SCOPED_TRACE("outer " + std::to_string(outer) + ", inner " +
                     std::to_string(inner) + ", " + th.name);
        kiln_step_args a{};
        a.parallel = th.parallel;
        std::vector<std::vector<float>> got(kt::kSplitParts);
        float *out[kt::kSplitParts];
        for (int64_t part = 0; part < kt::kSplitParts; ++part) {
          got[part].assign(want[part].size(), kNaN);
          out[part] = got[part].data();
        }
        kt::split(&a, outer, inner, x.data(), out);
        for (int64_t part = 0; part < kt::kSplitParts; ++part)
          EXPECT_TRUE(same(got[part], want[part])) << "part " << part;
      }
    }
}

// kiln.transpose, rank 3 and 4, permutations that keep the last dimension
// (row copies) and that move it (strided gathers); odd extents.
TEST_F(KernelTest, Transpose) {
  std::mt19937 rng(13000);
  for (int c = 0; c < kt::kTransposeCaseCount; ++c) {
    const kt::TransposeCase &tc = kt::kTransposeCases[c];
    SCOPED_TRACE(tc.name);
    const int R = tc.rank;
    for (int sample = 0; sample < 4; ++sample) {
      int64_t dims[4], count = 1;
      for (int i = 0; i < R; ++i)
        count *= dims[i] = sample == 0 ? 1 + i : pick(rng, 1, 7);
      std::vector<float> x = uniform(rng, count, -1, 1);
      int64_t outStride[4];
      outStride[R - 1] = 1;
      for (int j = R - 2; j >= 0; --j)
        outStride[j] = outStride[j + 1] * dims[tc.perm[j + 1]];
      std::vector<float> want(count);
      for (int64_t flat = 0; flat < count; ++flat) {
        int64_t index[4], rest = flat;
        for (int i = R - 1; i >= 0; --i) {
          index[i] = rest % dims[i];
          rest /= dims[i];
        }
        int64_t to = 0;
        for (int j = 0; j < R; ++j)
          to += index[tc.perm[j]] * outStride[j];
        want[to] = x[flat];
      }
      std::string shape;
      for (int i = 0; i < R; ++i)
        shape += (i ? "x" : "") + std::to_string(dims[i]);
      for (const Threading &th : threadings()) {
        SCOPED_TRACE(shape + ", " + th.name);
        kiln_step_args a{};
        a.parallel = th.parallel;
        std::vector<float> y(count, kNaN);
        kt::transpose(c, &a, dims, x.data(), y.data());
        EXPECT_TRUE(same(y, want));
      }
    }
  }
}

/// A step's tokens for the KV cache kernels: `tokens` tokens of random
/// sequences at positions distinct within each sequence.
Batch randomTokens(std::mt19937 &rng, int64_t tokens) {
  Batch batch;
  std::vector<std::vector<int32_t>> free(TestCache::kSeqs);
  for (auto &positions : free) {
    for (int32_t p = 0; p < TestCache::kPositions; ++p)
      positions.push_back(p);
    std::shuffle(positions.begin(), positions.end(), rng);
  }
  for (int64_t t = 0; t < tokens; ++t) {
    int32_t seq = int32_t(pick(rng, 0, TestCache::kSeqs - 1));
    batch.add(seq, free[seq].back(), 1);
    free[seq].pop_back();
  }
  return batch;
}

// kiln.kv_append writes each token's keys and values at (layer, seq, pos)
// and nothing else.
TEST_F(KernelTest, KvAppend) {
  std::mt19937 rng(14000);
  const int64_t HKV = kt::kKvHeads, D = kt::kKvDim;
  for (int64_t tokens : {int64_t(1), int64_t(5), int64_t(17)}) {
    Batch batch = randomTokens(rng, tokens);
    std::vector<float> keys = uniform(rng, tokens * HKV * D, -1, 1);
    std::vector<float> values = uniform(rng, tokens * HKV * D, -1, 1);
    for (const Threading &th : threadings()) {
      SCOPED_TRACE("tokens " + std::to_string(tokens) + ", " + th.name);
      TestCache cache(HKV, D, rng);
      std::vector<float> wantKeys = cache.keys, wantValues = cache.values;
      const int64_t layer = 1;
      for (int64_t t = 0; t < tokens; ++t)
        for (int64_t h = 0; h < HKV; ++h)
          for (int64_t i = 0; i < D; ++i) {
            int64_t seq = batch.seqIds[t], pos = batch.positions[t];
            wantKeys[cache.keyAt(layer, seq, pos, h, i)] =
                keys[(t * HKV + h) * D + i];
            wantValues[cache.valueAt(layer, seq, pos, h, i)] =
                values[(t * HKV + h) * D + i];
          }
      kiln_step_args a{};
      a.tokens = tokens;
      a.positions = batch.positions.data();
      a.seq_ids = batch.seqIds.data();
      a.cache = &cache.cache;
      a.parallel = th.parallel;
      kt::kv_append(&a, layer, keys.data(), values.data());
      EXPECT_TRUE(same(cache.keys, wantKeys)) << "keys";
      EXPECT_TRUE(same(cache.values, wantValues)) << "values";
    }
  }
}

// kiln.kv_read: [T, S, HKV, D] keys and values for S cached positions
// (cached_positions: the step's largest position plus one, and odd counts).
// Positions past a token's own, and blocks its sequence does not hold (-1 in
// the table: freed outside a sliding window), read as zeros.
TEST_F(KernelTest, KvRead) {
  std::mt19937 rng(15000);
  const int64_t HKV = kt::kKvHeads, D = kt::kKvDim;
  TestCache cache(HKV, D, rng);
  cache.tables[1 * TestCache::kBlocksPerSeq + 0] = -1; // seq 1's first block
  for (int64_t tokens : {int64_t(1), int64_t(5), int64_t(17)}) {
    Batch batch = randomTokens(rng, tokens);
    kiln_step_args a{};
    a.tokens = tokens;
    a.positions = batch.positions.data();
    a.seq_ids = batch.seqIds.data();
    a.cache = &cache.cache;
    int32_t top =
        *std::max_element(batch.positions.begin(), batch.positions.end());
    EXPECT_EQ(kt::cached_positions(&a), top + 1);
    const int64_t layer = 1;
    for (int64_t S : {int64_t(1), int64_t(7), kt::cached_positions(&a)}) {
      std::vector<float> wantKeys, wantValues;
      for (int64_t t = 0; t < tokens; ++t)
        for (int64_t p = 0; p < S; ++p)
          for (int64_t h = 0; h < HKV; ++h)
            for (int64_t i = 0; i < D; ++i) {
              int32_t seq = batch.seqIds[t];
              bool held = cache.tables[seq * TestCache::kBlocksPerSeq +
                                       p / TestCache::kBlockPositions] >= 0;
              if (p > batch.positions[t] || !held) {
                wantKeys.push_back(0.0f);
                wantValues.push_back(0.0f);
                continue;
              }
              wantKeys.push_back(cache.key(layer, seq, p, h, i));
              wantValues.push_back(cache.value(layer, seq, p, h, i));
            }
      for (const Threading &th : threadings()) {
        SCOPED_TRACE("tokens " + std::to_string(tokens) + ", S " +
                     std::to_string(S) + ", " + th.name);
        a.parallel = th.parallel;
        std::vector<float> keys(wantKeys.size(), kNaN),
            values(wantValues.size(), kNaN);
        kt::kv_read(&a, layer, S, keys.data(), values.data());
        EXPECT_TRUE(same(keys, wantKeys)) << "keys";
        EXPECT_TRUE(same(values, wantValues)) << "values";
      }
    }
  }
}

} // namespace
