//===- Sampling.cuh - Greedy choice over logits ------------------*- C++
//-*-===//
//
// Part of Kiln's CUDA kernel library. argmax over each row of [rows, vocab]
// logits, the lowest index among equal maxima (as the CPU sampler picks):
// a block per row, each thread scanning a strided slice, then the warps'
// butterflies and the block's warps in order.
//
// Launch: THREADS threads, rows blocks.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CUDA_SAMPLING_CUH
#define KILN_CUDA_SAMPLING_CUH

#include "Device.cuh"

namespace kiln::cuda {

/// Whether (v, i) comes before (bestV, bestI): larger, or equal and lower.
KILN_DEVICE bool better(float v, int i, float bestV, int bestI) {
  return v > bestV || (v == bestV && i < bestI);
}

template <int THREADS>
KILN_DEVICE void argmax_rows(int *out, const float *logits, int vocab) {
  constexpr int kWarps = THREADS / kWarpSize;
  KILN_SHARED(float, warpBest, kWarps);
  KILN_SHARED(int, warpIndex, kWarps);
  const float *row = logits + i64(block_x()) * vocab;
  float best = neg_inf();
  int bestI = vocab; // none yet: after every real index
  for (int i = thread_index(); i < vocab; i += THREADS)
    if (better(row[i], i, best, bestI)) {
      best = row[i];
      bestI = i;
    }
  for (int m = kWarpSize / 2; m > 0; m /= 2) {
    float v = shfl_xor(best, m);
    int i = shfl_xor(bestI, m);
    if (better(v, i, best, bestI)) {
      best = v;
      bestI = i;
    }
  }
  if (lane_index() == 0) {
    warpBest[warp_index()] = best;
    warpIndex[warp_index()] = bestI;
  }
  sync_block();
  if (thread_index() == 0) {
    for (int w = 1; w < kWarps; ++w)
      if (better(warpBest[w], warpIndex[w], best, bestI)) {
        best = warpBest[w];
        bestI = warpIndex[w];
      }
    out[block_x()] = bestI;
  }
}

} // namespace kiln::cuda

#endif // KILN_CUDA_SAMPLING_CUH
