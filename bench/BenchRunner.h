//===- BenchRunner.h - Timing prefill and decode of an artifact -*- C++ -*-===//
//
// Part of Kiln's benchmark library. Times prefill and decode of a compiled
// artifact at each thread count asked for, and measures the machine's limits
// in the same run on the model's own thread pool (runtime/MachineProbe.h):
// a shared host's bandwidth drifts from minute to minute, so a limit
// measured at another time is no limit. Each figure is `repeat` timed runs
// after a warm-up, reported as their median with the slowest and fastest
// beside it (bench/README.md, "Protocol"). Per-kernel profiles run
// separately, so their clock reads do not touch the timed figures.
//
// The results are plain data; BenchReport.h prints them.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_BENCH_BENCHRUNNER_H
#define KILN_BENCH_BENCHRUNNER_H

#include "bench/StepWork.h"
#include "runtime/CompiledModel.h"
#include "runtime/MachineProbe.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kiln::bench {

struct BenchOptions {
  std::string artifact;
  std::vector<int64_t> promptTokens = {128, 512};
  int64_t genTokens = 128;
  std::vector<int> threads; ///< empty: 1 and every core this process may use
  int repeat = 5;
  uint64_t seed = 1; ///< of the random token ids
  /// Bytes of each triad array of the bandwidth probes (the read probe
  /// reads 3x this); 0: the probe's default (far larger than the caches).
  /// Tests pass a small size.
  int64_t triadArrayBytes = 0;
  std::string json; ///< write every number here
  std::string plot; ///< draw tokens/s vs threads here (PNG, gnuplot)
  bool profile = false;
  /// Leave the artifact's pages in the page cache as they are, instead of
  /// evicting them before each load (see bench/README.md, "Page cache").
  bool keepPageCache = false;
  /// Read the weights in the artifact's mapping instead of the copy in
  /// transparent huge pages the runtime makes by default
  /// (runtime::CompiledModelOptions::weightsInHugePages).
  bool mappedWeights = false;
  /// Batch sizes of the batched decode (bench/BatchRunner.h); empty: the
  /// usual single-sequence figures instead.
  std::vector<int> batch;
  /// With batch: the KV cache's block pool, as `kiln run --kv-memory` takes
  /// it (runtime/MemoryAmount.h); empty: enough for every sequence.
  std::string kvMemory;
  std::string command; ///< the command line, quoted in the report's header
};

/// The median of `values` (not empty): the middle one, or the mean of the
/// two middle ones.
double medianOf(std::vector<double> values);

/// The read probe's better sample of the two taken right before and right
/// after each of `runs` timed runs, in the order run, where `samples` is the
/// probe's first sample and then one such pair a run; else empty. Both
/// reports quote each run against the memory it got.
std::vector<double> bandwidthAroundRuns(const std::vector<double> &samples,
                                        size_t runs);

/// The timed runs of one cell, in seconds.
struct Samples {
  std::vector<double> seconds;
  double best() const;
  double worst() const;
  double median() const;
};

struct PrefillResult {
  int64_t promptTokens = 0;
  Samples samples;
  double flopsPerToken = 0;
};

/// One kernel's share of a profiled run: every call of it, all layers.
struct KernelTime {
  std::string kernel, op;
  double seconds = 0;
  int64_t calls = 0;
};

struct Profile {
  std::string what;  ///< "prefill of P tokens" or "decode of G tokens"
  int64_t steps = 0; ///< step-library calls profiled
  double seconds = 0;
  std::vector<KernelTime> kernels; ///< slowest first
};

/// The model's profile counters (CompiledModel::profile()), one a kernel
/// call of its step, in seconds: a snapshot for aggregateByKernel.
std::vector<double> profileSeconds(const runtime::CompiledModel &model);

/// Sums the time spent since the snapshot `before` by kernel: the call
/// name's prefix before ':' ("k03_gemm: kiln.fused_matmul at loc(...)"),
/// the layers' calls of one kernel together; `steps` steps ran. Slowest
/// first.
std::vector<KernelTime> aggregateByKernel(const runtime::CompiledModel &model,
                                          const std::vector<double> &before,
                                          int64_t steps);

/// Everything measured at one thread count.
struct ThreadResult {
  int threads = 0;
  runtime::MachineProbeResult machine;
  std::vector<PrefillResult> prefill; ///< one per BenchOptions::promptTokens
  Samples decode;
  /// The read probe's samples (bytes/s): its first, then one before and
  /// one after each timed decode run. machine.readBandwidth is the best.
  std::vector<double> readSamples;
  std::vector<Profile> profiles; ///< prefill, then decode; empty unless asked
};

/// A whole benchmark: the settings, what the artifact's step costs, and the
/// figures of every thread count.
struct BenchResults {
  BenchOptions options;
  /// The manifest as the loaded model describes it (the step library it
  /// runs).
  runtime::ArtifactManifest manifest;
  StepWork work;
  int64_t weightsSectionBytes = 0; ///< of the library the model runs
  bool weightsInHugePages = false; ///< the model's weights were copied there
  std::string date;                ///< "YYYY-MM-DD HH:MM UTC"
  std::string cpu;                 ///< the host CPU's model name
  std::vector<ThreadResult> runs;  ///< one per BenchOptions::threads
};

/// Receives one line of progress ("1 thread: decode of 128 tokens").
using BenchProgress = std::function<void(const std::string &)>;

/// Loads `options.artifact` once per entry of `options.threads` (which must
/// not be empty) with that many threads and times it. The options are taken
/// as checked against the artifact (lengths within its context). Throws
/// std::exception naming the file at fault.
BenchResults runBenchmark(const BenchOptions &options,
                          const BenchProgress &progress);

/// Writes back and drops the page cache's copy of `path`, so the load that
/// follows reads it from the file system. Best effort: on failure the pages
/// stay.
void evictFromPageCache(const std::string &path);

/// The host CPU's model name from /proc/cpuinfo ("unknown CPU" without it).
std::string hostCpuName();

/// Now, as "YYYY-MM-DD HH:MM UTC".
std::string utcNow();

} // namespace kiln::bench

#endif // KILN_BENCH_BENCHRUNNER_H
