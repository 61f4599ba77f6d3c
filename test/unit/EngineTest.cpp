//===- EngineTest.cpp - Many requests over a compiled model ---------------===//
//
// The Engine over the tiny synthetic model compiled for this CPU: requests
// run together give exactly what each gives alone (greedy and seeded
// sampling, with and without preemption), cancellation ends a request
// within a step and returns its cache blocks, bad requests are refused
// without harming the others, and the metrics add up.
//
//===----------------------------------------------------------------------===//

#include "runtime/engine/Engine.h"
#include "codegen/driver/Compiler.h"
#include "frontends/formats/SyntheticModel.h"
#include "runtime/engine/CompiledModelExecutor.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <thread>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace kiln;
using runtime::Engine;
using runtime::FinishReason;
using runtime::GenerationRequest;
using runtime::TokenEvent;

namespace {

/// What a request produced.
struct Output {
  std::vector<int32_t> tokens;
  std::string text;
  TokenEvent last;
};

Output collect(runtime::RequestStream &stream) {
  Output out;
  TokenEvent event;
  while (stream.next(event)) {
    if (event.token >= 0)
      out.tokens.push_back(event.token);
    out.text += event.text;
    if (event.last())
      out.last = event;
  }
  return out;
}

class EngineTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    dir = new fs::path(fs::temp_directory_path() /
                       ("kiln-engine-test-" + std::to_string(getpid())));
    fs::remove_all(*dir);
    fs::create_directories(*dir);
    std::string model = (*dir / "tiny.gguf").string();
    formats::writeSyntheticGGUF({formats::syntheticConfig("tiny"), 5}, model);
    CompileOptions o;
    o.model = model;
    o.output = (*dir / "tiny.kiln").string();
    o.maxTokens = 64; // the step budget: long prompts go in chunks
    o.useCache = false;
    artifact = new std::string(compileModel(o).artifact);
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir);
    delete dir;
    delete artifact;
  }

  static std::unique_ptr<Engine> open(int32_t sequences, int64_t kvBytes = 0) {
    runtime::CompiledModelOptions model;
    model.maxSequences = sequences;
    model.threads = 2;
    model.kvMemoryBytes = kvBytes;
    return runtime::openArtifactEngine(*artifact, model);
  }

  /// Each request alone, one after the other, on a one-sequence engine.
  static std::vector<Output>
  runAlone(const std::vector<GenerationRequest> &requests) {
    std::unique_ptr<Engine> engine = open(1);
    std::vector<Output> outputs;
    for (const GenerationRequest &r : requests)
      outputs.push_back(collect(*engine->submit(r)));
    return outputs;
  }

  static fs::path *dir;
  static std::string *artifact;
};
fs::path *EngineTest::dir = nullptr;
std::string *EngineTest::artifact = nullptr;

std::vector<int32_t> randomPrompt(size_t length, uint32_t seed, int32_t vocab) {
  std::mt19937 rng(seed);
  std::vector<int32_t> ids{1}; // BOS
  while (ids.size() < length)
    ids.push_back(int32_t(3 + rng() % uint32_t(vocab - 3)));
  return ids;
}

/// Every request submitted at once to `engine`; their outputs in order.
std::vector<Output>
runTogether(Engine &engine, const std::vector<GenerationRequest> &requests) {
  std::vector<std::shared_ptr<runtime::RequestStream>> streams;
  for (const GenerationRequest &r : requests)
    streams.push_back(engine.submit(r));
  std::vector<Output> outputs;
  for (auto &stream : streams)
    outputs.push_back(collect(*stream));
  return outputs;
}

GenerationRequest greedy(std::vector<int32_t> prompt, int32_t maxTokens) {
  GenerationRequest r;
  r.promptIds = std::move(prompt);
  r.sampling.temperature = 0;
  r.sampling.maxTokens = maxTokens;
  r.ignoreEos = true; // every request runs its full length
  return r;
}

TEST_F(EngineTest, SixteenConcurrentGreedyRequestsMatchEachAlone) {
  std::vector<GenerationRequest> requests;
  for (uint32_t i = 0; i < 16; ++i)
    requests.push_back(greedy(randomPrompt(1 + (i * 29) % 150, i, 512),
                              int32_t(8 + i % 5 * 6)));
  std::vector<Output> alone = runAlone(requests);
  std::unique_ptr<Engine> engine = open(16);
  std::vector<Output> outputs = runTogether(*engine, requests);
  for (size_t i = 0; i < requests.size(); ++i) {
    const Output &together = outputs[i];
    EXPECT_EQ(together.tokens, alone[i].tokens) << "request " << i;
    EXPECT_EQ(together.text, alone[i].text) << "request " << i;
    EXPECT_EQ(together.last.finish, FinishReason::Length);
    EXPECT_EQ(int32_t(together.tokens.size()), requests[i].sampling.maxTokens);
  }
  runtime::EngineMetrics m = engine->metrics();
  EXPECT_EQ(m.submitted, 16);
  EXPECT_EQ(m.finished, 16);
  EXPECT_EQ(m.preemptions, 0);
  EXPECT_EQ(m.timeToFirstToken.count, 16);
  EXPECT_GT(m.steps, 0);
}

TEST_F(EngineTest, PreemptionUnderATightCacheKeepsEveryOutput) {
  std::vector<GenerationRequest> requests;
  for (uint32_t i = 0; i < 8; ++i)
    requests.push_back(greedy(randomPrompt(40, 100 + i, 512), 40));
  std::vector<Output> alone = runAlone(requests);
  // Eight sequences of 80 positions need 40 blocks of 16; the pool has 12.
  int64_t perBlock =
      runtime::CompiledModel::load(*artifact)->kvCache().bytesPerPosition() *
      16;
  std::unique_ptr<Engine> engine = open(8, 12 * perBlock);
  ASSERT_EQ(engine->metrics().kv.totalBlocks, 12);
  std::vector<Output> outputs = runTogether(*engine, requests);
  for (size_t i = 0; i < requests.size(); ++i) {
    const Output &together = outputs[i];
    EXPECT_EQ(together.tokens, alone[i].tokens) << "request " << i;
    EXPECT_EQ(together.last.finish, FinishReason::Length)
        << together.last.error;
  }
  runtime::EngineMetrics m = engine->metrics();
  EXPECT_GE(m.preemptions, 1);
  EXPECT_LE(m.kv.usedBlocks, 12);
}

TEST_F(EngineTest, SeededSamplingIsTheSameWhateverElseRuns) {
  GenerationRequest sampled;
  sampled.promptIds = randomPrompt(17, 7, 512);
  sampled.sampling.temperature = 0.9f;
  sampled.sampling.topP = 0.95f;
  sampled.sampling.seed = 42;
  sampled.sampling.maxTokens = 32;
  sampled.ignoreEos = true;
  Output alone;
  {
    std::unique_ptr<Engine> engine = open(1);
    alone = collect(*engine->submit(sampled));
  }
  std::unique_ptr<Engine> engine = open(8);
  std::vector<std::shared_ptr<runtime::RequestStream>> others;
  for (uint32_t i = 0; i < 7; ++i) {
    GenerationRequest other = sampled;
    other.promptIds = randomPrompt(5 + i * 9, 200 + i, 512);
    other.sampling.seed.reset(); // their own random seeds
    others.push_back(engine->submit(other));
    if (i == 3) // it joins mid-way
      others.push_back(engine->submit(sampled));
  }
  Output together = collect(*others[4]);
  EXPECT_EQ(together.tokens, alone.tokens);
  EXPECT_EQ(together.text, alone.text);
  for (auto &s : others)
    collect(*s);
}

TEST_F(EngineTest, CancelEndsTheRequestWithinAStepAndFreesItsBlocks) {
  std::unique_ptr<Engine> engine = open(2);
  auto keeper = engine->submit(greedy(randomPrompt(30, 1, 512), 60));
  // The victim cancels itself from its third token's callback, on the
  // engine's thread between two steps: the next step must not feed it, and
  // its blocks must be free before that step is planned.
  GenerationRequest victim = greedy(randomPrompt(50, 2, 512), 200);
  std::mutex mutex;
  std::vector<TokenEvent> events;
  runtime::RequestId victimId = 0;
  int64_t stepsAtCancel = -1;
  victim.onToken = [&](const TokenEvent &event) {
    std::lock_guard<std::mutex> lock(mutex);
    events.push_back(event);
    if (events.size() == 3) {
      stepsAtCancel = engine->metrics().steps;
      EXPECT_TRUE(engine->cancel(event.request));
    }
  };
  victimId = engine->submit(std::move(victim), nullptr);
  Output kept = collect(*keeper);
  EXPECT_EQ(kept.last.finish, FinishReason::Length);
  EXPECT_EQ(kept.tokens.size(), 60u);
  engine->waitIdle();
  std::lock_guard<std::mutex> lock(mutex);
  ASSERT_EQ(events.size(), 4u) << "tokens arrived after the cancel";
  EXPECT_EQ(events.back().finish, FinishReason::Cancelled);
  EXPECT_EQ(events.back().token, -1);
  EXPECT_EQ(events.back().generatedTokens, 3);
  EXPECT_GE(stepsAtCancel, 1);
  EXPECT_FALSE(engine->cancel(victimId)); // already over
  runtime::EngineMetrics m = engine->metrics();
  // Only the prefix cache still holds blocks (the prompts' whole blocks).
  EXPECT_EQ(m.kv.usedBlocks, m.kv.cachedBlocks);
  EXPECT_EQ(m.cancelled, 1);
  EXPECT_EQ(m.finished, 1);
  EXPECT_EQ(m.running, 0);
}

TEST_F(EngineTest, BadRequestsAreRefusedByNameAndOthersGoOn) {
  std::unique_ptr<Engine> engine = open(2);
  auto good = engine->submit(greedy(randomPrompt(20, 3, 512), 50));
  auto refused = [&](GenerationRequest r, const std::string &expected) {
    try {
      engine->submit(std::move(r));
      ADD_FAILURE() << "accepted; expected: " << expected;
    } catch (const std::invalid_argument &e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos)
          << e.what();
    }
  };
  GenerationRequest topP = greedy(randomPrompt(5, 4, 512), 5);
  topP.sampling.topP = 1.5f;
  refused(topP, "top_p");
  int32_t context = engine->limits().contextLength;
  refused(greedy(randomPrompt(size_t(context) + 1, 5, 512), 5),
          "longer than the context");
  GenerationRequest outside = greedy({1, 600}, 5);
  refused(outside, "outside the vocabulary");
  GenerationRequest empty;
  empty.addBos = false;
  refused(empty, "the prompt is empty");
  Output out = collect(*good);
  EXPECT_EQ(out.last.finish, FinishReason::Length);
  EXPECT_EQ(out.tokens.size(), 50u);
  EXPECT_EQ(engine->metrics().submitted, 1);
}

TEST_F(EngineTest, AFullWaitQueueRefusesWithBusy) {
  runtime::CompiledModelOptions model;
  model.maxSequences = 1;
  model.threads = 2;
  runtime::EngineOptions options;
  options.maxQueued = 2;
  std::unique_ptr<Engine> engine =
      runtime::openArtifactEngine(*artifact, model, options);
  auto running = engine->submit(greedy(randomPrompt(10, 1, 512), 400));
  TokenEvent first;
  ASSERT_TRUE(running->next(first)); // it holds the only slot now
  auto a = engine->submit(greedy(randomPrompt(10, 2, 512), 2));
  auto b = engine->submit(greedy(randomPrompt(10, 3, 512), 2));
  EXPECT_THROW(engine->submit(greedy(randomPrompt(10, 4, 512), 2)),
               runtime::EngineBusyError);
  running->cancel();
  EXPECT_EQ(collect(*a).tokens.size(), 2u);
  EXPECT_EQ(collect(*b).tokens.size(), 2u);
}

TEST_F(EngineTest, CallbacksGetTheSameTokensAsStreams) {
  std::unique_ptr<Engine> engine = open(4);
  GenerationRequest request = greedy(randomPrompt(12, 9, 512), 20);
  Output streamed = collect(*engine->submit(request));
  std::mutex mutex;
  Output called;
  request.onToken = [&](const TokenEvent &event) {
    std::lock_guard<std::mutex> lock(mutex);
    if (event.token >= 0)
      called.tokens.push_back(event.token);
    called.text += event.text;
    if (event.last())
      called.last = event;
  };
  EXPECT_EQ(engine->submit(request), nullptr);
  engine->waitIdle();
  std::lock_guard<std::mutex> lock(mutex);
  EXPECT_EQ(called.tokens, streamed.tokens);
  EXPECT_EQ(called.text, streamed.text);
  EXPECT_EQ(called.last.generatedTokens, 20);
  EXPECT_EQ(called.last.promptTokens, 12);
}

} // namespace
