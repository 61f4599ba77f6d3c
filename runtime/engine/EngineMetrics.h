//===- EngineMetrics.h - What an engine reports about itself ----*- C++ -*-===//
//
// Part of Kiln. A snapshot of the engine's state and counters, and the
// recorder that keeps the latency figures behind it. Latencies are kept two
// ways: cumulative histogram buckets over the engine's life (what a
// Prometheus scrape wants) and percentiles over the latest samples (what a
// person reading `kiln run`'s summary wants).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_ENGINE_ENGINEMETRICS_H
#define KILN_RUNTIME_ENGINE_ENGINEMETRICS_H

#include "runtime/engine/StepExecutor.h"

#include <chrono>
#include <cstdint>
#include <deque>
#include <vector>

namespace kiln::runtime {

/// Upper bounds, in seconds, of the latency histograms' buckets (the last,
/// +infinity, is implied).
const std::vector<double> &latencyBucketBounds();

struct LatencyStats {
  int64_t count = 0;
  double sumSeconds = 0;
  /// Percentiles over the latest kLatencyWindow samples; 0 without any.
  double p50 = 0, p90 = 0, p99 = 0;
  /// buckets[i]: samples <= latencyBucketBounds()[i] (cumulative); one more
  /// entry for all samples.
  std::vector<int64_t> buckets;

  double mean() const { return count ? sumSeconds / double(count) : 0; }
};

struct EngineMetrics {
  int32_t queued = 0;  ///< submitted and not yet running
  int32_t running = 0; ///< holding a KV cache slot
  /// The most sequences running at once after any step's plan.
  int32_t peakRunning = 0;
  KVCacheUsage kv;
  /// The most blocks in use after any step's plan (its tokens' room
  /// reserved).
  int32_t kvPeakUsedBlocks = 0;
  int64_t preemptions = 0;
  int64_t steps = 0;
  int64_t submitted = 0, finished = 0, cancelled = 0, failed = 0;
  int64_t promptTokens = 0, generatedTokens = 0;
  /// Generated tokens per second over the last few seconds of steps.
  double tokensPerSecond = 0;
  LatencyStats timeToFirstToken;  ///< submit to first token
  LatencyStats interTokenLatency; ///< between a request's tokens
  double uptimeSeconds = 0;
};

class LatencyRecorder {
public:
  static constexpr size_t kLatencyWindow = 4096;
  LatencyRecorder();
  void record(double seconds);
  /// Updates count, sum and buckets of `stats`, and with `percentiles` its
  /// percentiles too (sorting the window: worth doing less often).
  void fill(LatencyStats &stats, bool percentiles) const;

private:
  int64_t count = 0;
  double sum = 0;
  std::vector<int64_t> bucketCounts; ///< not cumulative
  std::deque<double> latest;
};

/// Generated tokens per second over a sliding window of steps.
class ThroughputRecorder {
public:
  explicit ThroughputRecorder(double windowSeconds = 5.0)
      : window(windowSeconds) {}
  void record(std::chrono::steady_clock::time_point end, int64_t tokens);
  double tokensPerSecond(std::chrono::steady_clock::time_point now) const;

private:
  struct Entry {
    std::chrono::steady_clock::time_point end;
    int64_t tokens;
  };
  double window;
  std::deque<Entry> entries;
};

} // namespace kiln::runtime

#endif // KILN_RUNTIME_ENGINE_ENGINEMETRICS_H
