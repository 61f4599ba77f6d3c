//===- KVCache.h - Rows of the paged KV cache -------------------*- C++ -*-===//
//
// Part of Kiln's CPU kernel library. Where a (layer, sequence, position)
// entry of keys or values lives in the runtime's paged cache
// (runtime/StepABI.h, kiln_kv_cache): the sequence's block table names the
// block holding the position, the strides place the entry in it. Values are
// stored head-major within a block (a head's head_dim elements of each
// position, positions consecutive), so one head's values for a block are one
// contiguous run that the hardware prefetcher follows; keys are stored
// transposed within a block (element i of every position of the block
// together, position fastest), so attention loads V positions' element i as
// one vector, with no transposition, whether it reads for one token or for a
// prefill chunk. Elements are the cache's element type (f32, f16 or bf16),
// which readers widen to f32.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_KERNELS_KVCACHE_H
#define KILN_KERNELS_KVCACHE_H

#include "StepABI.h"
#include "Vector.h"

#include <stdint.h>

namespace kiln::kernels {

/// The offset, in elements, of (layer, seq, position)'s block slot: where
/// its value row starts, and, in the key pool, its key element 0 (the rest
/// key_stride apart).
inline int64_t kv_block_offset(const kiln_kv_cache *c, int64_t layer,
                               int64_t seq, int64_t position) {
  // block_positions is a power of two (the runtime checks it).
  int64_t bp = c->block_positions;
  int64_t block = c->block_tables[seq * c->max_blocks_per_seq +
                                  (position >> __builtin_ctz(bp))];
  return block * c->block_stride + layer * c->layer_stride;
}

/// The cached values of (layer, seq, position) for kv head 0: head_dim
/// contiguous elements of E; head h's are h * value_head_stride further.
template <class E>
inline E *kv_values(const kiln_kv_cache *c, int64_t layer, int64_t seq,
                    int64_t position) {
  return static_cast<E *>(c->values) +
         kv_block_offset(c, layer, seq, position) +
         (position & (c->block_positions - 1)) * c->position_stride;
}

/// One sequence's keys and values for one layer and kv head: what attention
/// loops over. The block table row, the shift and the layer/head offsets are
/// taken once; an entry is then a table load, a shift, a mask and a
/// multiply-add away.
template <class E> struct KvRows {
  const int32_t *table; // the sequence's block table
  E *keys, *values;     // block 0's (layer, head) key element 0 and value row
  int64_t blockStride, positionStride, keyStride, mask;
  int shift;

  KvRows() = default;
  KvRows(const kiln_kv_cache *c, int64_t layer, int64_t seq, int64_t head,
         int64_t headDim)
      : table(c->block_tables + seq * c->max_blocks_per_seq),
        keys(static_cast<E *>(c->keys) + layer * c->layer_stride +
             head * headDim * c->key_stride),
        values(static_cast<E *>(c->values) + layer * c->layer_stride +
               head * c->value_head_stride),
        blockStride(c->block_stride), positionStride(c->position_stride),
        keyStride(c->key_stride), mask(c->block_positions - 1),
        shift(__builtin_ctz(c->block_positions)) {}
  /// Key element 0 of `position`; element i is i * keyStride further. From
  /// a position that is a multiple of V (and block_positions is too), V
  /// consecutive positions' element i are one vector.
  E *keyColumn(int64_t position) const {
    return keys + table[position >> shift] * blockStride + (position & mask);
  }
  E *value(int64_t position) const {
    return values + table[position >> shift] * blockStride +
           (position & mask) * positionStride;
  }
  /// Asks for the cache lines of positions [from, to]'s keys and values
  /// (all in blocks the sequence holds). Blocks lie wherever the pool put
  /// them, so the hardware prefetchers only find a block once its reading
  /// has begun; attention asks for the next block while it computes one.
  /// Into L2, not L1: a block's hundreds of lines at once measured slower
  /// into L1 than no prefetch at all, and 17% faster into L2 (1B decode
  /// attention on Zen 5, bench/NOTES.md v28).
  void prefetch(int64_t from, int64_t to, int64_t headDim) const {
    constexpr int64_t LINE = 64 / sizeof(E); // elements a cache line
    while (from <= to) {
      // The run of positions that stays in from's block.
      int64_t left = mask + 1 - (from & mask), n = to - from + 1;
      if (left < n)
        n = left;
      const E *key = keyColumn(from), *value = this->value(from);
      for (int64_t i = 0; i < headDim; ++i)
        for (int64_t p = 0; p < n; p += LINE)
          prefetch_line(reinterpret_cast<uintptr_t>(key + i * keyStride + p));
      for (int64_t p = 0; p < n; ++p)
        for (int64_t i = 0; i < headDim; i += LINE)
          prefetch_line(
              reinterpret_cast<uintptr_t>(value + p * positionStride + i));
      from += n;
    }
  }
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

/// Stores the key row (kv_heads x head_dim floats, `n` in all) of (layer,
/// seq, position) as the cache's element type E (float, bf16 or _Float16:
/// the artifact's `kiln compile --kv-type`), element i key_stride apart.
template <class E>
inline void kv_store_key(const kiln_kv_cache *c, int64_t layer, int64_t seq,
                         int64_t position, const float *row, int64_t n) {
  E *key = static_cast<E *>(c->keys) +
           kv_block_offset(c, layer, seq, position) +
           (position & (c->block_positions - 1));
  for (int64_t i = 0; i < n; ++i)
    kv_store(key + i * c->key_stride, row + i, 1);
}

/// Stores the value row (heads x headDim floats) of (layer, seq, position)
/// as the cache's element type E, each head's part in its place.
template <class E>
inline void kv_store_values(const kiln_kv_cache *c, int64_t layer, int64_t seq,
                            int64_t position, const float *row, int64_t heads,
                            int64_t headDim) {
  E *value = kv_values<E>(c, layer, seq, position);
  for (int64_t h = 0; h < heads; ++h)
    kv_store(value + h * c->value_head_stride, row + h * headDim, headDim);
}

/// Loads the value row of (layer, seq, position) as floats.
template <class E>
inline void kv_load_values(float *row, const kiln_kv_cache *c, int64_t layer,
                           int64_t seq, int64_t position, int64_t heads,
                           int64_t headDim) {
  const E *value = kv_values<E>(c, layer, seq, position);
  for (int64_t h = 0; h < heads; ++h)
    kv_load(row + h * headDim, value + h * c->value_head_stride, headDim);
}

/// Loads the key row of (layer, seq, position) as floats.
template <class E>
inline void kv_load_key(float *row, const kiln_kv_cache *c, int64_t layer,
                        int64_t seq, int64_t position, int64_t n) {
  const E *key = static_cast<const E *>(c->keys) +
                 kv_block_offset(c, layer, seq, position) +
                 (position & (c->block_positions - 1));
  for (int64_t i = 0; i < n; ++i)
    row[i] = kv_to_float(key[i * c->key_stride]);
}

} // namespace kiln::kernels

#endif // KILN_KERNELS_KVCACHE_H
