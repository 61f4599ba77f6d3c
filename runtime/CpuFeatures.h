//===- CpuFeatures.h - What this CPU can run --------------------*- C++ -*-===//
//
// Part of Kiln. Generated CPU code is compiled for a target's ISA (avx2,
// avx512+bf16, ...); running it on a CPU without those instructions would die
// of SIGILL in the middle of a step. The runtime compares the features an
// artifact's manifest requires with these before it loads any code.
//
// Feature names are LLVM's (what passes/target/TargetDescription.h reads from
// llvm::sys::getHostCPUFeatures), read here with CPUID so the runtime needs
// no LLVM: avx2, fma, f16c, avx512f, avx512bw, avx512vl, avx512dq,
// avx512bf16, avx512vnni, avxvnni, amx-tile, amx-bf16, amx-int8. A feature
// counts only when the OS saves the registers it uses (XGETBV: ymm state for
// AVX, zmm and mask state for AVX-512, tile state for AMX); a hypervisor or
// kernel that disables them disables the feature. AMX's tile data state
// Linux grants per process on request (arch_prctl ARCH_REQ_XCOMP_PERM):
// reporting amx-* asks for it, and a refusal leaves them out.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_CPUFEATURES_H
#define KILN_RUNTIME_CPUFEATURES_H

#include <string>
#include <vector>

namespace kiln::runtime {

/// The environment variable that replaces detection: a comma-separated list
/// of feature names ("avx2,fma,f16c"), or "none" for no features. Tests use
/// it to make any host refuse an artifact. Unset or empty means detect.
constexpr const char *kCpuFeaturesEnv = "KILN_CPU_FEATURES";

/// The features of this CPU that Kiln's code may use, in the order listed
/// above, or the KILN_CPU_FEATURES override (as given, in its order, without
/// duplicates). Empty on non-x86 hosts.
std::vector<std::string> hostCpuFeatures();

/// What CPUID and XGETBV report, ignoring KILN_CPU_FEATURES.
std::vector<std::string> detectCpuFeatures();

/// The entries of `required` that `available` lacks, in `required`'s order,
/// each once.
std::vector<std::string>
missingCpuFeatures(const std::vector<std::string> &required,
                   const std::vector<std::string> &available);

/// missingCpuFeatures(required, hostCpuFeatures()).
std::vector<std::string>
missingCpuFeatures(const std::vector<std::string> &required);

} // namespace kiln::runtime

#endif // KILN_RUNTIME_CPUFEATURES_H
