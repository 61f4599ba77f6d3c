//===- SchedulerTest.cpp - Continuous batching without a model ------------===//
//
// The Scheduler over FakeStepExecutor, whose outputs depend only on what
// each sequence was fed: sequences batched together must produce what each
// produces alone, through chunked prefill, preemption and removal, and the
// plan must keep its promises (decodes first, the token budget, the
// fairness bound of Scheduler.h, cache room freed at once).
//
//===----------------------------------------------------------------------===//

#include "runtime/engine/Scheduler.h"
#include "FakeStepExecutor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

using namespace kiln;
using runtime::RequestId;
using runtime::ScheduledStep;
using runtime::Scheduler;
using runtime::SchedulerOptions;
using test::FakeStepExecutor;

namespace {

constexpr int32_t kVocab = 97;

std::vector<int32_t> prompt(int32_t length, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> tokens;
  for (int32_t i = 0; i < length; ++i)
    tokens.push_back(int32_t(rng() % kVocab));
  return tokens;
}

int32_t argmax(const float *row) {
  return int32_t(std::max_element(row, row + kVocab) - row);
}

/// Drives a scheduler the way the Engine does, greedily, until every
/// sequence has `generate` tokens; returns them by request.
struct Driver {
  FakeStepExecutor &fake;
  Scheduler &scheduler;
  int32_t generate;
  std::map<RequestId, std::vector<int32_t>> outputs;
  std::vector<ScheduledStep> plans;

  void add(RequestId id, std::vector<int32_t> tokens) {
    scheduler.add(id, std::move(tokens));
    outputs[id];
  }
  /// One step; false when there was nothing to run.
  bool step() {
    ScheduledStep plan = scheduler.schedule();
    EXPECT_TRUE(plan.failed.empty());
    if (plan.empty())
      return false;
    std::vector<float> logits = fake.step(plan.batch);
    scheduler.commit(plan);
    for (size_t r = 0; r < plan.rowRequests.size(); ++r) {
      RequestId id = plan.rowRequests[r];
      std::vector<int32_t> &out = outputs[id];
      out.push_back(argmax(logits.data() + r * kVocab));
      if (int32_t(out.size()) == generate)
        scheduler.remove(id);
      else
        scheduler.append(id, out.back());
    }
    plans.push_back(std::move(plan));
    return true;
  }
  void runAll() {
    while (!scheduler.empty())
      ASSERT_TRUE(step()) << "an empty plan while sequences wait";
  }
};

std::vector<int32_t> runAlone(const std::vector<int32_t> &tokens,
                              int32_t generate) {
  FakeStepExecutor fake(kVocab, 1, 4096, 1024, 16, 64);
  Scheduler scheduler(fake);
  Driver driver{fake, scheduler, generate, {}, {}};
  driver.add(1, tokens);
  driver.runAll();
  return driver.outputs[1];
}

TEST(Scheduler, SixteenSequencesTogetherMatchEachAlone) {
  FakeStepExecutor fake(kVocab, 16, 4096, 1024, 16, 48);
  Scheduler scheduler(fake);
  Driver driver{fake, scheduler, 20, {}, {}};
  std::map<RequestId, std::vector<int32_t>> prompts;
  for (RequestId id = 1; id <= 16; ++id)
    prompts[id] = prompt(int32_t(1 + (id * 37) % 150), uint32_t(id));
  // Half arrive at once, the rest between steps.
  for (RequestId id = 1; id <= 8; ++id)
    driver.add(id, prompts[id]);
  for (RequestId id = 9; id <= 16; ++id) {
    ASSERT_TRUE(driver.step());
    driver.add(id, prompts[id]);
  }
  driver.runAll();
  for (RequestId id = 1; id <= 16; ++id)
    EXPECT_EQ(driver.outputs[id], runAlone(prompts[id], 20))
        << "request " << id;
  EXPECT_EQ(scheduler.preemptions(), 0);
  EXPECT_LE(fake.maxStepTokensSeen, 48);
  EXPECT_EQ(fake.usage().usedBlocks, 0);
}

TEST(Scheduler, DecodesComeFirstThenChunksWithinTheBudget) {
  FakeStepExecutor fake(kVocab, 8, 4096, 1024, 16, 32);
  Scheduler scheduler(fake);
  Driver driver{fake, scheduler, 50, {}, {}};
  driver.add(1, prompt(3, 1));
  driver.add(2, prompt(4, 2));
  ASSERT_TRUE(driver.step()); // both prefills in one step
  EXPECT_EQ(driver.plans.back().prefillTokens, 7);
  driver.add(3, prompt(100, 3));
  ASSERT_TRUE(driver.step());
  const ScheduledStep &plan = driver.plans.back();
  EXPECT_EQ(plan.decodeTokens, 2);
  EXPECT_EQ(plan.prefillTokens, 30); // the budget's rest
  ASSERT_EQ(plan.slices.size(), 3u);
  EXPECT_EQ(plan.slices[0].id, 1u); // decodes, oldest first
  EXPECT_EQ(plan.slices[1].id, 2u);
  EXPECT_EQ(plan.slices[2].id, 3u);
  EXPECT_FALSE(plan.slices[2].sampled);
  EXPECT_EQ(plan.rowRequests, (std::vector<RequestId>{1, 2}));
}

TEST(Scheduler, PreemptsTheNewestWhenBlocksRunOutAndOutputsStayTheSame) {
  // 24 blocks of 8 positions: six sequences of 20 + 40 positions need 48.
  FakeStepExecutor fake(kVocab, 6, 4096, 24, 8, 64);
  Scheduler scheduler(fake);
  Driver driver{fake, scheduler, 40, {}, {}};
  std::map<RequestId, std::vector<int32_t>> prompts;
  for (RequestId id = 1; id <= 6; ++id) {
    prompts[id] = prompt(20, uint32_t(100 + id));
    driver.add(id, prompts[id]);
  }
  std::vector<RequestId> preempted;
  while (!scheduler.empty()) {
    ASSERT_TRUE(driver.step());
    for (RequestId id : driver.plans.back().preempted)
      preempted.push_back(id);
    ASSERT_LE(fake.usage().usedBlocks, 24);
  }
  EXPECT_GT(scheduler.preemptions(), 0);
  EXPECT_EQ(scheduler.preemptions(), int64_t(preempted.size()));
  // The oldest is never the one to give way.
  EXPECT_EQ(std::count(preempted.begin(), preempted.end(), 1u), 0);
  for (RequestId id = 1; id <= 6; ++id)
    EXPECT_EQ(driver.outputs[id], runAlone(prompts[id], 40))
        << "request " << id;
  EXPECT_EQ(fake.usage().usedBlocks, 0);
}

TEST(Scheduler,
     AShortRequestBehindLongPrefillsIsServedWithinTheirCountPlusOne) {
  // Budget 64; four prompts of 1000 tokens are being prefilled when a
  // 5-token request arrives: by Scheduler.h's bound it is served within
  // 4 + 1 steps, where first-come first-served would make it wait for all
  // four (about 62 steps).
  FakeStepExecutor fake(kVocab, 8, 4096, 1024, 16, 64);
  Scheduler scheduler(fake);
  Driver driver{fake, scheduler, 2, {}, {}};
  for (RequestId id = 1; id <= 4; ++id)
    driver.add(id, prompt(1000, uint32_t(id)));
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(driver.step());
  int64_t arrivedAfter = scheduler.steps();
  driver.add(9, prompt(5, 9));
  while (driver.outputs[9].empty())
    ASSERT_TRUE(driver.step());
  int64_t waited = driver.plans.back().number - arrivedAfter;
  EXPECT_LE(waited, 5);
  // And the long ones still progress: each got chunks meanwhile.
  for (RequestId id = 1; id <= 4; ++id)
    EXPECT_GE(scheduler.status(id)->computed, 64);
}

TEST(Scheduler, RemoveFreesTheSequencesBlocksAtOnce) {
  FakeStepExecutor fake(kVocab, 4, 4096, 64, 16, 64);
  Scheduler scheduler(fake);
  Driver driver{fake, scheduler, 1000, {}, {}};
  driver.add(1, prompt(40, 1));
  driver.add(2, prompt(10, 2));
  ASSERT_TRUE(driver.step());
  ASSERT_TRUE(driver.step());
  int32_t slot = scheduler.status(1)->slot;
  EXPECT_EQ(fake.heldBy(slot), 3);
  int32_t before = fake.usage().usedBlocks;
  EXPECT_TRUE(scheduler.remove(1));
  EXPECT_EQ(fake.usage().usedBlocks, before - 3);
  EXPECT_EQ(fake.heldBy(slot), 0);
  EXPECT_FALSE(scheduler.status(1));
  EXPECT_FALSE(scheduler.remove(1));
  EXPECT_EQ(scheduler.running(), 1);
}

TEST(Scheduler, RefusesPromptsThatCanNeverFit) {
  FakeStepExecutor fake(kVocab, 2, 64, 4, 8, 64);
  Scheduler scheduler(fake);
  try {
    scheduler.add(1, prompt(65, 1));
    FAIL() << "a prompt past the context was accepted";
  } catch (const std::invalid_argument &e) {
    EXPECT_NE(std::string(e.what()).find("longer than the context of 64"),
              std::string::npos)
        << e.what();
  }
  try {
    scheduler.add(2, prompt(40, 2)); // the pool holds 32 positions
    FAIL() << "a prompt larger than the cache was accepted";
  } catch (const std::invalid_argument &e) {
    EXPECT_NE(std::string(e.what()).find("holds 32 positions"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(scheduler.add(3, {}), std::invalid_argument);
  scheduler.add(4, prompt(3, 4));
  EXPECT_THROW(scheduler.add(4, prompt(3, 4)), std::invalid_argument);
}

TEST(Scheduler, ASequenceOutgrowingTheWholeCacheFailsAlone) {
  // 32 positions in all: the sequence fails when it needs a 33rd, with a
  // message, and the scheduler goes on.
  FakeStepExecutor fake(kVocab, 2, 1024, 4, 8, 64);
  Scheduler scheduler(fake);
  Driver driver{fake, scheduler, 1000, {}, {}};
  driver.add(1, prompt(30, 1));
  std::string failure;
  for (int i = 0; i < 10 && !scheduler.empty(); ++i) {
    ScheduledStep plan = scheduler.schedule();
    for (auto &[id, why] : plan.failed)
      failure = why;
    if (plan.empty())
      continue;
    std::vector<float> logits = fake.step(plan.batch);
    scheduler.commit(plan);
    for (size_t r = 0; r < plan.rowRequests.size(); ++r)
      scheduler.append(plan.rowRequests[r], argmax(logits.data() + r * kVocab));
  }
  EXPECT_TRUE(scheduler.empty());
  EXPECT_NE(failure.find("the KV cache cannot hold this sequence"),
            std::string::npos)
      << failure;
  EXPECT_EQ(fake.usage().usedBlocks, 0);
}

} // namespace
