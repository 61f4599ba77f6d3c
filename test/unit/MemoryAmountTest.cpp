//===- MemoryAmountTest.cpp - Memory budgets as bytes or a share ----------===//
//
// runtime/MemoryAmount.h: what `--kv-memory` accepts, what it refuses and
// what a percentage resolves to.
//
//===----------------------------------------------------------------------===//

#include "runtime/MemoryAmount.h"

#include <gtest/gtest.h>

#include <stdexcept>

using kiln::runtime::MemoryAmount;

namespace {

TEST(MemoryAmount, BytesWithUnits) {
  EXPECT_EQ(MemoryAmount::parse("4096").bytes, 4096);
  EXPECT_EQ(MemoryAmount::parse("100KiB").bytes, 100 * 1024);
  EXPECT_EQ(MemoryAmount::parse("512 MiB").bytes, 512ll << 20);
  EXPECT_EQ(MemoryAmount::parse("2GiB").bytes, 2ll << 30);
  EXPECT_EQ(MemoryAmount::parse("2g").bytes, 2ll << 30);
  EXPECT_EQ(MemoryAmount::parse("1.5GB").bytes, 1500000000ll);
  EXPECT_EQ(MemoryAmount::parse("3kb").bytes, 3000);
  EXPECT_EQ(MemoryAmount::parse(" 7B ").bytes, 7);
  EXPECT_EQ(MemoryAmount::parse("2GiB").percent, 0.0);
  EXPECT_EQ(MemoryAmount::parse("2GiB").resolve(1000), 2ll << 30);
}

TEST(MemoryAmount, PercentOfAvailable) {
  MemoryAmount a = MemoryAmount::parse("40%");
  EXPECT_EQ(a.percent, 40.0);
  EXPECT_EQ(a.resolve(1000), 400);
  EXPECT_EQ(MemoryAmount::parse("100%").resolve(1 << 20), 1 << 20);
  EXPECT_EQ(MemoryAmount::parse("0.5%").resolve(1000), 5);
  // This machine's MemAvailable: positive, and a share of it no larger.
  int64_t available = kiln::runtime::availableMemoryBytes();
  EXPECT_GT(available, 0);
  int64_t tenth = MemoryAmount::parse("10%").resolve();
  EXPECT_GT(tenth, 0);
  EXPECT_LE(tenth, available);
}

TEST(MemoryAmount, RefusesWhatIsNotAnAmount) {
  for (const char *bad : {"", "  ", "GiB", "-1GiB", "+5", "12 parsecs", "0%",
                          "150%", "-3%", "1e30TiB", "nan", "inf"}) {
    SCOPED_TRACE(bad);
    try {
      MemoryAmount::parse(bad);
      ADD_FAILURE() << "accepted";
    } catch (const std::invalid_argument &e) {
      std::string what = e.what();
      EXPECT_NE(what.find(std::string("'") + bad + "'"), std::string::npos)
          << what;
      EXPECT_NE(what.find("expected bytes with an optional unit"),
                std::string::npos)
          << what;
    }
  }
}

} // namespace
