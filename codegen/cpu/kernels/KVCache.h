//===- KVCache.h - Rows of the paged KV cache -------------------*- C++ -*-===//
//
// Part of Kiln's CPU kernel library. Where a (layer, sequence, position) row
// of keys or values lives in the runtime's paged cache (runtime/StepABI.h,
// kiln_kv_cache): the sequence's block table names the block holding the
// position, the strides place the row in it. Kernels ask for a row at a time,
// so a block boundary never falls inside one; a row is kv_heads x head_dim
// contiguous elements of the cache's element type (f32, f16 or bf16), which
// readers widen to f32. The lookup is a load and two shifts, against the
// head_dim multiply-adds per row every reader does with it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_KERNELS_KVCACHE_H
#define KILN_KERNELS_KVCACHE_H

#include "StepABI.h"
#include "Vector.h"

#include <stdint.h>

namespace kiln::kernels {

/// The offset, in elements, of (layer, seq, position)'s row in either pool.
inline int64_t kv_offset(const kiln_kv_cache *c, int64_t layer, int64_t seq,
                         int64_t position) {
  // block_positions is a power of two (the runtime checks it).
  int64_t bp = c->block_positions;
  int64_t block = c->block_tables[seq * c->max_blocks_per_seq +
                                  (position >> __builtin_ctz(bp))];
  return block * c->block_stride + layer * c->layer_stride +
         (position & (bp - 1)) * c->position_stride;
}

/// The cached keys of (layer, seq, position): kv_heads x head_dim elements
/// of the cache's element type E (float, bf16 or _Float16: the artifact's
/// `kiln compile --kv-type`).
template <class E>
inline E *kv_keys(const kiln_kv_cache *c, int64_t layer, int64_t seq,
                  int64_t position) {
  return static_cast<E *>(c->keys) + kv_offset(c, layer, seq, position);
}

/// The cached values of (layer, seq, position), as kv_keys.
template <class E>
inline E *kv_values(const kiln_kv_cache *c, int64_t layer, int64_t seq,
                    int64_t position) {
  return static_cast<E *>(c->values) + kv_offset(c, layer, seq, position);
}

/// The rows of one sequence's keys and values for one layer and kv head:
/// what a reader loops over. The block table row, the shift and the
/// layer/head offset are taken once; a row is then a table load, a shift, a
/// mask and a multiply-add away.
template <class E> struct KvRows {
  const int32_t *table; // the sequence's block table
  E *keys, *values;     // block 0's (layer, head) row 0
  int64_t blockStride, positionStride, mask;
  int shift;

  KvRows(const kiln_kv_cache *c, int64_t layer, int64_t seq, int64_t head,
         int64_t headDim)
      : table(c->block_tables + seq * c->max_blocks_per_seq),
        keys(static_cast<E *>(c->keys) + layer * c->layer_stride +
             head * headDim),
        values(static_cast<E *>(c->values) + layer * c->layer_stride +
               head * headDim),
        blockStride(c->block_stride), positionStride(c->position_stride),
        mask(c->block_positions - 1), shift(__builtin_ctz(c->block_positions)) {
  }
  int64_t offset(int64_t position) const {
    return table[position >> shift] * blockStride +
           (position & mask) * positionStride;
  }
  E *key(int64_t position) const { return keys + offset(position); }
  E *value(int64_t position) const { return values + offset(position); }
};

/// One cached element as f32 (exact for every element type).
inline float kv_to_float(float x) { return x; }
inline float kv_to_float(_Float16 x) { return float(x); }
inline float kv_to_float(bf16 x) {
  uint32_t bits = uint32_t(x.bits) << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/// `n` f32 values stored as E: rounded to nearest even for bf16 (as the
/// weight packer rounds) and f16.
inline void kv_store(float *to, const float *from, int64_t n) {
  memcpy(to, from, size_t(n) * sizeof(float));
}
inline void kv_store(_Float16 *to, const float *from, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    to[i] = _Float16(from[i]);
}
inline void kv_store(bf16 *to, const float *from, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    to[i].bits = to_bf16(from[i]);
}

/// `n` cached elements as f32.
template <class E> inline void kv_load(float *to, const E *from, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    to[i] = kv_to_float(from[i]);
}

} // namespace kiln::kernels

#endif // KILN_KERNELS_KVCACHE_H
