//===- BatchReport.h - The report of a batched decode run -------*- C++ -*-===//
//
// Part of Kiln's benchmark library. Turns BatchResults into what `kiln bench
// --batch` prints: the usual header, lines saying what was run, what a step
// reads and computes, and the machine's limits, then a "batched decode"
// table with one row per batch size (aggregate decode tokens/s, its speedup
// over one sequence, the roofline the limits allow and the share of it
// reached, the step latency's p50 and p99, prefill tokens/s, the KV pool and
// the process's resident memory); and
// every number as JSON under a "batch" key. bench/README.md, "Batched
// decode", says what each number counts; test/tools/kiln-bench-batch.test
// checks the format.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_BENCH_BATCHREPORT_H
#define KILN_BENCH_BATCHREPORT_H

#include "bench/BatchRunner.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdio>
#include <string>

namespace kiln::bench {

/// The header, what was counted and the "batched decode" table, then with
/// --profile each batch size's kernel profile.
void printBatchTable(const BatchResults &results, std::FILE *out = stdout);

/// The settings, the artifact and the host, and under "batch" every batch
/// size's timed runs, step latencies, rates, memory and profile.
nlohmann::json batchReportJson(const BatchResults &results);

/// Writes batchReportJson to `path`; throws std::runtime_error if it cannot.
void writeBatchJson(const BatchResults &results, const std::string &path);

} // namespace kiln::bench

#endif // KILN_BENCH_BATCHREPORT_H
