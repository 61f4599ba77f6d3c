//===- KernelTest.cpp - The CUDA kernels against naive loops --------------===//
//
// Part of Kiln's CUDA kernel tests. Every kernel of KernelInstances.cuh run
// through a KernelRunner (the host emulator in CI, a GPU with
// --device=gpu) on random inputs of odd sizes, and compared with a naive
// loop written here from the reference interpreter's definition of the op
// (ir/interpreter/Interpreter.cpp), accumulating in double.
//
// Each kernel runs twice, under two schedule seeds in the emulator, and
// must give the same bits both times: a kernel whose result depends on the
// order of its threads between barriers (a race on shared memory) fails.
//
// Tolerances as in test/kernels/KernelTest.cpp: within 1e-5 of the
// reference relative to a bound on the magnitudes of the terms summed, on
// the emulator and the GPU alike (neither uses TF32 or fast math); data
// movement bit for bit. f16/bf16 weights and cache elements are rounded
// before the reference sees them; the tensor-core GEMM rounds the
// activations to the weights' type as well, and so does its reference.
// Outputs start as NaN, so an element a kernel forgets to write fails.
//
//===----------------------------------------------------------------------===//

#include "Attention.cuh" // the types and conversions, not the kernels
#include "Matmul.cuh"

#include "runtime/StepABI.h"
#include "test/cuda/KernelRunner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace kiln::cuda_test;
using kiln::cuda::bf16;
using kiln::cuda::f16;

constexpr double kTolerance = 1e-5;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::vector<float> randomFloats(size_t n, uint32_t seed, float lo = -1.0f,
                                float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

/// x as E, and what E means again as f32.
template <class E> E toElement(float x) {
  if constexpr (std::is_same_v<E, float>)
    return x;
  else
    return E{kiln::cuda::to_bits(x, E{})};
}
template <class E> float fromElement(E e) {
  if constexpr (std::is_same_v<E, float>)
    return e;
  else
    return kiln::cuda::to_float(e);
}
template <class E> std::vector<E> toElements(const std::vector<float> &v) {
  std::vector<E> out;
  for (float x : v)
    out.push_back(toElement<E>(x));
  return out;
}
template <class E> float rounded(float x) {
  return fromElement<E>(toElement<E>(x));
}

template <class E> const char *typeName() {
  if constexpr (std::is_same_v<E, float>)
    return "f32";
  else if constexpr (std::is_same_v<E, f16>)
    return "f16";
  else
    return "bf16";
}

/// |got - want| <= kTolerance * bound, where bound bounds the magnitudes of
/// the terms of want; NaN fails.
::testing::AssertionResult close(double got, double want, double bound,
                                 const std::string &where) {
  if (std::isfinite(got) &&
      std::abs(got - want) <= kTolerance * (bound + 1e-30))
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << where << ": got " << got << ", want "
                                       << want << " (bound " << bound << ")";
}

int blocksFor(int64_t elements, int threads) {
  return int((elements + threads - 1) / threads);
}

/// Every test frees its device memory when it ends.
class CudaKernel : public ::testing::Test {
public:
  void TearDown() override { runner().release(); }

  /// Fills `out` (n floats on the device) with NaN, runs `run(seed)` for
  /// seeds 1 and 2, and returns the result, which must be the same bits
  /// both times.
  template <class Run>
  std::vector<float> runTwice(float *out, size_t n, Run run) {
    std::vector<float> first;
    for (uint64_t seed : {1, 2}) {
      std::vector<float> nans(n, kNaN);
      runner().upload(out, nans.data(), n * sizeof(float));
      run(seed);
      std::vector<float> got = fromDevice(out, n);
      if (seed == 1)
        first = got;
      else
        EXPECT_EQ(0, std::memcmp(first.data(), got.data(), n * sizeof(float)))
            << "the result depends on the order of the threads";
    }
    return first;
  }
};

//===--- GEMV and GEMM ----------------------------------------------------===//

struct MatmulCase {
  int rows, n, k;
  bool residual;
};

/// The fused forms of Matmul.cuh, as the instances name them.
struct MatmulForm {
  const char *suffix;
  bool norm, swiglu;
};
const MatmulForm kForms[] = {{"", false, false},
                             {"_norm", true, false},
                             {"_swiglu", false, true},
                             {"_norm_swiglu", true, true}};

/// The unit in the last place of 1 in W: how far apart two neighbouring
/// values of W are, relative to them.
template <class W> double ulpOfOne() {
  if constexpr (std::is_same_v<W, f16>)
    return 1.0 / 1024;
  else if constexpr (std::is_same_v<W, bf16>)
    return 1.0 / 128;
  else
    return 1.0 / (1 << 23);
}

/// Runs `kernel` (a Matmul of `form`) over `grid` and checks it against
/// Matmul.cuh's definition. `roundX`: the kernel rounds the (normalized)
/// activations to W, as the tensor-core kernels do, and so does the
/// reference; where the normalized value lies so near a rounding boundary
/// that f32 and double could round it apart, that term is allowed one ulp
/// of W.
template <class W>
void runMatmul(CudaKernel &test, const std::string &kernel, MatmulForm form,
               MatmulCase c, Grid grid, int threads, bool roundX,
               uint32_t seed) {
  if (form.swiglu)
    c.residual = false; // swiglu has no residual
  auto x = randomFloats(size_t(c.rows) * c.k, seed, -2.0f, 2.0f);
  auto w = toElements<W>(randomFloats(size_t(c.n) * c.k, seed + 1));
  auto up = toElements<W>(randomFloats(size_t(c.n) * c.k, seed + 2));
  auto g = randomFloats(c.k, seed + 3, 0.5f, 1.5f);
  auto residual = randomFloats(size_t(c.rows) * c.n, seed + 4);
  const float eps = 1e-5f;
  float *dy = static_cast<float *>(
      runner().allocate(size_t(c.rows) * c.n * sizeof(float)));
  kiln::cuda::Matmul m{dy,
                       toDevice(x),
                       toDevice(w),
                       form.swiglu ? toDevice(up) : nullptr,
                       form.norm ? toDevice(g) : nullptr,
                       c.residual ? toDevice(residual) : nullptr,
                       eps,
                       c.rows,
                       c.n,
                       c.k};
  auto y = test.runTwice(dy, size_t(c.rows) * c.n, [&](uint64_t s) {
    launch(kernel, grid, threads, s, m);
  });
  std::string what = kernel + " rows=" + std::to_string(c.rows) +
                     " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) +
                     (c.residual ? " +residual" : "");
  for (int r = 0; r < c.rows; ++r) {
    const float *xr = x.data() + size_t(r) * c.k;
    double scale = 1;
    if (form.norm) {
      double ss = 0;
      for (int i = 0; i < c.k; ++i)
        ss += double(xr[i]) * xr[i];
      scale = 1 / std::sqrt(ss / c.k + eps);
    }
    std::vector<double> xs(c.k);
    std::vector<bool> nearBoundary(c.k, false);
    for (int i = 0; i < c.k; ++i) {
      double v = form.norm ? g[i] * (scale * xr[i]) : xr[i];
      if (roundX) {
        float lo = float(v * (1 - 1e-6)), hi = float(v * (1 + 1e-6));
        nearBoundary[i] = form.norm && rounded<W>(lo) != rounded<W>(hi);
        v = rounded<W>(float(v));
      }
      xs[i] = v;
    }
    for (int j = 0; j < c.n; ++j) {
      double sums[2] = {0, 0}, bounds[2] = {0, 0}, slack = 0;
      for (int o = 0; o < (form.swiglu ? 2 : 1); ++o)
        for (int i = 0; i < c.k; ++i) {
          const std::vector<W> &weights = o == 0 ? w : up;
          double term = xs[i] * fromElement(weights[size_t(j) * c.k + i]);
          sums[o] += term;
          bounds[o] += std::abs(term);
          if (nearBoundary[i])
            slack += std::abs(term) * ulpOfOne<W>();
        }
      double want = sums[0], bound = bounds[0];
      if (form.swiglu) {
        double a = sums[0], silu = a / (1 + std::exp(-a));
        want = silu * sums[1];
        bound =
            1.1 * bounds[0] * std::abs(sums[1]) + std::abs(silu) * bounds[1];
        slack *= 1.1 * (std::abs(sums[1]) + std::abs(silu));
      } else if (c.residual) {
        want += residual[size_t(r) * c.n + j];
        bound += std::abs(residual[size_t(r) * c.n + j]);
      }
      ASSERT_TRUE(close(
          y[size_t(r) * c.n + j], want, bound + slack / kTolerance,
          what + " row " + std::to_string(r) + " col " + std::to_string(j)));
    }
  }
}

// k: 16-byte rows (the vector loop) and odd (the scalar one).
const MatmulCase kGemvCases[] = {{1, 37, 64, false},
                                 {3, 130, 264, true},
                                 {5, 9, 67, false},
                                 {6, 33, 8, true}};

template <class W> void testGemv(CudaKernel &test, const char *family) {
  for (const MatmulForm &form : kForms)
    for (const MatmulCase &c : kGemvCases)
      runMatmul<W>(test, family + std::string(form.suffix), form, c,
                   {blocksFor(c.n, 4)}, 128, false, 1);
}

TEST_F(CudaKernel, GemvF32) { testGemv<float>(*this, "gemv_f32"); }
TEST_F(CudaKernel, GemvF16) { testGemv<f16>(*this, "gemv_f16"); }
TEST_F(CudaKernel, GemvBf16) { testGemv<bf16>(*this, "gemv_bf16"); }

// Rows and columns: one, partial tiles, several tiles with a partial one;
// k: one k step, several with a partial one, and not a multiple of 8.
const MatmulCase kGemmCases[] = {{1, 8, 16, false},
                                 {17, 37, 67, true},
                                 {69, 70, 96, false},
                                 {130, 65, 40, true},
                                 {5, 129, 33, false}};

/// A GEMM instance's tiles (KernelInstances.cuh): block rows, and block
/// columns and threads for the plain forms and for swiglu's.
struct GemmTile {
  int rows, columns, threads, swigluColumns, swigluThreads;
};

template <class W>
void testGemm(CudaKernel &test, const char *family, GemmTile tile,
              bool roundX) {
  for (const MatmulForm &form : kForms)
    for (const MatmulCase &c : kGemmCases) {
      int columns = form.swiglu ? tile.swigluColumns : tile.columns;
      runMatmul<W>(test, family + std::string(form.suffix), form, c,
                   {blocksFor(c.n, columns), blocksFor(c.rows, tile.rows)},
                   form.swiglu ? tile.swigluThreads : tile.threads, roundX, 4);
    }
}

const GemmTile kSimtTile{64, 64, 256, 64, 256},
    kSimtLargeTile{128, 64, 256, 32, 256}, kMmaTile{64, 64, 128, 32, 64},
    kMmaLargeTile{128, 128, 256, 64, 256};

TEST_F(CudaKernel, GemmF32) {
  testGemm<float>(*this, "gemm_f32", kSimtTile, false);
  testGemm<float>(*this, "gemm_f32_large", kSimtLargeTile, false);
}
TEST_F(CudaKernel, GemmMmaF16) {
  testGemm<f16>(*this, "gemm_mma_f16", kMmaTile, true);
  testGemm<f16>(*this, "gemm_mma_f16_large", kMmaLargeTile, true);
}
TEST_F(CudaKernel, GemmMmaBf16) {
  testGemm<bf16>(*this, "gemm_mma_bf16", kMmaTile, true);
  testGemm<bf16>(*this, "gemm_mma_bf16_large", kMmaLargeTile, true);
}

//===--- Norms, rope, element-wise, embedding, argmax ---------------------===//

TEST_F(CudaKernel, RmsNorm) {
  for (int d : {8, 67, 300, 1000}) {
    int rows = 3;
    auto x = randomFloats(size_t(rows) * d, 10, -3.0f, 3.0f);
    auto g = randomFloats(d, 11);
    float *dy = toDevice(x), *dx = toDevice(x), *dg = toDevice(g);
    auto y = runTwice(dy, x.size(), [&](uint64_t s) {
      launch("rms_norm_256", {rows}, 256, s, dy, static_cast<const float *>(dx),
             static_cast<const float *>(dg), d, 1e-5f);
    });
    for (int r = 0; r < rows; ++r) {
      double ss = 0;
      for (int i = 0; i < d; ++i)
        ss += double(x[r * d + i]) * x[r * d + i];
      double scale = 1.0 / std::sqrt(ss / d + 1e-5);
      for (int i = 0; i < d; ++i) {
        double want = g[i] * scale * x[r * d + i];
        ASSERT_TRUE(close(y[r * d + i], want, std::abs(want),
                          "rms_norm d=" + std::to_string(d)));
      }
    }
  }
}

void testRope(CudaKernel &test, bool adjacent) {
  const char *kernel = adjacent ? "rope_adjacent" : "rope_halves";
  for (int d : {8, 64}) {
    int rows = 5, heads = 3;
    auto x = randomFloats(size_t(rows) * heads * d, 12);
    std::vector<int> positions = {0, 1, 17, 511, 4099};
    std::vector<float> invFreq(d / 2);
    for (int i = 0; i < d / 2; ++i)
      invFreq[i] = float(std::pow(10000.0, -2.0 * i / d));
    float *dy = toDevice(x), *dx = toDevice(x), *df = toDevice(invFreq);
    int *dp = toDevice(positions);
    auto y = test.runTwice(dy, x.size(), [&](uint64_t s) {
      launch(kernel, {blocksFor(rows * heads * d / 2, 256)}, 256, s, dy,
             static_cast<const float *>(dx), static_cast<const int *>(dp),
             static_cast<const float *>(df), rows, heads, d);
    });
    for (int t = 0; t < rows; ++t)
      for (int h = 0; h < heads; ++h)
        for (int i = 0; i < d / 2; ++i) {
          // The angle as the reference rounds it: to f32.
          double angle = float(float(positions[t]) * invFreq[i]);
          size_t base = (size_t(t) * heads + h) * d;
          size_t ia = base + (adjacent ? 2 * i : i);
          size_t ib = base + (adjacent ? 2 * i + 1 : i + d / 2);
          double a = x[ia], b = x[ib], bound = std::abs(a) + std::abs(b);
          std::string what = std::string(kernel) + " t=" + std::to_string(t) +
                             " i=" + std::to_string(i);
          ASSERT_TRUE(close(y[ia], a * std::cos(angle) - b * std::sin(angle),
                            bound, what));
          ASSERT_TRUE(close(y[ib], a * std::sin(angle) + b * std::cos(angle),
                            bound, what));
        }
  }
}

TEST_F(CudaKernel, RopeAdjacentPairs) { testRope(*this, true); }
TEST_F(CudaKernel, RopeHalves) { testRope(*this, false); }

TEST_F(CudaKernel, SwigluAndAdd) {
  int64_t n = 1001;
  auto a = randomFloats(n, 13, -4.0f, 4.0f), b = randomFloats(n, 14);
  float *dy = toDevice(a), *da = toDevice(a), *db = toDevice(b);
  auto y = runTwice(dy, n, [&](uint64_t s) {
    launch("swiglu_f32", {blocksFor(n, 256)}, 256, s, dy,
           static_cast<const float *>(da), static_cast<const float *>(db), n);
  });
  for (int64_t i = 0; i < n; ++i) {
    double silu = a[i] / (1.0 + std::exp(-double(a[i])));
    ASSERT_TRUE(close(y[i], silu * b[i], std::abs(silu * b[i]), "swiglu"));
  }
  y = runTwice(dy, n, [&](uint64_t s) {
    launch("add_f32", {blocksFor(n, 256)}, 256, s, dy,
           static_cast<const float *>(da), static_cast<const float *>(db), n);
  });
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(y[i], a[i] + b[i]) << "add " << i;
}

TEST_F(CudaKernel, GatherRowsAndCopyColumns) {
  int rows = 7, d = 67;
  auto x = randomFloats(size_t(rows) * d, 20);
  std::vector<int> ids = {6, 0, 3, 3};
  float *dx = toDevice(x);
  float *dy = static_cast<float *>(runner().allocate(size_t(rows) * d * 4));
  auto y = runTwice(dy, ids.size() * d, [&](uint64_t s) {
    launch("gather_rows_f32", {blocksFor(int64_t(ids.size()) * d, 256)}, 256, s,
           dy, static_cast<const float *>(dx),
           static_cast<const int *>(toDevice(ids)), int(ids.size()), d);
  });
  for (size_t r = 0; r < ids.size(); ++r)
    for (int i = 0; i < d; ++i)
      ASSERT_EQ(y[r * d + i], x[size_t(ids[r]) * d + i]) << "gather_rows";
  int first = 29, cols = 21;
  y = runTwice(dy, size_t(rows) * cols, [&](uint64_t s) {
    launch("copy_columns_f32", {blocksFor(int64_t(rows) * cols, 256)}, 256, s,
           dy, static_cast<const float *>(dx), rows, cols, d, first);
  });
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      ASSERT_EQ(y[size_t(r) * cols + c], x[size_t(r) * d + first + c])
          << "copy_columns";
}

template <class E> void testEmbedding(CudaKernel &test, const char *kernel) {
  int vocab = 50, d = 67, tokens = 7;
  auto table = toElements<E>(randomFloats(size_t(vocab) * d, 15));
  std::vector<int> ids = {0, 49, 3, 3, 17, 1, 48};
  float *dy = static_cast<float *>(runner().allocate(size_t(tokens) * d * 4));
  E *dt = toDevice(table);
  int *di = toDevice(ids);
  auto y = test.runTwice(dy, size_t(tokens) * d, [&](uint64_t s) {
    launch(kernel, {blocksFor(tokens * d, 256)}, 256, s, dy,
           static_cast<const E *>(dt), static_cast<const int *>(di), tokens, d);
  });
  for (int t = 0; t < tokens; ++t)
    for (int i = 0; i < d; ++i)
      ASSERT_EQ(y[t * d + i], fromElement(table[size_t(ids[t]) * d + i]))
          << kernel << " token " << t;
}

TEST_F(CudaKernel, EmbeddingF32) {
  testEmbedding<float>(*this, "embedding_f32");
}
TEST_F(CudaKernel, EmbeddingF16) { testEmbedding<f16>(*this, "embedding_f16"); }
TEST_F(CudaKernel, EmbeddingBf16) {
  testEmbedding<bf16>(*this, "embedding_bf16");
}

TEST_F(CudaKernel, ArgmaxTakesTheLowestIndexOfTheMaximum) {
  for (int vocab : {1, 100, 4099}) {
    int rows = 3;
    auto logits = randomFloats(size_t(rows) * vocab, 16);
    // Row 1: the maximum twice, the later one in another thread's slice.
    if (vocab > 10) {
      logits[vocab + 7] = 5.0f;
      logits[vocab + vocab - 2] = 5.0f;
    }
    float *dl = toDevice(logits);
    int *dout = toDevice(std::vector<int>(rows, -1));
    for (uint64_t seed : {1, 2}) {
      launch("argmax_256", {rows}, 256, seed, dout,
             static_cast<const float *>(dl), vocab);
      std::vector<int> out = fromDevice(dout, rows);
      for (int r = 0; r < rows; ++r) {
        const float *row = logits.data() + size_t(r) * vocab;
        int want = int(std::max_element(row, row + vocab) - row);
        ASSERT_EQ(out[r], want) << "vocab " << vocab << " row " << r;
      }
    }
  }
}

// The bandwidth probe reads every chunk once: the XOR of its outputs is the
// XOR of the buffer's words, for grids smaller and larger than the buffer.
TEST_F(CudaKernel, ReadProbeReadsEveryChunkOnce) {
  std::mt19937 random(17);
  std::vector<uint32_t> words(4 * 1000);
  uint32_t want = 0;
  for (uint32_t &w : words) {
    w = uint32_t(random());
    want ^= w;
  }
  uint32_t *data = toDevice(words);
  for (int blocks : {1, 3, 8}) {
    int threads = 256, outputs = blocks * threads;
    uint32_t *out = toDevice(std::vector<uint32_t>(outputs, 0));
    launch("read_probe_256", {blocks}, threads, 1, out,
           static_cast<const void *>(data), int64_t(words.size() / 4));
    uint32_t got = 0;
    for (uint32_t w : fromDevice(out, outputs))
      got ^= w;
    EXPECT_EQ(got, want) << blocks << " blocks";
  }
}

//===--- The paged KV cache and attention ---------------------------------===//

// The device's view of the paged cache is the runtime's, field for field.
static_assert(sizeof(kiln::cuda::KvCache) == sizeof(kiln_kv_cache));
static_assert(offsetof(kiln::cuda::KvCache, blockTables) ==
              offsetof(kiln_kv_cache, block_tables));
static_assert(offsetof(kiln::cuda::KvCache, maxPositions) ==
              offsetof(kiln_kv_cache, max_positions));

/// A paged cache of two sequences whose blocks lie scattered in the pool,
/// filled through kv_append, and the f32 values the reference reads.
template <class E> struct PagedCache {
  static constexpr int kBlockPositions = 16, kLayers = 2;
  int kvHeads, d, maxBlocks, blocks;
  size_t poolElements;
  std::vector<int32_t> tables;
  kiln::cuda::KvCache view; // device pointers
  // [seq][position][kvHead * d + i], as the cache holds them (layer 1).
  std::vector<std::vector<std::vector<float>>> k, v;

  PagedCache(int kvHeads, int d, int positions) : kvHeads(kvHeads), d(d) {
    maxBlocks = (positions + kBlockPositions - 1) / kBlockPositions;
    blocks = 2 * maxBlocks + 1; // block 0 unused
    int64_t rowElems = int64_t(kvHeads) * d;
    int64_t blockStride = kLayers * kBlockPositions * rowElems;
    poolElements = size_t(blocks * blockStride);
    std::vector<E> nans(poolElements, toElement<E>(kNaN));
    std::vector<int32_t> pool(blocks - 1);
    std::iota(pool.begin(), pool.end(), 1);
    std::shuffle(pool.begin(), pool.end(), std::mt19937(17));
    tables.assign(pool.begin(), pool.begin() + 2 * maxBlocks);
    view = {toDevice(nans),
            toDevice(nans),
            blockStride,
            kBlockPositions * rowElems, // layer
            d,                          // position (values, head-major)
            kBlockPositions * d,        // kv head (values)
            kBlockPositions,            // key element i to i + 1
            toDevice(tables),
            maxBlocks,
            kBlockPositions,
            2,
            maxBlocks * kBlockPositions};
  }

  /// Appends positions [0, n) of `seq` to `layer` in one kv_append launch.
  void fill(const char *kernel, int layer, int seq, int n, uint32_t seed) {
    int kvDim = kvHeads * d;
    auto kIn = randomFloats(size_t(n) * kvDim, seed);
    auto vIn = randomFloats(size_t(n) * kvDim, seed + 1);
    std::vector<int> positions(n), seqIds(n, seq);
    std::iota(positions.begin(), positions.end(), 0);
    launch(kernel, {blocksFor(int64_t(n) * kvDim, 256)}, 256, 1, view, layer,
           static_cast<const float *>(toDevice(kIn)),
           static_cast<const float *>(toDevice(vIn)),
           static_cast<const int *>(toDevice(positions)),
           static_cast<const int *>(toDevice(seqIds)), n, kvDim, d);
    if (layer != 1)
      return; // the attention tests read layer 1
    k.resize(2);
    v.resize(2);
    k[seq].assign(n, std::vector<float>(kvDim));
    v[seq].assign(n, std::vector<float>(kvDim));
    for (int p = 0; p < n; ++p)
      for (int e = 0; e < kvDim; ++e) {
        k[seq][p][e] = rounded<E>(kIn[size_t(p) * kvDim + e]);
        v[seq][p][e] = rounded<E>(vIn[size_t(p) * kvDim + e]);
      }
  }

  /// Position p of seq 1 in layer 1, read back bit for bit by the layout.
  void checkLayout(int p) {
    auto keys = fromDevice(static_cast<E *>(view.keys), poolElements);
    auto values = fromDevice(static_cast<E *>(view.values), poolElements);
    int block = tables[maxBlocks + p / kBlockPositions];
    int64_t slot = block * view.blockStride + view.layerStride;
    for (int e = 0; e < kvHeads * d; ++e) {
      ASSERT_EQ(
          fromElement(
              values[slot + e / d * view.valueHeadStride +
                     (p % kBlockPositions) * view.positionStride + e % d]),
          v[1][p][e]);
      ASSERT_EQ(
          fromElement(keys[slot + e * view.keyStride + p % kBlockPositions]),
          k[1][p][e]);
    }
  }
};

struct AttentionCase {
  int heads, kvHeads, window, splits;
};

template <class E, int D>
void testAttention(CudaKernel &test, const char *append, const char *attend,
                   const char *combine) {
  const int positions = 300;
  for (AttentionCase ac : {AttentionCase{4, 2, 0, 1},
                           {4, 2, 0, 3},
                           {3, 3, 20, 1},
                           {4, 1, 37, 4}}) {
    PagedCache<E> cache(ac.kvHeads, D, positions);
    for (int layer : {0, 1})
      for (int seq : {0, 1})
        cache.fill(append, layer, seq, seq == 0 ? positions : 45,
                   100 * layer + 10 * seq + 18);
    cache.checkLayout(37);
    // A prefill chunk of sequence 0 (positions 250..256) and decode tokens
    // of both sequences.
    std::vector<int> pos = {250, 251, 252, 253, 254, 255, 256, 299, 0, 44};
    std::vector<int> seqs = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1};
    int tokens = int(pos.size()), items = tokens * ac.heads;
    auto q = randomFloats(size_t(items) * D, 19);
    float scale = 1.0f / std::sqrt(float(D));
    kiln::cuda::AttentionShape shape{tokens, ac.heads,  ac.kvHeads,
                                     1,      ac.window, scale};
    float *dout =
        static_cast<float *>(runner().allocate(size_t(items) * D * 4));
    float *dpart = static_cast<float *>(
        runner().allocate(size_t(ac.splits) * items * (D + 2) * 4));
    const float *dq = toDevice(q);
    const int *dpos = toDevice(pos), *dseq = toDevice(seqs);
    auto out = test.runTwice(dout, size_t(items) * D, [&](uint64_t s) {
      launch(attend, {blocksFor(items, 4), ac.splits}, 128, s, dout, dpart, dq,
             cache.view, dpos, dseq, shape);
      if (ac.splits > 1)
        launch(combine, {blocksFor(int64_t(items) * D, 256)}, 256, s, dout,
               static_cast<const float *>(dpart), items, ac.splits);
    });
    for (int t = 0; t < tokens; ++t)
      for (int h = 0; h < ac.heads; ++h) {
        int kvh = h / (ac.heads / ac.kvHeads);
        int lo = ac.window > 0 ? std::max(0, pos[t] - ac.window + 1) : 0;
        std::vector<double> w;
        double m = -INFINITY, l = 0;
        for (int p = lo; p <= pos[t]; ++p) {
          double s = 0;
          for (int i = 0; i < D; ++i)
            s += double(q[(size_t(t) * ac.heads + h) * D + i] * scale) *
                 cache.k[seqs[t]][p][kvh * D + i];
          w.push_back(s);
          m = std::max(m, s);
        }
        for (double &x : w)
          l += (x = std::exp(x - m));
        for (int i = 0; i < D; ++i) {
          double sum = 0, bound = 0;
          for (int p = lo; p <= pos[t]; ++p) {
            double term = w[p - lo] / l * cache.v[seqs[t]][p][kvh * D + i];
            sum += term;
            bound += std::abs(term);
          }
          // The scores' f32 rounding moves every weight a little: bound by
          // a share of the values' magnitude too.
          bound = std::max(bound, 0.1);
          ASSERT_TRUE(close(
              out[(size_t(t) * ac.heads + h) * D + i], sum, bound,
              std::string(attend) + " heads=" + std::to_string(ac.heads) + "/" +
                  std::to_string(ac.kvHeads) +
                  " window=" + std::to_string(ac.window) + " splits=" +
                  std::to_string(ac.splits) + " token " + std::to_string(t) +
                  " head " + std::to_string(h) + " i " + std::to_string(i)));
        }
      }
    runner().release();
  }
}

TEST_F(CudaKernel, AttentionF32HeadSize8) {
  testAttention<float, 8>(*this, "kv_append_f32", "attention_f32_d8",
                          "attention_combine_d8");
}
TEST_F(CudaKernel, AttentionF32HeadSize64) {
  testAttention<float, 64>(*this, "kv_append_f32", "attention_f32_d64",
                           "attention_combine_d64");
}
TEST_F(CudaKernel, AttentionF16HeadSize64) {
  testAttention<f16, 64>(*this, "kv_append_f16", "attention_f16_d64",
                         "attention_combine_d64");
}
TEST_F(CudaKernel, AttentionBf16HeadSize64) {
  testAttention<bf16, 64>(*this, "kv_append_bf16", "attention_bf16_d64",
                          "attention_combine_d64");
}
TEST_F(CudaKernel, AttentionF16HeadSize128) {
  testAttention<f16, 128>(*this, "kv_append_f16", "attention_f16_d128",
                          "attention_combine_d128");
}

} // namespace
