//===- PrometheusMetrics.h - /metrics in Prometheus text format -*- C++ -*-===//
//
// Part of Kiln's server (docs/server.md lists every name). The engine's
// metrics snapshot and the server's own counters, in the Prometheus text
// exposition format (version 0.0.4): `kiln_` names, base units (seconds,
// bytes), counters ending in `_total`, histograms as cumulative `_bucket`
// lines with `le` labels plus `_sum` and `_count`.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SERVER_PROMETHEUSMETRICS_H
#define KILN_RUNTIME_SERVER_PROMETHEUSMETRICS_H

#include "runtime/engine/EngineMetrics.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>

namespace kiln::runtime::server {

/// What the server counts beside the engine.
struct ServerStats {
  /// HTTP responses by (endpoint, status): endpoint is the route
  /// ("/v1/completions") or "other" for paths without one.
  std::map<std::pair<std::string, int>, int64_t> responses;
  int32_t httpInFlight = 0; ///< requests being answered now
  bool ready = false;       ///< what /health says
  int64_t residentBytes = 0;
};

/// Resident memory of this process in bytes (/proc/self/statm), 0 when it
/// cannot be read.
int64_t residentMemoryBytes();

/// The exposition text, with a # HELP and # TYPE line for each metric.
std::string formatPrometheus(const EngineMetrics &engine,
                             const ServerStats &server);

} // namespace kiln::runtime::server

#endif // KILN_RUNTIME_SERVER_PROMETHEUSMETRICS_H
