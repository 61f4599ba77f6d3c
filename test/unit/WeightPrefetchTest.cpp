//===- WeightPrefetchTest.cpp - The runtime's choice of weight prefetch ---===//
//
// Part of Kiln. runtime/WeightPrefetch.h: the rule by CPU vendor, the
// KILN_WEIGHT_PREFETCH override and its error. (That the choice never
// changes a GEMM's result, kiln-kernel-tests-* check: GemmBatchInvariance.)
//
//===----------------------------------------------------------------------===//

#include "runtime/WeightPrefetch.h"
#include "ScopedEnv.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>

using namespace kiln::runtime;
using kiln::test::ScopedEnv;

namespace {

TEST(WeightPrefetch, OffOnAmdOnElsewhere) {
  EXPECT_FALSE(weightPrefetchForVendor("AuthenticAMD"));
  EXPECT_TRUE(weightPrefetchForVendor("GenuineIntel"));
  EXPECT_TRUE(weightPrefetchForVendor(""));
  EXPECT_TRUE(weightPrefetchForVendor("SomeOtherCPU"));
}

TEST(WeightPrefetch, HostFollowsTheRuleForItsVendor) {
  ScopedEnv none(kWeightPrefetchEnv, nullptr);
  const std::string vendor = hostCpuVendor();
#if defined(__x86_64__) || defined(__i386__)
  EXPECT_EQ(vendor.size(), 12u) << "CPUID leaf 0 names 12 characters";
#endif
  EXPECT_EQ(hostWeightPrefetch(), weightPrefetchForVendor(vendor));
  const std::string line = describeHostWeightPrefetch();
  EXPECT_EQ(line.rfind(hostWeightPrefetch() ? "on (" : "off (", 0), 0u) << line;
}

TEST(WeightPrefetch, EnvironmentOverridesTheRule) {
  {
    ScopedEnv on(kWeightPrefetchEnv, "on");
    EXPECT_TRUE(hostWeightPrefetch());
    EXPECT_EQ(describeHostWeightPrefetch(), "on (KILN_WEIGHT_PREFETCH=on)");
  }
  {
    ScopedEnv off(kWeightPrefetchEnv, "off");
    EXPECT_FALSE(hostWeightPrefetch());
    EXPECT_EQ(describeHostWeightPrefetch(), "off (KILN_WEIGHT_PREFETCH=off)");
  }
  {
    ScopedEnv empty(kWeightPrefetchEnv, "");
    EXPECT_EQ(hostWeightPrefetch(), weightPrefetchForVendor(hostCpuVendor()));
  }
}

TEST(WeightPrefetch, AnythingButOnOrOffIsAClearError) {
  ScopedEnv bad(kWeightPrefetchEnv, "yes");
  try {
    hostWeightPrefetch();
    FAIL() << "KILN_WEIGHT_PREFETCH=yes was accepted";
  } catch (const std::invalid_argument &e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("KILN_WEIGHT_PREFETCH=yes"), std::string::npos) << what;
    EXPECT_NE(what.find("\"on\" or \"off\""), std::string::npos) << what;
  }
}

} // namespace
