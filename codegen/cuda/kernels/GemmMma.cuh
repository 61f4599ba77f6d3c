//===- GemmMma.cuh - f16/bf16 matrix products on tensor cores ----*- C++
//-*-===//
//
// Part of Kiln's CUDA kernel library. The products of Matmul.cuh with f16
// or bf16 weights for prefill, on mma.sync m16n8k16 with f32 accumulation.
// The activations are rounded to the weights' type as they are staged (mma
// multiplies two operands of one type), after the rms_norm prologue when
// NORM; the products are exact and summed in f32.
//
// A block computes a BM x BN tile of y, each warp a WM x WN part of it as
// (WM / 16) x (WN / 8) mma tiles (twice that with SWIGLU's two weights).
// Each k step stages BK (32 or 64) columns of x's and w's rows in shared
// memory as 16-bit elements; w's rows arrive 16 bytes per load. Rows are
// padded by 8 elements: a warp's fragment load, lane (g, t) reading 4 bytes
// at row g, column 2t, then touches bank (LD / 2 * g + t) mod 32, which is
// 20 g + t (BK 32) or 4 g + t (BK 64): 32 distinct banks, no conflict.
//
// A row's sums take k in order in steps of 16 whatever the tile sizes, so
// the tiles never change a result.
//
// Launch: 32 * (BM / WM) * (BN / WN) threads, grid (ceil(n / BN),
// ceil(rows / BM)).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CUDA_GEMM_MMA_CUH
#define KILN_CUDA_GEMM_MMA_CUH

#include "Matmul.cuh"

namespace kiln::cuda {

template <class W, int BM, int BN, int BK, int WM, int WN, bool NORM,
          bool SWIGLU>
KILN_DEVICE void gemm_mma(const Matmul &m) {
  static_assert(BK == 32 || BK == 64, "the padding is conflict-free for these");
  static_assert(BM % WM == 0 && BN % WN == 0 && WM % 16 == 0 && WN % 8 == 0,
                "warps tile the block in whole mma tiles");
  constexpr int LD = BK + 8, kWarpsN = BN / WN;
  constexpr int kThreads = 32 * (BM / WM) * kWarpsN;
  constexpr int MI = WM / 16, NJ = WN / 8; // mma tiles per warp
  constexpr int kOuts = SWIGLU ? 2 : 1;
  KILN_SHARED(u16, xs, BM * LD);         // xs[r][kk]
  KILN_SHARED(u16, ws, kOuts * BN * LD); // ws[o][j][kk]
  KILN_SHARED(float, scales, BM);
  int tid = thread_index();
  int wm = warp_index() / kWarpsN, wn = warp_index() % kWarpsN;
  int row0 = block_y() * BM, col0 = block_x() * BN;
  int k = m.k;
  bool vector =
      k % 8 == 0 && is_aligned16(m.w) && (!SWIGLU || is_aligned16(m.up));
  if (NORM) {
    block_rms_scales(scales, m, row0, BM);
    sync_block();
  }
  MmaC acc[kOuts][MI][NJ];
  KILN_UNROLL
  for (int o = 0; o < kOuts; ++o)
    for (int i = 0; i < MI; ++i)
      for (int j = 0; j < NJ; ++j)
        for (int e = 0; e < 4; ++e)
          acc[o][i][j].reg[e] = 0.0f;
  for (int k0 = 0; k0 < k; k0 += BK) {
    for (int e = tid; e < BM * BK; e += kThreads) {
      int r = e / BK, kk = e % BK;
      xs[r * LD + kk] =
          to_bits(staged_x<NORM>(m, scales, row0, r, k0 + kk), W{});
    }
    // w: BN rows of BK elements, 8 to a 16-byte chunk.
    for (int o = 0; o < kOuts; ++o)
      for (int e = tid; e < BN * (BK / 8); e += kThreads) {
        int j = e / (BK / 8), kk = (e % (BK / 8)) * 8;
        u16 *to = ws + (o * BN + j) * LD + kk;
        // A select, not an array of pointers (which would be local memory).
        const u16 *from = static_cast<const u16 *>(o == 0 ? m.w : m.up) +
                          i64(col0 + j) * k + k0 + kk;
        if (vector && col0 + j < m.n && k0 + kk + 8 <= k) {
          *reinterpret_cast<Bytes16 *>(to) = load16(from);
        } else {
          for (int h = 0; h < 8; ++h)
            to[h] = col0 + j < m.n && k0 + kk + h < k ? from[h] : u16(0);
        }
      }
    sync_block();
    KILN_UNROLL
    for (int kk = 0; kk < BK; kk += 16) {
      MmaA a[MI];
      KILN_UNROLL
      for (int i = 0; i < MI; ++i)
        mma_load_a(a[i], xs + (wm * WM + i * 16) * LD + kk, LD);
      KILN_UNROLL
      for (int o = 0; o < kOuts; ++o)
        KILN_UNROLL
      for (int j = 0; j < NJ; ++j) {
        MmaB b;
        mma_load_b(b, ws + (o * BN + wn * WN + j * 8) * LD + kk, LD);
        KILN_UNROLL
        for (int i = 0; i < MI; ++i)
          mma_16x8x16(acc[o][i][j], a[i], b, W{});
      }
    }
    sync_block();
  }
  KILN_UNROLL
  for (int i = 0; i < MI; ++i)
    KILN_UNROLL
  for (int j = 0; j < NJ; ++j)
    KILN_UNROLL
  for (int e = 0; e < 4; ++e) {
    int r = row0 + wm * WM + i * 16 + mma_c_row(e);
    int c = col0 + wn * WN + j * 8 + mma_c_col(e);
    if (r < m.rows && c < m.n)
      store_output<SWIGLU>(m, r, c, acc[0][i][j].reg[e],
                           acc[kOuts - 1][i][j].reg[e]);
  }
}

} // namespace kiln::cuda

#endif // KILN_CUDA_GEMM_MMA_CUH
