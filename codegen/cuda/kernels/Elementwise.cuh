//===- Elementwise.cuh - Element-wise ops and embedding ----------*- C++
//-*-===//
//
// Part of Kiln's CUDA kernel library. kiln.swiglu (silu(gate) * up), kiln.add
// and kiln.embedding (rows of a table of f32, f16 or bf16 gathered as f32):
// a thread per element, as memory-bound as they are.
//
// Launch: any block size, ceil(elements / threads) blocks.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CUDA_ELEMENTWISE_CUH
#define KILN_CUDA_ELEMENTWISE_CUH

#include "Elements.cuh"

namespace kiln::cuda {

KILN_DEVICE i64 global_thread() {
  return i64(block_x()) * block_size() + thread_index();
}

KILN_DEVICE float silu(float x) { return x / (1.0f + exp_f32(-x)); }

KILN_DEVICE void swiglu(float *y, const float *gate, const float *up, i64 n) {
  i64 i = global_thread();
  if (i < n)
    y[i] = silu(gate[i]) * up[i];
}

KILN_DEVICE void add(float *y, const float *a, const float *b, i64 n) {
  i64 i = global_thread();
  if (i < n)
    y[i] = a[i] + b[i];
}

/// y[t, :] = table[ids[t], :] for t < tokens; the runtime has checked the
/// ids against the vocabulary.
template <class E>
KILN_DEVICE void embedding(float *y, const E *table, const int *ids, int tokens,
                           int d) {
  i64 i = global_thread();
  if (i >= i64(tokens) * d)
    return;
  i64 t = i / d, e = i % d;
  y[i] = load_float(table + i64(ids[t]) * d + e);
}

} // namespace kiln::cuda

#endif // KILN_CUDA_ELEMENTWISE_CUH
