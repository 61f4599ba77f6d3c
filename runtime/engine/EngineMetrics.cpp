//===- EngineMetrics.cpp - What an engine reports about itself ------------===//
//
// Part of Kiln. See EngineMetrics.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/engine/EngineMetrics.h"

#include <algorithm>
#include <cmath>

namespace kiln::runtime {

const std::vector<double> &latencyBucketBounds() {
  // From a fast decode step (about a millisecond) to a long queue.
  static const std::vector<double> bounds = {0.001, 0.0025, 0.005, 0.01, 0.025,
                                             0.05,  0.1,    0.25,  0.5,  1,
                                             2.5,   5,      10,    30,   60};
  return bounds;
}

LatencyRecorder::LatencyRecorder()
    : bucketCounts(latencyBucketBounds().size() + 1, 0) {}

void LatencyRecorder::record(double seconds) {
  ++count;
  sum += seconds;
  const std::vector<double> &bounds = latencyBucketBounds();
  size_t bucket = size_t(
      std::lower_bound(bounds.begin(), bounds.end(), seconds) - bounds.begin());
  ++bucketCounts[bucket];
  latest.push_back(seconds);
  if (latest.size() > kLatencyWindow)
    latest.pop_front();
}

void LatencyRecorder::fill(LatencyStats &s, bool percentiles) const {
  s.count = count;
  s.sumSeconds = sum;
  s.buckets.clear();
  int64_t cumulative = 0;
  for (int64_t n : bucketCounts)
    s.buckets.push_back(cumulative += n);
  if (percentiles && !latest.empty()) {
    std::vector<double> sorted(latest.begin(), latest.end());
    std::sort(sorted.begin(), sorted.end());
    // Nearest rank.
    auto at = [&](double q) {
      size_t rank = size_t(std::ceil(q * double(sorted.size())));
      return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
    };
    s.p50 = at(0.50);
    s.p90 = at(0.90);
    s.p99 = at(0.99);
  }
}

void ThroughputRecorder::record(std::chrono::steady_clock::time_point end,
                                int64_t tokens) {
  entries.push_back({end, tokens});
  while (entries.size() > 1 &&
         std::chrono::duration<double>(end - entries.front().end).count() >
             window)
    entries.pop_front();
}

double ThroughputRecorder::tokensPerSecond(
    std::chrono::steady_clock::time_point now) const {
  // The tokens of the steps that ended in the window after its first one,
  // over the time from the end of that first step to the end of the last:
  // whole steps only, so a window of one step says nothing (0).
  const Entry *first = nullptr, *last = nullptr;
  int64_t tokens = 0;
  for (const Entry &e : entries) {
    if (std::chrono::duration<double>(now - e.end).count() > window)
      continue;
    if (first)
      tokens += e.tokens;
    else
      first = &e;
    last = &e;
  }
  double span =
      first ? std::chrono::duration<double>(last->end - first->end).count() : 0;
  return span > 0 ? double(tokens) / span : 0;
}

} // namespace kiln::runtime
