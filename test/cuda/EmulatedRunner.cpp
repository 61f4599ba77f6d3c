//===- EmulatedRunner.cpp - The CUDA kernels in the host emulator ---------===//
//
// Part of Kiln's CUDA kernel tests. See KernelRunner.h. The only file of the
// tests that instantiates the kernels for the host; they register by name
// (KILN_REGISTER_KERNEL), and launches go through host::launchByName.
//
//===----------------------------------------------------------------------===//

#include "KernelInstances.cuh"

#include "test/cuda/KernelRunner.h"

#include <cstdlib>
#include <cstring>

namespace kiln::cuda_test {
namespace {

class EmulatedRunner : public KernelRunner {
public:
  ~EmulatedRunner() override { release(); }
  std::string describe() const override {
    return "emulated on the host (" +
           std::to_string(cuda::host::kernelRegistry().size()) + " kernels)";
  }
  bool emulated() const override { return true; }
  void *allocate(size_t bytes) override {
    void *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
    if (!p)
      throw std::bad_alloc();
    allocations.push_back(p);
    return p;
  }
  void upload(void *device, const void *host, size_t bytes) override {
    std::memcpy(device, host, bytes);
  }
  void download(void *host, const void *device, size_t bytes) override {
    std::memcpy(host, device, bytes);
  }
  void launch(const std::string &name, Grid grid, int threads, void **params,
              const std::vector<size_t> &sizes, uint64_t seed) override {
    cuda::host::launchByName(name, {grid.x, grid.y, grid.z}, threads, params,
                             sizes, {seed});
  }
  void release() override {
    for (void *p : allocations)
      std::free(p);
    allocations.clear();
  }

private:
  std::vector<void *> allocations;
};

} // namespace

std::unique_ptr<KernelRunner> makeEmulatedRunner() {
  return std::make_unique<EmulatedRunner>();
}

} // namespace kiln::cuda_test
