//===- ReportPieces.h - Numbers as kiln bench prints them -------*- C++ -*-===//
//
// Part of Kiln's benchmark library. What both reports (BenchReport.h, one
// sequence; BatchReport.h, batched decode) format the same way: a number
// with printf, a rate with its slowest and fastest runs beside it, and a
// cell's timed runs as JSON.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_BENCH_REPORTPIECES_H
#define KILN_BENCH_REPORTPIECES_H

#include "bench/BenchRunner.h"

#include <nlohmann/json.hpp>

#include <string>

namespace kiln::bench {

/// `value` printed with the printf format `fmt` ("%.1f").
std::string format(const char *fmt, double value);

/// "571.0", or "571.0 (563.2-575.1)" with the slowest and fastest runs'
/// rates when there were several: `work` per run over each time.
std::string rateWithSpread(double work, const Samples &s);

/// A cell's timed runs: every run's seconds, the best, worst and median.
nlohmann::json samplesJson(const Samples &s);

} // namespace kiln::bench

#endif // KILN_BENCH_REPORTPIECES_H
