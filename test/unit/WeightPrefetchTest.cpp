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

TEST(WeightPrefetch, PagesOnAmdLinesElsewhere) {
  EXPECT_EQ(weightPrefetchForVendor("AuthenticAMD"), WeightPrefetch::Pages);
  EXPECT_EQ(weightPrefetchForVendor("GenuineIntel"), WeightPrefetch::Lines);
  EXPECT_EQ(weightPrefetchForVendor(""), WeightPrefetch::Lines);
  EXPECT_EQ(weightPrefetchForVendor("SomeOtherCPU"), WeightPrefetch::Lines);
}

TEST(WeightPrefetch, ModesAreTheStepAbiValues) {
  EXPECT_EQ(int32_t(WeightPrefetch::None), KILN_WEIGHT_PREFETCH_NONE);
  EXPECT_EQ(int32_t(WeightPrefetch::Lines), KILN_WEIGHT_PREFETCH_LINES);
  EXPECT_EQ(int32_t(WeightPrefetch::Pages), KILN_WEIGHT_PREFETCH_PAGES);
  EXPECT_STREQ(weightPrefetchName(WeightPrefetch::None), "none");
  EXPECT_STREQ(weightPrefetchName(WeightPrefetch::Lines), "lines");
  EXPECT_STREQ(weightPrefetchName(WeightPrefetch::Pages), "pages");
}

TEST(WeightPrefetch, HostFollowsTheRuleForItsVendor) {
  ScopedEnv none(kWeightPrefetchEnv, nullptr);
  const std::string vendor = hostCpuVendor();
#if defined(__x86_64__) || defined(__i386__)
  EXPECT_EQ(vendor.size(), 12u) << "CPUID leaf 0 names 12 characters";
#endif
  EXPECT_EQ(hostWeightPrefetch(), weightPrefetchForVendor(vendor));
  const std::string line = describeHostWeightPrefetch();
  EXPECT_EQ(line.rfind(std::string(weightPrefetchName(hostWeightPrefetch())) +
                           " (the rule for ",
                       0),
            0u)
      << line;
}

TEST(WeightPrefetch, EnvironmentOverridesTheRule) {
  for (WeightPrefetch mode :
       {WeightPrefetch::None, WeightPrefetch::Lines, WeightPrefetch::Pages}) {
    const std::string name = weightPrefetchName(mode);
    ScopedEnv forced(kWeightPrefetchEnv, name.c_str());
    EXPECT_EQ(hostWeightPrefetch(), mode) << name;
    EXPECT_EQ(describeHostWeightPrefetch(),
              name + " (KILN_WEIGHT_PREFETCH=" + name + ")");
  }
  ScopedEnv empty(kWeightPrefetchEnv, "");
  EXPECT_EQ(hostWeightPrefetch(), weightPrefetchForVendor(hostCpuVendor()));
}

TEST(WeightPrefetch, AnythingElseIsAClearError) {
  for (const char *bad : {"yes", "on", "Pages"}) {
    ScopedEnv forced(kWeightPrefetchEnv, bad);
    try {
      hostWeightPrefetch();
      ADD_FAILURE() << "KILN_WEIGHT_PREFETCH=" << bad << " was accepted";
    } catch (const std::invalid_argument &e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(std::string("KILN_WEIGHT_PREFETCH=") + bad),
                std::string::npos)
          << what;
      EXPECT_NE(what.find("\"none\", \"lines\" or \"pages\""),
                std::string::npos)
          << what;
    }
  }
}

} // namespace
