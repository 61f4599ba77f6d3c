//===- MachineProbeTest.cpp - The bandwidth and peak probes ---------------===//
//
// Part of Kiln's unit tests. Links only kiln_runtime. Runs the probes at
// small sizes, on one thread and on a pool, and checks that the figures are
// positive and finite and that the reported method (ISA, lanes, chains,
// array size) is consistent. Speeds are printed, never asserted: these
// arrays fit in the caches, and tests share the machine.
//
//===----------------------------------------------------------------------===//

#include "runtime/MachineProbe.h"
#include "ScopedEnv.h"

#include "runtime/CpuFeatures.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <unistd.h>

using namespace kiln::runtime;
using kiln::test::ScopedEnv;

namespace {

constexpr int64_t kSmallArray = 1 << 20; // 1 MiB: 4 chunks of the triad

TEST(MachineProbe, TriadBandwidthIsPositiveAndFinite) {
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    BandwidthResult r = measureTriadBandwidth(pool, kSmallArray, 2);
    EXPECT_TRUE(std::isfinite(r.bytesPerSecond)) << threads << " threads";
    EXPECT_GT(r.bytesPerSecond, 0) << threads << " threads";
    EXPECT_EQ(r.arrayBytes, kSmallArray);
    EXPECT_EQ(r.repetitions, 2);
    std::printf("triad, %d threads, 3 x 1 MiB: %.1f GB/s\n", threads,
                r.bytesPerSecond / 1e9);
  }
}

TEST(MachineProbe, TriadRoundsToWholeChunks) {
  ThreadPool pool(1);
  // Less than one chunk still runs one; sizes round down to whole chunks.
  EXPECT_EQ(measureTriadBandwidth(pool, 100, 1).arrayBytes, 256 * 1024);
  EXPECT_EQ(measureTriadBandwidth(pool, 3 * 256 * 1024 + 5, 1).arrayBytes,
            3 * 256 * 1024);
}

TEST(MachineProbe, ReadBandwidthIsPositiveAndFinite) {
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    BandwidthResult r = measureReadBandwidth(pool, 3 * kSmallArray, 2);
    EXPECT_TRUE(std::isfinite(r.bytesPerSecond)) << threads << " threads";
    EXPECT_GT(r.bytesPerSecond, 0) << threads << " threads";
    EXPECT_EQ(r.arrayBytes, 3 * kSmallArray);
    EXPECT_EQ(r.repetitions, 2);
    std::printf("read, %d threads, 3 MiB (%s%s): %.1f GB/s\n", threads,
                r.isa.c_str(), r.hugePages ? ", huge pages" : "",
                r.bytesPerSecond / 1e9);
  }
}

TEST(MachineProbe, ReadProbeFollowsTheCpu) {
  ThreadPool pool(1);
  // What CPUID reports and KILN_CPU_FEATURES (if set) allows.
  std::vector<std::string> detected = detectCpuFeatures(),
                           allowed = hostCpuFeatures();
  auto has = [&](const char *f) {
    return std::find(detected.begin(), detected.end(), f) != detected.end() &&
           std::find(allowed.begin(), allowed.end(), f) != allowed.end();
  };
  BandwidthResult r = measureReadBandwidth(pool, 100, 1);
  EXPECT_EQ(r.arrayBytes, 256 * 1024) << "at least one whole chunk";
  EXPECT_EQ(r.isa, has("avx512f") ? "avx512f"
                   : has("avx2")  ? "avx2"
                                  : "portable");

  // KILN_CPU_FEATURES narrows it to the portable loop.
  BandwidthResult portable;
  {
    ScopedEnv features(kCpuFeaturesEnv, "none");
    portable = measureReadBandwidth(pool, 100, 1);
  }
  EXPECT_EQ(portable.isa, "portable");
  EXPECT_GT(portable.bytesPerSecond, 0);
}

TEST(MachineProbe, FmaPeakIsPositiveAndFinite) {
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    FmaPeakResult r = measureFmaPeak(pool, 1000, 2);
    EXPECT_TRUE(std::isfinite(r.flopsPerSecond)) << threads << " threads";
    EXPECT_GT(r.flopsPerSecond, 0) << threads << " threads";
    EXPECT_GE(r.accumulators, 8);
    EXPECT_EQ(r.repetitions, 2);
    std::printf("FMA peak, %d threads (%s, %d chains x %d lanes): %.1f "
                "GFLOP/s\n",
                threads, r.isa.c_str(), r.accumulators, r.lanes,
                r.flopsPerSecond / 1e9);
  }
}

TEST(MachineProbe, FmaVariantMatchesTheCpu) {
  ThreadPool pool(1);
  FmaPeakResult r = measureFmaPeak(pool, 10, 1);
  std::vector<std::string> features = detectCpuFeatures();
  auto has = [&](const char *f) {
    return std::find(features.begin(), features.end(), f) != features.end();
  };
  if (r.isa == "avx512f") {
    EXPECT_TRUE(has("avx512f"));
    EXPECT_EQ(r.lanes, 16);
  } else if (r.isa == "avx2+fma") {
    EXPECT_TRUE(has("avx2") && has("fma"));
    EXPECT_EQ(r.lanes, 8);
  } else {
    EXPECT_EQ(r.isa, "scalar");
    EXPECT_EQ(r.lanes, 1);
  }
}

TEST(MachineProbe, CpuFeatureOverrideNarrowsTheChoice) {
  // KILN_CPU_FEATURES may take AVX-512 away (to measure an AVX2 peak), and
  // can never add what CPUID lacks.
  ScopedEnv features(kCpuFeaturesEnv, "none");
  ThreadPool pool(1);
  FmaPeakResult r = measureFmaPeak(pool, 10, 1);
  EXPECT_EQ(r.isa, "scalar");
  EXPECT_GT(r.flopsPerSecond, 0);
}

TEST(MachineProbe, Bf16DotPeakWhereTheCpuHasIt) {
  std::vector<std::string> features = detectCpuFeatures();
  bool has = std::find(features.begin(), features.end(), "avx512bf16") !=
             features.end();
  ThreadPool pool(1);
  FmaPeakResult r = measureBf16DotPeak(pool, 1000, 1);
  if (!has) {
    EXPECT_EQ(r.flopsPerSecond, 0);
    EXPECT_EQ(r.isa, "");
    GTEST_SKIP() << "this CPU has no avx512bf16";
  }
  EXPECT_EQ(r.isa, "avx512bf16");
  EXPECT_EQ(r.lanes, 16);
  EXPECT_TRUE(std::isfinite(r.flopsPerSecond));
  EXPECT_GT(r.flopsPerSecond, 0);
  std::printf("bf16 dot peak, 1 thread: %.1f GFLOP/s\n",
              r.flopsPerSecond / 1e9);

  // KILN_CPU_FEATURES hides it, as it hides AVX-512 from the FMA loop.
  FmaPeakResult hidden;
  {
    ScopedEnv features(kCpuFeaturesEnv, "avx2,fma,avx512f");
    hidden = measureBf16DotPeak(pool, 10, 1);
  }
  EXPECT_EQ(hidden.flopsPerSecond, 0);
}

TEST(MachineProbe, Int8DotPeakWhereTheCpuHasIt) {
  std::vector<std::string> features = detectCpuFeatures();
  auto has = [&](const char *f) {
    return std::find(features.begin(), features.end(), f) != features.end();
  };
  ThreadPool pool(1);
  FmaPeakResult r = measureInt8DotPeak(pool, 1000, 1);
  if (!has("avx512vnni") && !has("avxvnni")) {
    EXPECT_EQ(r.flopsPerSecond, 0);
    EXPECT_EQ(r.isa, "");
    GTEST_SKIP() << "this CPU has neither avx512vnni nor avxvnni";
  }
  EXPECT_EQ(r.isa, has("avx512vnni") ? "avx512vnni" : "avxvnni");
  EXPECT_EQ(r.lanes, has("avx512vnni") ? 16 : 8);
  EXPECT_TRUE(std::isfinite(r.flopsPerSecond));
  EXPECT_GT(r.flopsPerSecond, 0);
  FmaPeakResult fma = measureFmaPeak(pool, 1000, 1);
  std::printf("int8 dot peak, 1 thread: %.1f GOP/s (FMA peak %.1f GFLOP/s)\n",
              r.flopsPerSecond / 1e9, fma.flopsPerSecond / 1e9);

  // KILN_CPU_FEATURES hides it: with avx2 alone no dot loop is left.
  FmaPeakResult hidden;
  {
    ScopedEnv narrowed(kCpuFeaturesEnv, "avx2,fma");
    hidden = measureInt8DotPeak(pool, 10, 1);
  }
  EXPECT_EQ(hidden.flopsPerSecond, 0);
  if (has("avx512vnni") && has("avxvnni")) {
    // Without AVX-512 the 256-bit AVX-VNNI form is the one left.
    ScopedEnv narrowed(kCpuFeaturesEnv, "avx2,fma,avxvnni");
    FmaPeakResult narrow = measureInt8DotPeak(pool, 1000, 1);
    EXPECT_EQ(narrow.isa, "avxvnni");
    EXPECT_EQ(narrow.lanes, 8);
    EXPECT_GT(narrow.flopsPerSecond, 0);
  }
}

TEST(MachineProbe, ProbeMachineUsesThePoolAndTheOptions) {
  ThreadPool pool(2);
  MachineProbeOptions options;
  options.triadArrayBytes = kSmallArray;
  options.triadRepetitions = 1;
  options.fmaIterations = 100;
  options.fmaRepetitions = 1;
  MachineProbeResult r = probeMachine(pool, options);
  EXPECT_EQ(r.threads, 2);
  EXPECT_EQ(r.bandwidth.arrayBytes, kSmallArray);
  EXPECT_GT(r.bandwidth.bytesPerSecond, 0);
  // The read probe reads as many bytes as the triad's three arrays hold.
  EXPECT_EQ(r.readBandwidth.arrayBytes, 3 * kSmallArray);
  EXPECT_GT(r.readBandwidth.bytesPerSecond, 0);
  EXPECT_GT(r.fmaPeak.flopsPerSecond, 0);
  EXPECT_EQ(r.bf16DotPeak.flopsPerSecond, 0) << "measured only if asked";
  EXPECT_EQ(r.int8DotPeak.flopsPerSecond, 0) << "measured only if asked";
}

TEST(MachineProbe, DefaultArraysAreFarLargerThanTheCache) {
  int64_t bytes = defaultTriadBytes();
  EXPECT_GT(bytes, 0);
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
  int64_t eighth = int64_t(pages) * pageSize / 8;
  // Three arrays hold 4x the last-level cache, unless memory caps them.
  if (bytes < eighth) {
    EXPECT_GE(3 * bytes, 4 * lastLevelCacheBytes());
    EXPECT_GE(bytes, int64_t(256) << 20);
  }
}

} // namespace
