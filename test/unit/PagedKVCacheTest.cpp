//===- PagedKVCacheTest.cpp - The KV cache's block pool -------------------===//
//
// Part of Kiln's unit tests. runtime/PagedKVCache.h: the pool sized from a
// budget, the blocks a step maps (writes, and reads before them), a full pool
// refused with a clear error, blocks released outside a sliding window, and
// the kiln_kv_cache that generated code receives. The bookkeeping itself is
// KVBlockTablesTest's; kernels reading through the tables are the kernel
// tests' and CodegenTest's.
//
//===----------------------------------------------------------------------===//

#include "runtime/PagedKVCache.h"

#include <gtest/gtest.h>

using namespace kiln::runtime;

namespace {

/// 2 layers of 2 kv heads of 8: one position of keys and values is
/// 2 x 2 x 2 x 8 floats = 256 bytes; a block of 4 positions 1 KiB.
PagedKVCacheOptions smallCache() {
  PagedKVCacheOptions o;
  o.layers = 2;
  o.kvHeads = 2;
  o.headDim = 8;
  o.maxSequences = 3;
  o.maxPositions = 30;
  o.blockPositions = 4;
  return o;
}

StepBatch tokens(int32_t seq, int32_t from, int32_t count) {
  StepBatch b;
  for (int32_t i = 0; i < count; ++i)
    b.addToken(seq, 0, from + i, i == count - 1);
  return b;
}

std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const std::exception &e) {
    return e.what();
  }
  return "(no error)";
}

} // namespace

TEST(PagedKVCache, PoolFollowsTheBudget) {
  PagedKVCacheOptions o = smallCache();
  EXPECT_EQ(PagedKVCache(o).bytesPerPosition(), 256);
  // No budget: every sequence can reach the context (8 blocks of 4 cover
  // 30 positions).
  EXPECT_EQ(PagedKVCache(o).numBlocks(), 3 * 8);
  o.budgetBytes = 10 * 1024 + 1000; // ten whole blocks
  PagedKVCache budgeted(o);
  EXPECT_EQ(budgeted.numBlocks(), 10);
  EXPECT_EQ(budgeted.poolBytes(), 10 * 1024);
  EXPECT_LE(budgeted.poolBytes(), o.budgetBytes);

  const kiln_kv_cache *abi = budgeted.abi();
  // Values head-major within a block: a head's positions are contiguous.
  EXPECT_EQ(abi->position_stride, 8);
  EXPECT_EQ(abi->value_head_stride, 4 * 8);
  EXPECT_EQ(abi->layer_stride, 4 * 2 * 8);
  EXPECT_EQ(abi->block_stride, 2 * 4 * 2 * 8);
  EXPECT_EQ(abi->block_positions, 4);
  EXPECT_EQ(abi->max_blocks_per_seq, 8);
  EXPECT_EQ(abi->max_seqs, 3);
  EXPECT_EQ(abi->block_tables, budgeted.tables().data());
}

TEST(PagedKVCache, HalfElementsHalveTheBytes) {
  PagedKVCacheOptions o = smallCache();
  o.elementBytes = 2; // f16 or bf16 (`kiln compile --kv-type`)
  o.budgetBytes = 10 * 1024;
  PagedKVCache cache(o);
  EXPECT_EQ(cache.bytesPerPosition(), 128);
  EXPECT_EQ(cache.numBlocks(), 20) << "twice the blocks of f32 in the budget";
  // Strides count elements, whatever their size.
  EXPECT_EQ(cache.abi()->block_stride, 2 * 4 * 2 * 8);
}

TEST(PagedKVCache, BadOptionsNameTheProblem) {
  PagedKVCacheOptions o = smallCache();
  o.blockPositions = 6;
  EXPECT_NE(errorOf([&] {
              PagedKVCache c(o);
            }).find("block size must be a power of two, not 6"),
            std::string::npos);
  o = smallCache();
  o.elementBytes = 8;
  EXPECT_NE(errorOf([&] {
              PagedKVCache c(o);
            }).find("elements are 4 or 2 bytes, not 8"),
            std::string::npos);
  o = smallCache();
  o.budgetBytes = 1000;
  EXPECT_NE(errorOf([&] {
              PagedKVCache c(o);
            }).find("a budget of 1000 bytes holds no block of 1024 bytes"),
            std::string::npos);
}

TEST(PagedKVCache, AStepMapsWhatItWritesAndReads) {
  PagedKVCache cache(smallCache());
  StepBatch prefill = tokens(1, 0, 6);
  cache.prepareStep(prefill, 0, prefill.numTokens());
  EXPECT_GE(cache.tables().blockOf(1, 0), 0);
  EXPECT_GE(cache.tables().blockOf(1, 5), 0);
  EXPECT_NE(cache.tables().blockOf(1, 0), cache.tables().blockOf(1, 4));
  EXPECT_LT(cache.tables().blockOf(1, 8), 0) << "nothing past the step";
  EXPECT_LT(cache.tables().blockOf(0, 0), 0) << "other sequences untouched";
  EXPECT_EQ(cache.tables().usedBlocks(), 2);

  // A sequence that starts past 0 (its earlier positions never written)
  // still gets blocks for what it reads: generated code never follows -1.
  StepBatch late = tokens(2, 9, 1);
  cache.prepareStep(late, 0, late.numTokens());
  for (int64_t p = 0; p <= 9; p += 4)
    EXPECT_GE(cache.tables().blockOf(2, p), 0) << p;
}

TEST(PagedKVCache, AFullPoolIsAClearError) {
  PagedKVCacheOptions o = smallCache();
  o.budgetBytes = 3 * 1024;
  PagedKVCache cache(o);
  StepBatch first = tokens(0, 0, 8);
  cache.prepareStep(first, 0, first.numTokens());
  StepBatch second = tokens(1, 0, 8);
  std::string error =
      errorOf([&] { cache.prepareStep(second, 0, second.numTokens()); });
  EXPECT_NE(error.find("the KV cache is full: sequence 1 needs blocks for "
                       "positions up to 7, 1 of 3 blocks are free"),
            std::string::npos)
      << error;
  EXPECT_LT(cache.tables().blockOf(1, 0), 0) << "the refused step mapped none";
  // Freeing the first sequence makes room.
  cache.freeSequence(0);
  cache.prepareStep(second, 0, second.numTokens());
  EXPECT_EQ(cache.tables().usedBlocks(), 2);
  cache.reset();
  EXPECT_EQ(cache.tables().usedBlocks(), 0);
}

TEST(PagedKVCache, BlocksOutsideTheWindowAreFreed) {
  PagedKVCacheOptions o = smallCache();
  o.slidingWindow = 5;
  PagedKVCache cache(o);
  StepBatch prefill = tokens(0, 0, 11); // positions 0..10
  cache.prepareStep(prefill, 0, prefill.numTokens());
  cache.finishStep(prefill, 0, prefill.numTokens());
  // The next token (position 11) sees positions 7..11: the block of 0..3
  // is of no more use, the block of 4..7 still is.
  EXPECT_LT(cache.tables().blockOf(0, 0), 0);
  EXPECT_GE(cache.tables().blockOf(0, 4), 0);
  EXPECT_GE(cache.tables().blockOf(0, 8), 0);
  EXPECT_EQ(cache.tables().usedBlocks(), 2);
  // Decoding on does not map the freed block again.
  StepBatch decode = tokens(0, 11, 1);
  cache.prepareStep(decode, 0, decode.numTokens());
  EXPECT_LT(cache.tables().blockOf(0, 0), 0);
  cache.finishStep(decode, 0, decode.numTokens());
  EXPECT_LT(cache.tables().blockOf(0, 4), 0) << "position 12 sees 8..12";
}
