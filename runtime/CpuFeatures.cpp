//===- CpuFeatures.cpp - What this CPU can run ----------------------------===//
//
// Part of Kiln. Bit positions are from the Intel SDM, volume 2, CPUID.
//
//===----------------------------------------------------------------------===//

#include "runtime/CpuFeatures.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define KILN_HAVE_CPUID 1
#endif
#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#define KILN_HAVE_ARCH_PRCTL 1
#endif

namespace kiln::runtime {

namespace {

#ifdef KILN_HAVE_CPUID
/// XCR0: which register state the OS saves on a context switch. Written as
/// inline assembly because the _xgetbv intrinsic needs -mxsave, which would
/// let the compiler use XSAVE elsewhere in this file.
uint64_t readXcr0() {
  uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

bool bit(uint32_t reg, int n) { return (reg >> n) & 1u; }
#endif

/// Asks Linux for the AMX tile data state (XFEATURE_XTILEDATA, 18) for this
/// process: without it the first tile instruction faults. Idempotent.
bool requestTileData() {
#ifdef KILN_HAVE_ARCH_PRCTL
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

std::string trim(const std::string &s) {
  size_t begin = s.find_first_not_of(" \t");
  if (begin == std::string::npos)
    return "";
  size_t end = s.find_last_not_of(" \t");
  return s.substr(begin, end - begin + 1);
}

} // namespace

std::vector<std::string> detectCpuFeatures() {
  std::vector<std::string> features;
#ifdef KILN_HAVE_CPUID
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx))
    return features;
  const bool fma = bit(ecx, 12), osxsave = bit(ecx, 27), avx = bit(ecx, 28),
             f16c = bit(ecx, 29);
  // XCR0 bits 1 and 2: SSE and AVX (ymm) state; 5, 6 and 7: opmask, upper
  // halves of zmm0-15, zmm16-31. Reading XCR0 faults unless OSXSAVE is set.
  const uint64_t xcr0 = osxsave ? readXcr0() : 0;
  const bool ymm = avx && (xcr0 & 0x6) == 0x6;
  const bool zmm = ymm && (xcr0 & 0xe6) == 0xe6;

  unsigned maxLeaf = __get_cpuid_max(0, nullptr);
  uint32_t leaf7b = 0, leaf7c = 0, leaf7d = 0, leaf7s1a = 0;
  if (maxLeaf >= 7) {
    unsigned maxSubleaf = 0;
    __cpuid_count(7, 0, maxSubleaf, ebx, ecx, edx);
    leaf7b = ebx;
    leaf7c = ecx;
    leaf7d = edx;
    if (maxSubleaf >= 1) {
      __cpuid_count(7, 1, eax, ebx, ecx, edx);
      leaf7s1a = eax;
    }
  }

  auto add = [&](bool present, const char *name) {
    if (present)
      features.push_back(name);
  };
  add(ymm && bit(leaf7b, 5), "avx2");
  add(ymm && fma, "fma");
  add(ymm && f16c, "f16c");
  add(zmm && bit(leaf7b, 16), "avx512f");
  add(zmm && bit(leaf7b, 30), "avx512bw");
  add(zmm && bit(leaf7b, 31), "avx512vl");
  add(zmm && bit(leaf7b, 17), "avx512dq");
  add(zmm && bit(leaf7s1a, 5), "avx512bf16");
  add(zmm && bit(leaf7c, 11), "avx512vnni");
  add(ymm && bit(leaf7s1a, 4), "avxvnni");
  // XCR0 bits 17 and 18: tile configuration and tile data. Linux sets both
  // but makes a process's first tile instruction fault (XFD) until it has
  // asked for the state (requestTileData).
  const bool tiles = zmm && bit(leaf7d, 24) && (xcr0 & 0x60000) == 0x60000 &&
                     requestTileData();
  add(tiles, "amx-tile");
  add(tiles && bit(leaf7d, 22), "amx-bf16");
  add(tiles && bit(leaf7d, 25), "amx-int8");
#endif
  return features;
}

std::vector<std::string> hostCpuFeatures() {
  const char *env = std::getenv(kCpuFeaturesEnv);
  if (!env || trim(env).empty())
    return detectCpuFeatures();
  std::vector<std::string> features;
  if (trim(env) == "none")
    return features;
  // Listed AMX still needs the OS's permission; without it, it is not there.
  auto granted = [](const std::string &name) {
    return name.rfind("amx-", 0) != 0 || requestTileData();
  };
  std::string list = env;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos)
      comma = list.size();
    std::string name = trim(list.substr(start, comma - start));
    if (!name.empty() &&
        std::find(features.begin(), features.end(), name) == features.end() &&
        granted(name))
      features.push_back(name);
    start = comma + 1;
  }
  return features;
}

std::vector<std::string>
missingCpuFeatures(const std::vector<std::string> &required,
                   const std::vector<std::string> &available) {
  std::vector<std::string> missing;
  for (const std::string &name : required)
    if (std::find(available.begin(), available.end(), name) ==
            available.end() &&
        std::find(missing.begin(), missing.end(), name) == missing.end())
      missing.push_back(name);
  return missing;
}

std::vector<std::string>
missingCpuFeatures(const std::vector<std::string> &required) {
  return missingCpuFeatures(required, hostCpuFeatures());
}

} // namespace kiln::runtime
