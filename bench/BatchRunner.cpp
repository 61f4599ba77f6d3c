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

double BatchResults::stepBytes(int batch) const {
  return work.batchStepBytes(batch, promptTokens, options.genTokens);
}

double BatchResults::stepFlops(int batch) const {
  return work.batchStepFlops(batch, promptTokens, options.genTokens);
}

double BatchResults::rooflineTokensPerSecond(int batch,
                                             bool *computeBound) const {
  return rooflineTokensPerSecond(batch, readBandwidth.bytesPerSecond,
                                 computeBound);
}

double BatchResults::rooflineTokensPerSecond(int batch, double bytesPerSecond,
                                             bool *computeBound) const {
  double reading = stepBytes(batch) / bytesPerSecond;
  double computing = stepFlops(batch) / computePeak.flopsPerSecond;
  if (computeBound)
    *computeBound = computing > reading;
  return double(batch) / std::max(reading, computing);
}

std::vector<double>
BatchResults::pairedRooflineFractions(const BatchResult &b) const {
  const std::vector<double> &seconds = b.decode.seconds;
  std::vector<double> around =
      bandwidthAroundRuns(b.readSamples, seconds.size());
  std::vector<double> fractions;
  for (size_t i = 0; i < around.size(); ++i)
    fractions.push_back(double(b.decodeTokens) / seconds[i] /
                        rooflineTokensPerSecond(b.batch, around[i]));
  return fractions;
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
// The limits
//===----------------------------------------------------------------------===//

/// Passes of the read probe sampled right before and right after each
/// timed run (as single-sequence decode samples it: BenchRunner.cpp).
constexpr int kReadPassesAroundRun = 5;

/// Measures the compute limit of the artifact's GEMMs on `pool`: the int8
/// or bf16 dot peak where they multiply that way and the CPU has it, else
/// the FP32 FMA peak (as BenchReport.cpp picks prefill's).
void measureComputePeak(runtime::ThreadPool &pool, BatchResults &results) {
  runtime::MachineProbeOptions probe; // its default iterations and passes
  if (results.work.bf16Dot) {
    results.computePeak = runtime::measureBf16DotPeak(pool, probe.fmaIterations,
                                                      probe.fmaRepetitions);
    results.computePeakName = "bf16 dot peak";
  } else if (results.work.int8Dot) {
    results.computePeak = runtime::measureInt8DotPeak(pool, probe.fmaIterations,
                                                      probe.fmaRepetitions);
    results.computePeakName = "int8 dot peak";
  }
  if (results.computePeak.flopsPerSecond <= 0) {
    results.computePeak = runtime::measureFmaPeak(pool, probe.fmaIterations,
                                                  probe.fmaRepetitions);
    results.computePeakName = "FMA peak";
  }
}

//===----------------------------------------------------------------------===//
// One batch size
//===----------------------------------------------------------------------===//

/// Decode steps of the warm-up: enough to touch every kernel at this batch
/// size, few enough to cost nothing beside the timed runs.
constexpr int64_t kWarmUpSteps = 4;

/// The bench's own threads and read probe, alive for the whole run: the
/// probe's array is resident from the start, so its bytes can be taken out
/// of every memory reading exactly.
struct Limits {
  runtime::ThreadPool pool;
  std::unique_ptr<runtime::ReadBandwidthProbe> read;
  int64_t probeResidentBytes = 0;

  Limits(int threads, int64_t arrayBytes) : pool(threads) {
    int64_t before = statusBytes("VmRSS");
    read = std::make_unique<runtime::ReadBandwidthProbe>(pool, arrayBytes);
    probeResidentBytes = statusBytes("VmRSS") - before;
  }
};

BatchResult benchBatch(const BenchOptions &o, int batch, Limits &limits,
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
    results.work = countStepWork(*model);
    measureComputePeak(limits.pool, results);
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
  // The host's bandwidth drifts within seconds: the probe is sampled around
  // every timed run, so the limit is what memory delivered while it ran.
  runtime::ReadBandwidthProbe &read = *limits.read;
  size_t firstSample = read.sampleBytesPerSecond().size();
  read.sample(runtime::MachineProbeOptions().readRepetitions);
  for (int r = 0; r < o.repeat; ++r) {
    read.sample(kReadPassesAroundRun);
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
    read.sample(kReadPassesAroundRun);
  }
  result.readSamples.assign(read.sampleBytesPerSecond().begin() +
                                ptrdiff_t(firstSample),
                            read.sampleBytesPerSecond().end());
  results.readBandwidth = read.result();
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
  result.residentBytes = statusBytes("VmRSS") - limits.probeResidentBytes;
  result.peakResidentBytes = statusBytes("VmHWM") - limits.probeResidentBytes;
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
  progress(who + "measuring the machine (read bandwidth, then the GEMMs' "
                 "compute peak)");
  runtime::MachineProbeOptions probe;
  probe.triadArrayBytes = options.triadArrayBytes;
  Limits limits(results.threads, runtime::readArrayBytes(probe));
  for (int batch : options.batch) {
    progress(who + "batch of " + std::to_string(batch) + ": " +
             std::to_string(batch) + " prompts of " +
             std::to_string(results.promptTokens) + " tokens, then " +
             std::to_string(options.genTokens) + " decode steps");
    results.batches.push_back(benchBatch(options, batch, limits, results));
  }
  return results;
}

} // namespace kiln::bench
