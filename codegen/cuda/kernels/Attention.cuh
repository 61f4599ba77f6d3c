//===- Attention.cuh - Fused attention over the paged KV cache ---*- C++
//-*-===//
//
// Part of Kiln's CUDA kernel library. kiln.attention: for each token t and
// query head h, softmax over the cached positions p in [lo, pos_t] of
// scale * q·k_p, times v_p (lo = pos_t - window + 1 with a sliding window,
// else 0; kv head h / (heads / kv_heads)), with an online softmax, so scores
// are never stored.
//
// A warp per (token, head, split). Lanes take 32 consecutive positions at a
// time: each computes one position's score from the query (in shared
// memory, read as a broadcast) and the transposed keys (so the warp's loads
// of key element i are contiguous), then the warp rescales its running sum
// and adds the 32 value rows, lane j holding elements j, j + 32, ... of the
// head (each value row read once, contiguous across lanes).
//
// Long contexts split along keys: split s of S takes its share of the
// position chunks and, with S > 1, writes (acc, max, sum) to `partials`,
// which attention_combine merges. With S = 1 the warp writes the output.
// A token's output depends only on its own positions and S.
//
// Launch: WARPS * 32 threads, grid (ceil(tokens * heads / WARPS), S).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CUDA_ATTENTION_CUH
#define KILN_CUDA_ATTENTION_CUH

#include "KVCache.cuh"

namespace kiln::cuda {

struct AttentionShape {
  int tokens, heads, kvHeads, layer, window; // window 0: none
  float scale;
};

/// partials: [S, tokens * heads, D + 2], each (acc[D], max, sum).
template <class E, int D, int WARPS>
KILN_DEVICE void attention(float *out, float *partials, const float *q,
                           KvCache c, const int *positions, const int *seqIds,
                           AttentionShape s) {
  constexpr int DL = (D + kWarpSize - 1) / kWarpSize; // elements per lane
  KILN_SHARED(float, qs, WARPS *D);
  int lane = lane_index();
  int items = s.tokens * s.heads;
  int item = block_x() * WARPS + warp_index();
  if (item >= items)
    return; // the whole warp; no block barrier follows
  int t = item / s.heads, h = item % s.heads;
  int kvh = h / (s.heads / s.kvHeads);
  int pos = positions[t], seq = seqIds[t];
  float *qw = qs + warp_index() * D;
  for (int d = lane; d < D; d += kWarpSize)
    qw[d] = q[i64(item) * D + d] * s.scale;
  sync_warp();

  int lo = s.window > 0 && pos - s.window + 1 > 0 ? pos - s.window + 1 : 0;
  int chunks = (pos + 1 - lo + kWarpSize - 1) / kWarpSize;
  int splits = grid_y(), split = block_y();
  int perSplit = (chunks + splits - 1) / splits;
  int begin = lo + split * perSplit * kWarpSize;
  int end = begin + perSplit * kWarpSize;
  if (end > pos + 1)
    end = pos + 1;

  const E *keys = static_cast<const E *>(c.keys) + i64(kvh) * D * c.keyStride;
  const E *values =
      static_cast<const E *>(c.values) + i64(kvh) * c.valueHeadStride;
  float m = neg_inf(), l = 0.0f, acc[DL];
  for (int j = 0; j < DL; ++j)
    acc[j] = 0.0f;
  for (int p0 = begin; p0 < end; p0 += kWarpSize) {
    int p = p0 + lane;
    float score = neg_inf();
    if (p < end) {
      const E *key = keys + kv_slot(c, s.layer, seq, p) + p % c.blockPositions;
      score = 0.0f;
      for (int i = 0; i < D; ++i)
        score += qw[i] * load_float(key + i64(i) * c.keyStride);
    }
    float mNew = max_f32(m, warp_max(score)); // finite: p0 < end
    float weight = p < end ? exp_f32(score - mNew) : 0.0f;
    float rescale = exp_f32(m - mNew); // 0 on the first chunk
    l = l * rescale + warp_sum(weight);
    for (int j = 0; j < DL; ++j)
      acc[j] *= rescale;
    int live = end - p0 < kWarpSize ? end - p0 : kWarpSize;
    for (int src = 0; src < live; ++src) {
      float wp = shfl(weight, src);
      int pp = p0 + src;
      const E *v = values + kv_slot(c, s.layer, seq, pp) +
                   i64(pp % c.blockPositions) * c.positionStride;
      for (int j = 0; j < DL; ++j) {
        int d = lane + j * kWarpSize;
        if (d < D)
          acc[j] += wp * load_float(v + d);
      }
    }
    m = mNew;
  }
  if (splits == 1) {
    for (int j = 0; j < DL; ++j) {
      int d = lane + j * kWarpSize;
      if (d < D)
        out[i64(item) * D + d] = acc[j] / l;
    }
    return;
  }
  float *part = partials + (i64(split) * items + item) * (D + 2);
  for (int j = 0; j < DL; ++j) {
    int d = lane + j * kWarpSize;
    if (d < D)
      part[d] = acc[j];
  }
  if (lane == 0) {
    part[D] = m;
    part[D + 1] = l;
  }
}

/// Merges the S splits' partial results of attention: a thread per output
/// element. Launch: any block size, ceil(items * D / threads) blocks.
template <int D>
KILN_DEVICE void attention_combine(float *out, const float *partials, int items,
                                   int splits) {
  i64 i = i64(block_x()) * block_size() + thread_index();
  if (i >= i64(items) * D)
    return;
  i64 item = i / D;
  int d = int(i % D);
  float m = neg_inf();
  for (int s = 0; s < splits; ++s)
    m = max_f32(m, partials[(s * i64(items) + item) * (D + 2) + D]);
  float sum = 0.0f, l = 0.0f;
  for (int s = 0; s < splits; ++s) {
    const float *part = partials + (s * i64(items) + item) * (D + 2);
    float scale = part[D + 1] > 0.0f ? exp_f32(part[D] - m) : 0.0f;
    sum += part[d] * scale;
    l += part[D + 1] * scale;
  }
  out[i] = sum / l;
}

} // namespace kiln::cuda

#endif // KILN_CUDA_ATTENTION_CUH
