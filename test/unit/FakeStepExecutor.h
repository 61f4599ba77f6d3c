//===- FakeStepExecutor.h - A model-free executor for engine tests -*- C++ -*-//
//
// Part of Kiln's unit tests. Stands in for a model under the Scheduler and
// the Engine: its "logits" for a token are a hash of every token its
// sequence holds up to that position, so any mistake in what the scheduler
// feeds -- a wrong slot, position, token or a skipped chunk -- changes the
// output, and outputs do not depend on what else a step holds. Its KV cache
// is a pool of blocks it counts like the paged cache (no prefix cache), and
// it checks every step against its reservations.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TEST_UNIT_FAKESTEPEXECUTOR_H
#define KILN_TEST_UNIT_FAKESTEPEXECUTOR_H

#include "runtime/engine/StepExecutor.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace kiln::test {

class FakeStepExecutor : public runtime::StepExecutor {
public:
  FakeStepExecutor(int32_t vocab, int32_t slots, int32_t context,
                   int32_t blocks, int32_t blockPositions, int32_t stepTokens)
      : vocab(vocab), slots(slots), context(context), blocks(blocks),
        blockPositions(blockPositions), stepTokens(stepTokens),
        held(size_t(slots), 0), written(size_t(slots)) {}

  runtime::StepLimits limits() const override {
    return {vocab, slots, context};
  }
  int32_t preferredStepTokens() const override { return stepTokens; }

  std::vector<float> step(const runtime::StepBatch &batch) override {
    ++steps;
    maxStepTokensSeen = std::max(maxStepTokensSeen, int64_t(batch.numTokens()));
    std::vector<float> logits;
    for (size_t t = 0; t < batch.numTokens(); ++t) {
      int32_t seq = batch.seqIds[t], pos = batch.positions[t];
      std::vector<int32_t> &tokens = written[size_t(seq)];
      if (pos != int32_t(tokens.size()))
        throw std::logic_error("fake: slot " + std::to_string(seq) +
                               " fed position " + std::to_string(pos) +
                               " after " + std::to_string(tokens.size()));
      if (pos >= held[size_t(seq)] * blockPositions)
        throw std::logic_error("fake: position " + std::to_string(pos) +
                               " of slot " + std::to_string(seq) +
                               " was not reserved");
      tokens.push_back(batch.tokens[t]);
    }
    for (int32_t row : batch.logitRows) {
      const std::vector<int32_t> &tokens =
          written[size_t(batch.seqIds[size_t(row)])];
      uint64_t h = 1469598103934665603ull;
      for (int32_t i = 0; i <= batch.positions[size_t(row)]; ++i)
        h = (h ^ uint64_t(tokens[size_t(i)])) * 1099511628211ull;
      for (int32_t v = 0; v < vocab; ++v) {
        uint64_t x = (h ^ uint64_t(v)) * 0x9E3779B97F4A7C15ull;
        logits.push_back(float((x >> 40) % 1000) / 100.0f);
      }
    }
    return logits;
  }

  bool reserve(int32_t seq, int64_t begin, int64_t end) override {
    (void)begin;
    int32_t need = int32_t((end + blockPositions - 1) / blockPositions);
    int32_t more = need - held[size_t(seq)];
    if (more <= 0)
      return true;
    if (more > blocks - used)
      return false;
    used += more;
    held[size_t(seq)] = need;
    return true;
  }
  void release(int32_t seq) override {
    used -= held[size_t(seq)];
    held[size_t(seq)] = 0;
    written[size_t(seq)].clear();
  }
  runtime::KVCacheUsage usage() const override {
    runtime::KVCacheUsage u;
    u.usedBlocks = used;
    u.freeBlocks = blocks - used;
    u.totalBlocks = blocks;
    u.blockPositions = blockPositions;
    return u;
  }

  int32_t heldBy(int32_t seq) const { return held[size_t(seq)]; }
  int64_t steps = 0, maxStepTokensSeen = 0;

private:
  int32_t vocab, slots, context, blocks, blockPositions, stepTokens;
  int32_t used = 0;
  std::vector<int32_t> held;
  std::vector<std::vector<int32_t>> written;
};

} // namespace kiln::test

#endif // KILN_TEST_UNIT_FAKESTEPEXECUTOR_H
