//===- WeightPrefetch.cpp - How decode GEMMs prefetch in software ---------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "runtime/WeightPrefetch.h"

#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define KILN_HAVE_CPUID 1
#endif

namespace kiln::runtime {

namespace {

/// The override, if set; nullopt when unset or empty.
std::optional<WeightPrefetch> weightPrefetchOverride() {
  const char *value = std::getenv(kWeightPrefetchEnv);
  if (!value || !*value)
    return std::nullopt;
  for (WeightPrefetch mode :
       {WeightPrefetch::None, WeightPrefetch::Lines, WeightPrefetch::Pages})
    if (std::strcmp(value, weightPrefetchName(mode)) == 0)
      return mode;
  throw std::invalid_argument(std::string(kWeightPrefetchEnv) + "=" + value +
                              ": expected \"none\", \"lines\" or \"pages\" "
                              "(or unset, for the rule for this CPU's vendor)");
}

} // namespace

const char *weightPrefetchName(WeightPrefetch mode) {
  switch (mode) {
  case WeightPrefetch::None:
    return "none";
  case WeightPrefetch::Lines:
    return "lines";
  case WeightPrefetch::Pages:
    return "pages";
  }
  return "unknown";
}

WeightPrefetch weightPrefetchForVendor(const std::string &vendor) {
  return vendor == "AuthenticAMD" ? WeightPrefetch::Pages
                                  : WeightPrefetch::Lines;
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

WeightPrefetch hostWeightPrefetch() {
  if (std::optional<WeightPrefetch> forced = weightPrefetchOverride())
    return *forced;
  return weightPrefetchForVendor(hostCpuVendor());
}

std::string describeHostWeightPrefetch() {
  if (std::optional<WeightPrefetch> forced = weightPrefetchOverride()) {
    std::string name = weightPrefetchName(*forced);
    return name + " (" + kWeightPrefetchEnv + "=" + name + ")";
  }
  std::string vendor = hostCpuVendor();
  return std::string(weightPrefetchName(weightPrefetchForVendor(vendor))) +
         " (the rule for " +
         (vendor.empty() ? std::string("this CPU") : vendor) + ")";
}

} // namespace kiln::runtime
