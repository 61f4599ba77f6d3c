//===- BenchCommand.h - kiln bench ------------------------------*- C++ -*-===//
//
// Part of Kiln's command line. `kiln bench ARTIFACT` times prefill and
// decode of a compiled artifact at several thread counts and prompt lengths
// and quotes each figure against limits measured in the same run: a table on
// stdout; all numbers as JSON (--json), a plot (--plot, with gnuplot) and
// per-kernel profiles (--profile) on request. With --batch 1,4,16 it times
// batched decode instead: B sequences decoding together, a row per B. The
// benchmark itself is the bench/ library (cost model, timing, report); this
// is its command-line glue: defaults, checks of the options against the
// artifact, progress on stderr. bench/README.md says what each number
// counts.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_BENCHCOMMAND_H
#define KILN_TOOLS_KILN_BENCHCOMMAND_H

#include "bench/BenchRunner.h"

namespace kiln {

using bench::BenchOptions;

/// Runs the benchmark and prints the report; throws std::exception naming
/// the option or file at fault.
int runBench(const BenchOptions &options);

} // namespace kiln

#endif // KILN_TOOLS_KILN_BENCHCOMMAND_H
