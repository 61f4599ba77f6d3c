//===- Gemv.cuh - Matrix-vector products for decode --------------*- C++
//-*-===//
//
// Part of Kiln's CUDA kernel library. The products of Matmul.cuh when the
// step has few rows (decode). Reading the weights once is the whole cost,
// so each warp owns output columns and its lanes read the weight rows 16
// bytes at a time (ld.global.nc.v4), coalesced: a warp reads 512
// contiguous bytes per step. The rows of x go through in groups of ROWS,
// each weight load serving all of them; with NORM each row's rms_norm scale
// is computed first by the warp (x is small and stays in cache).
//
// A row's result does not depend on the other rows of the step (each lane
// sums its own k in order, then the warp's butterfly adds the lanes in one
// fixed order): batch invariance, as on the CPU.
//
// Weight rows that are not 16-byte aligned (k * sizeof(W) not a multiple
// of 16) take a scalar loop with the same coalescing.
//
// Launch: blocks of WARPS * 32 threads, ceil(n / WARPS) blocks.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CUDA_GEMV_CUH
#define KILN_CUDA_GEMV_CUH

#include "Matmul.cuh"

namespace kiln::cuda {

template <class W, int ROWS, bool NORM, bool SWIGLU>
KILN_DEVICE void gemv(const Matmul &m) {
  constexpr int kPer = ElementTraits<W>::kPerBytes16;
  constexpr int kOuts = SWIGLU ? 2 : 1;
  int warps = block_size() / kWarpSize;
  int col = block_x() * warps + warp_index();
  if (col >= m.n)
    return; // the whole warp: it takes part in no block barrier
  int k = m.k;
  const W *wGate = static_cast<const W *>(m.w) + i64(col) * k;
  const W *wUp = SWIGLU ? static_cast<const W *>(m.up) + i64(col) * k : wGate;
  bool vector = k % kPer == 0 && is_aligned16(wGate) && is_aligned16(wUp) &&
                is_aligned16(m.x) && (!NORM || is_aligned16(m.normWeight));
  for (int r0 = 0; r0 < m.rows; r0 += ROWS) {
    float acc[kOuts][ROWS], scale[ROWS];
    KILN_UNROLL
    for (int r = 0; r < ROWS; ++r) {
      for (int o = 0; o < kOuts; ++o)
        acc[o][r] = 0.0f;
      scale[r] = NORM && r0 + r < m.rows
                     ? warp_rms_scale(m.x + i64(r0 + r) * k, k, m.eps)
                     : 1.0f;
    }
    if (vector) {
      for (int i = lane_index() * kPer; i < k; i += kWarpSize * kPer) {
        float wf[kOuts][kPer];
        unpack(load16(wGate + i), wf[0], W{});
        if (SWIGLU)
          unpack(load16(wUp + i), wf[kOuts - 1], W{});
        float g[kPer] = {};
        for (int h = 0; NORM && h < kPer; h += 4) {
          float g4[4];
          unpack(load16(m.normWeight + i + h), g4, 0.0f);
          for (int e = 0; e < 4; ++e)
            g[h + e] = g4[e];
        }
        KILN_UNROLL
        for (int r = 0; r < ROWS; ++r) {
          if (r0 + r >= m.rows)
            break;
          const float *xr = m.x + i64(r0 + r) * k + i;
          for (int h = 0; h < kPer; h += 4) {
            float xf[4];
            unpack(load16(xr + h), xf, 0.0f);
            for (int e = 0; e < 4; ++e) {
              float xe = NORM ? g[h + e] * (scale[r] * xf[e]) : xf[e];
              for (int o = 0; o < kOuts; ++o)
                acc[o][r] += xe * wf[o][h + e];
            }
          }
        }
      }
    } else {
      for (int i = lane_index(); i < k; i += kWarpSize) {
        float wi[kOuts];
        wi[0] = load_float(wGate + i);
        if (SWIGLU)
          wi[kOuts - 1] = load_float(wUp + i);
        KILN_UNROLL
        for (int r = 0; r < ROWS; ++r) {
          if (r0 + r >= m.rows)
            break;
          float xe = m.x[i64(r0 + r) * k + i];
          if (NORM)
            xe = m.normWeight[i] * (scale[r] * xe);
          for (int o = 0; o < kOuts; ++o)
            acc[o][r] += xe * wi[o];
        }
      }
    }
    KILN_UNROLL
    for (int r = 0; r < ROWS; ++r) {
      if (r0 + r >= m.rows)
        break; // the same in every lane: no shuffle is skipped by some
      float gate = warp_sum(acc[0][r]);
      float up = SWIGLU ? warp_sum(acc[kOuts - 1][r]) : 0.0f;
      if (lane_index() == 0)
        store_output<SWIGLU>(m, r0 + r, col, gate, up);
    }
  }
}

} // namespace kiln::cuda

#endif // KILN_CUDA_GEMV_CUH
