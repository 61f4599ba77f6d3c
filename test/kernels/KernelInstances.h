//===- KernelInstances.h - The kernel configurations under test -*- C++ -*-===//
//
// Part of Kiln's CPU kernel tests. The configurations (what the code
// generator would choose: shapes, tiles, flags) that KernelInstances.cpp
// instantiates codegen/cpu/kernels/ with, and the plain functions that call
// those instantiations. KernelInstances.cpp is compiled once per ISA, with
// that ISA's flags; KernelTest.cpp, compiled without them, sees only this
// header, so that no code built for the ISA runs before the test has checked
// that the CPU has it.
//
// Keep this header free of the kernel headers: <cstdint> and the step ABI
// only, and data, no inline functions.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TEST_KERNELS_KERNELINSTANCES_H
#define KILN_TEST_KERNELS_KERNELINSTANCES_H

#include "runtime/StepABI.h"

#include <cstdint>

namespace kiln::kernel_test {

/// A function of one element, in kiln::kernels::Unary's order.
enum class Unary { Identity, Silu, Gelu, GeluTanh, Relu, Scale };
/// kiln::kernels::Binary's order.
enum class Binary { Add, Mul };
/// How GEMM weights are stored (codegen/WeightPacker.h): a float type,
/// GGUF Q8_0 / Q4_0 blocks (kiln::kernels::Quant, the layout of
/// codegen/cpu/kernels/Quant.h) or K-quant super-blocks (KQuant.h's).
enum class WeightType { F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K };
enum class PanelLayout { Plain, LanePairs, KPairs };

//===--- GEMM -------------------------------------------------------------===//

/// One Gemm configuration. The tiles are small and odd so that k blocks,
/// partial panels and partial register blocks all run. small_f32_relu,
/// default_q8, q4_small_fused_relu and q4k_small_nr1v give decode tasks of
/// two panels and several k blocks, the k blocks prefill takes: decode runs
/// a panel's k blocks before the next panel, prefill every panel's first k
/// block first, and GemmBatchInvariance checks the two agree bit for bit.
struct GemmCase {
  const char *name;
  int64_t n, k;
  int nr; // columns per panel: nr floats when > 0, else -nr vectors of V
  int mr;
  int64_t prefillFrom, prefillM, prefillPanels, prefillK; // PREFILL_N in NR
  int64_t decodePanels, decodeK;                          // DECODE_N in NR
  bool swiglu, bias, residual, prologue;
  Unary activation;
  WeightType wtype;
  PanelLayout layout; // LanePairs: BF16_PAIRS; KPairs: BF16_DOT
};

constexpr float kGemmEpsilon = 1e-5f;

// clang-format off
inline constexpr GemmCase kGemmCases[] = {
  // name                      n   k    nr  mr pf pm pp  pk dp  dk   swiglu bias   resid  prolog activation        wtype              layout
  {"small_f32_nr1v",           37, 53,  -1, 3, 4, 5, 2,  12, 1, 20,  false, false, false, false, Unary::Identity, WeightType::F32,  PanelLayout::Plain},
  {"small_f32_nr2v_fused_silu",37, 53,  -2, 3, 4, 5, 2,  12, 1, 20,  false, true,  true,  true,  Unary::Silu,     WeightType::F32,  PanelLayout::Plain},
  {"small_f32_gelu_bias",      37, 53,  -2, 3, 4, 7, 1,  12, 2, 53,  false, true,  false, false, Unary::Gelu,     WeightType::F32,  PanelLayout::Plain},
  {"small_f32_gelutanh_resid", 37, 53,  -1, 3, 4, 5, 3,  12, 1, 11,  false, false, true,  true,  Unary::GeluTanh, WeightType::F32,  PanelLayout::Plain},
  {"small_f32_relu",           37, 53,  -1, 3, 4, 5, 2,  12, 2, 12,  false, true,  true,  false, Unary::Relu,     WeightType::F32,  PanelLayout::Plain},
  {"small_f32_swiglu",         37, 53,  -2, 3, 4, 5, 2,  12, 1, 20,  true,  false, false, true,  Unary::Identity, WeightType::F32,  PanelLayout::Plain},
  {"small_f16_bias_resid",     37, 53,  -2, 3, 4, 5, 2,  12, 1, 20,  false, true,  true,  false, Unary::Identity, WeightType::F16,  PanelLayout::Plain},
  {"small_f16_swiglu",         37, 53,  -1, 3, 4, 5, 2,  12, 1, 20,  true,  false, false, false, Unary::Identity, WeightType::F16,  PanelLayout::Plain},
  {"small_bf16_prologue_silu", 37, 53,  -1, 3, 4, 5, 2,  12, 1, 20,  false, false, false, true,  Unary::Silu,     WeightType::BF16, PanelLayout::Plain},
  {"small_bf16_pairs",         37, 53,  -2, 3, 4, 5, 2,  12, 1, 20,  false, true,  true,  false, Unary::Identity, WeightType::BF16, PanelLayout::LanePairs},
  {"small_bf16_pairs_swiglu",  37, 53,  -2, 3, 4, 5, 2,  12, 1, 20,  true,  false, false, true,  Unary::Identity, WeightType::BF16, PanelLayout::LanePairs},
  {"small_bf16_dot",           37, 53,  -1, 3, 4, 5, 2,  11, 1, 21,  false, true,  true,  false, Unary::Identity, WeightType::BF16, PanelLayout::KPairs},
  {"small_bf16_dot_prologue",  37, 53,  -2, 3, 4, 5, 2,  12, 1, 20,  false, false, false, true,  Unary::Relu,     WeightType::BF16, PanelLayout::KPairs},
  {"small_bf16_dot_swiglu",    37, 53,  -2, 3, 4, 5, 2,  12, 1, 20,  true,  false, false, true,  Unary::Identity, WeightType::BF16, PanelLayout::KPairs},
  {"default_f32",              97, 100, 32, 6, 16, 48, 1, 64, 1, 100, false, false, false, false, Unary::Identity, WeightType::F32,  PanelLayout::Plain},
  {"default_f32_fused",        97, 100, -2, 6, 16, 48, 1, 64, 1, 100, false, true,  true,  true,  Unary::Silu,     WeightType::F32,  PanelLayout::Plain},
  {"default_f16_swiglu",       97, 100, 32, 6, 16, 48, 1, 64, 1, 100, true,  false, false, true,  Unary::Identity, WeightType::F16,  PanelLayout::Plain},
  {"default_bf16_pairs_fused", 97, 100, 32, 6, 16, 48, 1, 64, 1, 100, false, true,  true,  true,  Unary::GeluTanh, WeightType::BF16, PanelLayout::LanePairs},
  {"default_bf16_dot",         97, 100, 32, 6, 16, 48, 1, 64, 1, 100, false, true,  true,  false, Unary::Identity, WeightType::BF16, PanelLayout::KPairs},
  {"default_bf16_dot_swiglu",  97, 100, 32, 6, 16, 48, 1, 64, 1, 100, true,  false, false, true,  Unary::Identity, WeightType::BF16, PanelLayout::KPairs},
  // Q8_0 and Q4_0: K whole blocks of 32 but not whole k blocks, k blocks
  // that are not whole blocks of 32 (rounded up by the kernel), partial
  // panels.
  {"q8_small_nr1v",            45, 96,  -1, 3, 4, 5, 2,  64, 1, 40,  false, false, false, false, Unary::Identity, WeightType::Q8_0, PanelLayout::Plain},
  {"q8_small_fused_silu",      45, 160, -2, 3, 4, 5, 2,  64, 1, 64,  false, true,  true,  true,  Unary::Silu,     WeightType::Q8_0, PanelLayout::Plain},
  {"q8_small_gelu_bias",       45, 96,  -2, 3, 4, 7, 1,  32, 2, 96,  false, true,  false, false, Unary::Gelu,     WeightType::Q8_0, PanelLayout::Plain},
  {"q8_small_swiglu",          45, 160, -2, 3, 4, 5, 2,  64, 1, 50,  true,  false, false, true,  Unary::Identity, WeightType::Q8_0, PanelLayout::Plain},
  {"q4_small_nr1v",            45, 96,  -1, 3, 4, 5, 2,  64, 1, 40,  false, false, false, false, Unary::Identity, WeightType::Q4_0, PanelLayout::Plain},
  {"q4_small_fused_relu",      45, 160, -2, 3, 4, 5, 2,  64, 1, 64,  false, true,  true,  true,  Unary::Relu,     WeightType::Q4_0, PanelLayout::Plain},
  {"q4_small_gelutanh_resid",  45, 96,  -1, 3, 4, 5, 3,  32, 1, 20,  false, false, true,  true,  Unary::GeluTanh, WeightType::Q4_0, PanelLayout::Plain},
  {"q4_small_swiglu",          45, 160, -1, 3, 4, 5, 2,  64, 1, 64,  true,  false, false, false, Unary::Identity, WeightType::Q4_0, PanelLayout::Plain},
  {"default_q8",               97, 256, 64, 6, 16, 48, 1, 128, 2, 128, false, false, false, false, Unary::Identity, WeightType::Q8_0, PanelLayout::Plain},
  {"default_q8_fused",         97, 256, 64, 6, 16, 48, 1, 128, 1, 128, false, true,  true,  true,  Unary::Silu,     WeightType::Q8_0, PanelLayout::Plain},
  {"default_q8_swiglu",        97, 256, 32, 6, 16, 48, 1, 128, 1, 128, true,  false, false, true,  Unary::Identity, WeightType::Q8_0, PanelLayout::Plain},
  {"default_q4",               97, 256, 64, 6, 16, 48, 1, 128, 1, 128, false, true,  true,  false, Unary::Identity, WeightType::Q4_0, PanelLayout::Plain},
  {"default_q4_swiglu",        97, 256, 32, 6, 16, 48, 1, 256, 1, 256, true,  false, false, true,  Unary::Identity, WeightType::Q4_0, PanelLayout::Plain},
  // K-quants: K whole super-blocks of 256 but not whole k blocks, k blocks
  // that are not whole super-blocks (rounded up by the kernel), partial
  // panels, every fused part.
  {"q4k_small_nr1v",           45, 768, -1, 3, 4, 5, 2,  300, 2, 512, false, false, false, false, Unary::Identity, WeightType::Q4_K, PanelLayout::Plain},
  {"q4k_fused_silu",           45, 512, -2, 3, 4, 5, 2,  256, 1, 512, false, true,  true,  true,  Unary::Silu,     WeightType::Q4_K, PanelLayout::Plain},
  {"q4k_swiglu",               45, 512, -2, 6, 4, 12, 2, 512, 1, 256, true,  false, false, true,  Unary::Identity, WeightType::Q4_K, PanelLayout::Plain},
  {"q5k_small_nr1v",           45, 768, -1, 3, 4, 5, 2,  256, 1, 768, false, true,  true,  false, Unary::Identity, WeightType::Q5_K, PanelLayout::Plain},
  {"q5k_swiglu",               45, 512, -2, 3, 4, 5, 2,  300, 1, 512, true,  false, false, true,  Unary::Identity, WeightType::Q5_K, PanelLayout::Plain},
  {"q6k_small_gelu_bias",      45, 768, -1, 3, 4, 7, 1,  512, 2, 300, false, true,  false, false, Unary::Gelu,     WeightType::Q6_K, PanelLayout::Plain},
  {"q6k_fused_resid",          45, 512, -2, 6, 4, 12, 2, 256, 1, 512, false, false, true,  true,  Unary::Identity, WeightType::Q6_K, PanelLayout::Plain},
  {"q6k_swiglu",               45, 512, -1, 3, 4, 5, 2,  512, 1, 256, true,  false, false, false, Unary::Identity, WeightType::Q6_K, PanelLayout::Plain},
};
// clang-format on
constexpr int kGemmCaseCount = sizeof(kGemmCases) / sizeof(kGemmCases[0]);

/// Whether this build instantiates kGemmCases[c]: BF16_DOT only where the
/// compiler targets vdpbf16ps (__AVX512BF16__ and V == 16) or AMX tiles.
bool gemm_available(int c);
/// Whether kGemmCases[c] multiplies in AMX tiles in this build (bf16 k
/// pairs always; Q8_0 / Q4_0 from PREFILL_FROM rows).
bool gemm_uses_amx(int c);
/// kiln::kernels::Gemm<kGemmCases[c]>::scratch_bytes(rows).
int64_t gemm_scratch_bytes(int c, int64_t rows);
/// kiln::kernels::Gemm<kGemmCases[c]>::run.
void gemm(int c, const kiln_step_args *a, int64_t rows, const float *x,
          const float *normWeight, float *scratch, const void *w,
          const void *w2, const float *bias, const float *residual, float *y);

//===--- Attention --------------------------------------------------------===//

/// A configuration of kiln::kernels::Attention, and of the unfused pieces
/// (which read H, HKV, D and WINDOW).
struct AttentionCase {
  const char *name;
  int64_t h, hkv, d, kvBlock, qBlock, window;
  float scale;
};

// kv is whole vectors of every ISA (16 floats): the kernel loads key
// positions in vectors.
inline constexpr AttentionCase kAttentionCases[] = {
    {"d12_kv16", 6, 2, 12, 16, 8, 0, 0.2886751f},
    {"d12_kv32_window9", 6, 2, 12, 32, 5, 9, 0.2886751f},
    {"d32_kv48", 6, 2, 32, 48, 8, 0, 0.1767767f},
    {"d32_kv16_window11", 6, 2, 32, 16, 16, 11, 0.1767767f},
    {"d32_kv16_q64", 6, 2, 32, 16, 64, 0, 0.25f},
    {"d12_kv16_q3_window4", 6, 2, 12, 16, 3, 4, 0.5f},
    // Four query heads a kv head with whole-vector heads: a token's heads
    // share loads in row groups (Attention.h's ROW_GROUP, 4 with AVX-512).
    {"d64_kv32_group4", 8, 2, 64, 32, 8, 0, 0.125f},
};
constexpr int kAttentionCaseCount =
    sizeof(kAttentionCases) / sizeof(kAttentionCases[0]);

void attention(int c, const kiln_step_args *a, int64_t layer, const float *q,
               float *y);
void attention_scores(int c, const kiln_step_args *a, int64_t rows, int64_t s,
                      const float *q, const float *keys, float *scores);
void attention_mask(int c, const kiln_step_args *a, int64_t rows, int64_t s,
                    const float *x, const int32_t *positions, float *y);
void attention_output(int c, const kiln_step_args *a, int64_t rows, int64_t s,
                      const float *probs, const float *values, float *y);

//===--- Rope and norms ---------------------------------------------------===//

struct RopeCase {
  const char *name;
  int64_t h, d;
  bool adjacent;
};
inline constexpr RopeCase kRopeCases[] = {
    {"d12_adjacent", 3, 12, true},
    {"d12_halves", 3, 12, false},
    {"d32_adjacent", 2, 32, true},
    {"d32_halves", 2, 32, false},
};
constexpr int kRopeCaseCount = sizeof(kRopeCases) / sizeof(kRopeCases[0]);
/// INV_FREQ of every case (its first d / 2 entries): 10000^(-i / 16),
/// rounded. Any values would do: the test's reference reads this table too.
inline constexpr float kRopeInvFreq[16] = {
    1.0f,   0.5623413f,    0.3162278f,    0.1778279f,
    0.1f,   0.05623413f,   0.03162278f,   0.01778279f,
    0.01f,  0.005623413f,  0.003162278f,  0.001778279f,
    0.001f, 0.0005623413f, 0.0003162278f, 0.0001778279f};

void rope(int c, const kiln_step_args *a, int64_t rows,
          const int32_t *positions, const float *x, float *y);

struct NormCase {
  const char *name;
  int64_t d;
  float epsilon;
  bool bias; // layer_norm's HAS_BIAS
};
inline constexpr NormCase kNormCases[] = {
    {"d37_bias", 37, 1e-5f, true},
    {"d64", 64, 1e-6f, false},
    {"d5_bias", 5, 1e-3f, true},
};
constexpr int kNormCaseCount = sizeof(kNormCases) / sizeof(kNormCases[0]);

void rms_norm(int c, const kiln_step_args *a, int64_t rows, const float *x,
              const float *g, float *y);
void layer_norm(int c, const kiln_step_args *a, int64_t rows, const float *x,
                const float *g, const float *b, float *y);

//===--- Element-wise -----------------------------------------------------===//

/// kiln.scale's factor in the Unary::Scale instance.
constexpr float kScaleFactor = -0.3701f;

void unary(Unary op, const kiln_step_args *a, int64_t n, const float *x,
           float *y);
void binary(Binary op, const kiln_step_args *a, int64_t n, const float *l,
            const float *r, float *y);
void softmax(const kiln_step_args *a, int64_t rows, int64_t cols,
             const float *x, float *y);

//===--- Gathers and layout copies ----------------------------------------===//

/// Row size of embedding and gather_rows.
constexpr int64_t kGatherD = 37;
void embedding(const kiln_step_args *a, int64_t rows, const int32_t *ids,
               const float *table, float *out);

/// kiln::kernels::embedding_panels: a table [vocab, d] packed as a GEMM's
/// panels of nr rows (nr > 0 floats, else -nr vectors of V), each layout.
struct EmbeddingPanelsCase {
  const char *name;
  int64_t d;
  int nr;
  WeightType wtype;
  PanelLayout layout;
};
// clang-format off
inline constexpr EmbeddingPanelsCase kEmbeddingPanelsCases[] = {
  {"f32_plain",       37, -2, WeightType::F32,  PanelLayout::Plain},
  {"f16_plain",       37, -1, WeightType::F16,  PanelLayout::Plain},
  {"bf16_plain",      37, -1, WeightType::BF16, PanelLayout::Plain},
  {"bf16_lane_pairs", 37, -4, WeightType::BF16, PanelLayout::LanePairs},
  {"bf16_k_pairs",    37, -2, WeightType::BF16, PanelLayout::KPairs},
  {"q8_0",            96, -2, WeightType::Q8_0, PanelLayout::Plain},
  {"q4_0",            96, -1, WeightType::Q4_0, PanelLayout::Plain},
  {"q4_k",            512, -2, WeightType::Q4_K, PanelLayout::Plain},
  {"q5_k",            512, -1, WeightType::Q5_K, PanelLayout::Plain},
  {"q6_k",            768, -2, WeightType::Q6_K, PanelLayout::Plain},
};
// clang-format on
constexpr int kEmbeddingPanelsCaseCount =
    sizeof(kEmbeddingPanelsCases) / sizeof(kEmbeddingPanelsCases[0]);
void embedding_panels(int c, const kiln_step_args *a, int64_t rows,
                      const int32_t *ids, const void *panels, float *out);
void gather_rows(const kiln_step_args *a, const int32_t *rows, const float *x,
                 float *out);

/// kiln.split along a middle axis of 9 into 3 + 5 + 1.
inline constexpr int64_t kSplitWidths[3] = {3, 5, 1};
constexpr int64_t kSplitParts = 3, kSplitAxis = 9;
void split(const kiln_step_args *a, int64_t outer, int64_t inner,
           const float *x, float *const *out);

struct TransposeCase {
  const char *name;
  int rank;
  int perm[4];
};
inline constexpr TransposeCase kTransposeCases[] = {
    {"rank3_keep_last", 3, {1, 0, 2, 0}}, {"rank3_swap_last", 3, {0, 2, 1, 0}},
    {"rank3_rotate", 3, {2, 0, 1, 0}},    {"rank4_keep_last", 4, {0, 2, 1, 3}},
    {"rank4_reverse", 4, {3, 2, 1, 0}},   {"rank4_mixed", 4, {2, 0, 3, 1}},
};
constexpr int kTransposeCaseCount =
    sizeof(kTransposeCases) / sizeof(kTransposeCases[0]);
void transpose(int c, const kiln_step_args *a, const int64_t *dims,
               const float *x, float *y);

/// kv_append and kv_read: kKvHeads x kKvDim per position.
constexpr int64_t kKvHeads = 2, kKvDim = 12;
void kv_append(const kiln_step_args *a, int64_t layer, const float *keys,
               const float *values);
void kv_read(const kiln_step_args *a, int64_t layer, int64_t s, float *keys,
             float *values);
/// kiln::kernels::cached_positions.
int64_t cached_positions(const kiln_step_args *a);

/// V: floats per vector of the ISA this build's instances target.
int vector_floats();

} // namespace kiln::kernel_test

#endif // KILN_TEST_KERNELS_KERNELINSTANCES_H
