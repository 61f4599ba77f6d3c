//===- CudaDriver.cpp - The CUDA driver, opened at run time ---------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaDriver.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <type_traits>
#include <vector>

namespace kiln::runtime::cuda {

namespace {

std::string lastDlError() {
  const char *error = dlerror();
  return error ? error : "unknown dynamic loader error";
}

/// Names and descriptions of the codes cuInit returns when the driver cannot
/// be used: NVIDIA's stub libcuda.so (in the toolkit, for linking only)
/// answers cuGetErrorName and cuGetErrorString with an error too, and a
/// message saying "CUresult 34" would not tell the user it is a stub.
/// The descriptions are those of <cuda.h>, shortened.
struct KnownResult {
  CUresult result;
  const char *name;
  const char *description;
};
constexpr KnownResult kKnownResults[] = {
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {34, "CUDA_ERROR_STUB_LIBRARY",
     "the loaded CUDA driver is a stub library, not a real driver"},
    {35, "CUDA_ERROR_INSUFFICIENT_DRIVER",
     "the installed NVIDIA driver is older than the CUDA driver library"},
    {46, "CUDA_ERROR_DEVICE_UNAVAILABLE",
     "CUDA-capable device(s) is/are busy or unavailable"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
     "system has unsupported display driver / cuda driver combination"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

/// How the error for a library that cannot be loaded starts.
constexpr const char *kNotAvailable = "CUDA driver not available: ";

std::string formatVersion(int version) {
  return std::to_string(version / 1000) + "." +
         std::to_string(version % 1000 / 10);
}

} // namespace

//===----------------------------------------------------------------------===//
// CudaDeviceInfo
//===----------------------------------------------------------------------===//

std::string CudaDeviceInfo::architecture() const {
  return "sm_" + std::to_string(smMajor) + std::to_string(smMinor);
}

std::string CudaDeviceInfo::describe() const {
  char memory[32];
  std::snprintf(memory, sizeof(memory), "%.1f GiB",
                static_cast<double>(totalMemoryBytes) / (1ull << 30));
  return name + ", " + architecture() + ", " + std::to_string(smCount) +
         " SMs, " + memory;
}

//===----------------------------------------------------------------------===//
// CudaDriver
//===----------------------------------------------------------------------===//

std::string CudaDriver::defaultPath() {
  const char *env = std::getenv(kCudaDriverEnv);
  return env && *env ? env : kDefaultCudaDriver;
}

CudaDriver::CudaDriver() : CudaDriver(defaultPath()) {}

CudaDriver::CudaDriver(const std::string &path) : libraryPath(path) {
  // A failed open is not remembered: each CudaDriver tries again, so a
  // driver installed (or a KILN_CUDA_DRIVER set) since is found.
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    throw CudaError(std::string(kNotAvailable) + "could not load " + path +
                    " (" + lastDlError() + ")" +
                    (path == kDefaultCudaDriver
                         ? "; no NVIDIA driver is installed on this machine"
                         : "") +
                    ". CPU targets run without it.");

  // Until cuInit has succeeded the library runs no threads of its own and
  // may be unloaded again; after, it stays (see ~CudaDriver).
  bool initialized = false;
  try {
    std::vector<std::string> missing;
    auto resolve = [&](auto &function, const char *symbol) {
      function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(
          dlsym(handle, symbol));
      if (!function)
        missing.push_back(symbol);
    };
#define KILN_RESOLVE(symbol) resolve(fns.symbol, #symbol)
    KILN_RESOLVE(cuInit);
    KILN_RESOLVE(cuDriverGetVersion);
    KILN_RESOLVE(cuGetErrorName);
    KILN_RESOLVE(cuGetErrorString);
    KILN_RESOLVE(cuDeviceGetCount);
    KILN_RESOLVE(cuDeviceGet);
    KILN_RESOLVE(cuDeviceGetName);
    KILN_RESOLVE(cuDeviceGetAttribute);
    KILN_RESOLVE(cuDeviceTotalMem_v2);
    KILN_RESOLVE(cuDevicePrimaryCtxRetain);
    KILN_RESOLVE(cuDevicePrimaryCtxRelease_v2);
    KILN_RESOLVE(cuCtxSetCurrent);
    KILN_RESOLVE(cuModuleLoadDataEx);
    KILN_RESOLVE(cuModuleUnload);
    KILN_RESOLVE(cuModuleGetFunction);
    KILN_RESOLVE(cuMemAlloc_v2);
    KILN_RESOLVE(cuMemFree_v2);
    KILN_RESOLVE(cuMemcpyHtoD_v2);
    KILN_RESOLVE(cuMemcpyDtoH_v2);
    KILN_RESOLVE(cuMemsetD8_v2);
    KILN_RESOLVE(cuLaunchKernel);
    KILN_RESOLVE(cuStreamCreate);
    KILN_RESOLVE(cuStreamDestroy_v2);
    KILN_RESOLVE(cuStreamSynchronize);
    KILN_RESOLVE(cuStreamBeginCapture_v2);
    KILN_RESOLVE(cuStreamEndCapture);
    KILN_RESOLVE(cuGraphInstantiateWithFlags);
    KILN_RESOLVE(cuGraphLaunch);
    KILN_RESOLVE(cuGraphExecDestroy);
    KILN_RESOLVE(cuGraphDestroy);
#undef KILN_RESOLVE
    if (!missing.empty()) {
      std::string names;
      for (const std::string &symbol : missing)
        names += (names.empty() ? "" : ", ") + symbol;
      throw CudaError(path + " lacks " + names +
                      ": it is not a CUDA driver, or one older than CUDA " +
                      formatVersion(kMinimumDriverVersion) +
                      ", the oldest Kiln runs on");
    }

    check(fns.cuInit(0), "cuInit");
    initialized = true;
    check(fns.cuDriverGetVersion(&driverVersion), "cuDriverGetVersion");
    if (driverVersion < kMinimumDriverVersion)
      throw CudaError(path + " is CUDA driver " + formatVersion(driverVersion) +
                      "; Kiln needs " + formatVersion(kMinimumDriverVersion) +
                      " or newer (update the NVIDIA driver)");
  } catch (...) {
    if (!initialized)
      dlclose(handle);
    throw;
  }
}

std::string CudaDriver::versionString() const {
  return formatVersion(driverVersion);
}

std::string CudaDriver::describeResult(CUresult result) const {
  const char *name = nullptr;
  const char *description = nullptr;
  if (fns.cuGetErrorName(result, &name) != kCudaSuccess)
    name = nullptr;
  if (fns.cuGetErrorString(result, &description) != kCudaSuccess)
    description = nullptr;
  if (!name) {
    for (const KnownResult &known : kKnownResults)
      if (known.result == result) {
        name = known.name;
        description = known.description;
      }
  }
  std::string text = name ? name : "CUresult " + std::to_string(result);
  if (description)
    text += std::string(" (") + description + ")";
  return text;
}

void CudaDriver::check(CUresult result, const char *call,
                       const std::string &what) const {
  if (result == kCudaSuccess)
    return;
  throw CudaError(std::string(call) + " failed" +
                      (what.empty() ? "" : " for " + what) + ": " +
                      describeResult(result),
                  result);
}

int CudaDriver::deviceCount() const {
  int count = 0;
  check(fns.cuDeviceGetCount(&count), "cuDeviceGetCount");
  return count;
}

CUdevice CudaDriver::device(int ordinal) const {
  int count = deviceCount();
  if (count == 0)
    throw CudaError("no CUDA device: " + libraryPath +
                    " initialized but reports 0 devices");
  if (ordinal < 0 || ordinal >= count)
    throw CudaError("no CUDA device " + std::to_string(ordinal) +
                    ": the driver reports " + std::to_string(count) +
                    (count == 1 ? " device" : " devices") +
                    ", numbered from 0");
  CUdevice device = 0;
  check(fns.cuDeviceGet(&device, ordinal), "cuDeviceGet",
        "device " + std::to_string(ordinal));
  return device;
}

CudaDeviceInfo CudaDriver::deviceInfo(int ordinal) const {
  CUdevice dev = device(ordinal);
  const std::string what = "device " + std::to_string(ordinal);
  CudaDeviceInfo info;
  info.ordinal = ordinal;

  char name[256] = {};
  check(fns.cuDeviceGetName(name, sizeof(name) - 1, dev), "cuDeviceGetName",
        what);
  info.name = name;

  auto attribute = [&](int attribute, const char *meaning) {
    int value = 0;
    check(fns.cuDeviceGetAttribute(&value, attribute, dev),
          "cuDeviceGetAttribute", what + " (" + meaning + ")");
    return value;
  };
  info.smMajor =
      attribute(kAttributeComputeCapabilityMajor, "compute capability major");
  info.smMinor =
      attribute(kAttributeComputeCapabilityMinor, "compute capability minor");
  info.smCount = attribute(kAttributeMultiprocessorCount, "SM count");

  size_t bytes = 0;
  check(fns.cuDeviceTotalMem_v2(&bytes, dev), "cuDeviceTotalMem_v2", what);
  info.totalMemoryBytes = bytes;
  return info;
}

std::string describeCudaAvailability() {
  try {
    CudaDriver driver;
    CudaDeviceInfo info = driver.deviceInfo(0);
    int count = driver.deviceCount();
    std::string which =
        count > 1 ? "device 0 of " + std::to_string(count) + ": " : "";
    return "cuda: " + which + info.describe() + " (driver " +
           driver.versionString() + ")";
  } catch (const CudaError &error) {
    std::string reason = error.what();
    if (reason.rfind(kNotAvailable, 0) == 0)
      reason.erase(0, std::strlen(kNotAvailable));
    return "cuda: not available: " + reason;
  }
}

} // namespace kiln::runtime::cuda
