//===- WeightPrefetch.h - Software prefetch in decode GEMMs -----*- C++ -*-===//
//
// Part of Kiln. A decode GEMM streams each weight once, from memory, and
// computes between loads. How it should ask for the weights ahead of its
// loads (Gemm.h, prefetcht1 16 KiB ahead) depends on the CPU, not on the ISA
// the kernels were compiled for, so the runtime decides per machine and
// tells each step (kiln_step_args::weight_prefetch):
//
//   - lines: every cache line. Intel, and any vendor not measured. On a
//     2-core AVX-512 Xeon the hardware streamer alone left decode loops at
//     about 70% of a plain read, and it stops at every 4 KiB page
//     (bench/NOTES.md v17).
//   - pages: only the first line of each 4 KiB page. AMD. On Zen 5 a plain
//     stream reads as if the hardware prefetcher stopped at every page,
//     even within huge pages: one request a page made a plain read about
//     30% faster, and the 1B Q4_0 decode went from 67-75% of the read probe
//     with none to 87-92% (1 and 2 threads, each run against the probe
//     around it; v25). Zen 2-4 have not been measured.
//   - none: no software prefetch; no CPU by default. On Zen 5 a request
//     a line made the loops slower than none (v23).
//
// Until v25 every artifact compiled by GCC (Debian's c++) ran without the
// one-row loops' prefetches, whatever the mode: GCC deleted them as dead
// code (Vector.h, prefetch_line). The v23 and v24 end-to-end comparisons
// of the modes on Zen 5 compared nothing; the rule above rests on v25's.
//
// It governs the float, bf16, Q8_0 and Q4_0 loops. K-quant loops, which
// compute at about half memory's rate, take lines on every CPU: on Zen 5 a
// 1B Q4_K_M model decoded 4-23% slower without (v23); pages have not been
// measured for them.
//
// KILN_WEIGHT_PREFETCH=none|lines|pages replaces the rule, to compare them
// on one machine. The choice never changes a result: it only asks for cache
// lines.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_WEIGHTPREFETCH_H
#define KILN_RUNTIME_WEIGHTPREFETCH_H

#include "runtime/StepABI.h"

#include <cstdint>
#include <string>

namespace kiln::runtime {

/// kiln_step_args::weight_prefetch.
enum class WeightPrefetch : int32_t {
  None = KILN_WEIGHT_PREFETCH_NONE,
  Lines = KILN_WEIGHT_PREFETCH_LINES,
  Pages = KILN_WEIGHT_PREFETCH_PAGES,
};

/// "none", "lines" or "pages".
const char *weightPrefetchName(WeightPrefetch mode);

/// The environment variable that replaces the rule: "none", "lines" or
/// "pages". Unset or empty means the rule.
constexpr const char *kWeightPrefetchEnv = "KILN_WEIGHT_PREFETCH";

/// What the rule above says for a CPUID vendor string ("GenuineIntel",
/// "AuthenticAMD", ...).
WeightPrefetch weightPrefetchForVendor(const std::string &vendor);

/// This CPU's CPUID vendor string; empty on non-x86 hosts.
std::string hostCpuVendor();

/// How this machine's decode GEMMs prefetch their weights: the
/// KILN_WEIGHT_PREFETCH override, else the rule for hostCpuVendor(). Throws
/// std::invalid_argument naming the variable when it is set to anything
/// but "none", "lines", "pages" or "".
WeightPrefetch hostWeightPrefetch();

/// One line for reports: the mode and why ("pages (the rule for
/// AuthenticAMD)", "none (KILN_WEIGHT_PREFETCH=none)").
std::string describeHostWeightPrefetch();

} // namespace kiln::runtime

#endif // KILN_RUNTIME_WEIGHTPREFETCH_H
