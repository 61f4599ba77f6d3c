//===- GpuRunner.cpp - The CUDA kernels on a GPU --------------------------===//
//
// Part of Kiln's CUDA kernel tests. See KernelRunner.h. KernelInstances.cuh
// is compiled by NVRTC for the architecture of device 0, as the tests start,
// from the text built into this binary with the library's headers, and its
// cubin loaded through the CUDA driver that runtime/cuda opens.
//
//===----------------------------------------------------------------------===//

#include "test/cuda/KernelRunner.h"

#include "codegen/cuda/Nvrtc.h"
#include "runtime/cuda/CudaObjects.h"
#include "test/cuda/CompileInstances.h"

#include <map>

namespace kiln::cuda_test {
namespace {

namespace rc = kiln::runtime::cuda;

std::string compileInstances(const std::string &arch) {
  codegen::cuda::NvrtcResult result = compileKernelInstances(arch);
  return std::string(result.cubin.begin(), result.cubin.end());
}

class GpuRunner : public KernelRunner {
public:
  GpuRunner()
      : device(driver, 0),
        module(driver, compileInstances(device.info().architecture()),
               "KernelInstances.cuh"),
        stream(driver) {}
  ~GpuRunner() override { release(); }

  std::string describe() const override {
    return device.info().describe() + " (driver " + driver.versionString() +
           ", NVRTC " + codegen::cuda::nvrtcVersion() + ")";
  }
  bool emulated() const override { return false; }
  void *allocate(size_t bytes) override {
    auto buffer = std::make_unique<rc::DeviceBuffer>(
        driver, bytes == 0 ? 1 : bytes, "test buffer");
    void *address = reinterpret_cast<void *>(buffer->pointer());
    buffers[address] = std::move(buffer);
    return address;
  }
  void upload(void *device, const void *host, size_t bytes) override {
    find(device).copyFromHost(host, bytes);
  }
  void download(void *host, const void *device, size_t bytes) override {
    find(device).copyToHost(host, bytes);
  }
  void launch(const std::string &name, Grid grid, int threads, void **params,
              const std::vector<size_t> &, uint64_t) override {
    auto it = kernels.find(name);
    if (it == kernels.end())
      it = kernels.emplace(name, module.kernel(name)).first;
    stream.launch(it->second,
                  {unsigned(grid.x), unsigned(grid.y), unsigned(grid.z)},
                  {unsigned(threads), 1, 1}, 0, params);
    stream.synchronize();
  }
  void release() override { buffers.clear(); }

private:
  rc::DeviceBuffer &find(const void *address) {
    auto it = buffers.find(const_cast<void *>(address));
    if (it == buffers.end())
      throw std::runtime_error("not the start of a test buffer");
    return *it->second;
  }

  rc::CudaDriver driver;
  rc::CudaDevice device;
  rc::CudaModule module;
  rc::CudaStream stream;
  std::map<std::string, rc::CudaKernel> kernels;
  std::map<void *, std::unique_ptr<rc::DeviceBuffer>> buffers;
};

} // namespace

std::unique_ptr<KernelRunner> makeGpuRunner() {
  return std::make_unique<GpuRunner>();
}

} // namespace kiln::cuda_test
