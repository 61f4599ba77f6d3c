//===- EmulatedKernelTest.cpp - The CUDA kernels, emulated, against loops -===//
//
// Part of Kiln's CUDA kernel tests. Every kernel of KernelInstances.cuh,
// compiled for the host against DeviceHost.h and run in its block emulator
// (threads interleaved in random orders between barriers and warp
// operations) on random inputs of odd sizes, compared with a naive loop
// written here from the reference interpreter's definition of the op
// (ir/interpreter/Interpreter.cpp), accumulating in double.
//
// Each kernel runs under two schedule seeds and must give the same bits
// under both: a kernel whose result depends on the order of its threads
// between barriers (a race on shared memory) fails that.
//
// Tolerances as in test/kernels/KernelTest.cpp: within 1e-5 of the
// reference relative to a bound on the magnitudes of the terms summed; data
// movement bit for bit. f16/bf16 weights and cache elements are rounded
// before the reference sees them; the tensor-core GEMM rounds the
// activations to the weights' type as well, and so does its reference.
// Outputs start as NaN, so an element a kernel forgets to write fails.
//
// First, the emulator itself: that it catches a missing barrier, a diverged
// warp, a misaligned 16-byte load and a barrier some threads skip.
//
//===----------------------------------------------------------------------===//

#include "KernelInstances.cuh"

#include "runtime/StepABI.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace host = kiln::cuda::host;

namespace {

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

/// x as E's bits, and what they mean again as f32.
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
  else if constexpr (std::is_same_v<E, kiln::cuda::f16>)
    return "f16";
  else
    return "bf16";
}

/// Runs `run(seed)` (which launches a kernel writing `out`) under two
/// schedule seeds; the two results must be the same bits.
template <class T, class Run>
std::vector<T> runTwice(std::vector<T> &out, Run run) {
  std::vector<T> first;
  for (uint64_t seed : {1, 2}) {
    std::fill(out.begin(), out.end(), T(kNaN));
    run(host::LaunchOptions{seed});
    if (seed == 1) {
      first = out;
      continue;
    }
    EXPECT_EQ(0, std::memcmp(first.data(), out.data(), out.size() * sizeof(T)))
        << "the result depends on the order of the threads";
  }
  return out;
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

//===--- The emulator
//------------------------------------------------------===//

KILN_KERNEL(64) neighbour(float *out, bool withBarrier) {
  KILN_SHARED(float, s, 64);
  int t = kiln::cuda::thread_index();
  s[t] = float(t);
  if (withBarrier)
    kiln::cuda::sync_block();
  out[t] = s[(t + 1) % 64];
}

TEST(Emulator, CatchesAMissingBarrier) {
  std::vector<float> out(64);
  auto correct = [&] {
    for (int t = 0; t < 64; ++t)
      if (out[t] != float((t + 1) % 64))
        return false;
    return true;
  };
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    host::launch({1}, 64, [&] { neighbour(out.data(), true); }, {seed});
    EXPECT_TRUE(correct()) << "seed " << seed;
  }
  int wrong = 0;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    host::launch({1}, 64, [&] { neighbour(out.data(), false); }, {seed});
    wrong += !correct();
  }
  EXPECT_EQ(wrong, 5) << "without the barrier some thread reads its "
                         "neighbour's element before it is written";
}

KILN_KERNEL(32) divergedShuffle(float *out) {
  float v = 1.0f;
  if (kiln::cuda::lane_index() != 0)
    v = kiln::cuda::shfl_xor(v, 1);
  out[kiln::cuda::thread_index()] = v;
}

TEST(Emulator, ReportsADivergedWarp) {
  std::vector<float> out(32);
  try {
    host::launch({1}, 32, [&] { divergedShuffle(out.data()); });
    FAIL() << "no error";
  } catch (const std::runtime_error &e) {
    EXPECT_NE(std::string(e.what()).find("diverged"), std::string::npos)
        << e.what();
  }
}

KILN_KERNEL(32) misaligned(const float *in, float *out) {
  kiln::cuda::Bytes16 b = kiln::cuda::load16(in + 1);
  out[kiln::cuda::thread_index()] = kiln::cuda::as_float(b.word[0]);
}

TEST(Emulator, ReportsAMisalignedVectorLoad) {
  alignas(16) float in[8] = {};
  std::vector<float> out(32);
  try {
    host::launch({1}, 32, [&] { misaligned(in, out.data()); });
    FAIL() << "no error";
  } catch (const std::runtime_error &e) {
    EXPECT_NE(std::string(e.what()).find("16-byte aligned"), std::string::npos)
        << e.what();
  }
}

KILN_KERNEL(64) barrierAfterExit(float *out) {
  if (kiln::cuda::thread_index() >= 32)
    return;
  kiln::cuda::sync_block();
  out[kiln::cuda::thread_index()] = 1.0f;
}

TEST(Emulator, ReportsABarrierSomeThreadsSkip) {
  std::vector<float> out(64);
  EXPECT_THROW(host::launch({1}, 64, [&] { barrierAfterExit(out.data()); }),
               std::runtime_error);
}

// The device's view of the paged cache is the runtime's, field for field.
static_assert(sizeof(kiln::cuda::KvCache) == sizeof(kiln_kv_cache));
static_assert(offsetof(kiln::cuda::KvCache, blockTables) ==
              offsetof(kiln_kv_cache, block_tables));
static_assert(offsetof(kiln::cuda::KvCache, maxPositions) ==
              offsetof(kiln_kv_cache, max_positions));

//===--- GEMV and GEMM
//-----------------------------------------------------===//

struct MatmulCase {
  int rows, n, k;
  bool residual;
};

/// y = x · wᵀ (+ residual) with w as `W`; `roundX` rounds the activations
/// as the kernel does.
template <class W>
void checkMatmul(const MatmulCase &c, const std::vector<float> &y,
                 const std::vector<float> &x, const std::vector<W> &w,
                 const std::vector<float> &residual, bool roundX,
                 const std::string &what) {
  for (int r = 0; r < c.rows; ++r)
    for (int j = 0; j < c.n; ++j) {
      double sum = 0, bound = 0;
      for (int i = 0; i < c.k; ++i) {
        double xi = x[size_t(r) * c.k + i];
        if (roundX)
          xi = rounded<W>(float(xi));
        double term = xi * fromElement(w[size_t(j) * c.k + i]);
        sum += term;
        bound += std::abs(term);
      }
      if (c.residual) {
        sum += residual[size_t(r) * c.n + j];
        bound += std::abs(residual[size_t(r) * c.n + j]);
      }
      ASSERT_TRUE(close(y[size_t(r) * c.n + j], sum, bound,
                        what + " row " + std::to_string(r) + " col " +
                            std::to_string(j)));
    }
}

std::string describe(const char *kernel, const MatmulCase &c) {
  return std::string(kernel) + " rows=" + std::to_string(c.rows) +
         " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) +
         (c.residual ? " +residual" : "");
}

template <class W, class Kernel>
void testGemv(Kernel kernel, const char *name) {
  // k: 16-byte rows (the vector loop) and odd (the scalar one).
  for (MatmulCase c : {MatmulCase{1, 37, 64, false},
                       {3, 130, 264, true},
                       {5, 9, 67, false},
                       {6, 33, 8, true}}) {
    auto x = randomFloats(size_t(c.rows) * c.k, 1);
    auto w = toElements<W>(randomFloats(size_t(c.n) * c.k, 2));
    auto residual = randomFloats(size_t(c.rows) * c.n, 3);
    std::vector<float> y(size_t(c.rows) * c.n);
    runTwice(y, [&](host::LaunchOptions o) {
      host::launch(
          {blocksFor(c.n, 4)}, 128,
          [&] {
            kernel(y.data(), x.data(), w.data(),
                   c.residual ? residual.data() : nullptr, c.rows, c.n, c.k);
          },
          o);
    });
    checkMatmul(c, y, x, w, residual, false, describe(name, c));
  }
}

TEST(Gemv, F32) { testGemv<float>(gemv_f32, "gemv_f32"); }
TEST(Gemv, F16) { testGemv<kiln::cuda::f16>(gemv_f16, "gemv_f16"); }
TEST(Gemv, Bf16) { testGemv<kiln::cuda::bf16>(gemv_bf16, "gemv_bf16"); }

// Rows and columns: one, partial tiles, several tiles with a partial one;
// k: one k step, several with a partial one, and not a multiple of 8.
const MatmulCase kGemmCases[] = {{1, 8, 16, false},
                                 {17, 37, 67, true},
                                 {69, 70, 96, false},
                                 {130, 65, 40, true},
                                 {5, 129, 33, false}};

TEST(Gemm, F32) {
  for (const MatmulCase &c : kGemmCases) {
    auto x = randomFloats(size_t(c.rows) * c.k, 4);
    auto w = randomFloats(size_t(c.n) * c.k, 5);
    auto residual = randomFloats(size_t(c.rows) * c.n, 6);
    std::vector<float> y(size_t(c.rows) * c.n);
    runTwice(y, [&](host::LaunchOptions o) {
      host::launch(
          {blocksFor(c.n, 64), blocksFor(c.rows, 64)}, 256,
          [&] {
            gemm_f32_64x64(y.data(), x.data(), w.data(),
                           c.residual ? residual.data() : nullptr, c.rows, c.n,
                           c.k);
          },
          o);
    });
    checkMatmul(c, y, x, w, residual, false, describe("gemm_f32_64x64", c));
  }
}

template <class W, class Kernel>
void testGemmMma(Kernel kernel, const char *name) {
  for (const MatmulCase &c : kGemmCases) {
    auto x = randomFloats(size_t(c.rows) * c.k, 7);
    auto w = toElements<W>(randomFloats(size_t(c.n) * c.k, 8));
    auto residual = randomFloats(size_t(c.rows) * c.n, 9);
    std::vector<float> y(size_t(c.rows) * c.n);
    runTwice(y, [&](host::LaunchOptions o) {
      host::launch(
          {blocksFor(c.n, 64), blocksFor(c.rows, 64)}, 128,
          [&] {
            kernel(y.data(), x.data(), w.data(),
                   c.residual ? residual.data() : nullptr, c.rows, c.n, c.k);
          },
          o);
    });
    checkMatmul(c, y, x, w, residual, true, describe(name, c));
  }
}

TEST(GemmMma, F16) {
  testGemmMma<kiln::cuda::f16>(gemm_mma_f16, "gemm_mma_f16");
}
TEST(GemmMma, Bf16) {
  testGemmMma<kiln::cuda::bf16>(gemm_mma_bf16, "gemm_mma_bf16");
}

//===--- Norms, rope, element-wise, embedding, argmax ---------------------===//

TEST(RmsNorm, Rows) {
  for (int d : {8, 67, 300, 1000}) {
    int rows = 3;
    auto x = randomFloats(size_t(rows) * d, 10, -3.0f, 3.0f);
    auto g = randomFloats(d, 11);
    std::vector<float> y(x.size());
    runTwice(y, [&](host::LaunchOptions o) {
      host::launch(
          {rows}, 256,
          [&] { rms_norm_256(y.data(), x.data(), g.data(), d, 1e-5f); }, o);
    });
    for (int r = 0; r < rows; ++r) {
      double ss = 0;
      for (int i = 0; i < d; ++i)
        ss += double(x[r * d + i]) * x[r * d + i];
      double s = 1.0 / std::sqrt(ss / d + 1e-5);
      for (int i = 0; i < d; ++i) {
        double want = g[i] * s * x[r * d + i];
        ASSERT_TRUE(close(y[r * d + i], want, std::abs(want),
                          "rms_norm d=" + std::to_string(d)));
      }
    }
  }
}

template <bool Adjacent, class Kernel> void testRope(Kernel kernel) {
  for (int d : {8, 64}) {
    int rows = 5, heads = 3;
    auto x = randomFloats(size_t(rows) * heads * d, 12);
    std::vector<int> positions = {0, 1, 17, 511, 4099};
    std::vector<float> invFreq(d / 2);
    for (int i = 0; i < d / 2; ++i)
      invFreq[i] = float(std::pow(10000.0, -2.0 * i / d));
    std::vector<float> y(x.size());
    runTwice(y, [&](host::LaunchOptions o) {
      host::launch(
          {blocksFor(rows * heads * d / 2, 256)}, 256,
          [&] {
            kernel(y.data(), x.data(), positions.data(), invFreq.data(), rows,
                   heads, d);
          },
          o);
    });
    for (int t = 0; t < rows; ++t)
      for (int h = 0; h < heads; ++h)
        for (int i = 0; i < d / 2; ++i) {
          // The angle as the reference rounds it: f32.
          double angle = float(float(positions[t]) * invFreq[i]);
          size_t base = (size_t(t) * heads + h) * d;
          size_t ia = base + (Adjacent ? 2 * i : i);
          size_t ib = base + (Adjacent ? 2 * i + 1 : i + d / 2);
          double a = x[ia], b = x[ib];
          double bound = std::abs(a) + std::abs(b);
          std::string what =
              std::string(Adjacent ? "rope_adjacent" : "rope_halves") +
              " t=" + std::to_string(t) + " i=" + std::to_string(i);
          ASSERT_TRUE(close(y[ia], a * std::cos(angle) - b * std::sin(angle),
                            bound, what));
          ASSERT_TRUE(close(y[ib], a * std::sin(angle) + b * std::cos(angle),
                            bound, what));
        }
  }
}

TEST(Rope, AdjacentPairs) { testRope<true>(rope_adjacent); }
TEST(Rope, Halves) { testRope<false>(rope_halves); }

TEST(Elementwise, SwigluAndAdd) {
  int64_t n = 1001;
  auto a = randomFloats(n, 13, -4.0f, 4.0f), b = randomFloats(n, 14);
  std::vector<float> y(n);
  runTwice(y, [&](host::LaunchOptions o) {
    host::launch(
        {blocksFor(n, 256)}, 256,
        [&] { swiglu_f32(y.data(), a.data(), b.data(), n); }, o);
  });
  for (int64_t i = 0; i < n; ++i) {
    double silu = a[i] / (1.0 + std::exp(-double(a[i])));
    ASSERT_TRUE(close(y[i], silu * b[i], std::abs(silu * b[i]), "swiglu"));
  }
  runTwice(y, [&](host::LaunchOptions o) {
    host::launch(
        {blocksFor(n, 256)}, 256,
        [&] { add_f32(y.data(), a.data(), b.data(), n); }, o);
  });
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(y[i], a[i] + b[i]) << "add " << i;
}

template <class E, class Kernel> void testEmbedding(Kernel kernel) {
  int vocab = 50, d = 67, tokens = 7;
  auto table = toElements<E>(randomFloats(size_t(vocab) * d, 15));
  std::vector<int> ids = {0, 49, 3, 3, 17, 1, 48};
  std::vector<float> y(size_t(tokens) * d);
  runTwice(y, [&](host::LaunchOptions o) {
    host::launch(
        {blocksFor(tokens * d, 256)}, 256,
        [&] { kernel(y.data(), table.data(), ids.data(), tokens, d); }, o);
  });
  for (int t = 0; t < tokens; ++t)
    for (int i = 0; i < d; ++i)
      ASSERT_EQ(y[t * d + i], fromElement(table[size_t(ids[t]) * d + i]))
          << "embedding " << typeName<E>() << " token " << t;
}

TEST(Embedding, F32) { testEmbedding<float>(embedding_f32); }
TEST(Embedding, F16) { testEmbedding<kiln::cuda::f16>(embedding_f16); }
TEST(Embedding, Bf16) { testEmbedding<kiln::cuda::bf16>(embedding_bf16); }

TEST(Argmax, LowestIndexOfTheMaximum) {
  for (int vocab : {1, 100, 4099}) {
    int rows = 3;
    auto logits = randomFloats(size_t(rows) * vocab, 16);
    // Row 1: the maximum twice, the later one in another thread's slice.
    if (vocab > 10) {
      logits[vocab + 7] = 5.0f;
      logits[vocab + vocab - 2] = 5.0f;
    }
    std::vector<int> out(rows, -1);
    for (uint64_t seed : {1, 2}) {
      host::launch({rows}, 256,
                   [&] { argmax_256(out.data(), logits.data(), vocab); },
                   {seed});
      for (int r = 0; r < rows; ++r) {
        const float *row = logits.data() + size_t(r) * vocab;
        int want = int(std::max_element(row, row + vocab) - row);
        ASSERT_EQ(out[r], want) << "vocab " << vocab << " row " << r;
      }
    }
  }
}

//===--- The paged KV cache and attention ---------------------------------===//

/// A paged cache of two sequences whose blocks are scattered in the pool,
/// filled through kv_append, and the f32 values the reference reads.
template <class E> struct PagedCache {
  static constexpr int kBlockPositions = 16, kLayers = 2;
  int kvHeads, d, maxBlocks, blocks;
  std::vector<E> keys, values;
  std::vector<int32_t> tables;
  kiln::cuda::KvCache view;
  // [seq][position][kvHead * d + i], as the cache holds them.
  std::vector<std::vector<std::vector<float>>> k, v;

  PagedCache(int kvHeads, int d, int positions) : kvHeads(kvHeads), d(d) {
    maxBlocks = (positions + kBlockPositions - 1) / kBlockPositions;
    blocks = 2 * maxBlocks + 1; // block 0 unused
    int64_t rowElems = int64_t(kvHeads) * d;
    int64_t blockStride = kLayers * kBlockPositions * rowElems;
    keys.assign(size_t(blocks * blockStride), toElement<E>(kNaN));
    values = keys;
    std::vector<int32_t> pool(blocks - 1);
    std::iota(pool.begin(), pool.end(), 1);
    std::shuffle(pool.begin(), pool.end(), std::mt19937(17));
    tables.assign(pool.begin(), pool.begin() + 2 * maxBlocks);
    view = {keys.data(),
            values.data(),
            blockStride,
            kBlockPositions * rowElems, // layer
            rowElems,                   // position (values)
            kBlockPositions,            // key element i to i + 1
            tables.data(),
            maxBlocks,
            kBlockPositions,
            2,
            maxBlocks * kBlockPositions};
  }

  /// Appends positions [0, n) of `seq` to `layer` in one kv_append launch.
  template <class Kernel>
  void fill(Kernel kernel, int layer, int seq, int n, uint32_t seed) {
    int kvDim = kvHeads * d;
    auto kIn = randomFloats(size_t(n) * kvDim, seed);
    auto vIn = randomFloats(size_t(n) * kvDim, seed + 1);
    std::vector<int> positions(n), seqIds(n, seq);
    std::iota(positions.begin(), positions.end(), 0);
    host::launch({blocksFor(int64_t(n) * kvDim, 256)}, 256, [&] {
      kernel(view, layer, kIn.data(), vIn.data(), positions.data(),
             seqIds.data(), n, kvDim);
    });
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
};

struct AttentionCase {
  int heads, kvHeads, window, splits;
};

template <class E, int D, class Append, class Attend, class Combine>
void testAttention(Append append, Attend attend, Combine combine) {
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
    // The layout, bit for bit: seq 1, position 37 of layer 1.
    {
      int seq = 1, p = 37, block = cache.tables[seq * cache.maxBlocks + p / 16];
      int64_t slot = block * cache.view.blockStride + cache.view.layerStride;
      for (int e = 0; e < ac.kvHeads * D; ++e) {
        ASSERT_EQ(
            fromElement(
                cache.values[slot + (p % 16) * cache.view.positionStride + e]),
            cache.v[seq][p][e]);
        ASSERT_EQ(
            fromElement(cache.keys[slot + e * cache.view.keyStride + p % 16]),
            cache.k[seq][p][e]);
      }
    }
    // A prefill chunk of sequence 0 (positions 250..256) and decode tokens
    // of both sequences.
    std::vector<int> pos = {250, 251, 252, 253, 254, 255, 256, 299, 0, 44};
    std::vector<int> seqs = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1};
    int tokens = int(pos.size()), items = tokens * ac.heads;
    auto q = randomFloats(size_t(items) * D, 19);
    float scale = 1.0f / std::sqrt(float(D));
    kiln::cuda::AttentionShape shape{tokens, ac.heads,  ac.kvHeads,
                                     1,      ac.window, scale};
    std::vector<float> out(size_t(items) * D),
        partials(size_t(ac.splits) * items * (D + 2));
    runTwice(out, [&](host::LaunchOptions o) {
      host::launch(
          {blocksFor(items, 4), ac.splits}, 128,
          [&] {
            attend(out.data(), partials.data(), q.data(), cache.view,
                   pos.data(), seqs.data(), shape);
          },
          o);
      if (ac.splits > 1)
        host::launch(
            {blocksFor(int64_t(items) * D, 256)}, 256,
            [&] { combine(out.data(), partials.data(), items, ac.splits); }, o);
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
          // Scores carry f32 rounding into the weights: bound by the
          // largest value too.
          bound = std::max(bound, 0.1);
          ASSERT_TRUE(close(out[(size_t(t) * ac.heads + h) * D + i], sum, bound,
                            std::string("attention ") + typeName<E>() +
                                " D=" + std::to_string(D) +
                                " heads=" + std::to_string(ac.heads) + "/" +
                                std::to_string(ac.kvHeads) +
                                " window=" + std::to_string(ac.window) +
                                " splits=" + std::to_string(ac.splits) +
                                " token " + std::to_string(t) + " head " +
                                std::to_string(h) + " i " + std::to_string(i)));
        }
      }
  }
}

TEST(Attention, F32HeadSize8) {
  testAttention<float, 8>(kv_append_f32, attention_f32_d8,
                          attention_combine_d8);
}
TEST(Attention, F32HeadSize64) {
  testAttention<float, 64>(kv_append_f32, attention_f32_d64,
                           attention_combine_d64);
}
TEST(Attention, F16HeadSize64) {
  testAttention<kiln::cuda::f16, 64>(kv_append_f16, attention_f16_d64,
                                     attention_combine_d64);
}
TEST(Attention, Bf16HeadSize64) {
  testAttention<kiln::cuda::bf16, 64>(kv_append_bf16, attention_bf16_d64,
                                      attention_combine_d64);
}
TEST(Attention, F16HeadSize128) {
  testAttention<kiln::cuda::f16, 128>(kv_append_f16, attention_f16_d128,
                                      attention_combine_d128);
}

} // namespace
