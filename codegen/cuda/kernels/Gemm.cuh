//===- Gemm.cuh - f32 matrix products in shared-memory tiles -----*- C++
//-*-===//
//
// Part of Kiln's CUDA kernel library. kiln.matmul with f32 weights for
// prefill: y[r, j] = sum_i x[r, i] * w[j, i] (+ residual[r, j]), in plain
// f32 on the CUDA cores (never TF32, whose 10-bit mantissa would move f32
// artifacts off the reference's greedy tokens).
//
// A block computes a BM x BN tile of y; each k step stages BK columns of x's
// and w's rows in shared memory, transposed so that a thread's TM x TN
// micro-tile reads contiguous runs (broadcast across the threads sharing
// them). The rows are padded by 4 floats so the transposing stores of a
// warp spread over the banks. Each output sums k in order.
//
// Launch: (BM / TM) * (BN / TN) threads, grid (ceil(n / BN), ceil(rows / BM)).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CUDA_GEMM_CUH
#define KILN_CUDA_GEMM_CUH

#include "Elements.cuh"

namespace kiln::cuda {

template <int BM, int BN, int BK, int TM, int TN>
KILN_DEVICE void gemm_f32(float *y, const float *x, const float *w,
                          const float *residual, int rows, int n, int k) {
  constexpr int kThreads = (BM / TM) * (BN / TN);
  constexpr int XLD = BM + 4, WLD = BN + 4;
  KILN_SHARED(float, xs, BK *XLD); // xs[kk][r]
  KILN_SHARED(float, ws, BK *WLD); // ws[kk][j]
  int tid = thread_index();
  int tr = tid / (BN / TN), tc = tid % (BN / TN);
  int row0 = block_y() * BM, col0 = block_x() * BN;
  float acc[TM][TN];
  for (int i = 0; i < TM; ++i)
    for (int j = 0; j < TN; ++j)
      acc[i][j] = 0.0f;
  for (int k0 = 0; k0 < k; k0 += BK) {
    for (int e = tid; e < BM * BK; e += kThreads) {
      int r = e / BK, kk = e % BK;
      bool in = row0 + r < rows && k0 + kk < k;
      xs[kk * XLD + r] = in ? x[i64(row0 + r) * k + k0 + kk] : 0.0f;
    }
    for (int e = tid; e < BN * BK; e += kThreads) {
      int j = e / BK, kk = e % BK;
      bool in = col0 + j < n && k0 + kk < k;
      ws[kk * WLD + j] = in ? w[i64(col0 + j) * k + k0 + kk] : 0.0f;
    }
    sync_block();
    for (int kk = 0; kk < BK; ++kk) {
      float a[TM], b[TN];
      for (int i = 0; i < TM; ++i)
        a[i] = xs[kk * XLD + tr * TM + i];
      for (int j = 0; j < TN; ++j)
        b[j] = ws[kk * WLD + tc * TN + j];
      for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; ++j)
          acc[i][j] += a[i] * b[j];
    }
    sync_block();
  }
  for (int i = 0; i < TM; ++i)
    for (int j = 0; j < TN; ++j) {
      int r = row0 + tr * TM + i, c = col0 + tc * TN + j;
      if (r < rows && c < n) {
        i64 at = i64(r) * n + c;
        y[at] = residual ? acc[i][j] + residual[at] : acc[i][j];
      }
    }
}

} // namespace kiln::cuda

#endif // KILN_CUDA_GEMM_CUH
