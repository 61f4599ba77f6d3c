//===- KVCache.h - Rows of the paged KV cache -------------------*- C++ -*-===//
//
// Part of Kiln's CPU kernel library. Where a (layer, sequence, position) row
// of keys or values lives in the runtime's paged cache (runtime/StepABI.h,
// kiln_kv_cache): the sequence's block table names the block holding the
// position, the strides place the row in it. Kernels ask for a row at a time,
// so a block boundary never falls inside one; a row is kv_heads x head_dim
// contiguous floats. The lookup is a load and two shifts, against the
// head_dim multiply-adds per row every reader does with it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_KERNELS_KVCACHE_H
#define KILN_KERNELS_KVCACHE_H

#include "StepABI.h"

#include <stdint.h>

namespace kiln::kernels {

/// The offset, in elements, of (layer, seq, position)'s row in either pool.
inline int64_t kv_offset(const kiln_kv_cache *c, int64_t layer, int64_t seq,
                         int64_t position) {
  // block_positions is a power of two (the runtime checks it).
  int64_t bp = c->block_positions;
  int64_t block = c->block_tables[seq * c->max_blocks_per_seq + position / bp];
  return block * c->block_stride + layer * c->layer_stride +
         (position & (bp - 1)) * c->position_stride;
}

/// The cached keys of (layer, seq, position): kv_heads x head_dim floats.
inline float *kv_keys(const kiln_kv_cache *c, int64_t layer, int64_t seq,
                      int64_t position) {
  return static_cast<float *>(c->keys) + kv_offset(c, layer, seq, position);
}

/// The cached values of (layer, seq, position): kv_heads x head_dim floats.
inline float *kv_values(const kiln_kv_cache *c, int64_t layer, int64_t seq,
                        int64_t position) {
  return static_cast<float *>(c->values) + kv_offset(c, layer, seq, position);
}

} // namespace kiln::kernels

#endif // KILN_KERNELS_KVCACHE_H
