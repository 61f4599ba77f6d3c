//===- Norms.cuh - RMS normalization -----------------------------*- C++
//-*-===//
//
// Part of Kiln's CUDA kernel library. kiln.rms_norm over the last dimension
// of [rows, d]: y = g * (x / sqrt(mean(x^2) + eps)). A block per row; each
// thread sums the squares of its strided elements, warps add theirs in a
// butterfly, and every thread adds the warps' sums in warp order, so all
// threads scale by the same bits. y may be x.
//
// Launch: THREADS threads, rows blocks.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CUDA_NORMS_CUH
#define KILN_CUDA_NORMS_CUH

#include "Device.cuh"

namespace kiln::cuda {

template <int THREADS>
KILN_DEVICE void rms_norm(float *y, const float *x, const float *g, int d,
                          float eps) {
  constexpr int kWarps = THREADS / kWarpSize;
  KILN_SHARED(float, warpSums, kWarps);
  const float *xr = x + i64(block_x()) * d;
  float *yr = y + i64(block_x()) * d;
  float ss = 0.0f;
  for (int i = thread_index(); i < d; i += THREADS)
    ss += xr[i] * xr[i];
  ss = warp_sum(ss);
  if (lane_index() == 0)
    warpSums[warp_index()] = ss;
  sync_block();
  float total = 0.0f;
  for (int w = 0; w < kWarps; ++w)
    total += warpSums[w];
  float s = 1.0f / sqrt_f32(total / float(d) + eps);
  for (int i = thread_index(); i < d; i += THREADS)
    yr[i] = g[i] * (s * xr[i]);
}

} // namespace kiln::cuda

#endif // KILN_CUDA_NORMS_CUH
