//===- StepExecutor.h - What the scheduler drives ---------------*- C++ -*-===//
//
// Part of Kiln. The scheduler plans steps; a StepExecutor runs them and owns
// the KV cache they write. The scheduler asks it for room before putting a
// sequence's tokens in a step (reserve), so a step never fails for want of
// cache, and gives sequences back (release) when they finish, are cancelled
// or are preempted. A compiled artifact (CompiledModelExecutor) is one; the
// reference interpreter behind `kiln run --interpret` is another, and tests
// use small fakes.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_ENGINE_STEPEXECUTOR_H
#define KILN_RUNTIME_ENGINE_STEPEXECUTOR_H

#include "runtime/StepBatch.h"

#include <cstdint>
#include <vector>

namespace kiln::runtime {

/// The KV cache's occupancy, in blocks of `blockPositions` positions.
struct KVCacheUsage {
  int32_t usedBlocks = 0, freeBlocks = 0, totalBlocks = 0;
  int32_t blockPositions = 0;
  /// Blocks the prefix cache holds, some perhaps also mapped by running
  /// sequences; those only it holds are reclaimed when room is needed. With
  /// no sequence running, usedBlocks == cachedBlocks.
  int32_t cachedBlocks = 0;
};

class StepExecutor {
public:
  virtual ~StepExecutor() = default;

  /// Vocabulary size, cache slots (sequence ids lie in [0, maxSequences))
  /// and the positions a sequence may reach.
  virtual StepLimits limits() const = 0;
  /// Tokens one step runs at best (longer batches still run, in pieces).
  virtual int32_t preferredStepTokens() const = 0;

  /// Runs one step: logits [R, V] row-major for batch.logitRows. Every
  /// token's positions were reserved first.
  virtual std::vector<float> step(const StepBatch &batch) = 0;

  /// Makes positions [begin, end) of sequence `seq` writable (and those
  /// before them readable). False when the cache has no room for them now
  /// (positions it could map stay mapped).
  virtual bool reserve(int32_t seq, int64_t begin, int64_t end) = 0;
  /// Forgets `seq`: its cache room is free at once.
  virtual void release(int32_t seq) = 0;

  /// Prefix sharing: maps into the (empty) sequence `seq` the longest
  /// cached run of whole blocks equal to the start of `tokens` and returns
  /// the positions it covers (at most tokens.size() - 1). Executors without
  /// a prefix cache return 0.
  virtual int64_t attachCachedPrefix(int32_t seq,
                                     const std::vector<int32_t> &tokens) {
    (void)seq, (void)tokens;
    return 0;
  }
  /// Records the whole blocks of `seq` covering `tokens` (already computed)
  /// for later attachCachedPrefix calls.
  virtual void cachePrefix(int32_t seq, const std::vector<int32_t> &tokens) {
    (void)seq, (void)tokens;
  }

  virtual KVCacheUsage usage() const = 0;
};

} // namespace kiln::runtime

#endif // KILN_RUNTIME_ENGINE_STEPEXECUTOR_H
