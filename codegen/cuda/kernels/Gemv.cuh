//===- Gemv.cuh - Matrix-vector products for decode --------------*- C++
//-*-===//
//
// Part of Kiln's CUDA kernel library. kiln.matmul when the step has few rows
// (decode): y[r, j] = sum_i x[r, i] * w[j, i] (+ residual[r, j]), w the
// weight as it lies ([n, k], f32, f16 or bf16). Reading w once is the whole
// cost, so each warp owns output columns and its lanes read w's row 16 bytes
// at a time (ld.global.nc.v4), coalesced: a warp reads 512 contiguous bytes
// per step. The rows of x go through in groups of ROWS, each weight load
// serving all of them.
//
// A row's result does not depend on the other rows of the step (each lane
// sums its own k in order, then the warp's butterfly adds the lanes in one
// fixed order): batch invariance, as on the CPU.
//
// Rows of w that are not 16-byte aligned (k * sizeof(W) not a multiple of 16)
// take a scalar loop with the same coalescing.
//
// Launch: blocks of WARPS * 32 threads, ceil(n / WARPS) blocks.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CUDA_GEMV_CUH
#define KILN_CUDA_GEMV_CUH

#include "Elements.cuh"

namespace kiln::cuda {

template <class W, int ROWS>
KILN_DEVICE void gemv(float *y, const float *x, const W *w,
                      const float *residual, int rows, int n, int k) {
  constexpr int kPer = ElementTraits<W>::kPerBytes16;
  int warps = block_size() / kWarpSize;
  int col = block_x() * warps + warp_index();
  if (col >= n)
    return; // the whole warp: it takes part in no block barrier
  const W *wc = w + i64(col) * k;
  bool vector = k % kPer == 0 && is_aligned16(wc) && is_aligned16(x);
  for (int r0 = 0; r0 < rows; r0 += ROWS) {
    float acc[ROWS];
    for (int r = 0; r < ROWS; ++r)
      acc[r] = 0.0f;
    if (vector) {
      for (int i = lane_index() * kPer; i < k; i += kWarpSize * kPer) {
        float wf[kPer];
        unpack(load16(wc + i), wf, W{});
        for (int r = 0; r < ROWS; ++r) {
          if (r0 + r >= rows)
            break;
          const float *xr = x + i64(r0 + r) * k + i;
          for (int h = 0; h < kPer; h += 4) {
            float xf[4];
            unpack(load16(xr + h), xf, 0.0f);
            for (int e = 0; e < 4; ++e)
              acc[r] += xf[e] * wf[h + e];
          }
        }
      }
    } else {
      for (int i = lane_index(); i < k; i += kWarpSize) {
        float wi = load_float(wc + i);
        for (int r = 0; r < ROWS && r0 + r < rows; ++r)
          acc[r] += x[i64(r0 + r) * k + i] * wi;
      }
    }
    for (int r = 0; r < ROWS; ++r) {
      float sum = warp_sum(acc[r]);
      if (lane_index() == 0 && r0 + r < rows) {
        i64 at = i64(r0 + r) * n + col;
        y[at] = residual ? sum + residual[at] : sum;
      }
    }
  }
}

} // namespace kiln::cuda

#endif // KILN_CUDA_GEMV_CUH
