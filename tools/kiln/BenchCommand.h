//===- BenchCommand.h - kiln bench ------------------------------*- C++ -*-===//
//
// Part of Kiln's command line. `kiln bench ARTIFACT` times prefill and
// decode of a compiled artifact at several thread counts and prompt lengths
// and quotes each figure against limits measured in the same run
// (runtime/MachineProbe.h): decode's weight traffic against the read
// bandwidth, prefill's FLOPs against the FMA peak. Each figure is the median
// of --repeat timed runs, the slowest and fastest beside it. A table on stdout;
// all numbers as JSON (--json), a plot (--plot, with gnuplot) and per-kernel
// profiles (--profile) on request. bench/README.md says what each number
// counts.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_BENCHCOMMAND_H
#define KILN_TOOLS_KILN_BENCHCOMMAND_H

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

struct BenchOptions {
  std::string artifact;
  std::vector<int64_t> promptTokens = {128, 512};
  int64_t genTokens = 128;
  std::vector<int> threads; ///< empty: 1 and every core this process may use
  int repeat = 5;
  uint64_t seed = 1; ///< of the random token ids
  /// Bytes of each triad array of the bandwidth probes (the read probe
  /// reads 3x this); 0: the probe's default (far larger than the caches).
  /// Tests pass a small size.
  int64_t triadArrayBytes = 0;
  std::string json; ///< write every number here
  std::string plot; ///< draw tokens/s vs threads here (PNG, gnuplot)
  bool profile = false;
  /// Leave the artifact's pages in the page cache as they are, instead of
  /// evicting them before each load (see bench/README.md, "Page cache").
  bool keepPageCache = false;
  std::string command; ///< the command line, quoted in the report's header
};

/// Runs the benchmark and prints the report; throws std::exception naming
/// the option or file at fault.
int runBench(const BenchOptions &options);

} // namespace kiln

#endif // KILN_TOOLS_KILN_BENCHCOMMAND_H
