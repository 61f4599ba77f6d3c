//===- CudaDriverTest.cpp - The CUDA driver seam, against stub drivers ----===//
//
// Part of Kiln's unit tests. Links only kiln_runtime and needs no GPU:
// KILN_CUDA_DRIVER points CudaDriver at test/unit/StubCudaDriver.c, built as
// kiln-stub-cuda-driver (its KILN_STUB_CUDA_MODE chooses no device, zero
// devices, an old driver or one working fake device) and as a variant that
// lacks cuGraphInstantiateWithFlags; and at NVIDIA's own stub libcuda.so
// where the toolkit is installed. Each test sets the variables it reads, so
// the tests pass in any order and in one process.
//
// CudaDriverGpu's tests run where the real driver (or the one
// KILN_CUDA_DRIVER names) finds a GPU, and skip elsewhere: they load PTX,
// launch kernels and replay a CUDA Graph.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaDriver.h"
#include "ScopedEnv.h"
#include "runtime/cuda/CudaObjects.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

using namespace kiln::runtime::cuda;
using kiln::test::ScopedEnv;

namespace {

/// KILN_CUDA_DRIVER at the stub, in `mode`.
struct StubDriverEnv {
  explicit StubDriverEnv(const char *mode,
                         const char *library = KILN_STUB_CUDA_DRIVER)
      : driver(kCudaDriverEnv, library), mode("KILN_STUB_CUDA_MODE", mode) {}
  ScopedEnv driver;
  ScopedEnv mode;
};

/// The message of the CudaError `open` throws; fails the test when it
/// throws nothing or something else.
template <typename Fn> CudaError expectCudaError(Fn open) {
  try {
    open();
  } catch (const CudaError &error) {
    return error;
  }
  ADD_FAILURE() << "expected a CudaError";
  return CudaError("(none thrown)");
}

/// The stub's one module: its image starts with this line.
constexpr const char kStubModuleImage[] = "// kiln stub module\n";

/// Launches kiln_test_fill(dst, value, count), the stub's kernel or
/// kFillPtx's, on `stream`: one thread per byte.
void launchFill(CudaStream &stream, const CudaKernel &fill, CUdeviceptr dst,
                unsigned int value, unsigned long long count) {
  void *params[] = {&dst, &value, &count};
  unsigned int blocks = static_cast<unsigned int>((count + 255) / 256);
  stream.launch(fill, Dim3{blocks, 1, 1}, Dim3{256, 1, 1}, 0, params);
}

std::vector<uint8_t> readBack(const DeviceBuffer &buffer) {
  std::vector<uint8_t> bytes(buffer.size());
  buffer.copyToHost(bytes.data(), bytes.size());
  return bytes;
}

//===----------------------------------------------------------------------===//
// Opening the driver
//===----------------------------------------------------------------------===//

TEST(CudaDriver, DefaultPathIsLibcudaUnlessOverridden) {
  {
    ScopedEnv unset(kCudaDriverEnv, nullptr);
    EXPECT_EQ(CudaDriver::defaultPath(), "libcuda.so.1");
  }
  {
    ScopedEnv empty(kCudaDriverEnv, "");
    EXPECT_EQ(CudaDriver::defaultPath(), "libcuda.so.1");
  }
  ScopedEnv set(kCudaDriverEnv, "/opt/nvidia/libcuda.so.1");
  EXPECT_EQ(CudaDriver::defaultPath(), "/opt/nvidia/libcuda.so.1");
}

TEST(CudaDriver, MissingLibraryNamesThePathAndThatCpuTargetsRunWithoutIt) {
  const char *path = "/nonexistent/kiln-test/libcuda.so.1";
  ScopedEnv env(kCudaDriverEnv, path);
  CudaError error = expectCudaError([] { CudaDriver driver; });
  std::string message = error.what();
  EXPECT_NE(message.find("CUDA driver not available: could not load " +
                         std::string(path)),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("CPU targets run without it"), std::string::npos)
      << message;
  EXPECT_EQ(error.result(), 0);
  EXPECT_EQ(describeCudaAvailability(), "cuda: not available: could not load " +
                                            std::string(path) +
                                            message.substr(message.find(" (")));
}

TEST(CudaDriver, NoDeviceReportsTheErrorByName) {
  StubDriverEnv env("no-device");
  CudaError error = expectCudaError([] { CudaDriver driver; });
  EXPECT_STREQ(error.what(), "cuInit failed: CUDA_ERROR_NO_DEVICE (no "
                             "CUDA-capable device is detected)");
  EXPECT_EQ(error.result(), kCudaErrorNoDevice);
}

TEST(CudaDriver, ZeroDevicesIsNoCudaDevice) {
  StubDriverEnv env("zero-devices");
  CudaDriver driver;
  EXPECT_EQ(driver.deviceCount(), 0);
  CudaError error = expectCudaError([&] { driver.deviceInfo(0); });
  EXPECT_EQ(std::string(error.what()).rfind("no CUDA device", 0), 0u)
      << error.what();
  EXPECT_EQ(describeCudaAvailability().rfind(
                "cuda: not available: no CUDA device", 0),
            0u)
      << describeCudaAvailability();
}

TEST(CudaDriver, MissingFunctionIsNamed) {
  StubDriverEnv env("ok", KILN_STUB_CUDA_DRIVER_NO_GRAPHS);
  CudaError error = expectCudaError([] { CudaDriver driver; });
  EXPECT_EQ(std::string(error.what()),
            std::string(KILN_STUB_CUDA_DRIVER_NO_GRAPHS) +
                " lacks cuGraphInstantiateWithFlags: it is not a CUDA "
                "driver, or one older than CUDA 12.0, the oldest Kiln runs "
                "on");
}

TEST(CudaDriver, OldDriverIsRefused) {
  StubDriverEnv env("old-driver");
  CudaError error = expectCudaError([] { CudaDriver driver; });
  std::string message = error.what();
  EXPECT_NE(message.find("is CUDA driver 11.8; Kiln needs 12.0 or newer"),
            std::string::npos)
      << message;
}

TEST(CudaDriver, NvidiaStubLibraryFailsCleanly) {
  // The toolkit's stub, for linking only: every call returns
  // CUDA_ERROR_STUB_LIBRARY, cuGetErrorName's included.
  const char *path = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (::access(path, R_OK) != 0)
    GTEST_SKIP() << path << " is absent (no CUDA toolkit on this machine)";
  ScopedEnv env(kCudaDriverEnv, path);
  CudaError error = expectCudaError([] { CudaDriver driver; });
  EXPECT_EQ(std::string(error.what())
                .rfind("cuInit failed: CUDA_ERROR_STUB_LIBRARY (", 0),
            0u)
      << error.what();
  EXPECT_EQ(error.result(), 34);
}

//===----------------------------------------------------------------------===//
// One working (fake) device
//===----------------------------------------------------------------------===//

TEST(CudaDriver, DescribesTheDevice) {
  StubDriverEnv env("ok");
  EXPECT_EQ(describeCudaAvailability(),
            "cuda: Kiln stub GPU, sm_90, 132 SMs, 80.0 GiB (driver 13.0)");

  CudaDriver driver;
  EXPECT_EQ(driver.version(), 13000);
  CudaDevice device(driver, 0);
  EXPECT_EQ(device.info().name, "Kiln stub GPU");
  EXPECT_EQ(device.info().architecture(), "sm_90");
  EXPECT_EQ(device.info().smCount, 132);
  EXPECT_EQ(device.info().totalMemoryBytes, uint64_t(80) << 30);
  EXPECT_NE(device.context(), nullptr);

  CudaError error = expectCudaError([&] { CudaDevice second(driver, 1); });
  EXPECT_STREQ(error.what(), "no CUDA device 1: the driver reports 1 device, "
                             "numbered from 0");
}

TEST(CudaDriver, BufferRoundTrip) {
  StubDriverEnv env("ok");
  CudaDriver driver;
  CudaDevice device(driver, 0);
  DeviceBuffer buffer(driver, 1000, "round-trip");
  ASSERT_NE(buffer.pointer(), 0u);

  std::vector<uint8_t> bytes(1000);
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<uint8_t>(i * 7 + 3);
  buffer.copyFromHost(bytes.data(), bytes.size());
  EXPECT_EQ(readBack(buffer), bytes);

  // A copy at an offset touches only its range.
  const uint8_t patch[3] = {0xde, 0xad, 0x01};
  buffer.copyFromHost(patch, 3, 500);
  std::copy(patch, patch + 3, bytes.begin() + 500);
  EXPECT_EQ(readBack(buffer), bytes);

  buffer.fill(0x5a);
  EXPECT_EQ(readBack(buffer), std::vector<uint8_t>(1000, 0x5a));

  CudaError error =
      expectCudaError([&] { buffer.copyFromHost(patch, 3, 998); });
  EXPECT_STREQ(error.what(), "a copy to the device of 3 bytes at offset 998 "
                             "does not fit in buffer 'round-trip' (1000 "
                             "bytes)");

  // Moving hands over the memory; the moved-from buffer holds none.
  DeviceBuffer moved = std::move(buffer);
  EXPECT_EQ(moved.size(), 1000u);
  EXPECT_EQ(buffer.size(), 0u);
  EXPECT_EQ(buffer.pointer(), 0u);
  EXPECT_EQ(readBack(moved), std::vector<uint8_t>(1000, 0x5a));
}

TEST(CudaDriver, GarbageModuleFailsWithTheCallAndTheErrorName) {
  StubDriverEnv env("ok");
  CudaDriver driver;
  CudaDevice device(driver, 0);
  CudaError error = expectCudaError(
      [&] { CudaModule module(driver, "this is not PTX", "garbage"); });
  EXPECT_STREQ(error.what(),
               "cuModuleLoadDataEx failed for module 'garbage' (PTX, 15 "
               "bytes): CUDA_ERROR_INVALID_PTX (a PTX JIT compilation "
               "failed); JIT error log: ptxas fatal : stub: not a Kiln stub "
               "module");
  EXPECT_EQ(error.result(), 218);

  // A cubin is told from PTX by its ELF header.
  error = expectCudaError([&] {
    CudaModule module(driver,
                      "\x7f"
                      "ELF garbage",
                      "elf");
  });
  EXPECT_NE(std::string(error.what()).find("module 'elf' (cubin, 12 bytes)"),
            std::string::npos)
      << error.what();
}

TEST(CudaDriver, UnknownKernelIsNamed) {
  StubDriverEnv env("ok");
  CudaDriver driver;
  CudaDevice device(driver, 0);
  CudaModule module(driver, kStubModuleImage, "stub");
  EXPECT_NE(module.kernel("kiln_test_fill").function, nullptr);
  CudaError error = expectCudaError([&] { module.kernel("rms_norm"); });
  EXPECT_STREQ(error.what(),
               "cuModuleGetFunction failed for kernel 'rms_norm' of module "
               "'stub': CUDA_ERROR_NOT_FOUND (named symbol not found)");
}

TEST(CudaDriver, GraphRecordsLaunchesAndReplaysThem) {
  StubDriverEnv env("ok");
  CudaDriver driver;
  CudaDevice device(driver, 0);
  CudaModule module(driver, kStubModuleImage, "stub");
  CudaKernel fill = module.kernel("kiln_test_fill");
  CudaStream stream(driver);
  DeviceBuffer buffer(driver, 64, "graph");
  buffer.fill(0);

  // Outside a capture a launch runs.
  launchFill(stream, fill, buffer.pointer(), 0x01, 8);
  stream.synchronize();
  std::vector<uint8_t> expected(64, 0);
  std::fill(expected.begin(), expected.begin() + 8, 0x01);
  EXPECT_EQ(readBack(buffer), expected);

  // Inside one it is recorded, in order, and runs on each replay.
  CudaGraph graph = CudaGraph::capture(stream, [&] {
    launchFill(stream, fill, buffer.pointer(), 0xab, 64);
    launchFill(stream, fill, buffer.pointer() + 16, 0x22, 16);
  });
  EXPECT_EQ(readBack(buffer), expected) << "a captured launch ran";

  std::vector<uint8_t> replayed(64, 0xab);
  std::fill(replayed.begin() + 16, replayed.begin() + 32, 0x22);
  graph.launch(stream);
  stream.synchronize();
  EXPECT_EQ(readBack(buffer), replayed);

  buffer.fill(0);
  graph.launch(stream);
  stream.synchronize();
  EXPECT_EQ(readBack(buffer), replayed);
}

TEST(CudaDriver, FailedCaptureLeavesTheStreamUsable) {
  StubDriverEnv env("ok");
  CudaDriver driver;
  CudaDevice device(driver, 0);
  CudaStream stream(driver);
  EXPECT_THROW(
      CudaGraph::capture(stream,
                         [] { throw std::runtime_error("recording failed"); }),
      std::runtime_error);
  // The stub refuses to synchronize a stream that is still capturing.
  EXPECT_NO_THROW(stream.synchronize());
  EXPECT_NO_THROW(CudaGraph::capture(stream, [] {}));
}

//===----------------------------------------------------------------------===//
// A real GPU, where there is one
//===----------------------------------------------------------------------===//

/// kiln_test_fill for a real device: thread i sets byte i of dst to `value`
/// when i < count. PTX ISA 8.0 (CUDA 12.0, the oldest driver Kiln runs on);
/// the driver compiles it for the device.
std::string fillPtx(const CudaDeviceInfo &info) {
  // PTX for an older architecture runs on newer ones; sm_90 PTX is the
  // newest ISA 8.0 can target.
  int sm = std::min(info.smMajor * 10 + info.smMinor, 90);
  return ".version 8.0\n"
         ".target sm_" +
         std::to_string(sm) +
         "\n"
         ".address_size 64\n"
         "\n"
         ".visible .entry kiln_test_fill(.param .u64 dst, .param .u32 value,\n"
         "                               .param .u64 count)\n"
         "{\n"
         "  .reg .pred %p;\n"
         "  .reg .b32 %r<6>;\n"
         "  .reg .b64 %rd<6>;\n"
         "  ld.param.u64 %rd1, [dst];\n"
         "  ld.param.u32 %r1, [value];\n"
         "  ld.param.u64 %rd2, [count];\n"
         "  mov.u32 %r2, %ctaid.x;\n"
         "  mov.u32 %r3, %ntid.x;\n"
         "  mov.u32 %r4, %tid.x;\n"
         "  mad.lo.u32 %r5, %r2, %r3, %r4;\n"
         "  cvt.u64.u32 %rd3, %r5;\n"
         "  setp.ge.u64 %p, %rd3, %rd2;\n"
         "  @%p bra DONE;\n"
         "  cvta.to.global.u64 %rd4, %rd1;\n"
         "  add.s64 %rd5, %rd4, %rd3;\n"
         "  st.global.u8 [%rd5], %r1;\n"
         "DONE:\n"
         "  ret;\n"
         "}\n";
}

/// Opens the driver KILN_CUDA_DRIVER or libcuda.so.1 names, and device 0;
/// skips the test where there is no driver or no device. Anything failing
/// after that fails the test.
class CudaDriverGpu : public ::testing::Test {
protected:
  void SetUp() override {
    try {
      driver = std::make_unique<CudaDriver>();
      if (driver->deviceCount() == 0)
        GTEST_SKIP() << "the CUDA driver reports no device";
    } catch (const CudaError &error) {
      GTEST_SKIP() << "no usable CUDA driver: " << error.what();
    }
    device = std::make_unique<CudaDevice>(*driver, 0);
    std::printf("%s\n", describeCudaAvailability().c_str());
  }

  std::unique_ptr<CudaDriver> driver;
  std::unique_ptr<CudaDevice> device; ///< destroyed before the driver
};

TEST_F(CudaDriverGpu, NamesErrorsAndDescribesTheDevice) {
  EXPECT_EQ(driver->describeResult(kCudaErrorNoDevice),
            "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)");
  EXPECT_GE(driver->version(), kMinimumDriverVersion);
  const CudaDeviceInfo &info = device->info();
  EXPECT_FALSE(info.name.empty());
  EXPECT_GE(info.smMajor, 5);
  EXPECT_GT(info.smCount, 0);
  EXPECT_GT(info.totalMemoryBytes, uint64_t(1) << 30);
  EXPECT_EQ(describeCudaAvailability().rfind("cuda: " + info.name, 0), 0u);
}

TEST_F(CudaDriverGpu, BufferRoundTrip) {
  const size_t size = 3 << 20;
  DeviceBuffer buffer(*driver, size, "round-trip");
  std::vector<uint8_t> bytes(size);
  for (size_t i = 0; i < size; ++i)
    bytes[i] = static_cast<uint8_t>(i * 131 + (i >> 12));
  buffer.copyFromHost(bytes.data(), size);
  EXPECT_EQ(readBack(buffer), bytes);
  std::vector<uint8_t> middle(4096);
  buffer.copyToHost(middle.data(), middle.size(), 1 << 20);
  EXPECT_TRUE(
      std::equal(middle.begin(), middle.end(), bytes.begin() + (1 << 20)));
  buffer.fill(0xc3);
  EXPECT_EQ(readBack(buffer), std::vector<uint8_t>(size, 0xc3));
}

TEST_F(CudaDriverGpu, BadPtxIsReportedWithTheCompilersLog) {
  CudaError error = expectCudaError(
      [&] { CudaModule module(*driver, "this is not PTX", "garbage"); });
  std::printf("%s\n", error.what());
  EXPECT_EQ(std::string(error.what())
                .rfind("cuModuleLoadDataEx failed for module 'garbage' "
                       "(PTX, 15 bytes): CUDA_ERROR_",
                       0),
            0u)
      << error.what();
  EXPECT_NE(error.result(), 0);
}

TEST_F(CudaDriverGpu, LaunchesAndGraphReplays) {
  CudaModule module(*driver, fillPtx(device->info()), "fill");
  CudaKernel fill = module.kernel("kiln_test_fill");
  CudaStream stream(*driver);

  // A direct launch, over more than one block.
  DeviceBuffer buffer(*driver, 100 * 1000, "graph");
  buffer.fill(0);
  launchFill(stream, fill, buffer.pointer(), 0x7e, 700);
  stream.synchronize();
  std::vector<uint8_t> expected(buffer.size(), 0);
  std::fill(expected.begin(), expected.begin() + 700, 0x7e);
  EXPECT_EQ(readBack(buffer), expected);

  // A hundred launches, about a model step's, captured and replayed.
  buffer.fill(0);
  auto recordStep = [&] {
    for (unsigned int i = 0; i < 100; ++i)
      launchFill(stream, fill, buffer.pointer() + i * 1000, i + 1, 1000);
  };
  CudaGraph graph = CudaGraph::capture(stream, recordStep);
  stream.synchronize();
  EXPECT_EQ(readBack(buffer), std::vector<uint8_t>(buffer.size(), 0))
      << "a captured launch ran";
  std::vector<uint8_t> step(buffer.size());
  for (size_t i = 0; i < step.size(); ++i)
    step[i] = static_cast<uint8_t>(i / 1000 + 1);
  graph.launch(stream);
  stream.synchronize();
  EXPECT_EQ(readBack(buffer), step);
  buffer.fill(0);
  graph.launch(stream);
  stream.synchronize();
  EXPECT_EQ(readBack(buffer), step);

  // What a replay saves: printed, not asserted (the machine is shared).
  constexpr int kRepeats = 20;
  auto seconds = [](auto run) {
    auto start = std::chrono::steady_clock::now();
    for (int r = 0; r < kRepeats; ++r)
      run();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
               .count() /
           kRepeats;
  };
  double launches = seconds([&] {
    recordStep();
    stream.synchronize();
  });
  double replays = seconds([&] {
    graph.launch(stream);
    stream.synchronize();
  });
  std::printf("100 fills: %.1f us as launches, %.1f us as one graph\n",
              launches * 1e6, replays * 1e6);
}

} // namespace
