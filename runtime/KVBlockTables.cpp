//===- KVBlockTables.cpp - Block tables of a paged KV cache ---------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "runtime/KVBlockTables.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace kiln::runtime {

namespace {
template <typename... Parts> std::string concat(const Parts &...parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

/// Hash of block 0's (absent) predecessor.
constexpr uint64_t kChainSeed = 0x6b696c6e2d6b7631ULL; // "kiln-kv1"

/// splitmix64's finalizer: every input bit affects every output bit.
uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

/// The chained hash of a block: its predecessor's hash and its own tokens.
uint64_t chainHash(uint64_t parentHash, const int32_t *tokens, int32_t count) {
  uint64_t h = mix(parentHash);
  for (int32_t i = 0; i < count; ++i)
    h = mix(h ^ static_cast<uint32_t>(tokens[i]));
  return h;
}
} // namespace

KVBlockTables::KVBlockTables(int32_t numBlocks, int32_t blockPositions,
                             int32_t maxSequences, int32_t maxBlocksPerSequence)
    : blocks(numBlocks), positionsPerBlock(blockPositions),
      numSequences(maxSequences), blocksPerSequence(maxBlocksPerSequence) {
  if (blockPositions <= 0 || (blockPositions & (blockPositions - 1)) != 0)
    throw std::invalid_argument(concat("KV block tables: blockPositions is ",
                                       blockPositions,
                                       ", expected a power of two"));
  if (maxSequences <= 0 || maxBlocksPerSequence <= 0)
    throw std::invalid_argument(
        concat("KV block tables: maxSequences is ", maxSequences,
               " and maxBlocksPerSequence ", maxBlocksPerSequence,
               ", expected both positive"));
  // Sized once and never resized: generated code keeps the address.
  table.assign(static_cast<size_t>(maxSequences) * maxBlocksPerSequence, -1);
}

void KVBlockTables::checkSequence(int32_t seq, const char *operation) const {
  if (seq < 0 || seq >= numSequences)
    throw std::out_of_range(concat("KV block tables: ", operation,
                                   " of sequence ", seq, ", outside [0, ",
                                   numSequences, ")"));
}

int32_t KVBlockTables::blockOf(int32_t seq, int64_t position) const {
  checkSequence(seq, "blockOf");
  const int64_t capacity = int64_t{blocksPerSequence} * positionsPerBlock;
  if (position < 0 || position >= capacity)
    throw std::out_of_range(concat("KV block tables: blockOf position ",
                                   position, " of sequence ", seq,
                                   ", outside [0, ", capacity, ")"));
  return entry(seq, position / positionsPerBlock);
}

int32_t KVBlockTables::blocksHeld(int32_t seq) const {
  checkSequence(seq, "blocksHeld");
  const int32_t *row =
      table.data() + static_cast<size_t>(seq) * blocksPerSequence;
  return static_cast<int32_t>(std::count_if(
      row, row + blocksPerSequence, [](int32_t block) { return block >= 0; }));
}

//===----------------------------------------------------------------------===//
// Writing: fresh blocks and copy-on-write
//===----------------------------------------------------------------------===//

bool KVBlockTables::prepareWrite(
    int32_t seq, int64_t begin, int64_t end,
    const std::function<void(int32_t from, int32_t to)> &copyBlock) {
  checkSequence(seq, "prepareWrite");
  const int64_t capacity = int64_t{blocksPerSequence} * positionsPerBlock;
  if (begin < 0 || begin > end || end > capacity)
    throw std::out_of_range(
        concat("KV block tables: prepareWrite of positions [", begin, ", ", end,
               ") of sequence ", seq, ", expected a range inside [0, ",
               capacity, ")"));
  if (begin == end)
    return true;

  const int64_t first = begin / positionsPerBlock;
  const int64_t last = (end - 1) / positionsPerBlock;
  int32_t needed = 0;
  for (int64_t i = first; i <= last; ++i) {
    int32_t block = entry(seq, i);
    if (block < 0 || blocks.refCount(block) > 1)
      ++needed;
  }
  // Decide before evicting anything, so a failure changes nothing.
  if (needed > blocks.freeCount()) {
    if (needed > blocks.freeCount() + countEvictable())
      return false;
    // Each eviction frees at least one block, so this ends with enough.
    while (needed > blocks.freeCount())
      if (!evictOne())
        throw std::logic_error("KV block tables: the prefix cache ran out of "
                               "evictable blocks it had counted");
  }

  for (int64_t i = first; i <= last; ++i) {
    int32_t &mapped = entry(seq, i);
    if (mapped >= 0 && blocks.refCount(mapped) == 1)
      continue;
    // Cannot fail: the free blocks were counted above.
    int32_t fresh = *blocks.allocate();
    if (mapped >= 0) {
      try {
        copyBlock(mapped, fresh);
      } catch (...) {
        blocks.release(fresh);
        throw;
      }
      blocks.release(mapped);
    }
    mapped = fresh;
  }
  return true;
}

void KVBlockTables::freeSequence(int32_t seq) {
  checkSequence(seq, "freeSequence");
  releaseBefore(seq, int64_t{blocksPerSequence} * positionsPerBlock);
}

void KVBlockTables::releaseBefore(int32_t seq, int64_t position) {
  checkSequence(seq, "releaseBefore");
  const int64_t wholeBlocks = std::min<int64_t>(
      std::max<int64_t>(position, 0) / positionsPerBlock, blocksPerSequence);
  for (int64_t i = 0; i < wholeBlocks; ++i) {
    int32_t &mapped = entry(seq, i);
    if (mapped < 0)
      continue;
    blocks.release(mapped);
    mapped = -1;
  }
}

//===----------------------------------------------------------------------===//
// Prefix cache
//===----------------------------------------------------------------------===//

uint64_t KVBlockTables::findCached(uint64_t parent, uint64_t hash,
                                   const int32_t *blockTokens) const {
  auto [it, itEnd] = cacheIndex.equal_range(hash);
  for (; it != itEnd; ++it) {
    const CachedBlock &cached = cacheEntries.at(it->second);
    if (cached.parent == parent &&
        std::equal(cached.tokens.begin(), cached.tokens.end(), blockTokens))
      return it->second;
  }
  return 0;
}

void KVBlockTables::touchChain(const std::vector<uint64_t> &chain) {
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    CachedBlock &cached = cacheEntries.at(*it);
    lru.splice(lru.end(), lru, cached.lruPosition);
  }
}

int64_t KVBlockTables::attachCachedPrefix(int32_t seq,
                                          const std::vector<int32_t> &tokens) {
  checkSequence(seq, "attachCachedPrefix");
  if (blocksHeld(seq) != 0)
    throw std::logic_error(
        concat("KV block tables: attachCachedPrefix to sequence ", seq,
               ", which holds ", blocksHeld(seq), " blocks (expected none)"));
  if (tokens.empty())
    return 0;
  // At most tokens.size() - 1 positions: the last token is always computed.
  const int64_t candidates = std::min<int64_t>(
      static_cast<int64_t>(tokens.size() - 1) / positionsPerBlock,
      blocksPerSequence);

  std::vector<uint64_t> chain;
  uint64_t parent = 0, hash = kChainSeed;
  for (int64_t i = 0; i < candidates; ++i) {
    const int32_t *blockTokens = tokens.data() + i * positionsPerBlock;
    hash = chainHash(hash, blockTokens, positionsPerBlock);
    uint64_t serial = findCached(parent, hash, blockTokens);
    if (serial == 0)
      break;
    chain.push_back(serial);
    parent = serial;
  }
  for (size_t i = 0; i < chain.size(); ++i) {
    int32_t block = cacheEntries.at(chain[i]).block;
    blocks.retain(block);
    entry(seq, static_cast<int64_t>(i)) = block;
  }
  touchChain(chain);
  return static_cast<int64_t>(chain.size()) * positionsPerBlock;
}

void KVBlockTables::cachePrefix(int32_t seq,
                                const std::vector<int32_t> &tokens) {
  checkSequence(seq, "cachePrefix");
  const int64_t wholeBlocks =
      std::min<int64_t>(static_cast<int64_t>(tokens.size()) / positionsPerBlock,
                        blocksPerSequence);

  std::vector<uint64_t> chain;
  uint64_t parent = 0, hash = kChainSeed;
  for (int64_t i = 0; i < wholeBlocks; ++i) {
    const int32_t *blockTokens = tokens.data() + i * positionsPerBlock;
    hash = chainHash(hash, blockTokens, positionsPerBlock);
    uint64_t serial = findCached(parent, hash, blockTokens);
    if (serial == 0) {
      int32_t block = entry(seq, i);
      if (block < 0)
        break;
      serial = nextSerial++;
      CachedBlock &cached = cacheEntries[serial];
      cached.hash = hash;
      cached.parent = parent;
      cached.tokens.assign(blockTokens, blockTokens + positionsPerBlock);
      cached.block = block;
      cached.lruPosition = lru.insert(lru.end(), serial);
      if (parent != 0)
        cacheEntries.at(parent).children.push_back(serial);
      cacheIndex.emplace(hash, serial);
      blocks.retain(block);
    }
    chain.push_back(serial);
    parent = serial;
  }
  touchChain(chain);
}

void KVBlockTables::dropCached(uint64_t serial) {
  // Detach from the parent; the descendants go with this entry, since no
  // lookup can reach them without it.
  if (uint64_t parent = cacheEntries.at(serial).parent; parent != 0) {
    std::vector<uint64_t> &siblings = cacheEntries.at(parent).children;
    siblings.erase(std::find(siblings.begin(), siblings.end(), serial));
  }
  std::vector<uint64_t> pending{serial};
  while (!pending.empty()) {
    uint64_t current = pending.back();
    pending.pop_back();
    auto node = cacheEntries.find(current);
    CachedBlock &cached = node->second;
    pending.insert(pending.end(), cached.children.begin(),
                   cached.children.end());
    auto [it, itEnd] = cacheIndex.equal_range(cached.hash);
    for (; it != itEnd; ++it)
      if (it->second == current) {
        cacheIndex.erase(it);
        break;
      }
    lru.erase(cached.lruPosition);
    blocks.release(cached.block);
    cacheEntries.erase(node);
  }
}

int32_t KVBlockTables::countEvictable() const {
  int32_t count = 0;
  for (const auto &[serial, cached] : cacheEntries)
    if (blocks.refCount(cached.block) == 1)
      ++count;
  return count;
}

bool KVBlockTables::evictOne() {
  for (uint64_t serial : lru)
    if (blocks.refCount(cacheEntries.at(serial).block) == 1) {
      dropCached(serial);
      return true;
    }
  return false;
}

void KVBlockTables::clearPrefixCache() {
  for (const auto &[serial, cached] : cacheEntries)
    blocks.release(cached.block);
  cacheEntries.clear();
  cacheIndex.clear();
  lru.clear();
}

//===----------------------------------------------------------------------===//
// Invariants
//===----------------------------------------------------------------------===//

std::optional<std::string> KVBlockTables::checkInvariants() const {
  const int32_t numBlocks = blocks.numBlocks();
  if (blocks.freeCount() + blocks.usedCount() != numBlocks)
    return concat("free ", blocks.freeCount(), " + used ", blocks.usedCount(),
                  " != ", numBlocks, " blocks");

  std::vector<int32_t> references(static_cast<size_t>(numBlocks), 0);
  for (int32_t seq = 0; seq < numSequences; ++seq)
    for (int64_t i = 0; i < blocksPerSequence; ++i) {
      int32_t block = entry(seq, i);
      if (block < -1 || block >= numBlocks)
        return concat("sequence ", seq, " logical block ", i,
                      " maps to invalid block ", block);
      if (block >= 0)
        ++references[block];
    }

  if (cacheIndex.size() != cacheEntries.size() ||
      lru.size() != cacheEntries.size())
    return concat("prefix cache has ", cacheEntries.size(), " entries but ",
                  cacheIndex.size(), " index entries and ", lru.size(),
                  " LRU entries");
  for (const auto &[hash, serial] : cacheIndex) {
    auto it = cacheEntries.find(serial);
    if (it == cacheEntries.end() || it->second.hash != hash)
      return concat("prefix cache index names entry ", serial,
                    ", which is missing or has another hash");
  }
  for (const auto &[serial, cached] : cacheEntries) {
    if (cached.block < 0 || cached.block >= numBlocks)
      return concat("prefix cache entry ", serial, " holds invalid block ",
                    cached.block);
    ++references[cached.block];
    if (static_cast<int32_t>(cached.tokens.size()) != positionsPerBlock)
      return concat("prefix cache entry ", serial, " has ",
                    cached.tokens.size(), " tokens");
    if (cached.parent != 0) {
      auto parent = cacheEntries.find(cached.parent);
      if (parent == cacheEntries.end() ||
          std::count(parent->second.children.begin(),
                     parent->second.children.end(), serial) != 1)
        return concat("prefix cache entry ", serial, " is not a child of ",
                      cached.parent);
    }
    for (uint64_t child : cached.children) {
      auto it = cacheEntries.find(child);
      if (it == cacheEntries.end() || it->second.parent != serial)
        return concat("prefix cache entry ", serial, " lists child ", child,
                      ", which is missing or has another parent");
    }
  }

  int32_t unreferenced = 0;
  for (int32_t block = 0; block < numBlocks; ++block) {
    if (blocks.refCount(block) != references[block])
      return concat("block ", block, " has refcount ", blocks.refCount(block),
                    " but ", references[block],
                    " references from tables and the prefix cache");
    if (references[block] == 0)
      ++unreferenced;
  }
  if (unreferenced != blocks.freeCount())
    return concat(unreferenced,
                  " blocks have refcount 0 but the free list has ",
                  blocks.freeCount());
  return std::nullopt;
}

} // namespace kiln::runtime
