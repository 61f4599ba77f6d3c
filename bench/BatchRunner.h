//===- BatchRunner.h - Timing batched decode of an artifact -----*- C++ -*-===//
//
// Part of Kiln's benchmark library. `kiln bench --batch 1,4,16` asks what
// serving several sequences at once buys: decode is bound by reading the
// weights, and a step that advances B sequences reads each weight once, so
// B sequences should decode in about the time of one. For each batch size
// B the artifact is loaded with a paged KV cache for B sequences of
// prompt + gen positions; B prompts are prefilled, one sequence a step, and
// then every decode step holds one token of every sequence. Each decode
// step is timed on its own: its latency is the inter-token latency every
// sequence sees. The same run measures the limits a step runs into (the
// GEMMs' compute peak once, the read bandwidth around every timed run), so
// each batch size is quoted against its roofline: once B sequences' tokens
// make the weights' arithmetic outlast their reading, batching stops
// paying. bench/README.md, "Batched decode", says what is counted.
//
// The results are plain data; BatchReport.h prints them.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_BENCH_BATCHRUNNER_H
#define KILN_BENCH_BATCHRUNNER_H

#include "bench/BenchRunner.h"
#include "bench/StepWork.h"
#include "runtime/MachineProbe.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::bench {

/// Everything measured at one batch size.
struct BatchResult {
  int batch = 0;
  /// Each timed run's prefill of all `batch` prompts.
  Samples prefill;
  /// Each timed run's `gen` decode steps, all together.
  Samples decode;
  /// Every timed decode step of every run, in order.
  std::vector<double> stepSeconds;
  /// Tokens one run decodes: batch x gen.
  int64_t decodeTokens = 0;
  /// Logit rows (of vocab floats each) the timed decode steps returned,
  /// all runs together: one a sequence a step.
  int64_t decodeLogitRows = 0;
  int64_t kvPoolBytes = 0; ///< the paged KV cache's block pool
  /// /proc/self/status after the runs, model still loaded: resident now
  /// (VmRSS) and the process's peak so far (VmHWM), in bytes.
  int64_t residentBytes = 0, peakResidentBytes = 0;

  /// The read probe's samples (bytes/s) on this batch size's model: its
  /// first, then one right before and one right after each timed run.
  std::vector<double> readSamples;

  /// With BenchOptions::profile: the kernels' time over one more, untimed
  /// run's decode steps (steps == 0 without).
  Profile profile;

  /// The q-quantile (0 < q <= 1) of stepSeconds, nearest rank.
  double stepPercentile(double q) const;
};

struct BatchResults {
  BenchOptions options;
  runtime::ArtifactManifest manifest; ///< as the loaded model describes it
  std::string date, cpu;
  int threads = 0;                 ///< the largest of options.threads
  int64_t promptTokens = 0;        ///< the first of options.promptTokens
  int64_t contextLength = 0;       ///< positions each sequence may reach: P + G
  bool weightsInHugePages = false; ///< the model's weights were copied there
  std::vector<BatchResult> batches; ///< one per options.batch, in order

  /// What a step of the artifact reads and computes (StepWork.h).
  StepWork work;
  /// The limits a batched step runs into, measured in the same run on as
  /// many threads as the model's (runtime/MachineProbe.h). Decode of one
  /// sequence is bound by reading the weights; as the batch grows, each weight
  /// read serves more tokens until the GEMMs' arithmetic binds instead. The
  /// compute limit is the GEMMs' own: the int8 dot peak for mostly
  /// quantized weights, the bf16 dot peak for bf16 dot products, else the
  /// FP32 FMA peak; the read bandwidth is the best sample of every batch
  /// size's probe.
  runtime::FmaPeakResult computePeak;
  std::string computePeakName; ///< "FMA peak", "bf16 dot peak", ...
  runtime::BandwidthResult readBandwidth;

  /// Bytes and FLOPs a decode step of `batch` sequences averages over the
  /// G timed steps (StepWork::batchStepBytes, batchStepFlops).
  double stepBytes(int batch) const;
  double stepFlops(int batch) const;
  /// The roofline: the most decode tokens/s B sequences could reach on
  /// this machine, B over the longer of a step's bytes at the read
  /// bandwidth and its FLOPs at the compute peak (memory and arithmetic
  /// fully overlapped); `computeBound` says which one binds.
  double rooflineTokensPerSecond(int batch, bool *computeBound = nullptr) const;
  /// The same at read bandwidth `bytesPerSecond`.
  double rooflineTokensPerSecond(int batch, double bytesPerSecond,
                                 bool *computeBound = nullptr) const;
  /// Each timed run of `b` against the roofline at the better of the two
  /// probe samples taken right before and right after it: what the kernels
  /// made of the memory they got, whatever the host's bandwidth did
  /// between batch sizes. Empty unless the samples are the first one and
  /// one pair a run.
  std::vector<double> pairedRooflineFractions(const BatchResult &b) const;

  /// The batch of one sequence when it was measured, else null: the
  /// speedups are over it.
  const BatchResult *single() const;
};

/// Loads `options.artifact` once per entry of `options.batch` with
/// maxSequences = B and times B prompts of the first promptTokens length
/// and genTokens decode steps of B tokens, `repeat` times after a short
/// warm-up, at the largest of `options.threads` (which must not be empty).
/// The options are taken as checked (P + G within the artifact's context).
/// Throws std::exception naming the file at fault, or a step returning
/// other than one row of logits for each sequence.
BatchResults runBatchedDecode(const BenchOptions &options,
                              const BenchProgress &progress);

} // namespace kiln::bench

#endif // KILN_BENCH_BATCHRUNNER_H
