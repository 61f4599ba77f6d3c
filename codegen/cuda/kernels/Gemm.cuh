//===- Gemm.cuh - f32 matrix products in shared-memory tiles -----*- C++
//-*-===//
//
// Part of Kiln's CUDA kernel library. The products of Matmul.cuh with f32
// weights for prefill, in plain f32 on the CUDA cores (never TF32, whose
// 10-bit mantissa would move f32 artifacts off the reference's greedy
// tokens).
//
// A block computes a BM x BN tile of y; each k step stages BK columns of x's
// and w's rows in shared memory, transposed so that a thread's TM x TN
// micro-tile reads contiguous runs (broadcast across the threads sharing
// them). The rows are padded by 4 floats so the transposing stores of a
// warp spread over the banks. Each output sums k in order. With NORM the
// block first computes its rows' rms_norm scales and applies the prologue
// as it stages x; with SWIGLU it stages both weights and keeps two
// accumulators.
//
// Launch: (BM / TM) * (BN / TN) threads, grid (ceil(n / BN), ceil(rows / BM)).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CUDA_GEMM_CUH
#define KILN_CUDA_GEMM_CUH

#include "Matmul.cuh"

namespace kiln::cuda {

template <int BM, int BN, int BK, int TM, int TN, bool NORM, bool SWIGLU>
KILN_DEVICE void gemm_simt(const Matmul &m) {
  constexpr int kThreads = (BM / TM) * (BN / TN);
  constexpr int kOuts = SWIGLU ? 2 : 1;
  constexpr int XLD = BM + 4, WLD = BN + 4;
  KILN_SHARED(float, xs, BK *XLD);        // xs[kk][r]
  KILN_SHARED(float, ws, kOuts *BK *WLD); // ws[o][kk][j]
  KILN_SHARED(float, scales, BM);
  int tid = thread_index();
  int tr = tid / (BN / TN), tc = tid % (BN / TN);
  int row0 = block_y() * BM, col0 = block_x() * BN;
  int k = m.k;
  if (NORM) {
    block_rms_scales(scales, m, row0, BM);
    sync_block();
  }
  float acc[kOuts][TM][TN];
  for (int o = 0; o < kOuts; ++o)
    for (int i = 0; i < TM; ++i)
      for (int j = 0; j < TN; ++j)
        acc[o][i][j] = 0.0f;
  for (int k0 = 0; k0 < k; k0 += BK) {
    for (int e = tid; e < BM * BK; e += kThreads) {
      int r = e / BK, kk = e % BK;
      xs[kk * XLD + r] = staged_x<NORM>(m, scales, row0, r, k0 + kk);
    }
    for (int o = 0; o < kOuts; ++o) {
      // A select, not an array of the two pointers: an array indexed in a
      // loop the compiler keeps would live in local memory.
      const float *w = static_cast<const float *>(o == 0 ? m.w : m.up);
      for (int e = tid; e < BN * BK; e += kThreads) {
        int j = e / BK, kk = e % BK;
        bool in = col0 + j < m.n && k0 + kk < k;
        ws[(o * BK + kk) * WLD + j] =
            in ? w[i64(col0 + j) * k + k0 + kk] : 0.0f;
      }
    }
    sync_block();
    for (int kk = 0; kk < BK; ++kk) {
      float a[TM], b[kOuts][TN];
      for (int i = 0; i < TM; ++i)
        a[i] = xs[kk * XLD + tr * TM + i];
      for (int o = 0; o < kOuts; ++o)
        for (int j = 0; j < TN; ++j)
          b[o][j] = ws[(o * BK + kk) * WLD + tc * TN + j];
      for (int o = 0; o < kOuts; ++o)
        for (int i = 0; i < TM; ++i)
          for (int j = 0; j < TN; ++j)
            acc[o][i][j] += a[i] * b[o][j];
    }
    sync_block();
  }
  for (int i = 0; i < TM; ++i)
    for (int j = 0; j < TN; ++j) {
      int r = row0 + tr * TM + i, c = col0 + tc * TN + j;
      if (r < m.rows && c < m.n)
        store_output<SWIGLU>(m, r, c, acc[0][i][j], acc[kOuts - 1][i][j]);
    }
}

} // namespace kiln::cuda

#endif // KILN_CUDA_GEMM_CUH
