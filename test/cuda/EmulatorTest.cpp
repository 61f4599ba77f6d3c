//===- EmulatorTest.cpp - The block emulator catches what GPUs punish ----===//
//
// Part of Kiln's CUDA kernel tests. DeviceHost.h's emulator must make a
// kernel's mistakes visible: a missing barrier (a race on shared memory), a
// warp operation some lanes skip, a misaligned 16-byte load, a barrier some
// threads never reach. Each is a small kernel with the mistake; these run
// only with --device=emulated.
//
//===----------------------------------------------------------------------===//

#include "Device.cuh"

#include "test/cuda/KernelRunner.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace host = kiln::cuda::host;
using kiln::cuda_test::runner;

namespace {

KILN_KERNEL(64) neighbour(float *out, bool withBarrier) {
  KILN_SHARED(float, s, 64);
  int t = kiln::cuda::thread_index();
  s[t] = float(t);
  if (withBarrier)
    kiln::cuda::sync_block();
  out[t] = s[(t + 1) % 64];
}

KILN_KERNEL(32) divergedShuffle(float *out) {
  float v = 1.0f;
  if (kiln::cuda::lane_index() != 0)
    v = kiln::cuda::shfl_xor(v, 1);
  out[kiln::cuda::thread_index()] = v;
}

KILN_KERNEL(32) misaligned(const float *in, float *out) {
  kiln::cuda::Bytes16 b = kiln::cuda::load16(in + 1);
  out[kiln::cuda::thread_index()] = kiln::cuda::as_float(b.word[0]);
}

KILN_KERNEL(64) barrierAfterExit(float *out) {
  if (kiln::cuda::thread_index() >= 32)
    return;
  kiln::cuda::sync_block();
  out[kiln::cuda::thread_index()] = 1.0f;
}

class Emulator : public ::testing::Test {
protected:
  void SetUp() override {
    if (!runner().emulated())
      GTEST_SKIP() << "tests of the emulator itself";
  }
};

TEST_F(Emulator, CatchesAMissingBarrier) {
  std::vector<float> out(64);
  auto correct = [&] {
    for (int t = 0; t < 64; ++t)
      if (out[t] != float((t + 1) % 64))
        return false;
    return true;
  };
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    host::launch({1}, 64, [&] { neighbour(out.data(), true); }, {seed});
    EXPECT_TRUE(correct()) << "seed " << seed;
  }
  // Without the barrier, each thread runs from its write to its read
  // before another runs, and no order of 64 threads has every thread's
  // neighbour write first.
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    host::launch({1}, 64, [&] { neighbour(out.data(), false); }, {seed});
    EXPECT_FALSE(correct()) << "seed " << seed;
  }
}

TEST_F(Emulator, ReportsADivergedWarp) {
  std::vector<float> out(32);
  try {
    host::launch({1}, 32, [&] { divergedShuffle(out.data()); });
    FAIL() << "no error";
  } catch (const std::runtime_error &e) {
    EXPECT_NE(std::string(e.what()).find("diverged"), std::string::npos)
        << e.what();
  }
}

TEST_F(Emulator, ReportsAMisalignedVectorLoad) {
  alignas(16) float in[8] = {};
  std::vector<float> out(32);
  try {
    host::launch({1}, 32, [&] { misaligned(in, out.data()); });
    FAIL() << "no error";
  } catch (const std::runtime_error &e) {
    EXPECT_NE(std::string(e.what()).find("16-byte aligned"), std::string::npos)
        << e.what();
  }
}

TEST_F(Emulator, ReportsABarrierSomeThreadsSkip) {
  std::vector<float> out(64);
  try {
    host::launch({1}, 64, [&] { barrierAfterExit(out.data()); });
    FAIL() << "no error";
  } catch (const std::runtime_error &e) {
    EXPECT_NE(std::string(e.what()).find("no thread can go on"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(Emulator, ChecksParametersOfLaunchesByName) {
  float *out = nullptr;
  void *params[] = {&out};
  EXPECT_THROW(
      host::launchByName("no_such_kernel", {1}, 32, params, {sizeof out}),
      std::runtime_error);
  // gemv_f32 takes seven parameters.
  EXPECT_THROW(host::launchByName("gemv_f32", {1}, 128, params, {sizeof out}),
               std::runtime_error);
}

} // namespace
