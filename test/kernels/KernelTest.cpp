//===- KernelTest.cpp - The CPU kernels against naive loops ---------------===//
//
// Part of Kiln's CPU kernel tests. Every kernel family of codegen/cpu/kernels/
// (GEMM with its rms_norm prologue, bias, activations, residual, swiglu,
// f16 and bf16 weights in each panel layout; fused attention over the KV
// cache; the unfused attention pieces; rope; rms_norm and layer_norm; the
// element-wise ops and softmax; embedding, gather_rows, split, transpose,
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
// activations to bf16, as the kernel does, so those compare as tightly.
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

//===--- GEMM -------------------------------------------------------------===//

// Each configuration of kGemmCases (odd N and K, partial panels, k blocks,
// partial register blocks, each fused part and weight layout) at each row
// count, decode and prefill tiles both.
TEST_F(KernelTest, Gemm) {
  for (int c = 0; c < kt::kGemmCaseCount; ++c) {
    const kt::GemmCase &gc = kt::kGemmCases[c];
    SCOPED_TRACE(gc.name);
    if (!kt::gemm_available(c)) {
      std::printf("[   NOTE   ] %s: BF16_DOT is built only for avx512bf16 at "
                  "V = 16; not here\n",
                  gc.name);
      continue;
    }
    const bool dot = gc.layout == kt::PanelLayout::KPairs;
    const int64_t n = gc.n, k = gc.k;
    const int64_t nr = gc.nr > 0 ? gc.nr : -gc.nr * V;
    std::mt19937 rng(1000 + c);
    std::vector<float> w = uniform(rng, n * k, -1, 1), w2;
    for (float &v : w)
      v = roundTo(gc.wtype, v);
    if (gc.swiglu) {
      w2 = uniform(rng, n * k, -1, 1);
      for (float &v : w2)
        v = roundTo(gc.wtype, v);
    }
    std::vector<uint32_t> packed =
        packPanels(w, n, k, nr, gc.wtype, gc.layout, V);
    std::vector<uint32_t> packed2 =
        gc.swiglu ? packPanels(w2, n, k, nr, gc.wtype, gc.layout, V)
                  : std::vector<uint32_t>();
    std::vector<float> bias = uniform(rng, n, -1, 1);
    std::vector<float> normWeight = uniform(rng, k, 0.5f, 1.5f);

    for (int64_t rows : kRowCounts) {
      std::vector<float> x = uniform(rng, rows * k, -1, 1);
      std::vector<float> residual = uniform(rng, rows * n, -1, 1);
      std::vector<double> normalized;
      if (gc.prologue)
        normalized = rmsNorm(x, normWeight, rows, k, kt::kGemmEpsilon);
      for (const Threading &th : threadings()) {
        SCOPED_TRACE(runName(rows, th));
        kiln_step_args a{};
        a.tokens = rows;
        a.parallel = th.parallel;
        std::vector<float> scratch(kt::gemm_scratch_bytes(c, rows) / 4 + 16,
                                   kNaN);
        std::vector<float> y(rows * n, kNaN);
        kt::gemm(c, &a, rows, x.data(),
                 gc.prologue ? normWeight.data() : nullptr, scratch.data(),
                 packed.data(), gc.swiglu ? packed2.data() : nullptr,
                 gc.bias ? bias.data() : nullptr,
                 gc.residual ? residual.data() : nullptr, y.data());

        // The activations the product reads: x, or the prologue's rows
        // (which the kernel leaves in scratch: checked first), rounded to
        // bf16 for bf16 dot products. Rounding the kernel's own normalized
        // rows keeps a 1-ulp difference from flipping a bf16 rounding.
        std::vector<double> in(rows * k);
        if (gc.prologue) {
          std::vector<double> scale(rows * k);
          for (size_t i = 0; i < scale.size(); ++i)
            scale[i] = std::fabs(normalized[i]);
          EXPECT_TRUE(near(scratch.data(), normalized, scale))
              << "the prologue's normalized rows";
        }
        for (int64_t i = 0; i < rows * k; ++i) {
          float v = gc.prologue ? scratch[i] : x[i];
          in[i] = dot ? roundBf16(v) : gc.prologue ? normalized[i] : v;
        }

        std::vector<double> want(rows * n), scale(rows * n);
        for (int64_t m = 0; m < rows; ++m)
          for (int64_t j = 0; j < n; ++j) {
            double sum = 0, mag = 0, sum2 = 0, mag2 = 0;
            for (int64_t l = 0; l < k; ++l) {
              double t = in[m * k + l] * w[j * k + l];
              sum += t;
              mag += std::fabs(t);
              if (gc.swiglu) {
                double t2 = in[m * k + l] * w2[j * k + l];
                sum2 += t2;
                mag2 += std::fabs(t2);
              }
            }
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
    cache.position_stride = hkv * d + 5;
    cache.key_stride = kBlockPositions + 3;
    cache.layer_stride = std::max(kBlockPositions * cache.position_stride,
                                  hkv * d * cache.key_stride) +
                         7;
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
    return slot(layer, seq, pos) +
           pos % kBlockPositions * cache.position_stride + head * d + i;
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

TEST_F(KernelTest, Embedding) {
  std::mt19937 rng(10000);
  const int64_t D = kt::kGatherD, vocab = 50;
  std::vector<float> table = uniform(rng, vocab * D, -1, 1);
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
      kt::embedding(&a, rows, ids.data(), table.data(), out.data());
      EXPECT_TRUE(same(out, want));
    }
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
