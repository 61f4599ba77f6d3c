//===- Matmul.cuh - What every matrix product kernel takes -------*- C++
//-*-===//
//
// Part of Kiln's CUDA kernel library. kiln.matmul and the fused forms the
// fusion passes make of it (kiln.fused_matmul with an rms_norm prologue and
// a residual epilogue, kiln.swiglu with an rms_norm prologue), in one
// parameter block for the GEMV and GEMM kernels:
//
//   x' = NORM ? g * (x / sqrt(mean(x^2) + eps)) : x         (per row)
//   y  = SWIGLU ? silu(x' · wᵀ) * (x' · upᵀ) : x' · wᵀ (+ residual)
//
// w and up are [n, k] as they lie (nn.Linear's layout), of the kernel's
// weight type.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CUDA_MATMUL_CUH
#define KILN_CUDA_MATMUL_CUH

#include "Elements.cuh"

namespace kiln::cuda {

struct Matmul {
  float *y;                // [rows, n]
  const float *x;          // [rows, k]
  const void *w;           // [n, k]
  const void *up;          // [n, k]: swiglu's up projection, else null
  const float *normWeight; // [k]: the rms_norm prologue's g, else null
  const float *residual;   // [rows, n] or null
  float eps;               // the rms_norm prologue's epsilon
  int rows, n, k;
};

KILN_DEVICE float silu(float x) { return x / (1.0f + exp_f32(-x)); }

/// The rms_norm scale 1 / sqrt(mean(x^2) + eps) of row `r`, in every lane
/// of the calling warp (lanes sum strided elements, then a butterfly).
KILN_DEVICE float warp_rms_scale(const float *x, int k, float eps) {
  float ss = 0.0f;
  for (int i = lane_index(); i < k; i += kWarpSize)
    ss += x[i] * x[i];
  ss = warp_sum(ss);
  return 1.0f / sqrt_f32(ss / float(k) + eps);
}

/// The rms_norm scales of rows [row0, row0 + count) into `scales` (shared),
/// a warp per row; the caller synchronizes the block before reading them.
KILN_DEVICE void block_rms_scales(float *scales, const Matmul &m, int row0,
                                  int count) {
  int warps = block_size() / kWarpSize;
  for (int r = warp_index(); r < count; r += warps) {
    float s = row0 + r < m.rows
                  ? warp_rms_scale(m.x + i64(row0 + r) * m.k, m.k, m.eps)
                  : 0.0f;
    if (lane_index() == 0)
      scales[r] = s;
  }
}

/// Element (row0 + r, c) of x as a GEMM stages it: after the rms_norm
/// prologue when NORM (`scales` holding rows row0... of block_rms_scales),
/// zero outside x.
template <bool NORM>
KILN_DEVICE float staged_x(const Matmul &m, const float *scales, int row0,
                           int r, int c) {
  if (row0 + r >= m.rows || c >= m.k)
    return 0.0f;
  float v = m.x[i64(row0 + r) * m.k + c];
  return NORM ? m.normWeight[c] * (scales[r] * v) : v;
}

/// Writes one output element: the epilogue.
template <bool SWIGLU>
KILN_DEVICE void store_output(const Matmul &m, int r, int c, float gate,
                              float up) {
  i64 at = i64(r) * m.n + c;
  if (SWIGLU)
    m.y[at] = silu(gate) * up;
  else
    m.y[at] = m.residual ? gate + m.residual[at] : gate;
}

} // namespace kiln::cuda

#endif // KILN_CUDA_MATMUL_CUH
