//===- KVCache.cuh - The paged KV cache on the device ------------*- C++
//-*-===//
//
// Part of Kiln's CUDA kernel library. The runtime's paged cache
// (runtime/StepABI.h, kiln_kv_cache) with device pointers, field for field:
// a sequence's block table names the block holding a position; values are
// rows of kv_heads x head_dim elements; keys are stored transposed within a
// block (element i of every position of the block together, position
// fastest), so the lanes of a warp reading 32 consecutive positions' key
// element i read contiguous memory. Elements are f32, f16 or bf16.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CUDA_KVCACHE_CUH
#define KILN_CUDA_KVCACHE_CUH

#include "Elements.cuh"

namespace kiln::cuda {

/// kiln_kv_cache's layout (checked against it by the host tests).
struct KvCache {
  void *keys;
  void *values;
  i64 blockStride;
  i64 layerStride;
  i64 positionStride;
  i64 valueHeadStride;
  i64 keyStride;
  const int *blockTables; // [maxSeqs, maxBlocksPerSeq]
  int maxBlocksPerSeq;
  int blockPositions;
  int maxSeqs;
  int maxPositions;
};

/// Where (layer, seq, position)'s block slot starts: its value row, and its
/// key element 0 (element i is i * keyStride further).
KILN_DEVICE i64 kv_slot(const KvCache &c, int layer, int seq, int position) {
  int block =
      c.blockTables[i64(seq) * c.maxBlocksPerSeq + position / c.blockPositions];
  return i64(block) * c.blockStride + i64(layer) * c.layerStride;
}

/// Writes the keys and values of `tokens` tokens ([tokens, kvDim] each,
/// kvDim = kv_heads * headDim) at their (seq, position) of `layer`.
/// Launch: a thread per element.
template <class E>
KILN_DEVICE void kv_append(KvCache c, int layer, const float *k, const float *v,
                           const int *positions, const int *seqIds, int tokens,
                           int kvDim, int headDim) {
  i64 i = i64(block_x()) * block_size() + thread_index();
  if (i >= i64(tokens) * kvDim)
    return;
  int t = int(i / kvDim), e = int(i % kvDim);
  int p = positions[t];
  i64 slot = kv_slot(c, layer, seqIds[t], p);
  int within = p % c.blockPositions;
  int head = e / headDim, d = e % headDim;
  store_float(static_cast<E *>(c.values) + slot + head * c.valueHeadStride +
                  within * c.positionStride + d,
              v[i]);
  store_float(static_cast<E *>(c.keys) + slot + e * c.keyStride + within, k[i]);
}

} // namespace kiln::cuda

#endif // KILN_CUDA_KVCACHE_CUH
