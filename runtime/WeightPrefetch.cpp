//===- WeightPrefetch.cpp - Whether decode GEMMs prefetch in software -----===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "runtime/WeightPrefetch.h"

#include <cstdlib>
#include <cstring>
#include <stdexcept>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define KILN_HAVE_CPUID 1
#endif

namespace kiln::runtime {

namespace {

/// The override, if set: "on", "off", or "" (unset or empty).
std::string weightPrefetchOverride() {
  const char *value = std::getenv(kWeightPrefetchEnv);
  if (!value || !*value)
    return "";
  std::string v = value;
  if (v != "on" && v != "off")
    throw std::invalid_argument(std::string(kWeightPrefetchEnv) + "=" + v +
                                ": expected \"on\" or \"off\" (or unset, for "
                                "the rule for this CPU's vendor)");
  return v;
}

} // namespace

bool weightPrefetchForVendor(const std::string &vendor) {
  return vendor != "AuthenticAMD";
}

std::string hostCpuVendor() {
#ifdef KILN_HAVE_CPUID
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx))
    return "";
  // The 12 characters are in EBX, EDX, ECX order.
  char name[13];
  std::memcpy(name, &ebx, 4);
  std::memcpy(name + 4, &edx, 4);
  std::memcpy(name + 8, &ecx, 4);
  name[12] = '\0';
  return name;
#else
  return "";
#endif
}

bool hostWeightPrefetch() {
  std::string forced = weightPrefetchOverride();
  if (!forced.empty())
    return forced == "on";
  return weightPrefetchForVendor(hostCpuVendor());
}

std::string describeHostWeightPrefetch() {
  std::string forced = weightPrefetchOverride();
  if (!forced.empty())
    return forced + " (" + kWeightPrefetchEnv + "=" + forced + ")";
  std::string vendor = hostCpuVendor();
  bool on = weightPrefetchForVendor(vendor);
  return std::string(on ? "on" : "off") + " (the rule for " +
         (vendor.empty() ? std::string("this CPU") : vendor) + ")";
}

} // namespace kiln::runtime
