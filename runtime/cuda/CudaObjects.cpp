//===- CudaObjects.cpp - Devices, buffers, modules, streams, graphs -------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaObjects.h"

#include <cstdint>
#include <cstring>
#include <utility>

namespace kiln::runtime::cuda {

//===----------------------------------------------------------------------===//
// CudaDevice
//===----------------------------------------------------------------------===//

CudaDevice::CudaDevice(const CudaDriver &driver, int ordinal)
    : driver(&driver), deviceInfo(driver.deviceInfo(ordinal)),
      device(driver.device(ordinal)) {
  const std::string what =
      "device " + std::to_string(ordinal) + " (" + deviceInfo.name + ")";
  driver.check(driver.api().cuDevicePrimaryCtxRetain(&primaryContext, device),
               "cuDevicePrimaryCtxRetain", what);
  CUresult current = driver.api().cuCtxSetCurrent(primaryContext);
  if (current != kCudaSuccess) {
    driver.api().cuDevicePrimaryCtxRelease_v2(device);
    driver.check(current, "cuCtxSetCurrent", what);
  }
}

CudaDevice::~CudaDevice() {
  if (driver)
    driver->api().cuDevicePrimaryCtxRelease_v2(device);
}

CudaDevice::CudaDevice(CudaDevice &&other) noexcept
    : driver(std::exchange(other.driver, nullptr)),
      deviceInfo(std::move(other.deviceInfo)), device(other.device),
      primaryContext(std::exchange(other.primaryContext, nullptr)) {}

CudaDevice &CudaDevice::operator=(CudaDevice &&other) noexcept {
  if (this != &other) {
    if (driver)
      driver->api().cuDevicePrimaryCtxRelease_v2(device);
    driver = std::exchange(other.driver, nullptr);
    deviceInfo = std::move(other.deviceInfo);
    device = other.device;
    primaryContext = std::exchange(other.primaryContext, nullptr);
  }
  return *this;
}

void CudaDevice::makeCurrent() const {
  driver->check(driver->api().cuCtxSetCurrent(primaryContext),
                "cuCtxSetCurrent",
                "device " + std::to_string(deviceInfo.ordinal));
}

//===----------------------------------------------------------------------===//
// DeviceBuffer
//===----------------------------------------------------------------------===//

DeviceBuffer::DeviceBuffer(const CudaDriver &driver, size_t bytes,
                           std::string name)
    : driver(&driver), bytes(bytes), bufferName(std::move(name)) {
  // cuMemAlloc refuses 0 bytes; an empty buffer needs no memory.
  if (bytes > 0)
    driver.check(driver.api().cuMemAlloc_v2(&devicePointer, bytes),
                 "cuMemAlloc_v2", describe());
}

DeviceBuffer::~DeviceBuffer() {
  if (driver && devicePointer)
    driver->api().cuMemFree_v2(devicePointer);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer &&other) noexcept
    : driver(std::exchange(other.driver, nullptr)),
      devicePointer(std::exchange(other.devicePointer, 0)),
      bytes(std::exchange(other.bytes, 0)),
      bufferName(std::move(other.bufferName)) {}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  if (this != &other) {
    if (driver && devicePointer)
      driver->api().cuMemFree_v2(devicePointer);
    driver = std::exchange(other.driver, nullptr);
    devicePointer = std::exchange(other.devicePointer, 0);
    bytes = std::exchange(other.bytes, 0);
    bufferName = std::move(other.bufferName);
  }
  return *this;
}

std::string DeviceBuffer::describe() const {
  return "buffer '" + bufferName + "' (" + std::to_string(bytes) + " bytes)";
}

void DeviceBuffer::checkRange(const char *operation, size_t count,
                              size_t offset) const {
  if (offset > bytes || count > bytes - offset)
    throw CudaError(std::string(operation) + " of " + std::to_string(count) +
                    " bytes at offset " + std::to_string(offset) +
                    " does not fit in " + describe());
}

void DeviceBuffer::copyFromHost(const void *source, size_t count,
                                size_t offset) {
  checkRange("a copy to the device", count, offset);
  if (count > 0)
    driver->check(
        driver->api().cuMemcpyHtoD_v2(devicePointer + offset, source, count),
        "cuMemcpyHtoD_v2", describe());
}

void DeviceBuffer::copyToHost(void *destination, size_t count,
                              size_t offset) const {
  checkRange("a copy to the host", count, offset);
  if (count > 0)
    driver->check(driver->api().cuMemcpyDtoH_v2(destination,
                                                devicePointer + offset, count),
                  "cuMemcpyDtoH_v2", describe());
}

void DeviceBuffer::fill(unsigned char value) {
  if (bytes > 0)
    driver->check(driver->api().cuMemsetD8_v2(devicePointer, value, bytes),
                  "cuMemsetD8_v2", describe());
}

//===----------------------------------------------------------------------===//
// CudaModule
//===----------------------------------------------------------------------===//

namespace {

/// What cuModuleLoadDataEx is given: it tells the kinds apart itself, but
/// PTX must end in a NUL, which a string_view need not have.
const char *imageKind(std::string_view image) {
  static constexpr char kElfMagic[] = "\x7f"
                                      "ELF";
  static constexpr unsigned char kFatbinMagic[] = {0x50, 0xed, 0x55, 0xba};
  if (image.size() >= 4 && std::memcmp(image.data(), kElfMagic, 4) == 0)
    return "cubin";
  if (image.size() >= 4 && std::memcmp(image.data(), kFatbinMagic, 4) == 0)
    return "fatbin";
  return "PTX";
}

} // namespace

CudaModule::CudaModule(const CudaDriver &driver, std::string_view image,
                       std::string name)
    : driver(&driver), moduleName(std::move(name)) {
  const char *kind = imageKind(image);
  const std::string what = "module '" + moduleName + "' (" + kind + ", " +
                           std::to_string(image.size()) + " bytes)";
  if (image.empty())
    throw CudaError("cannot load " + what + ": the image is empty");
  std::string ptx;
  const void *data = image.data();
  if (std::string_view(kind) == "PTX") {
    ptx.assign(image);
    data = ptx.c_str();
  }

  // The PTX compiler's log names the line at fault; without it
  // CUDA_ERROR_INVALID_PTX says only that there is one.
  std::string log(16 * 1024, '\0');
  int options[] = {kJitErrorLogBuffer, kJitErrorLogBufferSizeBytes};
  void *values[] = {
      log.data(), reinterpret_cast<void *>(static_cast<uintptr_t>(log.size()))};
  CUresult result =
      driver.api().cuModuleLoadDataEx(&module, data, 2, options, values);
  if (result != kCudaSuccess) {
    log.resize(std::strlen(log.c_str()));
    throw CudaError("cuModuleLoadDataEx failed for " + what + ": " +
                        driver.describeResult(result) +
                        (log.empty() ? "" : "; JIT error log: " + log),
                    result);
  }
}

CudaModule::~CudaModule() {
  if (driver && module)
    driver->api().cuModuleUnload(module);
}

CudaModule::CudaModule(CudaModule &&other) noexcept
    : driver(std::exchange(other.driver, nullptr)),
      module(std::exchange(other.module, nullptr)),
      moduleName(std::move(other.moduleName)) {}

CudaModule &CudaModule::operator=(CudaModule &&other) noexcept {
  if (this != &other) {
    if (driver && module)
      driver->api().cuModuleUnload(module);
    driver = std::exchange(other.driver, nullptr);
    module = std::exchange(other.module, nullptr);
    moduleName = std::move(other.moduleName);
  }
  return *this;
}

CudaKernel CudaModule::kernel(const std::string &name) const {
  CudaKernel kernel;
  kernel.name = name;
  driver->check(
      driver->api().cuModuleGetFunction(&kernel.function, module, name.c_str()),
      "cuModuleGetFunction",
      "kernel '" + name + "' of module '" + moduleName + "'");
  return kernel;
}

//===----------------------------------------------------------------------===//
// CudaStream
//===----------------------------------------------------------------------===//

CudaStream::CudaStream(const CudaDriver &driver) : driver(&driver) {
  driver.check(driver.api().cuStreamCreate(&stream, 0), "cuStreamCreate");
}

CudaStream::~CudaStream() {
  if (driver && stream)
    driver->api().cuStreamDestroy_v2(stream);
}

CudaStream::CudaStream(CudaStream &&other) noexcept
    : driver(std::exchange(other.driver, nullptr)),
      stream(std::exchange(other.stream, nullptr)) {}

CudaStream &CudaStream::operator=(CudaStream &&other) noexcept {
  if (this != &other) {
    if (driver && stream)
      driver->api().cuStreamDestroy_v2(stream);
    driver = std::exchange(other.driver, nullptr);
    stream = std::exchange(other.stream, nullptr);
  }
  return *this;
}

void CudaStream::launch(const CudaKernel &kernel, Dim3 grid, Dim3 block,
                        unsigned int sharedMemBytes, void **params) {
  CUresult result = driver->api().cuLaunchKernel(
      kernel.function, grid.x, grid.y, grid.z, block.x, block.y, block.z,
      sharedMemBytes, stream, params, nullptr);
  if (result == kCudaSuccess)
    return;
  auto dims = [](Dim3 d) {
    return std::to_string(d.x) + "x" + std::to_string(d.y) + "x" +
           std::to_string(d.z);
  };
  driver->check(result, "cuLaunchKernel",
                "kernel '" + kernel.name + "' (grid " + dims(grid) +
                    ", block " + dims(block) + ", " +
                    std::to_string(sharedMemBytes) + " bytes shared)");
}

void CudaStream::synchronize() {
  driver->check(driver->api().cuStreamSynchronize(stream),
                "cuStreamSynchronize");
}

//===----------------------------------------------------------------------===//
// CudaGraph
//===----------------------------------------------------------------------===//

CudaGraph CudaGraph::capture(CudaStream &stream,
                             const std::function<void()> &record,
                             CaptureMode mode) {
  const CudaDriver &driver = stream.cudaDriver();
  const CudaDriverApi &api = driver.api();
  driver.check(
      api.cuStreamBeginCapture_v2(stream.handle(), static_cast<int>(mode)),
      "cuStreamBeginCapture_v2");
  try {
    record();
  } catch (...) {
    // A stream left capturing refuses ordinary work; what was captured is
    // of no use.
    CUgraph partial = nullptr;
    if (api.cuStreamEndCapture(stream.handle(), &partial) == kCudaSuccess &&
        partial)
      api.cuGraphDestroy(partial);
    throw;
  }
  CUgraph graph = nullptr;
  driver.check(api.cuStreamEndCapture(stream.handle(), &graph),
               "cuStreamEndCapture");
  CUgraphExec exec = nullptr;
  CUresult result = api.cuGraphInstantiateWithFlags(&exec, graph, 0);
  // The executable graph is a copy; the graph is not needed after this.
  api.cuGraphDestroy(graph);
  driver.check(result, "cuGraphInstantiateWithFlags");
  return CudaGraph(driver, exec);
}

CudaGraph::~CudaGraph() {
  if (driver && exec)
    driver->api().cuGraphExecDestroy(exec);
}

CudaGraph::CudaGraph(CudaGraph &&other) noexcept
    : driver(std::exchange(other.driver, nullptr)),
      exec(std::exchange(other.exec, nullptr)) {}

CudaGraph &CudaGraph::operator=(CudaGraph &&other) noexcept {
  if (this != &other) {
    if (driver && exec)
      driver->api().cuGraphExecDestroy(exec);
    driver = std::exchange(other.driver, nullptr);
    exec = std::exchange(other.exec, nullptr);
  }
  return *this;
}

void CudaGraph::launch(CudaStream &stream) const {
  driver->check(driver->api().cuGraphLaunch(exec, stream.handle()),
                "cuGraphLaunch");
}

} // namespace kiln::runtime::cuda
