//===- PrometheusMetrics.cpp - /metrics in Prometheus text format ---------===//
//
// Part of Kiln's server. See PrometheusMetrics.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/server/PrometheusMetrics.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

namespace kiln::runtime::server {

int64_t residentMemoryBytes() {
  // statm: size resident shared text lib data dt, in pages.
  std::FILE *f = std::fopen("/proc/self/statm", "r");
  if (!f)
    return 0;
  long long size = 0, resident = 0;
  int read = std::fscanf(f, "%lld %lld", &size, &resident);
  std::fclose(f);
  if (read != 2)
    return 0;
  return int64_t(resident) * int64_t(sysconf(_SC_PAGESIZE));
}

namespace {

/// Prometheus floats: shortest round-trip text, "+Inf" for infinity.
std::string number(double v) {
  char text[32];
  // Counts print as integers (1234567, not 1.234567e+06).
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(text, sizeof text, "%.0f", v);
    return text;
  }
  std::snprintf(text, sizeof text, "%.17g", v);
  // Prefer the shortest text that reads back the same (0.001, not
  // 0.00100000000000000002).
  for (int digits = 1; digits < 17; ++digits) {
    char shorter[32];
    std::snprintf(shorter, sizeof shorter, "%.*g", digits, v);
    if (std::strtod(shorter, nullptr) == v)
      return shorter;
  }
  return text;
}

class Writer {
public:
  void header(const char *name, const char *type, const char *help) {
    out += "# HELP ";
    out += name;
    out += ' ';
    out += help;
    out += "\n# TYPE ";
    out += name;
    out += ' ';
    out += type;
    out += '\n';
  }
  void sample(const std::string &name, double value,
              const std::string &labels = "") {
    out += name;
    if (!labels.empty())
      out += "{" + labels + "}";
    out += ' ';
    out += number(value);
    out += '\n';
  }
  void metric(const char *name, const char *type, const char *help,
              double value) {
    header(name, type, help);
    sample(name, value);
  }
  void histogram(const char *name, const char *help, const LatencyStats &s) {
    header(name, "histogram", help);
    const std::vector<double> &bounds = latencyBucketBounds();
    for (size_t i = 0; i < bounds.size(); ++i)
      sample(std::string(name) + "_bucket",
             double(i < s.buckets.size() ? s.buckets[i] : 0),
             "le=\"" + number(bounds[i]) + "\"");
    sample(std::string(name) + "_bucket", double(s.count), "le=\"+Inf\"");
    sample(std::string(name) + "_sum", s.sumSeconds);
    sample(std::string(name) + "_count", double(s.count));
  }
  std::string out;
};

} // namespace

std::string formatPrometheus(const EngineMetrics &m, const ServerStats &s) {
  Writer w;
  w.header("kiln_http_requests_total", "counter",
           "HTTP responses by endpoint and status code.");
  for (const auto &[key, count] : s.responses)
    w.sample("kiln_http_requests_total", double(count),
             "endpoint=\"" + key.first + "\",status=\"" +
                 std::to_string(key.second) + "\"");
  w.metric("kiln_http_requests_in_flight", "gauge",
           "HTTP requests being answered.", s.httpInFlight);
  w.metric("kiln_ready", "gauge",
           "1 when the server takes requests (/health is 200), else 0.",
           s.ready ? 1 : 0);

  w.histogram("kiln_time_to_first_token_seconds",
              "Time from a request's submission to its first token.",
              m.timeToFirstToken);
  w.histogram("kiln_inter_token_latency_seconds",
              "Time between consecutive tokens of a request.",
              m.interTokenLatency);

  w.metric("kiln_prompt_tokens_total", "counter",
           "Prompt tokens taken by the engine.", double(m.promptTokens));
  w.metric("kiln_generation_tokens_total", "counter", "Tokens generated.",
           double(m.generatedTokens));
  w.header("kiln_engine_requests_total", "counter",
           "Engine requests by outcome (submitted, finished, cancelled, "
           "failed).");
  w.sample("kiln_engine_requests_total", double(m.submitted),
           "outcome=\"submitted\"");
  w.sample("kiln_engine_requests_total", double(m.finished),
           "outcome=\"finished\"");
  w.sample("kiln_engine_requests_total", double(m.cancelled),
           "outcome=\"cancelled\"");
  w.sample("kiln_engine_requests_total", double(m.failed),
           "outcome=\"failed\"");

  w.metric("kiln_requests_waiting", "gauge",
           "Requests queued, not yet running (the wait queue's length).",
           m.queued);
  w.metric("kiln_requests_running", "gauge",
           "Sequences running (holding a KV cache slot).", m.running);
  w.metric("kiln_requests_running_peak", "gauge",
           "The most sequences running at once since the start.",
           m.peakRunning);
  w.metric("kiln_kv_blocks_used", "gauge", "KV cache blocks in use.",
           m.kv.usedBlocks);
  w.metric("kiln_kv_blocks_free", "gauge", "KV cache blocks free.",
           m.kv.freeBlocks);
  w.metric("kiln_kv_blocks_cached", "gauge",
           "KV cache blocks held only by the prefix cache (reclaimable).",
           m.kv.cachedBlocks);
  w.metric("kiln_kv_blocks_total", "gauge", "KV cache blocks in the pool.",
           m.kv.totalBlocks);
  w.metric("kiln_kv_blocks_used_peak", "gauge",
           "The most KV cache blocks in use after any step's plan.",
           m.kvPeakUsedBlocks);
  w.metric("kiln_preemptions_total", "counter",
           "Sequences preempted for want of KV cache room.",
           double(m.preemptions));
  w.metric("kiln_engine_steps_total", "counter", "Engine steps run.",
           double(m.steps));
  w.metric("kiln_generation_tokens_per_second", "gauge",
           "Tokens generated per second over the last few seconds.",
           m.tokensPerSecond);
  w.metric("kiln_resident_memory_bytes", "gauge",
           "Resident memory of the server process.", double(s.residentBytes));
  w.metric("kiln_uptime_seconds", "gauge", "Seconds since the engine started.",
           m.uptimeSeconds);
  return w.out;
}

} // namespace kiln::runtime::server
