//===- KernelInstances.cpp - The kernels, instantiated for one ISA --------===//
//
// Part of Kiln's CPU kernel tests. Instantiates codegen/cpu/kernels/ with the
// configurations of KernelInstances.h, as generated code would, and wraps
// each instantiation in a plain function. Compiled once per ISA with that
// ISA's -m flags (test/kernels/CMakeLists.txt), and only this file: the
// kernels' inline functions exist in no other object of a test binary, so
// the linker can never pick an ISA-specific copy for code that runs before
// the CPU check. For the same reason it includes no standard library header
// with out-of-line code, and its configurations live in an anonymous
// namespace.
//
//===----------------------------------------------------------------------===//

#include "test/kernels/KernelInstances.h"

#include "codegen/cpu/kernels/Attention.h"
#include "codegen/cpu/kernels/AttentionPieces.h"
#include "codegen/cpu/kernels/Elementwise.h"
#include "codegen/cpu/kernels/Gather.h"
#include "codegen/cpu/kernels/Gemm.h"
#include "codegen/cpu/kernels/Norms.h"
#include "codegen/cpu/kernels/Rope.h"

#include <type_traits>
#include <utility>

namespace kiln::kernel_test {

namespace k = kiln::kernels;

namespace {

/// Calls f(std::integral_constant<int, c>{}) for a runtime c in [0, Count).
template <class F, int... I>
void dispatchIn(int c, const F &f, std::integer_sequence<int, I...>) {
  ((c == I ? f(std::integral_constant<int, I>{}) : void()), ...);
}
template <int Count, class F> void dispatch(int c, const F &f) {
  dispatchIn(c, f, std::make_integer_sequence<int, Count>{});
}

constexpr bool kHasBf16Dot =
#if defined(__AVX512BF16__)
    k::V == 16;
#else
    false;
#endif

/// Whether this build multiplies in AMX tiles (the instructions, or
/// KILN_AMX_EMULATE): then every case with a tile path takes it.
constexpr bool kAmx = k::amx::AVAILABLE;

constexpr k::Quant quantOf(WeightType t) {
  return t == WeightType::Q8_0   ? k::Quant::Q8_0
         : t == WeightType::Q4_0 ? k::Quant::Q4_0
         : t == WeightType::Q4_K ? k::Quant::Q4_K
         : t == WeightType::Q5_K ? k::Quant::Q5_K
         : t == WeightType::Q6_K ? k::Quant::Q6_K
                                 : k::Quant::None;
}
/// The packed element of a weight type (bytes for quantized types).
template <WeightType T>
using WeightElement = std::conditional_t<
    T == WeightType::F32, float,
    std::conditional_t<
        T == WeightType::F16, _Float16,
        std::conditional_t<T == WeightType::BF16, k::bf16, uint8_t>>>;

template <int I> struct GemmConfig {
  static constexpr GemmCase c = kGemmCases[I];
  static constexpr int64_t N = c.n, K = c.k;
  static constexpr int NR = c.nr > 0 ? c.nr : -c.nr *k::V, MR = c.mr;
  static constexpr int64_t PREFILL_FROM = c.prefillFrom, PREFILL_M = c.prefillM,
                           PREFILL_N = c.prefillPanels * NR,
                           PREFILL_K = c.prefillK,
                           DECODE_N = c.decodePanels * NR, DECODE_K = c.decodeK;
  // Decode blocks vary with the case index, so decode register blocks of
  // one and two rows, in m blocks of one and three, run on every ISA.
  static constexpr int64_t DECODE_M = I % 2 ? 1 : 3;
  static constexpr int DECODE_MR = I % 2 ? 1 : 2;
  static constexpr bool SWIGLU = c.swiglu, HAS_BIAS = c.bias,
                        HAS_RESIDUAL = c.residual, HAS_PROLOGUE = c.prologue;
  static constexpr k::Unary ACTIVATION = k::Unary(int(c.activation));
  static constexpr float EPSILON = kGemmEpsilon;
  static constexpr bool BF16_PAIRS = c.layout == PanelLayout::LanePairs,
                        BF16_DOT = c.layout == PanelLayout::KPairs;
  static constexpr k::Quant QUANT = quantOf(c.wtype);
  static constexpr bool AMX = kAmx && k::amx_tile_path(QUANT, BF16_DOT, NR);
  using wtype = WeightElement<c.wtype>;
};

template <int I> struct AttentionConfig {
  static constexpr AttentionCase c = kAttentionCases[I];
  static constexpr int64_t H = c.h, HKV = c.hkv, D = c.d, KV_BLOCK = c.kvBlock,
                           Q_BLOCK = c.qBlock, WINDOW = c.window;
  // Decode's q groups tokens of different sequences in some cases.
  static constexpr int64_t PREFILL_FROM = 2, DECODE_Q = I % 2 ? 1 : 2;
  static constexpr float SCALE = c.scale;
  using KvElement = float;
};

template <int I> struct RopeConfig {
  static constexpr int64_t H = kRopeCases[I].h, D = kRopeCases[I].d;
  static constexpr bool ADJACENT = kRopeCases[I].adjacent;
  static constexpr const float *INV_FREQ = kRopeInvFreq;
};

template <int I> struct NormConfig {
  static constexpr int64_t D = kNormCases[I].d;
  static constexpr float EPSILON = kNormCases[I].epsilon;
  static constexpr bool HAS_BIAS = kNormCases[I].bias;
  static constexpr int64_t PREFILL_FROM = 4, PREFILL_ROWS = 3, DECODE_ROWS = 1;
};

template <k::Unary F> struct UnaryConfig {
  static constexpr k::Unary OP = F;
  static constexpr float FACTOR = F == k::Unary::Scale ? kScaleFactor : 1.0f;
};
template <k::Binary F> struct BinaryConfig {
  static constexpr k::Binary OP = F;
};

struct GatherConfig {
  static constexpr int64_t D = kGatherD;
};
template <int I> struct EmbeddingPanelsConfig {
  static constexpr EmbeddingPanelsCase c = kEmbeddingPanelsCases[I];
  static constexpr int64_t D = c.d;
  static constexpr int NR = c.nr > 0 ? c.nr : -c.nr *k::V;
  static constexpr k::Quant QUANT = quantOf(c.wtype);
  using wtype = WeightElement<c.wtype>;
  static constexpr int PANEL_LAYOUT = int(c.layout), LANES = k::V;
};
struct SplitConfig {
  static constexpr int64_t PARTS = kSplitParts, AXIS_SIZE = kSplitAxis;
  static constexpr const int64_t *WIDTH = kSplitWidths;
};
template <int I> struct TransposeConfig {
  static constexpr int RANK = kTransposeCases[I].rank;
  static constexpr const int *PERM = kTransposeCases[I].perm;
};
struct KvConfig {
  static constexpr int64_t HKV = kKvHeads, D = kKvDim;
  using KvElement = float;
};

} // namespace

int vector_floats() { return k::V; }

bool gemm_uses_amx(int c) {
  bool amx = false;
  dispatch<kGemmCaseCount>(
      c, [&](auto i) { amx = GemmConfig<decltype(i)::value>::AMX; });
  return amx;
}

bool gemm_available(int c) {
  return kGemmCases[c].layout != PanelLayout::KPairs || kHasBf16Dot ||
         gemm_uses_amx(c);
}

int64_t gemm_scratch_bytes(int c, int64_t rows) {
  int64_t bytes = 0;
  dispatch<kGemmCaseCount>(c, [&](auto i) {
    bytes = k::Gemm<GemmConfig<decltype(i)::value>>::scratch_bytes(rows);
  });
  return bytes;
}

void gemm(int c, const kiln_step_args *a, int64_t rows, const float *x,
          const float *normWeight, float *scratch, const void *w,
          const void *w2, const float *bias, const float *residual, float *y) {
  dispatch<kGemmCaseCount>(c, [&](auto i) {
    using C = GemmConfig<decltype(i)::value>;
    if constexpr (!C::BF16_DOT || kHasBf16Dot || C::AMX)
      k::Gemm<C>::run(a, rows, x, normWeight, scratch, w, w2, bias, residual,
                      y);
  });
}

void attention(int c, const kiln_step_args *a, int64_t layer, const float *q,
               float *y) {
  dispatch<kAttentionCaseCount>(c, [&](auto i) {
    k::Attention<AttentionConfig<decltype(i)::value>>::run(a, layer, q, y);
  });
}

void attention_scores(int c, const kiln_step_args *a, int64_t rows, int64_t s,
                      const float *q, const float *keys, float *scores) {
  dispatch<kAttentionCaseCount>(c, [&](auto i) {
    k::attention_scores<AttentionConfig<decltype(i)::value>>(a, rows, s, q,
                                                             keys, scores);
  });
}

void attention_mask(int c, const kiln_step_args *a, int64_t rows, int64_t s,
                    const float *x, const int32_t *positions, float *y) {
  dispatch<kAttentionCaseCount>(c, [&](auto i) {
    k::attention_mask<AttentionConfig<decltype(i)::value>>(a, rows, s, x,
                                                           positions, y);
  });
}

void attention_output(int c, const kiln_step_args *a, int64_t rows, int64_t s,
                      const float *probs, const float *values, float *y) {
  dispatch<kAttentionCaseCount>(c, [&](auto i) {
    k::attention_output<AttentionConfig<decltype(i)::value>>(a, rows, s, probs,
                                                             values, y);
  });
}

void rope(int c, const kiln_step_args *a, int64_t rows,
          const int32_t *positions, const float *x, float *y) {
  dispatch<kRopeCaseCount>(c, [&](auto i) {
    k::rope<RopeConfig<decltype(i)::value>>(a, rows, positions, x, y);
  });
}

void rms_norm(int c, const kiln_step_args *a, int64_t rows, const float *x,
              const float *g, float *y) {
  dispatch<kNormCaseCount>(c, [&](auto i) {
    k::rms_norm<NormConfig<decltype(i)::value>>(a, rows, x, g, y);
  });
}

void layer_norm(int c, const kiln_step_args *a, int64_t rows, const float *x,
                const float *g, const float *b, float *y) {
  dispatch<kNormCaseCount>(c, [&](auto i) {
    k::layer_norm<NormConfig<decltype(i)::value>>(a, rows, x, g, b, y);
  });
}

void unary(Unary op, const kiln_step_args *a, int64_t n, const float *x,
           float *y) {
  switch (op) {
  case Unary::Identity:
    return k::unary<UnaryConfig<k::Unary::Identity>>(a, n, x, y);
  case Unary::Silu:
    return k::unary<UnaryConfig<k::Unary::Silu>>(a, n, x, y);
  case Unary::Gelu:
    return k::unary<UnaryConfig<k::Unary::Gelu>>(a, n, x, y);
  case Unary::GeluTanh:
    return k::unary<UnaryConfig<k::Unary::GeluTanh>>(a, n, x, y);
  case Unary::Relu:
    return k::unary<UnaryConfig<k::Unary::Relu>>(a, n, x, y);
  case Unary::Scale:
    return k::unary<UnaryConfig<k::Unary::Scale>>(a, n, x, y);
  }
}

void binary(Binary op, const kiln_step_args *a, int64_t n, const float *l,
            const float *r, float *y) {
  if (op == Binary::Add)
    k::binary<BinaryConfig<k::Binary::Add>>(a, n, l, r, y);
  else
    k::binary<BinaryConfig<k::Binary::Mul>>(a, n, l, r, y);
}

void softmax(const kiln_step_args *a, int64_t rows, int64_t cols,
             const float *x, float *y) {
  k::softmax(a, rows, cols, x, y);
}

void embedding(const kiln_step_args *a, int64_t rows, const int32_t *ids,
               const float *table, float *out) {
  k::embedding<GatherConfig>(a, rows, ids, table, out);
}

void embedding_panels(int c, const kiln_step_args *a, int64_t rows,
                      const int32_t *ids, const void *panels, float *out) {
  dispatch<kEmbeddingPanelsCaseCount>(c, [&](auto i) {
    k::embedding_panels<EmbeddingPanelsConfig<decltype(i)::value>>(a, rows, ids,
                                                                   panels, out);
  });
}

void gather_rows(const kiln_step_args *a, const int32_t *rows, const float *x,
                 float *out) {
  k::gather_rows<GatherConfig>(a, rows, x, out);
}

void split(const kiln_step_args *a, int64_t outer, int64_t inner,
           const float *x, float *const *out) {
  k::split<SplitConfig>(a, outer, inner, x, out);
}

void transpose(int c, const kiln_step_args *a, const int64_t *dims,
               const float *x, float *y) {
  dispatch<kTransposeCaseCount>(c, [&](auto i) {
    k::transpose<TransposeConfig<decltype(i)::value>>(a, dims, x, y);
  });
}

void kv_append(const kiln_step_args *a, int64_t layer, const float *keys,
               const float *values) {
  k::kv_append<KvConfig>(a, layer, keys, values);
}

void kv_read(const kiln_step_args *a, int64_t layer, int64_t s, float *keys,
             float *values) {
  k::kv_read<KvConfig>(a, layer, s, keys, values);
}

int64_t cached_positions(const kiln_step_args *a) {
  return k::cached_positions(a);
}

} // namespace kiln::kernel_test
