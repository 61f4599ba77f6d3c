//===- BatchRunner.cpp - Timing batched decode of an artifact -------------===//
//
// Part of Kiln's benchmark library. See BatchRunner.h. Sections: the steps,
// one batch size, the whole run.
//
//===----------------------------------------------------------------------===//

#include "bench/BatchRunner.h"

#include "runtime/MemoryAmount.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <memory>
#include <random>
#include <stdexcept>

namespace kiln::bench {

using runtime::CompiledModel;
using runtime::StepBatch;

double BatchResult::stepPercentile(double q) const {
  std::vector<double> s = stepSeconds;
  std::sort(s.begin(), s.end());
  size_t rank = size_t(std::ceil(q * double(s.size())));
  return s[std::clamp<size_t>(rank, 1, s.size()) - 1];
}

const BatchResult *BatchResults::single() const {
  for (const BatchResult &b : batches)
    if (b.batch == 1)
      return &b;
  return nullptr;
}

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

//===----------------------------------------------------------------------===//
// The steps
//===----------------------------------------------------------------------===//

/// The steps of one run, built before any is timed: per sequence a prompt
/// of P random tokens (each sequence its own, so no prompt is a shared
/// prefix the cache could reuse), then G steps of one token of every
/// sequence at positions P..P+G-1, each asking for every sequence's logits.
struct BatchedRun {
  std::vector<StepBatch> prompts;
  std::vector<StepBatch> steps;

  BatchedRun(int batch, int64_t p, int64_t g, int64_t vocab, uint64_t seed) {
    std::vector<std::vector<int32_t>> tokens;
    for (int s = 0; s < batch; ++s) {
      std::mt19937_64 rng(seed + uint64_t(s));
      std::uniform_int_distribution<int32_t> pick(0, int32_t(vocab - 1));
      tokens.emplace_back(size_t(p + g));
      for (int32_t &t : tokens.back())
        t = pick(rng);
      prompts.emplace_back();
      for (int64_t i = 0; i < p; ++i)
        prompts.back().addToken(s, tokens[size_t(s)][size_t(i)], int32_t(i),
                                i + 1 == p);
    }
    for (int64_t i = p; i < p + g; ++i) {
      steps.emplace_back();
      for (int s = 0; s < batch; ++s)
        steps.back().addToken(s, tokens[size_t(s)][size_t(i)], int32_t(i),
                              true);
    }
  }
};

/// Runs one decode step and checks it returned a row of logits for each of
/// its tokens; returns the rows.
int64_t decodeStep(CompiledModel &model, const StepBatch &step) {
  size_t expected = step.numTokens() * size_t(model.manifest().vocabSize);
  std::vector<float> logits = model.step(step);
  if (logits.size() != expected)
    throw std::runtime_error(
        "batched decode: a step of " + std::to_string(step.numTokens()) +
        " sequences returned " + std::to_string(logits.size()) +
        " logits, not " + std::to_string(expected));
  return int64_t(step.numTokens());
}

/// A field of /proc/self/status ("VmRSS:  1234 kB") in bytes; 0 if absent.
int64_t statusBytes(const std::string &field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field + ":", 0) == 0)
      return std::stoll(line.substr(field.size() + 1)) * 1024;
  return 0;
}

//===----------------------------------------------------------------------===//
// One batch size
//===----------------------------------------------------------------------===//

/// Decode steps of the warm-up: enough to touch every kernel at this batch
/// size, few enough to cost nothing beside the timed runs.
constexpr int64_t kWarmUpSteps = 4;

BatchResult benchBatch(const BenchOptions &o, int batch,
                       BatchResults &results) {
  if (!o.keepPageCache)
    evictFromPageCache(o.artifact);
  runtime::CompiledModelOptions options;
  options.threads = results.threads;
  options.maxSequences = batch;
  options.contextLength = results.contextLength;
  // Without a budget every sequence can reach P + G; with one, a pool too
  // small stops the run with the cache's error.
  options.kvMemoryBytes =
      o.kvMemory.empty() ? 0
                         : runtime::MemoryAmount::parse(o.kvMemory).resolve();
  options.verifyHashes = results.batches.empty();
  options.weightsInHugePages = !o.mappedWeights;
  std::unique_ptr<CompiledModel> model =
      CompiledModel::load(o.artifact, options);
  if (results.batches.empty()) {
    results.weightsInHugePages = model->weightsInHugePages();
    // The model's manifest gives the context it was loaded with (P + G);
    // the report names the artifact's own.
    results.manifest = model->manifest();
    results.manifest.contextLength =
        runtime::parseManifest(
            o.artifact, model->artifact().section(runtime::section::kManifest))
            .contextLength;
  }

  int64_t p = results.promptTokens, g = o.genTokens;
  BatchedRun run(batch, p, g, model->manifest().vocabSize, o.seed);
  // The warm-up: 1-token prompts, then a few steps of every sequence.
  {
    BatchedRun warm(batch, 1, std::min(g, kWarmUpSteps),
                    model->manifest().vocabSize, o.seed);
    model->reset();
    for (const StepBatch &prompt : warm.prompts)
      model->step(prompt);
    for (const StepBatch &step : warm.steps)
      decodeStep(*model, step);
  }

  BatchResult result;
  result.batch = batch;
  result.decodeTokens = int64_t(batch) * g;
  for (int r = 0; r < o.repeat; ++r) {
    model->reset();
    Clock::time_point start = Clock::now();
    for (const StepBatch &prompt : run.prompts)
      model->step(prompt);
    result.prefill.seconds.push_back(secondsSince(start));
    double decode = 0;
    for (const StepBatch &step : run.steps) {
      start = Clock::now();
      result.decodeLogitRows += decodeStep(*model, step);
      double seconds = secondsSince(start);
      result.stepSeconds.push_back(seconds);
      decode += seconds;
    }
    result.decode.seconds.push_back(decode);
  }
  if (o.profile) {
    // One more run, untimed, so the profile's clock reads do not touch the
    // figures above.
    model->setProfiling(true);
    model->reset();
    for (const StepBatch &prompt : run.prompts)
      model->step(prompt);
    std::vector<double> before = profileSeconds(*model);
    Clock::time_point start = Clock::now();
    for (const StepBatch &step : run.steps)
      decodeStep(*model, step);
    result.profile.what = "decode of " + std::to_string(g) + " steps of " +
                          std::to_string(batch) +
                          (batch == 1 ? " token" : " tokens");
    result.profile.seconds = secondsSince(start);
    result.profile.steps = g;
    result.profile.kernels = aggregateByKernel(*model, before, g);
    model->setProfiling(false);
  }
  result.kvPoolBytes = model->kvCache().poolBytes();
  result.residentBytes = statusBytes("VmRSS");
  result.peakResidentBytes = statusBytes("VmHWM");
  return result;
}

} // namespace

//===----------------------------------------------------------------------===//
// The whole run
//===----------------------------------------------------------------------===//

BatchResults runBatchedDecode(const BenchOptions &options,
                              const BenchProgress &progress) {
  BatchResults results;
  results.options = options;
  results.date = utcNow();
  results.cpu = hostCpuName();
  results.threads =
      *std::max_element(options.threads.begin(), options.threads.end());
  results.promptTokens = options.promptTokens.front();
  results.contextLength = results.promptTokens + options.genTokens;
  std::string who = std::to_string(results.threads) +
                    (results.threads == 1 ? " thread: " : " threads: ");
  for (int batch : options.batch) {
    progress(who + "batch of " + std::to_string(batch) + ": " +
             std::to_string(batch) + " prompts of " +
             std::to_string(results.promptTokens) + " tokens, then " +
             std::to_string(options.genTokens) + " decode steps");
    results.batches.push_back(benchBatch(options, batch, results));
  }
  return results;
}

} // namespace kiln::bench
