//===- KVBlockTablesTest.cpp - Paged KV cache bookkeeping -----------------===//
//
// Part of Kiln's unit tests. Links only kiln_runtime (no MLIR).
//
// The allocator and the block tables by example, then a property test that
// runs random steps against a simulated K/V pool: every position a sequence
// reads back must hold what that sequence wrote, whatever was shared, copied
// or evicted on the way.
//
//===----------------------------------------------------------------------===//

#include "runtime/KVBlockTables.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <random>
#include <set>
#include <stdexcept>
#include <utility>

using kiln::runtime::KVBlockAllocator;
using kiln::runtime::KVBlockTables;

namespace {

//===----------------------------------------------------------------------===//
// KVBlockAllocator
//===----------------------------------------------------------------------===//

TEST(KVBlockAllocator, AllocatesEveryBlockOnceThenNothing) {
  KVBlockAllocator allocator(5);
  std::set<int32_t> handed;
  for (int i = 0; i < 5; ++i) {
    std::optional<int32_t> block = allocator.allocate();
    ASSERT_TRUE(block.has_value());
    EXPECT_GE(*block, 0);
    EXPECT_LT(*block, 5);
    EXPECT_EQ(allocator.refCount(*block), 1);
    handed.insert(*block);
  }
  EXPECT_EQ(handed.size(), 5u);
  EXPECT_EQ(allocator.freeCount(), 0);
  EXPECT_EQ(allocator.usedCount(), 5);
  EXPECT_FALSE(allocator.allocate().has_value());
}

TEST(KVBlockAllocator, ReusesTheLastReleasedBlockFirst) {
  KVBlockAllocator allocator(4);
  for (int i = 0; i < 4; ++i)
    allocator.allocate();
  allocator.release(1);
  allocator.release(3);
  EXPECT_EQ(allocator.freeCount(), 2);
  EXPECT_EQ(allocator.allocate(), 3);
  EXPECT_EQ(allocator.allocate(), 1);
  EXPECT_FALSE(allocator.allocate().has_value());
}

TEST(KVBlockAllocator, BlockIsFreeOnlyWhenTheLastReferenceGoes) {
  KVBlockAllocator allocator(2);
  int32_t block = *allocator.allocate();
  allocator.retain(block);
  allocator.retain(block);
  EXPECT_EQ(allocator.refCount(block), 3);
  allocator.release(block);
  allocator.release(block);
  EXPECT_EQ(allocator.refCount(block), 1);
  EXPECT_EQ(allocator.usedCount(), 1);
  allocator.release(block);
  EXPECT_EQ(allocator.refCount(block), 0);
  EXPECT_EQ(allocator.freeCount(), 2);
}

/// Misuse is a caller bug: it throws, naming the block.
TEST(KVBlockAllocator, MisuseThrowsNamingTheBlock) {
  KVBlockAllocator allocator(3);
  int32_t block = *allocator.allocate();
  allocator.release(block);
  try {
    allocator.release(block);
    FAIL() << "double release did not throw";
  } catch (const std::logic_error &error) {
    EXPECT_NE(std::string(error.what()).find("block " + std::to_string(block)),
              std::string::npos)
        << error.what();
  }
  EXPECT_THROW(allocator.retain(2), std::logic_error);
  EXPECT_THROW(allocator.release(-1), std::logic_error);
  EXPECT_THROW(allocator.retain(3), std::logic_error);
  EXPECT_THROW(allocator.refCount(7), std::logic_error);
  EXPECT_THROW(KVBlockAllocator(-1), std::logic_error);
  EXPECT_EQ(allocator.freeCount(), 3);
}

//===----------------------------------------------------------------------===//
// KVBlockTables: writing
//===----------------------------------------------------------------------===//

/// A copyBlock callback that records its calls.
struct CopyLog {
  std::vector<std::pair<int32_t, int32_t>> copies;
  std::function<void(int32_t, int32_t)> callback() {
    return [this](int32_t from, int32_t to) { copies.emplace_back(from, to); };
  }
};

void expectConsistent(const KVBlockTables &tables) {
  std::optional<std::string> violation = tables.checkInvariants();
  EXPECT_FALSE(violation.has_value()) << *violation;
}

std::vector<int32_t> tableCopy(const KVBlockTables &tables) {
  return std::vector<int32_t>(
      tables.data(),
      tables.data() + tables.maxSequences() * tables.maxBlocksPerSequence());
}

TEST(KVBlockTables, PrepareWriteMapsFreshBlocks) {
  KVBlockTables tables(/*numBlocks=*/8, /*blockPositions=*/4,
                       /*maxSequences=*/2, /*maxBlocksPerSequence=*/4);
  CopyLog log;
  EXPECT_EQ(tables.blockOf(0, 0), -1);
  ASSERT_TRUE(tables.prepareWrite(0, 0, 6, log.callback()));
  EXPECT_NE(tables.blockOf(0, 0), -1);
  EXPECT_EQ(tables.blockOf(0, 3), tables.blockOf(0, 0));
  EXPECT_NE(tables.blockOf(0, 4), -1);
  EXPECT_NE(tables.blockOf(0, 4), tables.blockOf(0, 0));
  EXPECT_EQ(tables.blockOf(0, 8), -1);
  EXPECT_EQ(tables.blocksHeld(0), 2);
  EXPECT_EQ(tables.usedBlocks(), 2);
  // The flat table generated code reads: row 0 holds the two blocks.
  EXPECT_EQ(tables.data()[0], tables.blockOf(0, 0));
  EXPECT_EQ(tables.data()[1], tables.blockOf(0, 4));
  EXPECT_EQ(tables.data()[2], -1);
  EXPECT_TRUE(log.copies.empty());
  expectConsistent(tables);
}

TEST(KVBlockTables, ExtendingAcrossABlockBoundaryKeepsTheOldBlock) {
  KVBlockTables tables(8, 4, 2, 4);
  CopyLog log;
  ASSERT_TRUE(tables.prepareWrite(0, 0, 3, log.callback()));
  int32_t first = tables.blockOf(0, 0);
  ASSERT_TRUE(tables.prepareWrite(0, 3, 4, log.callback()));
  EXPECT_EQ(tables.blocksHeld(0), 1);
  ASSERT_TRUE(tables.prepareWrite(0, 4, 9, log.callback()));
  EXPECT_EQ(tables.blockOf(0, 0), first);
  EXPECT_EQ(tables.blocksHeld(0), 3);
  EXPECT_TRUE(log.copies.empty());
  expectConsistent(tables);
}

/// Too few blocks: nothing is mapped, not even the blocks that were free.
TEST(KVBlockTables, PrepareWriteIsAllOrNothing) {
  KVBlockTables tables(4, 4, 2, 8);
  CopyLog log;
  ASSERT_TRUE(tables.prepareWrite(0, 0, 8, log.callback()));
  std::vector<int32_t> before = tableCopy(tables);
  EXPECT_FALSE(tables.prepareWrite(1, 0, 12, log.callback()));
  EXPECT_EQ(tableCopy(tables), before);
  EXPECT_EQ(tables.freeBlocks(), 2);
  EXPECT_TRUE(tables.prepareWrite(1, 0, 8, log.callback()));
  expectConsistent(tables);
}

TEST(KVBlockTables, OutOfRangeThrowsNamingSequenceAndPosition) {
  KVBlockTables tables(4, 4, 2, 2);
  CopyLog log;
  try {
    tables.prepareWrite(1, 6, 9, log.callback());
    FAIL() << "writing past the table did not throw";
  } catch (const std::out_of_range &error) {
    std::string message = error.what();
    EXPECT_NE(message.find("sequence 1"), std::string::npos) << message;
    EXPECT_NE(message.find("9"), std::string::npos) << message;
  }
  EXPECT_THROW(tables.prepareWrite(2, 0, 1, log.callback()), std::out_of_range);
  EXPECT_THROW(tables.prepareWrite(-1, 0, 1, log.callback()),
               std::out_of_range);
  EXPECT_THROW(tables.prepareWrite(0, 3, 2, log.callback()), std::out_of_range);
  EXPECT_THROW(tables.blockOf(0, 8), std::out_of_range);
  EXPECT_TRUE(tables.prepareWrite(0, 0, 8, log.callback()));
  EXPECT_THROW(KVBlockTables(4, 6, 2, 2), std::invalid_argument);
}

TEST(KVBlockTables, FreeSequenceReleasesEveryBlock) {
  KVBlockTables tables(8, 4, 2, 4);
  CopyLog log;
  ASSERT_TRUE(tables.prepareWrite(0, 0, 10, log.callback()));
  ASSERT_TRUE(tables.prepareWrite(1, 0, 2, log.callback()));
  tables.freeSequence(0);
  EXPECT_EQ(tables.blocksHeld(0), 0);
  for (int32_t i = 0; i < tables.maxBlocksPerSequence(); ++i)
    EXPECT_EQ(tables.data()[i], -1);
  EXPECT_EQ(tables.usedBlocks(), 1);
  EXPECT_EQ(tables.freeBlocks(), 7);
  expectConsistent(tables);
}

TEST(KVBlockTables, ReleaseBeforeDropsOnlyWholeBlocks) {
  KVBlockTables tables(8, 4, 1, 4);
  CopyLog log;
  ASSERT_TRUE(tables.prepareWrite(0, 0, 14, log.callback()));
  int32_t third = tables.blockOf(0, 8);
  tables.releaseBefore(0, 7); // Block 1 holds position 7: kept.
  EXPECT_EQ(tables.blockOf(0, 0), -1);
  EXPECT_NE(tables.blockOf(0, 4), -1);
  tables.releaseBefore(0, 8);
  EXPECT_EQ(tables.blockOf(0, 4), -1);
  EXPECT_EQ(tables.blockOf(0, 8), third);
  EXPECT_EQ(tables.blocksHeld(0), 2);
  EXPECT_EQ(tables.usedBlocks(), 2);
  expectConsistent(tables);
}

//===----------------------------------------------------------------------===//
// KVBlockTables: prefix sharing and copy-on-write
//===----------------------------------------------------------------------===//

std::vector<int32_t> iota(int32_t count, int32_t first) {
  std::vector<int32_t> tokens(static_cast<size_t>(count));
  std::iota(tokens.begin(), tokens.end(), first);
  return tokens;
}

std::vector<int32_t> join(std::vector<int32_t> a,
                          const std::vector<int32_t> &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

/// Eight chats with one 200-token system prompt (12 whole blocks of 16) and
/// their own 10-token questions: the 12 blocks are held once.
TEST(KVBlockTables, SequencesWithOneSystemPromptShareItsWholeBlocks) {
  constexpr int32_t kSequences = 8;
  KVBlockTables tables(/*numBlocks=*/64, /*blockPositions=*/16, kSequences,
                       /*maxBlocksPerSequence=*/16);
  CopyLog log;
  const std::vector<int32_t> system = iota(200, 1000);
  auto prompt = [&](int32_t seq) { return join(system, iota(10, 100 * seq)); };

  // The first chat prefills everything and publishes its prefix.
  ASSERT_TRUE(tables.prepareWrite(0, 0, 210, log.callback()));
  tables.cachePrefix(0, system);
  EXPECT_EQ(tables.cachedBlocks(), 12);
  // The others attach it and compute only what follows.
  for (int32_t seq = 1; seq < kSequences; ++seq) {
    std::vector<int32_t> tokens = prompt(seq);
    EXPECT_EQ(tables.attachCachedPrefix(seq, tokens), 192);
    ASSERT_TRUE(tables.prepareWrite(seq, 192, 210, log.callback()));
  }
  EXPECT_TRUE(log.copies.empty());
  // 12 shared blocks, plus blocks 12 (the prompt's last 8 positions and the
  // question's first 8) and 13 of each chat.
  EXPECT_EQ(tables.usedBlocks(), 12 + kSequences * 2);
  std::set<int32_t> divergent;
  for (int32_t seq = 0; seq < kSequences; ++seq) {
    EXPECT_EQ(tables.blockOf(seq, 191), tables.blockOf(0, 191));
    divergent.insert(tables.blockOf(seq, 192));
    EXPECT_EQ(tables.allocator().refCount(tables.blockOf(seq, 192)), 1);
  }
  EXPECT_EQ(divergent.size(), static_cast<size_t>(kSequences));
  // Every chat and the cache hold each shared block.
  EXPECT_EQ(tables.allocator().refCount(tables.blockOf(0, 0)), kSequences + 1);

  // Writing into a shared block (say, an edited system prompt) copies it.
  int32_t shared = tables.blockOf(3, 100);
  ASSERT_TRUE(tables.prepareWrite(3, 100, 101, log.callback()));
  int32_t own = tables.blockOf(3, 100);
  ASSERT_EQ(log.copies.size(), 1u);
  EXPECT_EQ(log.copies[0], std::make_pair(shared, own));
  EXPECT_NE(own, shared);
  EXPECT_EQ(tables.allocator().refCount(own), 1);
  EXPECT_EQ(tables.allocator().refCount(shared), kSequences);
  for (int32_t seq = 0; seq < kSequences; ++seq)
    if (seq != 3)
      EXPECT_EQ(tables.blockOf(seq, 100), shared);
  expectConsistent(tables);

  for (int32_t seq = 0; seq < kSequences; ++seq)
    tables.freeSequence(seq);
  EXPECT_EQ(tables.usedBlocks(), 12); // The cache's own references.
  tables.clearPrefixCache();
  EXPECT_EQ(tables.freeBlocks(), 64);
  expectConsistent(tables);
}

/// A block is identified by everything before it too: [5 6 7 8] after
/// [1 2 3 4] is not [5 6 7 8] after [9 9 9 9].
TEST(KVBlockTables, EqualBlocksAfterDifferentPrefixesAreNotShared) {
  KVBlockTables tables(16, 4, 4, 4);
  CopyLog log;
  const std::vector<int32_t> first = {1, 2, 3, 4, 5, 6, 7, 8, 0};
  const std::vector<int32_t> second = {9, 9, 9, 9, 5, 6, 7, 8, 0};
  ASSERT_TRUE(tables.prepareWrite(0, 0, 8, log.callback()));
  tables.cachePrefix(0, first);
  EXPECT_EQ(tables.cachedBlocks(), 2);

  EXPECT_EQ(tables.attachCachedPrefix(1, second), 0);
  EXPECT_EQ(tables.blocksHeld(1), 0);
  ASSERT_TRUE(tables.prepareWrite(1, 0, 8, log.callback()));
  tables.cachePrefix(1, second);
  EXPECT_EQ(tables.cachedBlocks(), 4);
  EXPECT_NE(tables.blockOf(1, 4), tables.blockOf(0, 4));

  EXPECT_EQ(tables.attachCachedPrefix(2, first), 8);
  EXPECT_EQ(tables.blockOf(2, 4), tables.blockOf(0, 4));
  EXPECT_EQ(tables.attachCachedPrefix(3, second), 8);
  EXPECT_EQ(tables.blockOf(3, 4), tables.blockOf(1, 4));
  // Caching a prefix again changes nothing.
  tables.cachePrefix(2, first);
  EXPECT_EQ(tables.cachedBlocks(), 4);
  expectConsistent(tables);
}

/// The last token is always left to compute, so its logits exist.
TEST(KVBlockTables, AttachLeavesTheLastTokenToCompute) {
  KVBlockTables tables(16, 4, 2, 4);
  CopyLog log;
  const std::vector<int32_t> tokens = iota(8, 1);
  ASSERT_TRUE(tables.prepareWrite(0, 0, 8, log.callback()));
  tables.cachePrefix(0, tokens);
  EXPECT_EQ(tables.cachedBlocks(), 2);
  EXPECT_EQ(tables.attachCachedPrefix(1, tokens), 4);
  EXPECT_THROW(tables.attachCachedPrefix(1, tokens), std::logic_error);
  tables.freeSequence(1);
  EXPECT_EQ(tables.attachCachedPrefix(1, {}), 0);
  EXPECT_EQ(tables.attachCachedPrefix(1, join(tokens, {9})), 8);
  expectConsistent(tables);
}

/// Blocks only the cache holds are evicted, least recently used first,
/// when a write needs them; a write that cannot succeed evicts nothing.
TEST(KVBlockTables, EvictsCacheOnlyBlocksOldestFirst) {
  KVBlockTables tables(/*numBlocks=*/6, 4, 3, 8);
  CopyLog log;
  const std::vector<int32_t> older = join(iota(8, 10), {0});
  const std::vector<int32_t> newer = join(iota(8, 50), {0});
  ASSERT_TRUE(tables.prepareWrite(0, 0, 8, log.callback()));
  tables.cachePrefix(0, older);
  ASSERT_TRUE(tables.prepareWrite(1, 0, 8, log.callback()));
  tables.cachePrefix(1, newer);
  tables.freeSequence(0);
  tables.freeSequence(1);
  EXPECT_EQ(tables.freeBlocks(), 2);
  EXPECT_EQ(tables.cachedBlocks(), 4);

  std::vector<int32_t> before = tableCopy(tables);
  EXPECT_FALSE(tables.prepareWrite(2, 0, 7 * 4, log.callback()));
  EXPECT_EQ(tables.cachedBlocks(), 4);
  EXPECT_EQ(tableCopy(tables), before);

  ASSERT_TRUE(tables.prepareWrite(2, 0, 16, log.callback()));
  EXPECT_EQ(tables.cachedBlocks(), 2);
  EXPECT_EQ(tables.attachCachedPrefix(0, older), 0);
  EXPECT_EQ(tables.attachCachedPrefix(1, newer), 8);
  expectConsistent(tables);
}

/// Attaching a prefix makes it recently used, so the other one goes first.
TEST(KVBlockTables, AttachingAPrefixProtectsItFromEviction) {
  KVBlockTables tables(6, 4, 3, 6);
  CopyLog log;
  const std::vector<int32_t> older = join(iota(8, 10), {0});
  const std::vector<int32_t> newer = join(iota(8, 50), {0});
  ASSERT_TRUE(tables.prepareWrite(0, 0, 8, log.callback()));
  tables.cachePrefix(0, older);
  ASSERT_TRUE(tables.prepareWrite(1, 0, 8, log.callback()));
  tables.cachePrefix(1, newer);
  tables.freeSequence(0);
  tables.freeSequence(1);
  EXPECT_EQ(tables.attachCachedPrefix(0, older), 8);
  tables.freeSequence(0);

  ASSERT_TRUE(tables.prepareWrite(2, 0, 16, log.callback()));
  EXPECT_EQ(tables.attachCachedPrefix(0, older), 8);
  EXPECT_EQ(tables.attachCachedPrefix(1, newer), 0);
  expectConsistent(tables);
}

/// A cached prefix a sequence still holds frees nothing when evicted, so a
/// newer one that only the cache holds goes instead.
TEST(KVBlockTables, EvictionSkipsBlocksSequencesStillHold) {
  KVBlockTables tables(6, 4, 3, 8);
  CopyLog log;
  const std::vector<int32_t> held = join(iota(8, 10), {0});
  const std::vector<int32_t> unused = join(iota(8, 50), {0});
  ASSERT_TRUE(tables.prepareWrite(0, 0, 8, log.callback()));
  tables.cachePrefix(0, held);
  ASSERT_TRUE(tables.prepareWrite(1, 0, 8, log.callback()));
  tables.cachePrefix(1, unused);
  tables.freeSequence(1);
  EXPECT_EQ(tables.freeBlocks(), 2);

  ASSERT_TRUE(tables.prepareWrite(2, 0, 12, log.callback()));
  EXPECT_EQ(tables.cachedBlocks(), 3);
  EXPECT_EQ(tables.attachCachedPrefix(1, held), 8);
  expectConsistent(tables);
}

//===----------------------------------------------------------------------===//
// Property test: random steps against a simulated K/V pool
//===----------------------------------------------------------------------===//

constexpr int32_t kPoolBlocks = 64;
constexpr int32_t kBlock = 4;
constexpr int32_t kSequences = 8;
constexpr int32_t kBlocksPerSequence = 32;
constexpr int64_t kCapacity = int64_t{kBlocksPerSequence} * kBlock;

/// One sequence as the test sees it.
struct ShadowSequence {
  std::vector<int32_t> tokens; ///< What it wrote at each position.
  int64_t heldFrom = 0;        ///< First logical block not released.
  int32_t prompt = -1;         ///< The prompt its first tokens follow.

  int64_t length() const { return static_cast<int64_t>(tokens.size()); }
  /// Logical blocks it must hold: [heldFrom, heldEnd).
  int64_t heldEnd() const { return (length() + kBlock - 1) / kBlock; }
};

/// Random steps over a small pool; after every step the tables must agree
/// with the shadow sequences, and every position a sequence holds must read
/// back, from the simulated pool, what that sequence wrote.
class RandomSteps {
public:
  RandomSteps()
      : tables(kPoolBlocks, kBlock, kSequences, kBlocksPerSequence),
        pool(static_cast<size_t>(kPoolBlocks) * kBlock, -1),
        sequences(kSequences) {
    // Prompts built from shared pieces, so that chains share blocks, fork,
    // and hold equal blocks after different prefixes (pieces of whole
    // blocks). Some lengths are whole blocks, so attach must hold back the
    // last one.
    auto piece = [&](int32_t length) {
      std::vector<int32_t> tokens(static_cast<size_t>(length));
      for (int32_t &token : tokens)
        token = randomToken();
      return tokens;
    };
    std::vector<int32_t> a = piece(8), b = piece(8), c = piece(6),
                         d = piece(12), e = piece(8);
    prompts = {join(join(a, b), c), join(join(a, b), d),          join(a, d),
               join(join(e, b), c), join(join(join(a, b), d), c), a,
               join(e, d)};
  }

  void run(int steps);

  // Counts of what happened, to prove the steps covered the interesting
  // cases.
  int writes = 0, failedWrites = 0, copies = 0, evictions = 0,
      attachedPositions = 0, outOfRange = 0;

private:
  int32_t randomToken() {
    return std::uniform_int_distribution<int32_t>(0, 999)(rng);
  }
  int32_t pick(int32_t lo, int32_t hi) {
    return std::uniform_int_distribution<int32_t>(lo, hi)(rng);
  }
  int32_t &slot(int32_t block, int64_t position) {
    return pool[static_cast<size_t>(block) * kBlock + position % kBlock];
  }

  void extend(int32_t seq);
  void rewrite(int32_t seq);
  /// prepareWrite, checked against a prediction of success, then the write
  /// of `values` at [begin, begin + values.size()) into the pool.
  void write(int32_t seq, int64_t begin, const std::vector<int32_t> &values);
  void attach(int32_t seq, const std::vector<int32_t> &tokens, int32_t prompt);
  void cache(int32_t seq);
  void free(int32_t seq);
  void check(int step);

  std::mt19937 rng{42};
  KVBlockTables tables;
  std::vector<int32_t> pool; ///< Simulated K/V: one token id a position.
  std::vector<ShadowSequence> sequences;
  std::vector<std::vector<int32_t>> prompts;
};

void RandomSteps::write(int32_t seq, int64_t begin,
                        const std::vector<int32_t> &values) {
  const int64_t end = begin + static_cast<int64_t>(values.size());
  const int64_t first = begin / kBlock, last = (end - 1) / kBlock;
  // Success is predicted from the refcounts alone: fresh or shared blocks
  // needed, against free blocks plus blocks only the prefix cache holds.
  int32_t needed = 0, shared = 0;
  for (int64_t i = first; i <= last; ++i) {
    int32_t block = tables.blockOf(seq, i * kBlock);
    if (block < 0)
      ++needed;
    else if (tables.allocator().refCount(block) > 1)
      ++needed, ++shared;
  }
  std::vector<int32_t> tableReferences(kPoolBlocks, 0);
  for (int32_t i = 0; i < kSequences * kBlocksPerSequence; ++i)
    if (tables.data()[i] >= 0)
      ++tableReferences[tables.data()[i]];
  int32_t cacheOnly = 0;
  for (int32_t block = 0; block < kPoolBlocks; ++block)
    if (tables.allocator().refCount(block) == 1 && tableReferences[block] == 0)
      ++cacheOnly;
  const bool expected = needed <= tables.freeBlocks() + cacheOnly;

  const std::vector<int32_t> tableBefore = tableCopy(tables);
  const int32_t cachedBefore = tables.cachedBlocks();
  const int32_t freeBefore = tables.freeBlocks();
  int32_t copied = 0;
  bool ok = tables.prepareWrite(seq, begin, end, [&](int32_t from, int32_t to) {
    ASSERT_NE(from, to);
    ASSERT_GE(tables.allocator().refCount(from), 2);
    ASSERT_EQ(tables.allocator().refCount(to), 1);
    for (int32_t p = 0; p < kBlock; ++p)
      pool[static_cast<size_t>(to) * kBlock + p] =
          pool[static_cast<size_t>(from) * kBlock + p];
    ++copied;
  });
  ASSERT_EQ(ok, expected) << "needed " << needed << ", free " << freeBefore
                          << ", cache-only " << cacheOnly;
  if (!ok) {
    ++failedWrites;
    ASSERT_EQ(tableCopy(tables), tableBefore)
        << "a failed write changed a table";
    ASSERT_EQ(tables.cachedBlocks(), cachedBefore);
    ASSERT_EQ(tables.freeBlocks(), freeBefore);
    ASSERT_EQ(copied, 0);
    return;
  }
  ++writes;
  copies += copied;
  if (tables.cachedBlocks() < cachedBefore)
    ++evictions;
  // Eviction may unshare a block before it is copied, never the reverse.
  ASSERT_LE(copied, shared);
  if (needed <= freeBefore)
    ASSERT_EQ(tables.cachedBlocks(), cachedBefore)
        << "evicted although " << freeBefore << " free blocks sufficed";
  for (int64_t i = first; i <= last; ++i) {
    int32_t block = tables.blockOf(seq, i * kBlock);
    ASSERT_GE(block, 0);
    ASSERT_EQ(tables.allocator().refCount(block), 1)
        << "sequence " << seq << " is about to write into shared block "
        << block;
  }
  ShadowSequence &shadow = sequences[seq];
  shadow.tokens.resize(static_cast<size_t>(std::max(end, shadow.length())));
  for (int64_t p = begin; p < end; ++p) {
    shadow.tokens[p] = values[p - begin];
    slot(tables.blockOf(seq, p), p) = values[p - begin];
  }
}

void RandomSteps::extend(int32_t seq) {
  ShadowSequence &shadow = sequences[seq];
  const int64_t length = shadow.length();
  const int32_t count = pick(1, 20);
  if (length + count > kCapacity) {
    ++outOfRange;
    const std::vector<int32_t> before = tableCopy(tables);
    ASSERT_THROW(tables.prepareWrite(seq, length, length + count,
                                     [](int32_t, int32_t) {}),
                 std::out_of_range);
    ASSERT_EQ(tableCopy(tables), before);
    return;
  }
  std::vector<int32_t> values;
  for (int64_t p = length; p < length + count; ++p) {
    const std::vector<int32_t> *prompt =
        shadow.prompt >= 0 ? &prompts[shadow.prompt] : nullptr;
    values.push_back(prompt && p < static_cast<int64_t>(prompt->size())
                         ? (*prompt)[p]
                         : randomToken());
  }
  write(seq, length, values);
}

/// Overwrites some written positions (as a rejected speculative token
/// would): the blocks hit may be shared and must be copied first.
void RandomSteps::rewrite(int32_t seq) {
  ShadowSequence &shadow = sequences[seq];
  const int64_t writable = shadow.heldFrom * kBlock;
  if (shadow.length() <= writable)
    return;
  const int64_t begin = pick(static_cast<int32_t>(writable),
                             static_cast<int32_t>(shadow.length() - 1));
  const int64_t end = std::min<int64_t>(shadow.length(), begin + pick(1, 8));
  std::vector<int32_t> values;
  for (int64_t p = begin; p < end; ++p)
    values.push_back(randomToken());
  write(seq, begin, values);
}

void RandomSteps::attach(int32_t seq, const std::vector<int32_t> &tokens,
                         int32_t prompt) {
  const int64_t covered = tables.attachCachedPrefix(seq, tokens);
  ASSERT_EQ(covered % kBlock, 0);
  ASSERT_GE(covered, 0);
  if (!tokens.empty())
    ASSERT_LE(covered, static_cast<int64_t>(tokens.size()) - 1);
  ASSERT_EQ(tables.blocksHeld(seq), covered / kBlock);
  attachedPositions += static_cast<int>(covered);
  ShadowSequence &shadow = sequences[seq];
  // The contents are checked against these tokens by check().
  shadow.tokens.assign(tokens.begin(), tokens.begin() + covered);
  shadow.heldFrom = 0;
  shadow.prompt = prompt;
}

/// Caches a sequence's prefix; when it holds all of it, an empty sequence
/// attaching the same tokens right after must get every cached block.
void RandomSteps::cache(int32_t seq) {
  ShadowSequence &shadow = sequences[seq];
  const std::vector<int32_t> tokens = shadow.tokens;
  tables.cachePrefix(seq, tokens);
  if (shadow.heldFrom != 0 || tokens.empty())
    return;
  for (int32_t other = 0; other < kSequences; ++other)
    if (sequences[other].length() == 0 && tables.blocksHeld(other) == 0) {
      const int64_t expected =
          (static_cast<int64_t>(tokens.size()) - 1) / kBlock * kBlock;
      attach(other, tokens, shadow.prompt);
      ASSERT_EQ(sequences[other].length(), expected)
          << "sequence " << other << " did not attach all of " << seq
          << "'s just-cached prefix";
      return;
    }
}

void RandomSteps::free(int32_t seq) {
  tables.freeSequence(seq);
  sequences[seq] = ShadowSequence();
}

void RandomSteps::check(int step) {
  std::optional<std::string> violation = tables.checkInvariants();
  ASSERT_FALSE(violation.has_value()) << "step " << step << ": " << *violation;
  std::vector<int32_t> mappings(kPoolBlocks, 0);
  for (int32_t seq = 0; seq < kSequences; ++seq) {
    const ShadowSequence &shadow = sequences[seq];
    std::set<int32_t> row;
    for (int64_t i = 0; i < kBlocksPerSequence; ++i) {
      const int32_t block = tables.blockOf(seq, i * kBlock);
      const bool held = i >= shadow.heldFrom && i < shadow.heldEnd();
      ASSERT_EQ(block >= 0, held)
          << "step " << step << ": sequence " << seq << " logical block " << i
          << " maps to " << block;
      if (block < 0)
        continue;
      ASSERT_TRUE(row.insert(block).second)
          << "step " << step << ": sequence " << seq << " maps block " << block
          << " twice";
      ++mappings[block];
    }
    for (int64_t p = shadow.heldFrom * kBlock; p < shadow.length(); ++p)
      ASSERT_EQ(slot(tables.blockOf(seq, p), p), shadow.tokens[p])
          << "step " << step << ": sequence " << seq << " position " << p
          << " reads what another sequence wrote";
  }
  // A block in two tables is shared on purpose, which its refcount shows.
  for (int32_t block = 0; block < kPoolBlocks; ++block)
    if (mappings[block] > 1)
      ASSERT_GE(tables.allocator().refCount(block), mappings[block]);
}

void RandomSteps::run(int steps) {
  for (int step = 0; step < steps; ++step) {
    const int32_t seq = pick(0, kSequences - 1);
    const int32_t op = pick(0, 99);
    if (op < 40) {
      extend(seq);
    } else if (op < 50) {
      rewrite(seq);
    } else if (op < 63) {
      if (sequences[seq].length() == 0 && tables.blocksHeld(seq) == 0) {
        const int32_t prompt =
            pick(0, static_cast<int32_t>(prompts.size()) - 1);
        attach(seq, prompts[prompt], prompt);
      }
    } else if (op < 76) {
      cache(seq);
    } else if (op < 87) {
      free(seq);
    } else if (op < 97) {
      const int64_t position =
          pick(0, static_cast<int32_t>(sequences[seq].length()));
      tables.releaseBefore(seq, position);
      sequences[seq].heldFrom =
          std::max(sequences[seq].heldFrom, position / kBlock);
    } else {
      tables.clearPrefixCache();
      ASSERT_EQ(tables.cachedBlocks(), 0);
    }
    if (::testing::Test::HasFatalFailure())
      return;
    check(step);
    if (::testing::Test::HasFatalFailure())
      return;
  }
  for (int32_t seq = 0; seq < kSequences; ++seq)
    free(seq);
  tables.clearPrefixCache();
  EXPECT_EQ(tables.freeBlocks(), kPoolBlocks) << "blocks leaked";
  EXPECT_EQ(tables.usedBlocks(), 0);
  check(steps);
}

TEST(KVBlockTablesProperty, RandomStepsKeepEverySequencesContents) {
  const auto start = std::chrono::steady_clock::now();
  RandomSteps property;
  property.run(100000);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::printf("[          ] %d writes, %d refused, %d copies, %d evicting "
              "writes, %d positions attached, %d out of range: %.2f s\n",
              property.writes, property.failedWrites, property.copies,
              property.evictions, property.attachedPositions,
              property.outOfRange, seconds);
  // The steps must have reached every interesting case.
  EXPECT_GT(property.failedWrites, 100);
  EXPECT_GT(property.copies, 100);
  EXPECT_GT(property.evictions, 100);
  EXPECT_GT(property.attachedPositions, 1000);
  EXPECT_GT(property.outOfRange, 10);
}

} // namespace
