//===- KVBlockAllocator.cpp - Reference-counted KV cache blocks -----------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "runtime/KVBlockAllocator.h"

#include <stdexcept>
#include <string>

namespace kiln::runtime {

KVBlockAllocator::KVBlockAllocator(int32_t numBlocks) {
  if (numBlocks < 0)
    throw std::invalid_argument("KV block allocator: numBlocks is " +
                                std::to_string(numBlocks) + ", expected >= 0");
  refCounts.assign(static_cast<size_t>(numBlocks), 0);
  // Pushed in reverse so a fresh allocator hands out 0, 1, 2, ...: tables
  // are easier to read in a debugger and in test failures.
  freeList.reserve(static_cast<size_t>(numBlocks));
  for (int32_t block = numBlocks - 1; block >= 0; --block)
    freeList.push_back(block);
}

void KVBlockAllocator::checkInRange(int32_t block,
                                    const char *operation) const {
  if (block < 0 || block >= numBlocks())
    throw std::out_of_range(std::string("KV block allocator: ") + operation +
                            " of block " + std::to_string(block) +
                            ", outside [0, " + std::to_string(numBlocks()) +
                            ")");
}

std::optional<int32_t> KVBlockAllocator::allocate() {
  if (freeList.empty())
    return std::nullopt;
  int32_t block = freeList.back();
  freeList.pop_back();
  refCounts[block] = 1;
  return block;
}

void KVBlockAllocator::retain(int32_t block) {
  checkInRange(block, "retain");
  if (refCounts[block] == 0)
    throw std::logic_error("KV block allocator: retain of block " +
                           std::to_string(block) + ", which is free");
  ++refCounts[block];
}

void KVBlockAllocator::release(int32_t block) {
  checkInRange(block, "release");
  if (refCounts[block] == 0)
    throw std::logic_error("KV block allocator: release of block " +
                           std::to_string(block) + ", which is already free");
  if (--refCounts[block] == 0)
    freeList.push_back(block);
}

int32_t KVBlockAllocator::refCount(int32_t block) const {
  checkInRange(block, "refCount");
  return refCounts[block];
}

} // namespace kiln::runtime
