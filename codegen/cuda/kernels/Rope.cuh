//===- Rope.cuh - Rotary position embedding ----------------------*- C++
//-*-===//
//
// Part of Kiln's CUDA kernel library. kiln.rope over [rows, heads, d]: each
// pair (a, b) of a head turns by positions[t] * inv_freq[i]; pairs are
// (2i, 2i + 1) when ADJACENT, else (i, i + d / 2). The inverse frequencies
// are the emitter's (scaling included), as on the CPU. A thread per pair;
// y may be x.
//
// Launch: any block size, ceil(rows * heads * d / 2 / threads) blocks.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CUDA_ROPE_CUH
#define KILN_CUDA_ROPE_CUH

#include "Device.cuh"

namespace kiln::cuda {

template <bool ADJACENT>
KILN_DEVICE void rope(float *y, const float *x, const int *positions,
                      const float *invFreq, int rows, int heads, int d) {
  i64 pair = i64(block_x()) * block_size() + thread_index();
  int half = d / 2;
  if (pair >= i64(rows) * heads * half)
    return;
  int i = int(pair % half);
  i64 th = pair / half; // t * heads + h
  int t = int(th / heads);
  float angle = float(positions[t]) * invFreq[i];
  float c = cos_f32(angle), s = sin_f32(angle);
  i64 base = th * d;
  i64 ia = base + (ADJACENT ? 2 * i : i);
  i64 ib = base + (ADJACENT ? 2 * i + 1 : i + half);
  float xa = x[ia], xb = x[ib];
  y[ia] = xa * c - xb * s;
  y[ib] = xa * s + xb * c;
}

} // namespace kiln::cuda

#endif // KILN_CUDA_ROPE_CUH
