//===- StepBatchTest.cpp - Runtime step batches ---------------------------===//
//
// Part of Kiln's unit tests. Links only kiln_runtime (no MLIR).
//
//===----------------------------------------------------------------------===//

#include "runtime/StepBatch.h"

#include <gtest/gtest.h>

using kiln::runtime::StepBatch;
using kiln::runtime::StepLimits;
using kiln::runtime::validateStepBatch;

namespace {

const StepLimits kLimits{/*vocabSize=*/512, /*maxSequences=*/4,
                         /*contextLength=*/128};

/// Two sequences in one step: sequence 0 prefills 3 prompt tokens, sequence
/// 2 decodes one token at position 7. Each wants its last token's logits.
StepBatch mixedBatch() {
  StepBatch batch;
  batch.addToken(/*seq=*/0, /*token=*/1, /*position=*/0, false);
  batch.addToken(0, 306, 1, false);
  batch.addToken(0, 42, 2, true);
  batch.addToken(2, 17, 7, true);
  return batch;
}

std::string errorOf(const StepBatch &batch) {
  auto error = validateStepBatch(batch, kLimits);
  return error ? *error : "";
}

TEST(StepBatch, AddTokenRecordsRowsThatNeedLogits) {
  StepBatch batch = mixedBatch();
  EXPECT_EQ(batch.numTokens(), 4u);
  EXPECT_EQ(batch.tokens, (std::vector<int32_t>{1, 306, 42, 17}));
  EXPECT_EQ(batch.positions, (std::vector<int32_t>{0, 1, 2, 7}));
  EXPECT_EQ(batch.seqIds, (std::vector<int32_t>{0, 0, 0, 2}));
  EXPECT_EQ(batch.logitRows, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(errorOf(batch), "");
}

TEST(StepBatch, RejectsEmptyAndMismatchedBatches) {
  EXPECT_EQ(errorOf(StepBatch{}), "step batch has no tokens");
  StepBatch batch = mixedBatch();
  batch.positions.pop_back();
  EXPECT_EQ(errorOf(batch),
            "step batch has 4 tokens but 3 positions and 4 sequence ids");
}

TEST(StepBatch, RejectsOutOfRangeEntriesNamingTheToken) {
  StepBatch batch = mixedBatch();
  batch.tokens[1] = 512;
  EXPECT_EQ(errorOf(batch),
            "token #1: id 512 is outside the vocabulary [0, 512)");

  batch = mixedBatch();
  batch.seqIds[3] = 4;
  EXPECT_EQ(errorOf(batch), "token #3: sequence id 4 is outside [0, 4)");

  batch = mixedBatch();
  batch.positions[3] = 128;
  EXPECT_EQ(errorOf(batch),
            "token #3: position 128 is outside the context [0, 128)");
}

TEST(StepBatch, RequiresConsecutivePositionsWithinASequence) {
  StepBatch batch = mixedBatch();
  batch.positions[2] = 5;
  EXPECT_EQ(errorOf(batch),
            "token #2: sequence 0 is at position 5 but its previous token in "
            "this step was at 1; a sequence's tokens must be at consecutive "
            "positions");
}

TEST(StepBatch, RequiresIncreasingInRangeLogitRows) {
  StepBatch batch = mixedBatch();
  batch.logitRows = {3, 2};
  EXPECT_EQ(errorOf(batch), "logit row #1: token index 2 does not follow 3; "
                            "logit rows must be strictly increasing");
  batch.logitRows = {4};
  EXPECT_EQ(errorOf(batch), "logit row #0: token index 4 is outside [0, 4)");
}

} // namespace
