//===- WeightPrefetch.h - Software prefetch in decode GEMMs -----*- C++ -*-===//
//
// Part of Kiln. A decode GEMM streams each weight once, from memory, and
// computes between loads. Whether it should also ask for the lines 16 KiB
// ahead of its loads (prefetcht1, Gemm.h) depends on the CPU, not on the
// ISA the kernels were compiled for, so the runtime decides per machine and
// tells each step (kiln_step_args::weight_prefetch):
//
//   - Intel: on. On a 2-core AVX-512 Xeon the hardware streamer alone left
//     decode loops at about 70% of a plain read, and it stops at every
//     4 KiB page (bench/NOTES.md v17).
//   - AMD: off. On Zen 5 the software prefetch made the same loops slower:
//     from memory the 1-row Q4_0 loop 16-24 GB/s with it against 22-27
//     without, Q8_0 22-28 against 27-34, and from L3 and L2 too
//     (bench/NOTES.md v23). Zen 2-4 have not been measured.
//   - Anything else: on, the default the kernels were tuned with.
//
// It governs the float, bf16, Q8_0 and Q4_0 loops. K-quant loops, which
// compute at about half memory's rate, prefetch whatever it says: on Zen 5
// a 1B Q4_K_M model decoded 4-23% slower without (v23).
//
// KILN_WEIGHT_PREFETCH=on|off replaces the rule, to compare the two on one
// machine. The choice never changes a result: it only asks for cache lines.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_WEIGHTPREFETCH_H
#define KILN_RUNTIME_WEIGHTPREFETCH_H

#include <string>

namespace kiln::runtime {

/// The environment variable that replaces the rule: "on" or "off". Unset or
/// empty means the rule.
constexpr const char *kWeightPrefetchEnv = "KILN_WEIGHT_PREFETCH";

/// What the rule above says for a CPUID vendor string ("GenuineIntel",
/// "AuthenticAMD", ...).
bool weightPrefetchForVendor(const std::string &vendor);

/// This CPU's CPUID vendor string; empty on non-x86 hosts.
std::string hostCpuVendor();

/// Whether this machine's decode GEMMs prefetch their weights: the
/// KILN_WEIGHT_PREFETCH override, else the rule for hostCpuVendor(). Throws
/// std::invalid_argument naming the variable when it is set to anything
/// but "on", "off" or "".
bool hostWeightPrefetch();

/// One line for reports: "on" or "off", and why ("AMD: off by default",
/// "KILN_WEIGHT_PREFETCH=on").
std::string describeHostWeightPrefetch();

} // namespace kiln::runtime

#endif // KILN_RUNTIME_WEIGHTPREFETCH_H
