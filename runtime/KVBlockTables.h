//===- KVBlockTables.h - Block tables of a paged KV cache -------*- C++ -*-===//
//
// Part of Kiln. The bookkeeping of the paged KV cache (vLLM-style): K/V live
// in one pool of blocks of `blockPositions` positions each, and every
// sequence has a row in a block table mapping its logical block i
// (positions [i*B, (i+1)*B)) to a physical block. Generated code reads the
// table as-is (the step ABI's block_tables); the pool memory and the copies
// belong to the caller, which is told what to copy through a callback.
//
// Blocks are shared in two ways, both reference-counted by KVBlockAllocator:
//  - the prefix cache: whole blocks of a finished prefill are recorded under
//    a hash chained over every token from position 0, and a new sequence
//    with the same start maps them instead of recomputing them;
//  - copy-on-write: a sequence about to write into a shared block gets its
//    own copy first, so nobody else sees the write.
//
// No MLIR here: the runtime ships without it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_KVBLOCKTABLES_H
#define KILN_RUNTIME_KVBLOCKTABLES_H

#include "runtime/KVBlockAllocator.h"

#include <cstdint>
#include <functional>
#include <list>
#include <optional>
#include <stdexcept> // The exceptions callers catch.
#include <string>
#include <unordered_map>
#include <vector>

namespace kiln::runtime {

class KVBlockTables {
public:
  /// `blockPositions` must be a power of two; all counts positive
  /// (numBlocks may be 0). Throws std::invalid_argument otherwise.
  KVBlockTables(int32_t numBlocks, int32_t blockPositions, int32_t maxSequences,
                int32_t maxBlocksPerSequence);

  int32_t blockPositions() const { return positionsPerBlock; }
  int32_t maxSequences() const { return numSequences; }
  int32_t maxBlocksPerSequence() const { return blocksPerSequence; }

  /// [maxSequences x maxBlocksPerSequence] physical block ids, -1 where a
  /// logical block is unmapped: passed as-is to generated code (the step
  /// ABI's block_tables). Stable address for the object's lifetime.
  const int32_t *data() const { return table.data(); }

  /// The physical block holding `position` of `seq`, -1 if unmapped. Throws
  /// std::out_of_range when seq or position lies outside the table.
  int32_t blockOf(int32_t seq, int64_t position) const;

  /// Makes positions [begin, end) of `seq` writable: maps every unmapped
  /// block in range to a fresh block, and gives `seq` its own copy of every
  /// block in range that is shared (refcount > 1: copy-on-write), calling
  /// copyBlock(from, to) so the caller copies the K/V contents. All or
  /// nothing: when the free blocks (after evicting unused prefix-cache
  /// entries, oldest first) do not suffice, returns false and changes
  /// nothing. Throws std::out_of_range naming seq/position when end exceeds
  /// maxBlocksPerSequence*blockPositions, begin > end, or seq is out of
  /// range. Should copyBlock throw, the blocks prepared before it stay
  /// prepared and the exception propagates (the tables stay consistent).
  bool
  prepareWrite(int32_t seq, int64_t begin, int64_t end,
               const std::function<void(int32_t from, int32_t to)> &copyBlock);

  /// Releases every block of `seq` (its table row becomes -1).
  void freeSequence(int32_t seq);

  /// Sliding window: releases the blocks of `seq` lying wholly before
  /// `position` (their entries become -1).
  void releaseBefore(int32_t seq, int64_t position);

  /// Prefix sharing. Blocks are identified by a hash chained over the token
  /// ids of every whole block from position 0 (so equal blocks after
  /// different prefixes differ); the cache keeps each identified block alive
  /// with one reference of its own, evictable (LRU) when prepareWrite needs
  /// blocks and only the cache holds it. Lookups compare the block's tokens
  /// and its predecessor's entry, never the hash alone, so a hash collision
  /// cannot share the wrong block.
  ///
  /// attachCachedPrefix: `seq` must hold no blocks (std::logic_error
  /// otherwise). Maps into `seq` the longest run of cached whole blocks equal
  /// to the start of `tokens`, sharing them (retain), and returns the
  /// positions covered: a multiple of blockPositions, and at most
  /// tokens.size() - 1 so the caller still computes at least the last
  /// token's logits.
  int64_t attachCachedPrefix(int32_t seq, const std::vector<int32_t> &tokens);

  /// Records `seq`'s whole blocks covering `tokens` (positions
  /// [0, tokens.size()), already written) in the prefix cache; blocks already
  /// cached under the same hash are left as they are. Stops at the first
  /// block that is neither cached nor mapped in `seq` (released by a sliding
  /// window).
  void cachePrefix(int32_t seq, const std::vector<int32_t> &tokens);

  void clearPrefixCache();

  int32_t freeBlocks() const { return blocks.freeCount(); }
  int32_t usedBlocks() const { return blocks.usedCount(); }
  int32_t cachedBlocks() const {
    return static_cast<int32_t>(cacheEntries.size());
  }
  int32_t blocksHeld(int32_t seq) const;
  const KVBlockAllocator &allocator() const { return blocks; }

  /// For tests: every block's refcount equals the references to it from
  /// tables plus the prefix cache, no free block is referenced, free + used
  /// == numBlocks, and the prefix cache's index, LRU list and chain links
  /// agree. Returns a description of the first violation, or nullopt.
  std::optional<std::string> checkInvariants() const;

private:
  /// One block of the prefix cache. Its identity is its own tokens plus the
  /// entry of the block before it (`parent`), which is exact by induction
  /// from block 0; `hash` (chained over the same tokens) only finds
  /// candidates.
  struct CachedBlock {
    uint64_t hash = 0;
    uint64_t parent = 0; ///< Serial of the previous block's entry; 0: none.
    std::vector<int32_t> tokens;
    int32_t block = -1;
    std::vector<uint64_t> children;
    std::list<uint64_t>::iterator lruPosition;
  };

  int32_t &entry(int32_t seq, int64_t logicalBlock) {
    return table[static_cast<size_t>(seq) * blocksPerSequence + logicalBlock];
  }
  int32_t entry(int32_t seq, int64_t logicalBlock) const {
    return table[static_cast<size_t>(seq) * blocksPerSequence + logicalBlock];
  }
  void checkSequence(int32_t seq, const char *operation) const;

  /// The serial of the cached block after `parent` with these tokens, or 0.
  uint64_t findCached(uint64_t parent, uint64_t hash,
                      const int32_t *blockTokens) const;
  /// Marks a chain, given from block 0, as used now. The last block is
  /// touched first so block 0 ends most recently used: eviction then takes
  /// chains from their tails instead of cutting whole chains off at block 0.
  void touchChain(const std::vector<uint64_t> &chain);
  /// Removes an entry and every entry chained after it (unreachable without
  /// it), dropping the cache's reference to their blocks.
  void dropCached(uint64_t serial);
  /// Cache entries whose block only the cache holds.
  int32_t countEvictable() const;
  /// Drops the least recently used entry that only the cache holds; false
  /// when there is none.
  bool evictOne();

  KVBlockAllocator blocks;
  int32_t positionsPerBlock;
  int32_t numSequences;
  int32_t blocksPerSequence;
  std::vector<int32_t> table;

  std::unordered_map<uint64_t, CachedBlock> cacheEntries; ///< By serial.
  std::unordered_multimap<uint64_t, uint64_t> cacheIndex; ///< Hash -> serial.
  std::list<uint64_t> lru; ///< Serials, least recently used first.
  uint64_t nextSerial = 1;
};

} // namespace kiln::runtime

#endif // KILN_RUNTIME_KVBLOCKTABLES_H
