//===- CudaDriver.h - The CUDA driver, opened at run time -------*- C++ -*-===//
//
// Part of Kiln. The runtime reaches NVIDIA GPUs through the CUDA driver API
// (libcuda.so.1, installed with the NVIDIA driver, not with the toolkit),
// opened with dlopen when a CUDA artifact is run. Kiln therefore builds
// without the CUDA toolkit and runs CPU artifacts on machines without an
// NVIDIA driver; only running on a GPU needs one.
//
// CudaDriver loads the library (or the one KILN_CUDA_DRIVER names: tests
// load a stub), resolves every function the runtime calls at once, so a
// driver too old for Kiln is refused when it is opened rather than in the
// middle of a step, and calls cuInit. Every call's CUresult goes through
// check(), which throws CudaError naming the call, the error's name and its
// description ("cuInit failed: CUDA_ERROR_NO_DEVICE (no CUDA-capable device
// is detected)"). The devices, buffers, modules, streams and graphs built on
// it are in runtime/cuda/CudaObjects.h; docs/cuda.md says how the driver is
// found and what its errors mean.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_CUDA_CUDADRIVER_H
#define KILN_RUNTIME_CUDA_CUDADRIVER_H

#include "runtime/cuda/CudaDriverApi.h"

#include <cstdint>
#include <stdexcept>
#include <string>

namespace kiln::runtime::cuda {

/// The environment variable naming the driver library to load instead of
/// libcuda.so.1 (a path, or a name the dynamic loader searches for).
constexpr const char *kCudaDriverEnv = "KILN_CUDA_DRIVER";
/// What is loaded when KILN_CUDA_DRIVER is unset or empty: the driver's
/// versioned name, which the NVIDIA driver installs (the unversioned
/// libcuda.so comes only with development packages).
constexpr const char *kDefaultCudaDriver = "libcuda.so.1";
/// The oldest driver Kiln runs on, as cuDriverGetVersion reports it (1000 *
/// major + 10 * minor): CUDA 12.0, the first with sm_90 and the PTX ISA
/// Kiln emits.
constexpr int kMinimumDriverVersion = 12000;

/// A CUDA driver that cannot be loaded or a driver call that failed. The
/// message names the library or the call and what went wrong.
class CudaError : public std::runtime_error {
public:
  explicit CudaError(const std::string &message, CUresult result = 0)
      : std::runtime_error(message), cudaResult(result) {}
  /// The CUresult of the failed call; 0 when no driver call failed (the
  /// library could not be loaded, or lacks a function).
  CUresult result() const { return cudaResult; }

private:
  CUresult cudaResult;
};

/// What the driver reports about one device; no context is needed to ask.
struct CudaDeviceInfo {
  int ordinal = 0;
  std::string name; ///< "NVIDIA H200"
  int smMajor = 0;  ///< compute capability
  int smMinor = 0;
  int smCount = 0; ///< streaming multiprocessors
  uint64_t totalMemoryBytes = 0;

  /// "sm_90".
  std::string architecture() const;
  /// "NVIDIA H200, sm_90, 132 SMs, 139.8 GiB".
  std::string describe() const;
};

/// An opened CUDA driver. Neither copyable nor movable: the objects of
/// CudaObjects.h point to it and must not outlive it.
class CudaDriver {
public:
  /// Opens KILN_CUDA_DRIVER, or libcuda.so.1 when it is unset or empty.
  CudaDriver();
  /// Opens the driver library at `path` (with dlopen, RTLD_NOW |
  /// RTLD_LOCAL), resolves every function of CudaDriverApi, calls cuInit(0)
  /// and checks the driver's version against kMinimumDriverVersion. Throws
  /// CudaError when any of that fails.
  explicit CudaDriver(const std::string &path);
  /// Leaves the library loaded: once cuInit has run, the driver has threads
  /// of its own running its code, and no call stops them.
  ~CudaDriver() = default;
  CudaDriver(const CudaDriver &) = delete;
  CudaDriver &operator=(const CudaDriver &) = delete;

  /// KILN_CUDA_DRIVER when set and not empty, else kDefaultCudaDriver.
  static std::string defaultPath();

  /// The path or name the library was opened by.
  const std::string &path() const { return libraryPath; }
  /// cuDriverGetVersion's answer: 13000 for CUDA 13.0.
  int version() const { return driverVersion; }
  /// "13.0".
  std::string versionString() const;
  /// The resolved functions, for callers that handle a CUresult themselves
  /// (destructors, which must not throw).
  const CudaDriverApi &api() const { return fns; }

  /// Throws CudaError unless `result` is CUDA_SUCCESS: "<call> failed:
  /// NAME (description)", or "<call> failed for <what>: ..." when `what` is
  /// not empty.
  void check(CUresult result, const char *call,
             const std::string &what = {}) const;
  /// "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)", from
  /// cuGetErrorName and cuGetErrorString, or from a table of the codes a
  /// failed cuInit returns when the driver cannot name them (NVIDIA's stub
  /// library answers every call, these two included, with an error).
  std::string describeResult(CUresult result) const;

  /// cuDeviceGetCount.
  int deviceCount() const;
  /// cuDeviceGet. Throws "no CUDA device" when the driver reports none, and
  /// names the device count when `ordinal` is out of range.
  CUdevice device(int ordinal) const;
  /// The name, compute capability, SM count and memory of a device.
  CudaDeviceInfo deviceInfo(int ordinal) const;

private:
  std::string libraryPath;
  CudaDriverApi fns;
  int driverVersion = 0;
};

/// One line for `kiln` to print about this machine's GPU: "cuda: NVIDIA
/// H200, sm_90, 132 SMs, 139.8 GiB (driver 13.0)", with "device 0 of N: "
/// before the name when there are several, or "cuda: not available:
/// <reason>" (the CudaError's message) when the driver cannot be opened or
/// reports no device. Opens the driver of CudaDriver::defaultPath().
std::string describeCudaAvailability();

} // namespace kiln::runtime::cuda

#endif // KILN_RUNTIME_CUDA_CUDADRIVER_H
