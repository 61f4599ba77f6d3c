//===- PagedKVCache.cpp - The KV cache as a pool of blocks ----------------===//
//
// Part of Kiln's runtime. See PagedKVCache.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/PagedKVCache.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>

namespace kiln::runtime {

namespace {

/// Each sequence's first and last position among tokens [begin, end).
std::map<int32_t, std::pair<int64_t, int64_t>>
positionRanges(const StepBatch &batch, size_t begin, size_t end) {
  std::map<int32_t, std::pair<int64_t, int64_t>> ranges;
  for (size_t t = begin; t < end; ++t) {
    auto [it, added] = ranges.try_emplace(batch.seqIds[t], batch.positions[t],
                                          batch.positions[t]);
    if (!added) {
      it->second.first =
          std::min<int64_t>(it->second.first, batch.positions[t]);
      it->second.second =
          std::max<int64_t>(it->second.second, batch.positions[t]);
    }
  }
  return ranges;
}

} // namespace

PagedKVCache::PagedKVCache(const PagedKVCacheOptions &o) : options(o) {
  auto require = [](bool ok, const std::string &what) {
    if (!ok)
      throw std::invalid_argument("KV cache: " + what);
  };
  require(o.layers > 0 && o.kvHeads > 0 && o.headDim > 0,
          "layers, kv heads and head size must be positive");
  require(o.maxSequences > 0, "it needs at least one sequence");
  require(o.maxPositions > 0, "the context length must be positive");
  require(o.blockPositions > 0 &&
              (o.blockPositions & (o.blockPositions - 1)) == 0,
          "the block size must be a power of two, not " +
              std::to_string(o.blockPositions));
  require(o.elementBytes == 4 || o.elementBytes == 2,
          "elements are 4 or 2 bytes, not " + std::to_string(o.elementBytes));
  int64_t row = o.kvHeads * o.headDim;
  int64_t blockElements = o.layers * o.blockPositions * row;
  blockBytes = blockElements * o.elementBytes;
  int64_t blocksPerSequence =
      (o.maxPositions + o.blockPositions - 1) / o.blockPositions;
  int64_t wanted = o.budgetBytes > 0 ? o.budgetBytes / (2 * blockBytes)
                                     : blocksPerSequence * o.maxSequences;
  require(wanted >= 1, "a budget of " + std::to_string(o.budgetBytes) +
                           " bytes holds no block of " +
                           std::to_string(2 * blockBytes) + " bytes");
  require(wanted <= INT32_MAX, "too many blocks");
  blocks = int32_t(wanted);
  // In transparent huge pages: attention reads a head's D elements of each
  // position's value row, 4 KiB pages apart or more, so in 4 KiB pages
  // nearly every position costs a TLB miss (bench/NOTES.md, v17). Faulted
  // in now, so that no step pays for zeroing a page it is the first to use.
  keys = std::make_unique<HugePageBuffer>(int64_t(blocks) * blockBytes, true);
  values = std::make_unique<HugePageBuffer>(int64_t(blocks) * blockBytes, true);
  blockTables = std::make_unique<KVBlockTables>(
      blocks, o.blockPositions, o.maxSequences, int32_t(blocksPerSequence));

  cache.keys = keys->data();
  cache.values = values->data();
  // Values head-major within a block (a head's positions contiguous), as
  // keys are: attention reads one head's values of a block in one stream.
  cache.position_stride = o.headDim;
  cache.value_head_stride = o.blockPositions * o.headDim;
  cache.key_stride = o.blockPositions;
  cache.layer_stride = o.blockPositions * row;
  cache.block_stride = blockElements;
  cache.block_tables = blockTables->data();
  cache.max_blocks_per_seq = int32_t(blocksPerSequence);
  cache.block_positions = o.blockPositions;
  cache.max_seqs = o.maxSequences;
  cache.max_positions = int32_t(blocksPerSequence * o.blockPositions);
}

int64_t PagedKVCache::bytesPerPosition() const {
  return 2 * options.layers * options.kvHeads * options.headDim *
         options.elementBytes;
}

int64_t PagedKVCache::poolBytes() const {
  return 2 * int64_t(blocks) * blockBytes;
}

void PagedKVCache::copyBlock(int32_t from, int32_t to) {
  size_t n = size_t(blockBytes);
  std::memcpy(keys->data() + size_t(to) * n, keys->data() + size_t(from) * n,
              n);
  std::memcpy(values->data() + size_t(to) * n,
              values->data() + size_t(from) * n, n);
}

bool PagedKVCache::reserve(int32_t seq, int64_t begin, int64_t end) {
  const int64_t bp = options.blockPositions;
  auto copy = [this](int32_t from, int32_t to) { copyBlock(from, to); };
  // Reads: blocks before the first written position that the sequence
  // never wrote get fresh blocks, so generated code never follows a -1
  // (what they hold is masked or is the caller's business: positions a
  // sequence reads before writing them).
  int64_t lo = options.slidingWindow > 0
                   ? std::max<int64_t>(0, begin - options.slidingWindow + 1)
                   : 0;
  for (int64_t b = lo / bp; b * bp < begin; ++b)
    if (blockTables->blockOf(seq, b * bp) < 0 &&
        !blockTables->prepareWrite(seq, b * bp, std::min(begin, (b + 1) * bp),
                                   copy))
      return false;
  return blockTables->prepareWrite(seq, begin, end, copy);
}

void PagedKVCache::prepareStep(const StepBatch &batch, size_t begin,
                               size_t end) {
  for (const auto &[seq, range] : positionRanges(batch, begin, end)) {
    auto [first, last] = range;
    if (!reserve(seq, first, last + 1))
      throw KVCacheFullError(
          "the KV cache is full: sequence " + std::to_string(seq) +
          " needs blocks for positions up to " + std::to_string(last) + ", " +
          std::to_string(blockTables->freeBlocks()) + " of " +
          std::to_string(blocks) + " blocks are free");
  }
}

void PagedKVCache::finishStep(const StepBatch &batch, size_t begin,
                              size_t end) {
  if (options.slidingWindow <= 0)
    return;
  // The next token of a sequence is past its last one here: it attends to
  // positions from last + 2 - window on.
  for (const auto &[seq, range] : positionRanges(batch, begin, end))
    blockTables->releaseBefore(seq, range.second + 2 - options.slidingWindow);
}

void PagedKVCache::freeSequence(int32_t seq) { blockTables->freeSequence(seq); }

void PagedKVCache::reset() {
  for (int32_t seq = 0; seq < options.maxSequences; ++seq)
    blockTables->freeSequence(seq);
  blockTables->clearPrefixCache();
}

} // namespace kiln::runtime
