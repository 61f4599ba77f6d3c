//===- KVBlockAllocator.h - Reference-counted KV cache blocks ---*- C++ -*-===//
//
// Part of Kiln. The paged KV cache keeps K/V in one pool of fixed-size
// blocks; this class only hands out block ids and counts who holds each one
// (sequence block tables, the prefix cache). It owns no K/V memory. No MLIR
// here: the runtime ships without it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_KVBLOCKALLOCATOR_H
#define KILN_RUNTIME_KVBLOCKALLOCATOR_H

#include <cstdint>
#include <optional>
#include <stdexcept> // The exceptions callers catch.
#include <vector>

namespace kiln::runtime {

/// Reference-counted fixed-size blocks: O(1) allocate and free from a free
/// list (a stack of ids), no fragmentation by construction.
///
/// Misuse (an id out of range, retaining or releasing a free block) throws
/// std::logic_error naming the block: it is a bug in the caller, and ignoring
/// it would hand one block to two owners later.
class KVBlockAllocator {
public:
  explicit KVBlockAllocator(int32_t numBlocks);

  int32_t numBlocks() const { return static_cast<int32_t>(refCounts.size()); }
  int32_t freeCount() const { return static_cast<int32_t>(freeList.size()); }
  int32_t usedCount() const { return numBlocks() - freeCount(); }

  /// A free block with refcount 1, or nullopt when none is free.
  std::optional<int32_t> allocate();
  /// Refcount + 1; the block must be in use.
  void retain(int32_t block);
  /// Refcount - 1; at 0 the block is free again (and the next one allocated).
  void release(int32_t block);
  /// 0 for a free block.
  int32_t refCount(int32_t block) const;

private:
  void checkInRange(int32_t block, const char *operation) const;

  std::vector<int32_t> refCounts;
  /// Free block ids; the top (back) is allocated next, so a just-released
  /// block, likely still in cache, is reused first.
  std::vector<int32_t> freeList;
};

} // namespace kiln::runtime

#endif // KILN_RUNTIME_KVBLOCKALLOCATOR_H
