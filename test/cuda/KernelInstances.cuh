//===- KernelInstances.cuh - The CUDA kernels the tests run -----*- C++ -*-===//
//
// Part of Kiln's CUDA kernel tests. One entry point per kernel family and
// element type of codegen/cuda/kernels/, as the emitter instantiates them.
// This one source is compiled twice: by NVRTC for sm_80 and sm_90
// (NvrtcKernelTest.cpp: no warnings, no spills, no local memory, mma and
// 16-byte loads in the PTX) and for the host (EmulatedKernelTest.cpp: run in
// the block emulator against naive loops).
//
//===----------------------------------------------------------------------===//

#include "Attention.cuh"
#include "Elementwise.cuh"
#include "Gemm.cuh"
#include "GemmMma.cuh"
#include "Gemv.cuh"
#include "KVCache.cuh"
#include "Matmul.cuh"
#include "Norms.cuh"
#include "ReadProbe.cuh"
#include "Rope.cuh"
#include "Sampling.cuh"

using namespace kiln::cuda;

// The products (Matmul.cuh) in every fused form: plain (with or without a
// residual), with the rms_norm prologue, swiglu, and both; each launchable
// by name in the emulator.
#define KILN_MATMUL_FORMS(prefix, threads, call)                               \
  KILN_KERNEL(threads) prefix(Matmul m) { call(false, false); }                \
  KILN_KERNEL(threads) prefix##_norm(Matmul m) { call(true, false); }          \
  KILN_KERNEL(threads) prefix##_swiglu(Matmul m) { call(false, true); }        \
  KILN_KERNEL(threads) prefix##_norm_swiglu(Matmul m) { call(true, true); }    \
  KILN_REGISTER_KERNEL(prefix);                                                \
  KILN_REGISTER_KERNEL(prefix##_norm);                                         \
  KILN_REGISTER_KERNEL(prefix##_swiglu);                                       \
  KILN_REGISTER_KERNEL(prefix##_norm_swiglu);

// Decode GEMV: 4 warps, 4 rows per pass over the weights.
#define KILN_GEMV_F32(norm, swiglu) gemv<float, 4, norm, swiglu>(m)
#define KILN_GEMV_F16(norm, swiglu) gemv<f16, 4, norm, swiglu>(m)
#define KILN_GEMV_BF16(norm, swiglu) gemv<bf16, 4, norm, swiglu>(m)
KILN_MATMUL_FORMS(gemv_f32, 128, KILN_GEMV_F32)
KILN_MATMUL_FORMS(gemv_f16, 128, KILN_GEMV_F16)
KILN_MATMUL_FORMS(gemv_bf16, 128, KILN_GEMV_BF16)

// Prefill GEMMs: f32 on the CUDA cores, f16/bf16 on the tensor cores, in
// the tiles passes/TileOps.cpp chooses for many rows ("large") and for few,
// swiglu's n halved (its two weights).
#define KILN_GEMM_F32(norm, swiglu) gemm_simt<64, 64, 16, 4, 4, norm, swiglu>(m)
#define KILN_GEMM_F32_LARGE(norm, swiglu)                                      \
  gemm_simt<128, (swiglu ? 32 : 64), 16, 8, (swiglu ? 2 : 4), norm, swiglu>(m)
KILN_MATMUL_FORMS(gemm_f32, 256, KILN_GEMM_F32)
KILN_MATMUL_FORMS(gemm_f32_large, 256, KILN_GEMM_F32_LARGE)
#define KILN_GEMM_MMA(W, norm, swiglu)                                         \
  gemm_mma<W, 64, (swiglu ? 32 : 64), 32, 32, 32, norm, swiglu>(m)
#define KILN_GEMM_MMA_LARGE(W, norm, swiglu)                                   \
  gemm_mma<W, 128, (swiglu ? 64 : 128), 64, (swiglu ? 32 : 64), 32, norm,      \
           swiglu>(m)
#define KILN_GEMM_F16(norm, swiglu) KILN_GEMM_MMA(f16, norm, swiglu)
#define KILN_GEMM_BF16(norm, swiglu) KILN_GEMM_MMA(bf16, norm, swiglu)
#define KILN_GEMM_F16_LARGE(norm, swiglu) KILN_GEMM_MMA_LARGE(f16, norm, swiglu)
#define KILN_GEMM_BF16_LARGE(norm, swiglu)                                     \
  KILN_GEMM_MMA_LARGE(bf16, norm, swiglu)
KILN_MATMUL_FORMS(gemm_mma_f16, 128, KILN_GEMM_F16)
KILN_MATMUL_FORMS(gemm_mma_bf16, 128, KILN_GEMM_BF16)
KILN_MATMUL_FORMS(gemm_mma_f16_large, 256, KILN_GEMM_F16_LARGE)
KILN_MATMUL_FORMS(gemm_mma_bf16_large, 256, KILN_GEMM_BF16_LARGE)

KILN_KERNEL(256)
rms_norm_256(float *y, const float *x, const float *g, int d, float eps) {
  rms_norm<256>(y, x, g, d, eps);
}

KILN_KERNEL(256)
rope_adjacent(float *y, const float *x, const int *positions,
              const float *invFreq, int rows, int heads, int d) {
  rope<true>(y, x, positions, invFreq, rows, heads, d);
}
KILN_KERNEL(256)
rope_halves(float *y, const float *x, const int *positions,
            const float *invFreq, int rows, int heads, int d) {
  rope<false>(y, x, positions, invFreq, rows, heads, d);
}

KILN_KERNEL(256)
swiglu_f32(float *y, const float *gate, const float *up, i64 n) {
  swiglu(y, gate, up, n);
}
KILN_KERNEL(256) add_f32(float *y, const float *a, const float *b, i64 n) {
  add(y, a, b, n);
}
KILN_KERNEL(256)
gather_rows_f32(float *y, const float *x, const int *rowIds, int count, int d) {
  gather_rows(y, x, rowIds, count, d);
}
KILN_KERNEL(256)
copy_columns_f32(float *y, const float *x, int rows, int cols, int stride,
                 int first) {
  copy_columns(y, x, rows, cols, stride, first);
}

#define KILN_EMBEDDING(name, E)                                                \
  KILN_KERNEL(256)                                                             \
  name(float *y, const E *table, const int *ids, int tokens, int d) {          \
    embedding<E>(y, table, ids, tokens, d);                                    \
  }
KILN_EMBEDDING(embedding_f32, float)
KILN_EMBEDDING(embedding_f16, f16)
KILN_EMBEDDING(embedding_bf16, bf16)

KILN_KERNEL(256) argmax_256(int *out, const float *logits, int vocab) {
  argmax_rows<256>(out, logits, vocab);
}

#define KILN_KV_APPEND(name, E)                                                \
  KILN_KERNEL(256)                                                             \
  name(KvCache c, int layer, const float *k, const float *v,                   \
       const int *positions, const int *seqIds, int tokens, int kvDim,         \
       int headDim) {                                                          \
    kv_append<E>(c, layer, k, v, positions, seqIds, tokens, kvDim, headDim);   \
  }
KILN_KV_APPEND(kv_append_f32, float)
KILN_KV_APPEND(kv_append_f16, f16)
KILN_KV_APPEND(kv_append_bf16, bf16)

// Attention: head sizes 8 (stories260K), 64 (110M, 1B) and 128 (Llama 3
// 8B), 4 warps a block.
#define KILN_ATTENTION(name, E, D)                                             \
  KILN_KERNEL(128)                                                             \
  name(float *out, float *partials, const float *q, KvCache c,                 \
       const int *positions, const int *seqIds, AttentionShape s) {            \
    attention<E, D, 4>(out, partials, q, c, positions, seqIds, s);             \
  }
KILN_ATTENTION(attention_f32_d8, float, 8)
KILN_ATTENTION(attention_f32_d64, float, 64)
KILN_ATTENTION(attention_f16_d64, f16, 64)
KILN_ATTENTION(attention_bf16_d64, bf16, 64)
KILN_ATTENTION(attention_f16_d128, f16, 128)

#define KILN_ATTENTION_COMBINE(name, D)                                        \
  KILN_KERNEL(256)                                                             \
  name(float *out, const float *partials, int items, int splits) {             \
    attention_combine<D>(out, partials, items, splits);                        \
  }
KILN_ATTENTION_COMBINE(attention_combine_d8, 8)
KILN_ATTENTION_COMBINE(attention_combine_d64, 64)
KILN_ATTENTION_COMBINE(attention_combine_d128, 128)

KILN_KERNEL(256) read_probe_256(u32 *out, const void *data, i64 chunks) {
  read_probe(out, data, chunks);
}

// The other kernels, launchable by name in the emulator (Device.cuh:
// nothing on the GPU).
KILN_REGISTER_KERNEL(embedding_f32);
KILN_REGISTER_KERNEL(embedding_f16);
KILN_REGISTER_KERNEL(embedding_bf16);
KILN_REGISTER_KERNEL(kv_append_f32);
KILN_REGISTER_KERNEL(kv_append_f16);
KILN_REGISTER_KERNEL(kv_append_bf16);
KILN_REGISTER_KERNEL(attention_f32_d8);
KILN_REGISTER_KERNEL(attention_f32_d64);
KILN_REGISTER_KERNEL(attention_f16_d64);
KILN_REGISTER_KERNEL(attention_bf16_d64);
KILN_REGISTER_KERNEL(attention_f16_d128);
KILN_REGISTER_KERNEL(attention_combine_d8);
KILN_REGISTER_KERNEL(attention_combine_d64);
KILN_REGISTER_KERNEL(attention_combine_d128);
KILN_REGISTER_KERNEL(rms_norm_256);
KILN_REGISTER_KERNEL(rope_adjacent);
KILN_REGISTER_KERNEL(rope_halves);
KILN_REGISTER_KERNEL(swiglu_f32);
KILN_REGISTER_KERNEL(add_f32);
KILN_REGISTER_KERNEL(gather_rows_f32);
KILN_REGISTER_KERNEL(copy_columns_f32);
KILN_REGISTER_KERNEL(argmax_256);
KILN_REGISTER_KERNEL(read_probe_256);
