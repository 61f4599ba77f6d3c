//===- BenchRunner.cpp - Timing prefill and decode of an artifact ---------===//
//
// Part of Kiln's benchmark library. See BenchRunner.h. Sections: timing,
// profiles, one thread count, the whole run.
//
//===----------------------------------------------------------------------===//

#include "bench/BenchRunner.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <map>
#include <random>

#include <fcntl.h>
#include <unistd.h>

namespace kiln::bench {

using runtime::CompiledModel;
using runtime::StepBatch;

double Samples::best() const {
  return *std::min_element(seconds.begin(), seconds.end());
}

double Samples::worst() const {
  return *std::max_element(seconds.begin(), seconds.end());
}

double medianOf(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

double Samples::median() const { return medianOf(seconds); }

std::vector<double> bandwidthAroundRuns(const std::vector<double> &samples,
                                        size_t runs) {
  std::vector<double> around;
  if (samples.size() != 1 + 2 * runs)
    return around;
  for (size_t i = 0; i < runs; ++i)
    around.push_back(std::max(samples[1 + 2 * i], samples[2 + 2 * i]));
  return around;
}

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

//===----------------------------------------------------------------------===//
// Timing
//===----------------------------------------------------------------------===//

std::vector<int32_t> randomTokens(int64_t count, int64_t vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> pick(0, int32_t(vocab - 1));
  std::vector<int32_t> tokens(static_cast<size_t>(count));
  for (int32_t &t : tokens)
    t = pick(rng);
  return tokens;
}

/// Positions 0..P-1 of sequence 0, logits for the last row only.
StepBatch promptBatch(const std::vector<int32_t> &tokens) {
  StepBatch batch;
  for (size_t i = 0; i < tokens.size(); ++i)
    batch.addToken(0, tokens[i], int32_t(i), i + 1 == tokens.size());
  return batch;
}

/// One untimed warm-up, then `repeat` timed prefills from an empty cache.
Samples timePrefill(CompiledModel &model, int64_t p, int repeat,
                    uint64_t seed) {
  StepBatch batch =
      promptBatch(randomTokens(p, model.manifest().vocabSize, seed));
  model.reset();
  model.step(batch);
  Samples samples;
  for (int r = 0; r < repeat; ++r) {
    model.reset();
    Clock::time_point start = Clock::now();
    model.step(batch);
    samples.seconds.push_back(secondsSince(start));
  }
  return samples;
}

/// Single-token steps at positions 1..G after an untimed 1-token prefill.
struct DecodeRun {
  std::vector<StepBatch> steps;
  StepBatch first;

  DecodeRun(int64_t g, int64_t vocab, uint64_t seed) {
    std::vector<int32_t> tokens = randomTokens(g + 1, vocab, seed);
    first.addToken(0, tokens[0], 0, true);
    for (int64_t i = 1; i <= g; ++i) {
      steps.emplace_back();
      steps.back().addToken(0, tokens[size_t(i)], int32_t(i), true);
    }
  }

  double run(CompiledModel &model, size_t count) const {
    model.reset();
    model.step(first);
    Clock::time_point start = Clock::now();
    for (size_t i = 0; i < count; ++i)
      model.step(steps[i]);
    return secondsSince(start);
  }
};

/// Passes of the read probe sampled right before and right after each
/// timed decode run.
constexpr int kReadPassesAroundDecode = 5;

/// A short warm-up, then `repeat` timed decodes of G tokens, each between
/// two samples of `readProbe`: the memory bandwidth a shared host gives
/// drifts within seconds, and decode's limit is what memory delivered while
/// it ran.
Samples timeDecode(CompiledModel &model, int64_t g, int repeat, uint64_t seed,
                   runtime::ReadBandwidthProbe &readProbe) {
  DecodeRun decode(g, model.manifest().vocabSize, seed);
  decode.run(model, std::min<size_t>(decode.steps.size(), 16));
  Samples samples;
  for (int r = 0; r < repeat; ++r) {
    readProbe.sample(kReadPassesAroundDecode);
    samples.seconds.push_back(decode.run(model, decode.steps.size()));
    readProbe.sample(kReadPassesAroundDecode);
  }
  return samples;
}

//===----------------------------------------------------------------------===//
// Profiles
//===----------------------------------------------------------------------===//

/// Profiles one prefill of `p` tokens and one decode of `g`, untimed runs
/// of their own so the profile's clock reads do not touch the figures.
std::vector<Profile> profileSteps(CompiledModel &model, int64_t p, int64_t g,
                                  uint64_t seed) {
  std::vector<Profile> profiles;
  model.setProfiling(true);

  StepBatch prompt =
      promptBatch(randomTokens(p, model.manifest().vocabSize, seed));
  model.reset();
  std::vector<double> before = profileSeconds(model);
  Clock::time_point start = Clock::now();
  model.step(prompt);
  Profile prefill;
  prefill.what = "prefill of " + std::to_string(p) + " tokens";
  prefill.seconds = secondsSince(start);
  prefill.steps = (p + model.manifest().maxTokens - 1) /
                  model.manifest().maxTokens; // longer steps run in chunks
  prefill.kernels = aggregateByKernel(model, before, prefill.steps);
  profiles.push_back(prefill);

  DecodeRun decodeRun(g, model.manifest().vocabSize, seed);
  model.reset();
  model.step(decodeRun.first);
  before = profileSeconds(model);
  start = Clock::now();
  for (const StepBatch &step : decodeRun.steps)
    model.step(step);
  Profile decode;
  decode.what = "decode of " + std::to_string(g) + " tokens";
  decode.seconds = secondsSince(start);
  decode.steps = g;
  decode.kernels = aggregateByKernel(model, before, decode.steps);
  profiles.push_back(decode);

  model.setProfiling(false);
  return profiles;
}

//===----------------------------------------------------------------------===//
// One thread count
//===----------------------------------------------------------------------===//

/// On the first call (`results.work` still empty) the loaded model's
/// manifest, step work and weights section go into `results`.
ThreadResult benchThreads(const BenchOptions &o, int threads, bool verify,
                          BenchResults &results,
                          const BenchProgress &progress) {
  if (!o.keepPageCache)
    evictFromPageCache(o.artifact);
  runtime::CompiledModelOptions options;
  options.threads = threads;
  options.verifyHashes = verify; // once is enough
  options.weightsInHugePages = !o.mappedWeights;
  std::unique_ptr<CompiledModel> model =
      CompiledModel::load(o.artifact, options);
  if (results.work.gemmEntries == 0) {
    results.work = countStepWork(*model);
    results.manifest = model->manifest();
    results.weightsSectionBytes = int64_t(model->weights().size());
    results.weightsInHugePages = model->weightsInHugePages();
    if (model->manifest().libraries.size() > 1)
      progress("using " + model->stepLibraryChoice());
  }
  const StepWork &work = results.work;

  ThreadResult result;
  result.threads = threads;
  std::string who =
      std::to_string(threads) + (threads == 1 ? " thread: " : " threads: ");
  progress(who + "measuring the machine (FMA peak, read and triad bandwidth)");
  runtime::MachineProbeOptions probe;
  probe.triadArrayBytes = o.triadArrayBytes;
  probe.bf16DotPeak = work.bf16Dot;
  probe.int8DotPeak = work.int8Dot;
  probe.readBandwidth = false; // sampled around the decode runs below
  result.machine = runtime::probeMachine(model->threadPool(), probe);
  for (int64_t p : o.promptTokens) {
    progress(who + "prefill of " + std::to_string(p) + " tokens");
    PrefillResult r;
    r.promptTokens = p;
    r.samples = timePrefill(*model, p, o.repeat, o.seed);
    r.flopsPerToken = work.prefillFlopsPerToken(p);
    result.prefill.push_back(r);
  }
  progress(who + "decode of " + std::to_string(o.genTokens) + " tokens");
  {
    runtime::ReadBandwidthProbe read(model->threadPool(),
                                     runtime::readArrayBytes(probe));
    read.sample(probe.readRepetitions);
    result.decode = timeDecode(*model, o.genTokens, o.repeat, o.seed, read);
    result.machine.readBandwidth = read.result();
    result.readSamples = read.sampleBytesPerSecond();
  }
  if (o.profile) {
    progress(who + "profiles");
    result.profiles = profileSteps(
        *model, *std::max_element(o.promptTokens.begin(), o.promptTokens.end()),
        o.genTokens, o.seed);
  }
  return result;
}

} // namespace

//===----------------------------------------------------------------------===//
// Profile snapshots
//===----------------------------------------------------------------------===//

std::vector<double> profileSeconds(const CompiledModel &model) {
  std::vector<double> seconds;
  for (const CompiledModel::ProfileEntry &e : model.profile())
    seconds.push_back(e.seconds);
  return seconds;
}

std::vector<KernelTime> aggregateByKernel(const CompiledModel &model,
                                          const std::vector<double> &before,
                                          int64_t steps) {
  std::vector<CompiledModel::ProfileEntry> after = model.profile();
  std::map<std::string, KernelTime> byKernel;
  for (size_t i = 0; i < after.size(); ++i) {
    const std::string &call = after[i].call;
    size_t colon = call.find(':');
    KernelTime &k = byKernel[call.substr(0, colon)];
    if (k.kernel.empty()) {
      k.kernel = call.substr(0, colon);
      if (colon != std::string::npos) {
        std::string rest = call.substr(colon + 1);
        rest.erase(0, rest.find_first_not_of(' '));
        k.op = rest.substr(0, rest.find(" at "));
        std::replace(k.op.begin(), k.op.end(), '|', '/');
      }
    }
    k.seconds += after[i].seconds - (i < before.size() ? before[i] : 0.0);
    k.calls += steps;
  }
  std::vector<KernelTime> kernels;
  for (auto &[name, k] : byKernel)
    kernels.push_back(k);
  std::sort(kernels.begin(), kernels.end(),
            [](const KernelTime &a, const KernelTime &b) {
              return a.seconds > b.seconds;
            });
  return kernels;
}

//===----------------------------------------------------------------------===//
// The whole run
//===----------------------------------------------------------------------===//

/// Decode streams the weights from the artifact's pages, and how they came
/// into the cache matters: pages left by the writer of a just-compiled
/// artifact can decode slower than the same file read back, where the page
/// cache builds large folios (figures in bench/NOTES.md). Evicting first
/// gives every run the read path, as after a reboot.
void evictFromPageCache(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0)
    return;
  ::fdatasync(fd); // dirty pages are not dropped
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

std::string hostCpuName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos)
        return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  return "unknown CPU";
}

std::string utcNow() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", &tm);
  return text;
}

BenchResults runBenchmark(const BenchOptions &options,
                          const BenchProgress &progress) {
  BenchResults results;
  results.options = options;
  results.date = utcNow();
  results.cpu = hostCpuName();
  for (size_t i = 0; i < options.threads.size(); ++i)
    results.runs.push_back(benchThreads(options, options.threads[i],
                                        /*verify=*/i == 0, results, progress));
  return results;
}

} // namespace kiln::bench
