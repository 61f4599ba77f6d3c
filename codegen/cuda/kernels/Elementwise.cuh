//===- Elementwise.cuh - Element-wise ops and embedding ----------*- C++
//-*-===//
//
// Part of Kiln's CUDA kernel library. The element-wise swiglu (silu(gate) *
// up) and kiln.add; kiln.embedding (rows of a table of f32, f16 or bf16
// gathered as f32); kiln.gather_rows; and the columns of kiln.split: a
// thread per element, as memory-bound as they are.
//
// Launch: any block size, ceil(elements / threads) blocks.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CUDA_ELEMENTWISE_CUH
#define KILN_CUDA_ELEMENTWISE_CUH

#include "Matmul.cuh"

namespace kiln::cuda {

KILN_DEVICE i64 global_thread() {
  return i64(block_x()) * block_size() + thread_index();
}

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

/// y[r, :] = x[rowIds[r], :] for r < count (kiln.gather_rows: the rows
/// whose logits the step returns).
KILN_DEVICE void gather_rows(float *y, const float *x, const int *rowIds,
                             int count, int d) {
  i64 i = global_thread();
  if (i >= i64(count) * d)
    return;
  i64 r = i / d, e = i % d;
  y[i] = x[i64(rowIds[r]) * d + e];
}

/// y[r, c] = x[r, first + c] for c < cols, x's rows `stride` apart: one
/// result of kiln.split along the last axis.
KILN_DEVICE void copy_columns(float *y, const float *x, int rows, int cols,
                              int stride, int first) {
  i64 i = global_thread();
  if (i >= i64(rows) * cols)
    return;
  i64 r = i / cols, c = i % cols;
  y[i] = x[r * stride + first + c];
}

} // namespace kiln::cuda

#endif // KILN_CUDA_ELEMENTWISE_CUH
