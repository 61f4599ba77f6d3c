//===- BenchReport.h - The report of a benchmark run ------------*- C++ -*-===//
//
// Part of Kiln's benchmark library. Turns BenchResults into what `kiln
// bench` prints: a Markdown table with one column per thread count, each
// speed next to the fraction of its limit (decode's bytes over the read
// bandwidth, prefill's FLOPs over the FMA or bf16 dot peak) and the roofline
// that limit allows; per-kernel profile tables; every number as JSON; a
// gnuplot plot of tokens/s against threads. bench/README.md says what each
// row and field means. test/tools/kiln-bench.test checks the table's format;
// bench/compare.py and bench/before_after.py read the JSON.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_BENCH_BENCHREPORT_H
#define KILN_BENCH_BENCHREPORT_H

#include "bench/BenchRunner.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdio>
#include <string>

namespace kiln::bench {

/// The report's first lines: the command, the date, the host (CPU and its
/// features) and the artifact (version, target, weights, model shape).
void printReportHeader(const BenchOptions &options, const std::string &date,
                       const std::string &cpu,
                       const runtime::ArtifactManifest &manifest,
                       std::FILE *out = stdout);

/// The header (command, host, artifact, what is counted) and the table of
/// limits and speeds, then a warning for any decode faster than its read
/// probe (the probe did not bound it).
void printTable(const BenchResults &results, std::FILE *out = stdout);

/// One table per profiled run (BenchOptions::profile): each kernel's time
/// and share of the step, slowest first.
void printProfiles(const BenchResults &results, std::FILE *out = stdout);

/// Every number: the settings, the artifact and model counts, the host, how
/// each figure is counted, and per thread count the machine's limits, every
/// timed run's seconds and the rates derived from them.
nlohmann::json reportJson(const BenchResults &results);

/// Writes reportJson to `path`; throws std::runtime_error if it cannot.
void writeJson(const BenchResults &results, const std::string &path);

/// Throws std::runtime_error saying how to install gnuplot when it is not on
/// PATH; call before spending minutes on a run that ends in a plot.
void requireGnuplot();

/// Draws tokens/s against threads, each figure with its roofline, into the
/// PNG `path` with gnuplot. Throws std::runtime_error if gnuplot fails.
void drawPlot(const BenchResults &results, const std::string &path);

} // namespace kiln::bench

#endif // KILN_BENCH_BENCHREPORT_H
