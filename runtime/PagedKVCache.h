//===- PagedKVCache.h - The KV cache as a pool of blocks --------*- C++ -*-===//
//
// Part of Kiln's runtime. The memory behind the step ABI's kiln_kv_cache:
// keys and values in one preallocated pool of fixed-size blocks
// (blockPositions positions of one sequence, every layer), sized by a byte
// budget rather than by sequences x context, so memory held is memory used.
// The bookkeeping -- block tables, reference counts, prefix sharing with
// copy-on-write -- is KVBlockTables'; this class owns the storage, copies
// blocks when a shared one is written, and maps what each step touches.
//
// Block size: the runtime's choice, independent of the attention tiles.
// Kernels find each cached row through the block table (kernels/KVCache.h),
// so a kv tile may span blocks; blocks of 16 positions keep a sequence's
// unused tail under 16 positions and a table small.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_PAGEDKVCACHE_H
#define KILN_RUNTIME_PAGEDKVCACHE_H

#include "runtime/HugePageBuffer.h"
#include "runtime/KVBlockTables.h"
#include "runtime/StepABI.h"
#include "runtime/StepBatch.h"

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

namespace kiln::runtime {

struct PagedKVCacheOptions {
  int64_t layers = 0, kvHeads = 0, headDim = 0;
  /// Bytes of one cached element: 4 (f32) or 2 (f16, bf16).
  int32_t elementBytes = 4;
  int32_t maxSequences = 1;
  /// Positions one sequence may reach (the context length).
  int64_t maxPositions = 0;
  /// Positions per block: a power of two.
  int32_t blockPositions = 16;
  /// Bytes for keys and values together; 0: enough for every sequence to
  /// reach maxPositions.
  int64_t budgetBytes = 0;
  /// The model's sliding attention window (0: none): blocks wholly before
  /// every future token's window are released after each step.
  int64_t slidingWindow = 0;
};

/// Thrown when the pool cannot hold what a step needs; the cache is left as
/// it was before the step.
class KVCacheFullError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

class PagedKVCache {
public:
  /// Throws std::invalid_argument naming the option at fault.
  explicit PagedKVCache(const PagedKVCacheOptions &options);
  PagedKVCache(const PagedKVCache &) = delete;
  PagedKVCache &operator=(const PagedKVCache &) = delete;

  /// Maps the blocks tokens [begin, end) of `batch` write (giving each
  /// sequence its own copy of a shared block first) and every block before
  /// them they read. Throws KVCacheFullError when the pool is short: the
  /// sequence that did not fit is left as it was; blocks mapped for the
  /// step's other sequences stay mapped (a retry needs them).
  void prepareStep(const StepBatch &batch, size_t begin, size_t end);
  /// The same for positions [begin, end) of one sequence, returning false
  /// instead of throwing (the scheduler reserves room before planning a
  /// step). Blocks mapped before a failure stay mapped.
  bool reserve(int32_t seq, int64_t begin, int64_t end);
  /// After a step: releases blocks that fell wholly out of the window.
  void finishStep(const StepBatch &batch, size_t begin, size_t end);

  /// Forgets sequence `seq`, returning its blocks to the pool.
  void freeSequence(int32_t seq);
  /// Forgets every sequence and the prefix cache.
  void reset();

  /// What generated code reads: the pools, strides and block tables.
  kiln_kv_cache *abi() { return &cache; }
  KVBlockTables &tables() { return *blockTables; }
  const KVBlockTables &tables() const { return *blockTables; }

  /// Bytes of keys and values one position of one sequence takes.
  int64_t bytesPerPosition() const;
  /// Bytes the pool holds (keys and values).
  int64_t poolBytes() const;
  int32_t numBlocks() const { return blocks; }

private:
  void copyBlock(int32_t from, int32_t to);

  PagedKVCacheOptions options;
  int32_t blocks = 0;
  int64_t blockBytes = 0; ///< of keys (and of values) per block
  std::unique_ptr<HugePageBuffer> keys, values; ///< blocks * blockBytes each
  std::unique_ptr<KVBlockTables> blockTables;
  kiln_kv_cache cache{};
};

} // namespace kiln::runtime

#endif // KILN_RUNTIME_PAGEDKVCACHE_H
