//===- KernelRunner.h - Where the CUDA kernel tests run ----------*- C++
//-*-===//
//
// Part of Kiln's CUDA kernel tests. KernelTest.cpp's cases are written once
// against this interface, which is the CUDA driver's shape (device memory,
// copies, launches by kernel name with cuLaunchKernel's parameter array),
// and run on one of:
//
//  - EmulatedRunner: KernelInstances.cuh compiled for the host and run in
//    DeviceHost.h's block emulator (CI, every machine);
//  - GpuRunner: KernelInstances.cuh compiled by NVRTC for the GPU found
//    through the CUDA driver (runtime/cuda), launched on it
//    (`kiln-cuda-kernel-tests --device=gpu`, test/gpu/run.sh).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TEST_CUDA_KERNELRUNNER_H
#define KILN_TEST_CUDA_KERNELRUNNER_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln::cuda_test {

struct Grid {
  int x = 1, y = 1, z = 1;
};

class KernelRunner {
public:
  virtual ~KernelRunner() = default;
  /// "emulated (...)" or the GPU's description.
  virtual std::string describe() const = 0;
  virtual bool emulated() const = 0;
  /// `bytes` of device memory, 256-byte aligned, valid until release().
  virtual void *allocate(size_t bytes) = 0;
  /// Copies between the host and memory allocate() returned.
  virtual void upload(void *device, const void *host, size_t bytes) = 0;
  virtual void download(void *host, const void *device, size_t bytes) = 0;
  /// Runs kernel `name` over `grid` blocks of `threads` threads and waits
  /// for it. params[i] points to parameter i's value, of sizes[i] bytes.
  /// `seed` picks the emulator's schedule (the GPU has its own).
  virtual void launch(const std::string &name, Grid grid, int threads,
                      void **params, const std::vector<size_t> &sizes,
                      uint64_t seed) = 0;
  /// Frees everything allocate() returned.
  virtual void release() = 0;
};

/// The runner main() chose.
KernelRunner &runner();
void setRunner(std::unique_ptr<KernelRunner> r);

std::unique_ptr<KernelRunner> makeEmulatedRunner();
/// Throws std::runtime_error saying why there is no GPU to run on.
std::unique_ptr<KernelRunner> makeGpuRunner();

template <class T> T *toDevice(const std::vector<T> &host) {
  void *d = runner().allocate(host.size() * sizeof(T));
  runner().upload(d, host.data(), host.size() * sizeof(T));
  return static_cast<T *>(d);
}

template <class T> std::vector<T> fromDevice(const T *device, size_t n) {
  std::vector<T> host(n);
  runner().download(host.data(), device, n * sizeof(T));
  return host;
}

/// Launches `name` with `args` (the kernel's parameters, of its types).
template <class... A>
void launch(const std::string &name, Grid grid, int threads, uint64_t seed,
            A... args) {
  void *params[] = {&args...};
  runner().launch(name, grid, threads, params, {sizeof(A)...}, seed);
}

} // namespace kiln::cuda_test

#endif // KILN_TEST_CUDA_KERNELRUNNER_H
