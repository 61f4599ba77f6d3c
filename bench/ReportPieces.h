//===- ReportPieces.h - Numbers as kiln bench prints them -------*- C++ -*-===//
//
// Part of Kiln's benchmark library. What both reports (BenchReport.h, one
// sequence; BatchReport.h, batched decode) format the same way: a number
// with printf, a rate with its slowest and fastest runs beside it, a
// cell's timed runs as JSON, where the weights were read, and a profile's
// table.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_BENCH_REPORTPIECES_H
#define KILN_BENCH_REPORTPIECES_H

#include "bench/BenchRunner.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>
#include <vector>

namespace kiln::bench {

/// `value` printed with the printf format `fmt` ("%.1f").
std::string format(const char *fmt, double value);

/// "571.0", or "571.0 (563.2-575.1)" with the slowest and fastest runs'
/// rates when there were several: `work` per run over each time.
std::string rateWithSpread(double work, const Samples &s);

/// Shares as "62%", or "62% (55-70%)" (median, lowest-highest) when there
/// are several; "-" when there are none.
std::string shareWithRange(const std::vector<double> &fractions);

/// A cell's timed runs: every run's seconds, the best, worst and median.
nlohmann::json samplesJson(const Samples &s);

/// Where the timed model read its weights, for the report's timing line:
/// "weights copied into transparent huge pages" or "weights read in the
/// artifact's mapping".
const char *weightPlacement(bool inHugePages);

/// A profile as a section: "## Profile, <who>: <what> (N steps, T ms)",
/// then a row per kernel (its time, share of the steps, calls) and the time
/// outside kernels.
void printProfile(const std::string &who, const Profile &p, std::FILE *out);

/// A profile as JSON: what, steps, seconds and the kernels' rows.
nlohmann::json profileJson(const Profile &p);

} // namespace kiln::bench

#endif // KILN_BENCH_REPORTPIECES_H
