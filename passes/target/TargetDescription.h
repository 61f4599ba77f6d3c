//===- TargetDescription.h - What Kiln compiles for -------------*- C++ -*-===//
//
// Part of Kiln. A target description is the handful of numbers tiling, memory
// planning and code generation choose by: for a CPU its ISA level and vector
// width, its cores and cache sizes; for a CUDA GPU its architecture, shared
// memory and registers. `--target SPEC` picks one (docs/targets.md):
//
//   native                          this machine's CPU, detected
//   portable | avx2 | avx512        a named CPU, e.g. avx512+bf16+vnni
//   cuda:sm_80 | sm_86 | sm_89 | sm_90
//   ...,key=value                   overrides: cores, l1d, l2, l3 (CPU);
//                                   smem, regs, sm_count (CUDA)
//
// Named targets have fixed numbers, taken from one common part each, so lit
// tests and tiling choices are the same on every machine:
//
//   portable  4 cores,  L1d 32 KiB, L2 1 MiB,   L3 32 MiB   no real part: a
//             conservative mid-range machine (x86's usual 32 KiB L1d, the
//             1 MiB L2 and 32 MiB L3 of Arm Neoverse N1 / AWS Graviton2)
//   avx2      8 cores,  L1d 32 KiB, L2 512 KiB, L3 32 MiB   one 8-core CCD of
//             AMD EPYC 7003 (Zen 3), the L3 those cores share
//   avx512    56 cores, L1d 48 KiB, L2 2 MiB,   L3 105 MiB  Intel Xeon
//             Platinum 8480+ (Sapphire Rapids); the same numbers with
//             +bf16, +vnni, +avxvnni, +amx-bf16 or +amx-int8
//   cuda:sm_80  A100:     163 KiB smem/block, 108 SMs
//   cuda:sm_86  A10:       99 KiB smem/block,  72 SMs
//   cuda:sm_89  L4:        99 KiB smem/block,  58 SMs
//   cuda:sm_90  H100 SXM/H200: 227 KiB smem/block, 132 SMs
//   (every CUDA target: 255 registers/thread, 65536 registers/SM, warp 32)
//
// `native` reads the ISA from CPUID (llvm::sys::getHostCPUFeatures), the
// cache sizes from /sys/devices/system/cpu/cpu0/cache and the physical core
// count from the OS; a cache level sysfs does not report takes the portable
// default, and the description says so in `notes`. CUDA targets are chosen
// by name here; `kiln compile --target cuda:native` asks the CUDA driver
// about device 0 and gives its name (codegen/driver, which may use the
// runtime's driver).
//
// This library uses LLVM Support but not MLIR, so tools and tests can use it
// without a context.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_TARGET_TARGETDESCRIPTION_H
#define KILN_PASSES_TARGET_TARGETDESCRIPTION_H

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace kiln::target {

/// How far up the x86 vector ISA ladder generated CPU code may go.
enum class CpuIsa {
  /// Scalar C++ the host compiler may auto-vectorise (any 64-bit CPU).
  Portable,
  /// AVX2 with FMA and F16C (Haswell, Zen 1 and later).
  AVX2,
  /// AVX-512 F+BW+VL+DQ (Skylake-SP, Zen 4 and later).
  AVX512,
};

struct CpuTarget {
  CpuIsa isa = CpuIsa::Portable;
  // Extensions; false where the ISA level does not have them. AVX2 and
  // AVX512 always have fma and f16c; on Portable they are what a host that
  // misses AVX2 still offers.
  bool fma = false, f16c = false;
  bool avx512bf16 = false; ///< vdpbf16ps: bf16 dot products (spec: +bf16).
  bool avx512vnni = false; ///< vpdpbusd on zmm: int8 dot products (+vnni).
  bool avxvnni = false;    ///< the same on ymm, VEX-encoded (+avxvnni).
  /// AMX tiles (amx-tile) with TDPBF16PS: bf16 GEMMs in tiles (+amx-bf16).
  bool amxBf16 = false;
  /// AMX tiles with TDPBSSD: Q8_0 / Q4_0 prefill GEMMs in tiles (+amx-int8).
  bool amxInt8 = false;
  /// 128 for Portable: SSE2 (the x86-64 baseline) and NEON are both 128 bits
  /// wide, so that is what auto-vectorised scalar code gets anywhere; 256 for
  /// AVX2, 512 for AVX512.
  unsigned vectorBits = 128;
  /// Physical cores (not hardware threads): GEMM kernels saturate a core's
  /// FMA units, so a second hyperthread adds little.
  unsigned cores = 1;
  /// L1d and L2 per core; L3 as one instance reports it: the cache a group
  /// of cores shares (a socket on most Intel parts, a CCD on AMD).
  uint64_t l1dBytes = 0, l2Bytes = 0, l3Bytes = 0;

  unsigned vectorFloats() const { return vectorBits / 32; }
};

struct CudaTarget {
  unsigned smMajor = 0, smMinor = 0;
  /// The most shared memory one block may use once it opts in
  /// (cudaFuncAttributeMaxDynamicSharedMemorySize), not the 48 KiB default.
  uint64_t sharedMemPerBlockBytes = 0;
  unsigned registersPerThread = 0, registersPerSM = 0, warpSize = 0;
  unsigned smCount = 0;
};

bool operator==(const CpuTarget &a, const CpuTarget &b);
bool operator==(const CudaTarget &a, const CudaTarget &b);

struct TargetDescription {
  /// The canonical ISA or architecture part of the spec: "avx2",
  /// "avx512+bf16+vnni", "cuda:sm_90". For `native`, what was detected.
  std::string name;
  std::variant<CpuTarget, CudaTarget> device;
  /// Descriptive only (not in spec(), not compared by ==): where the numbers
  /// come from, and anything detection or overrides changed.
  std::string origin;
  std::vector<std::string> notes;

  bool isCpu() const { return std::holds_alternative<CpuTarget>(device); }
  bool isCuda() const { return std::holds_alternative<CudaTarget>(device); }
  const CpuTarget &cpu() const { return std::get<CpuTarget>(device); }
  const CudaTarget &cuda() const { return std::get<CudaTarget>(device); }

  /// The spec that parseTarget() maps back to an identical description,
  /// every number spelled out, e.g.
  /// "avx512+bf16+vnni,cores=56,l1d=48KiB,l2=2MiB,l3=105MiB" or
  /// "cuda:sm_90,smem=227KiB,regs=255,sm_count=132".
  std::string spec() const;
};

/// Compares name and device (not origin or notes).
bool operator==(const TargetDescription &a, const TargetDescription &b);
inline bool operator!=(const TargetDescription &a, const TargetDescription &b) {
  return !(a == b);
}

/// Parses a target spec (grammar above and in docs/targets.md). Errors name
/// the part that is wrong and list what is accepted there.
llvm::Expected<TargetDescription> parseTarget(llvm::StringRef spec);

/// This machine's CPU (`native`).
TargetDescription detectHostCpu();

/// detectHostCpu() with the host's answers passed in, so tests can describe
/// machines they do not run on: `features` as getHostCPUFeatures gives them,
/// `cacheDir` laid out like /sys/devices/system/cpu/cpu0/cache (index*/
/// {level,type,size}), `cpuName` as getHostCPUName gives it.
TargetDescription describeHostCpu(const llvm::StringMap<bool> &features,
                                  llvm::StringRef cacheDir, unsigned cores,
                                  llvm::StringRef cpuName);

/// The named targets, in the order `kiln targets` lists them.
std::vector<std::string> namedTargets();

/// One line: vector width or architecture, cores, caches, origin.
std::string summarizeTarget(const TargetDescription &target);

/// A human-readable block, one property a line, ending with the spec.
void printTarget(llvm::raw_ostream &os, const TargetDescription &target);

} // namespace kiln::target

#endif // KILN_PASSES_TARGET_TARGETDESCRIPTION_H
