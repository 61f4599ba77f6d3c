//===- GemmInstances.cpp - The GEMMs kiln-kernel-bench times --------------===//
//
// Part of Kiln's kernel microbenchmark; compiled with -march=native. The
// tiles follow passes/TileOps.cpp's rule for the host's vector width V:
// register blocks of 6 rows by 4V columns with AVX-512 (a swiglu's two
// weights: 2V; AVX2 halves both), k and m blocks by its rule for a 2 MiB
// L2 (this guest's; k blocks whose weights fill a quarter of it, m blocks
// whose rows fill half), N split for 2 cores.
//
//===----------------------------------------------------------------------===//

#include "bench/kernels/GemmInstances.h"

#include "codegen/cpu/kernels/Gemm.h"

#define KILN_BENCH_STR2(x) #x
#define KILN_BENCH_STR(x) KILN_BENCH_STR2(x)

namespace kiln::kernel_bench {
namespace {

using kernels::Quant;
using kernels::V;

/// n rounded up to a multiple of `to`.
constexpr int64_t round_up(int64_t n, int64_t to) {
  return (n + to - 1) / to * to;
}

/// Bytes of `count` weights of a format.
constexpr int64_t weight_bytes(Quant q, int64_t count) {
  return q == Quant::None   ? count * 4
         : q == Quant::Q8_0 ? count * 34 / 32
                            : count * 18 / 32;
}

/// TileOps' k block for a 2 MiB L2: the longest, in whole blocks of
/// `align`, whose panels' weights and register rows fill a quarter of it,
/// then evened out over K.
constexpr int64_t k_block(int64_t k, int64_t bytes_per_k, int64_t align) {
  int64_t max = ((int64_t(2) << 20) / 4 / bytes_per_k) / align * align;
  max = max < align ? align : max;
  int64_t blocks = (k + max - 1) / max;
  int64_t kc = round_up((k + blocks - 1) / blocks, align);
  return kc < k ? kc : k;
}

/// The tiles for 2 cores: decode splits N into 4 tasks per core, prefill
/// into one per core (TileOps.cpp).
template <int64_t N_, int64_t K_, bool SWIGLU_, Quant QUANT_> struct Config {
  static constexpr int64_t N = N_, K = K_;
  // TileOps' register blocks: 6 x 4V with AVX-512's 32 registers (a
  // swiglu's two weights: 6 x 2V), 6 x 2V with AVX2's 16 (swiglu: 6 x V).
  static constexpr int NR = (SWIGLU_ ? 1 : 2) * (V == 16 ? 2 : 1) * V, MR = 6,
                       DECODE_MR = 6;
  static constexpr int64_t PREFILL_FROM = 6;
  static constexpr int64_t KC =
      k_block(K, (SWIGLU_ ? 2 : 1) * weight_bytes(QUANT_, NR) + MR * 4,
              QUANT_ == Quant::None ? V : 32);
  static constexpr int64_t PREFILL_M = (int64_t(1) << 20) / (KC * 4) / MR * MR,
                           PREFILL_N = round_up((N + 1) / 2, NR),
                           PREFILL_K = KC;
  static constexpr int64_t DECODE_M = 6, DECODE_N = round_up((N + 7) / 8, NR),
                           DECODE_K = KC;
  static constexpr bool SWIGLU = SWIGLU_, HAS_BIAS = false,
                        HAS_RESIDUAL = false, HAS_PROLOGUE = false;
  static constexpr kernels::Unary ACTIVATION = kernels::Unary::Identity;
  static constexpr float EPSILON = 0.0f;
  static constexpr bool BF16_PAIRS = false, BF16_DOT = false;
  static constexpr Quant QUANT = QUANT_;
  static constexpr bool AMX = false;
  using wtype = std::conditional_t<QUANT_ == Quant::None, float, uint8_t>;
};

template <class C> struct Instance {
  using G = kernels::Gemm<C>;
  static constexpr int64_t BYTES = C::QUANT == Quant::None
                                       ? G::PANELS * C::NR * C::K * 4
                                       : G::PANELS * G::KB * G::PANEL_BLOCK;

  static int64_t scratchBytes(int64_t rows) { return G::scratch_bytes(rows); }

  static void prepare(void *w) {
    if constexpr (C::QUANT != Quant::None) {
      // Each panel block starts with NR f16 scales (Quant.h): 2^-4, 0x2c00.
      uint8_t *b = static_cast<uint8_t *>(w);
      for (int64_t blk = 0; blk < G::PANELS * G::KB; ++blk)
        for (int c = 0; c < C::NR; ++c) {
          b[blk * G::PANEL_BLOCK + 2 * c] = 0x00;
          b[blk * G::PANEL_BLOCK + 2 * c + 1] = 0x2c;
        }
    }
    (void)w;
  }

  static void run(const kiln_step_args *a, int64_t rows, const float *x,
                  float *scratch, const void *w, const void *w2, float *y) {
    G::run(a, rows, x, nullptr, scratch, w, w2, nullptr, nullptr, y);
  }

  static GemmInstance describe(const char *name) {
    return {name,  C::N,  C::K,          C::SWIGLU, BYTES,
            C::NR, C::MR, &scratchBytes, &prepare,  &run};
  }
};

} // namespace

const std::vector<GemmInstance> &gemmInstances() {
  static const std::vector<GemmInstance> all = {
      // kiln make-model's llama-110m: dim 768, hidden 2048.
      Instance<Config<2304, 768, false, Quant::None>>::describe(
          "f32 2304x768 (110m qkv)"),
      Instance<Config<2048, 768, true, Quant::None>>::describe(
          "f32 swiglu 2048x768 (110m ffn)"),
      Instance<Config<768, 2048, false, Quant::None>>::describe(
          "f32 768x2048 (110m down)"),
      // llama-1b: dim 2048, hidden 5632.
      Instance<Config<5632, 2048, true, Quant::Q8_0>>::describe(
          "q8_0 swiglu 5632x2048 (1b ffn)"),
      Instance<Config<2048, 5632, false, Quant::Q8_0>>::describe(
          "q8_0 2048x5632 (1b down)"),
      Instance<Config<5632, 2048, true, Quant::Q4_0>>::describe(
          "q4_0 swiglu 5632x2048 (1b ffn)"),
      Instance<Config<2048, 5632, false, Quant::Q4_0>>::describe(
          "q4_0 2048x5632 (1b down)"),
  };
  return all;
}

const char *compiledFeatures() {
  return "V=" KILN_BENCH_STR(KILN_VECTOR_FLOATS)
#if defined(__AVX512F__)
      " avx512f"
#endif
#if defined(__AVX512VNNI__)
      " avx512vnni"
#endif
#if defined(__AVXVNNI__)
      " avxvnni"
#endif
#if defined(__AVX2__)
      " avx2"
#endif
      ;
}

} // namespace kiln::kernel_bench
