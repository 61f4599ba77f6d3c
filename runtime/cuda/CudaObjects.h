//===- CudaObjects.h - What the CUDA driver hands out, owned ---*- C++ -*-===//
//
// Part of Kiln. Owners of the CUDA driver's objects, each releasing what it
// holds when destroyed, on top of CudaDriver (runtime/cuda/CudaDriver.h):
//
//  - CudaDevice retains a device's primary context (the one the CUDA
//    runtime API shares too) and makes it current on the thread that
//    creates it;
//  - DeviceBuffer is device memory (cuMemAlloc);
//  - CudaModule is a loaded cubin, fatbin or PTX image; the driver
//    compiles PTX for the device it runs on, so an artifact holding PTX runs
//    on GPUs newer than the one it was compiled for;
//  - CudaStream is where kernels are launched;
//  - CudaGraph is a sequence of launches captured once on a stream and
//    replayed as one: a model step, about a hundred kernel launches, then
//    costs the CPU one launch instead of a hundred.
//
// Every driver call is checked and throws CudaError naming the call and the
// object ("cuMemAlloc_v2 failed for buffer 'kv' (2147483648 bytes):
// CUDA_ERROR_OUT_OF_MEMORY (out of memory)"); destructors ignore errors,
// since they must not throw. Each object keeps a pointer to its CudaDriver,
// which must outlive it, and everything made for a device must be destroyed
// before its CudaDevice releases the context that holds it. The calls need
// the device's context current on the calling thread
// (CudaDevice::makeCurrent).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_CUDA_CUDAOBJECTS_H
#define KILN_RUNTIME_CUDA_CUDAOBJECTS_H

#include "runtime/cuda/CudaDriver.h"

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace kiln::runtime::cuda {

/// A device, its primary context retained and current on the thread that
/// created it.
class CudaDevice {
public:
  /// Throws CudaError when the device does not exist or its context cannot
  /// be retained.
  CudaDevice(const CudaDriver &driver, int ordinal);
  ~CudaDevice();
  CudaDevice(CudaDevice &&other) noexcept;
  CudaDevice &operator=(CudaDevice &&other) noexcept;
  CudaDevice(const CudaDevice &) = delete;
  CudaDevice &operator=(const CudaDevice &) = delete;

  const CudaDeviceInfo &info() const { return deviceInfo; }
  CUdevice handle() const { return device; }
  CUcontext context() const { return primaryContext; }
  /// Makes the primary context current on the calling thread: every thread
  /// that calls the driver for this device does this once first.
  void makeCurrent() const;

private:
  const CudaDriver *driver = nullptr; ///< null once moved from
  CudaDeviceInfo deviceInfo;
  CUdevice device = 0;
  CUcontext primaryContext = nullptr;
};

/// Device memory. The copies are synchronous and run on the legacy default
/// stream, which waits for earlier work on every CudaStream (they are
/// blocking streams): a copy to the host after a launch sees its results.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  /// Allocates `bytes` (none when 0); `name` appears in error messages.
  DeviceBuffer(const CudaDriver &driver, size_t bytes, std::string name);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer &&other) noexcept;
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  CUdeviceptr pointer() const { return devicePointer; }
  size_t size() const { return bytes; }
  const std::string &name() const { return bufferName; }

  /// Copies `count` bytes from `source` to the buffer at `offset`. Throws
  /// CudaError when the range does not fit in the buffer.
  void copyFromHost(const void *source, size_t count, size_t offset = 0);
  /// Copies `count` bytes at `offset` to `destination`.
  void copyToHost(void *destination, size_t count, size_t offset = 0) const;
  /// Sets every byte to `value`.
  void fill(unsigned char value);

private:
  /// "buffer 'kv' (4096 bytes)".
  std::string describe() const;
  void checkRange(const char *operation, size_t count, size_t offset) const;

  const CudaDriver *driver = nullptr;
  CUdeviceptr devicePointer = 0;
  size_t bytes = 0;
  std::string bufferName;
};

/// A kernel of a CudaModule, with its name for error messages.
struct CudaKernel {
  CUfunction function = nullptr;
  std::string name;
};

/// Grid and block sizes of a launch.
struct Dim3 {
  unsigned int x = 1, y = 1, z = 1;
};

/// A loaded module: the kernels of one cubin, fatbin or PTX image.
class CudaModule {
public:
  /// Loads `image` into the current context: a cubin (ELF), a fatbin, or
  /// else PTX text, which the driver compiles for the device. `name` appears
  /// in error messages. Throws CudaError with the PTX compiler's log, when
  /// it wrote one.
  CudaModule(const CudaDriver &driver, std::string_view image,
             std::string name);
  ~CudaModule();
  CudaModule(CudaModule &&other) noexcept;
  CudaModule &operator=(CudaModule &&other) noexcept;
  CudaModule(const CudaModule &) = delete;
  CudaModule &operator=(const CudaModule &) = delete;

  /// The kernel named `name` (its symbol: extern "C" kernels keep theirs).
  CudaKernel kernel(const std::string &name) const;
  const std::string &name() const { return moduleName; }

private:
  const CudaDriver *driver = nullptr;
  CUmodule module = nullptr;
  std::string moduleName;
};

/// A stream: launches on it run in order, after the work enqueued before
/// them.
class CudaStream {
public:
  /// A blocking stream (cuStreamCreate with flags 0): it waits for, and is
  /// waited for by, the legacy default stream the copies run on.
  explicit CudaStream(const CudaDriver &driver);
  ~CudaStream();
  CudaStream(CudaStream &&other) noexcept;
  CudaStream &operator=(CudaStream &&other) noexcept;
  CudaStream(const CudaStream &) = delete;
  CudaStream &operator=(const CudaStream &) = delete;

  CUstream handle() const { return stream; }
  const CudaDriver &cudaDriver() const { return *driver; }

  /// Enqueues `kernel` over `grid` blocks of `block` threads. `params`
  /// points to one pointer per kernel parameter, to its value; the values
  /// are copied at the call (or, while capturing, into the graph).
  void launch(const CudaKernel &kernel, Dim3 grid, Dim3 block,
              unsigned int sharedMemBytes, void **params);
  /// Waits until everything enqueued has run.
  void synchronize();

private:
  const CudaDriver *driver = nullptr;
  CUstream stream = nullptr;
};

/// Launches captured from a stream, replayed together. A replay runs the
/// kernels with the arguments they were captured with, so what changes
/// between replays must live in device memory the kernels read (buffers
/// that keep their addresses), not in launch arguments.
class CudaGraph {
public:
  /// Runs `record`, which enqueues work on `stream`, between
  /// cuStreamBeginCapture_v2 and cuStreamEndCapture: the work is recorded,
  /// not run. Then instantiates the graph. When `record` throws, the capture
  /// is ended and the exception passed on, so the stream stays usable.
  static CudaGraph capture(CudaStream &stream,
                           const std::function<void()> &record,
                           CaptureMode mode = CaptureMode::Global);
  ~CudaGraph();
  CudaGraph(CudaGraph &&other) noexcept;
  CudaGraph &operator=(CudaGraph &&other) noexcept;
  CudaGraph(const CudaGraph &) = delete;
  CudaGraph &operator=(const CudaGraph &) = delete;

  /// Enqueues one replay of the captured work on `stream`.
  void launch(CudaStream &stream) const;

private:
  CudaGraph(const CudaDriver &driver, CUgraphExec exec)
      : driver(&driver), exec(exec) {}

  const CudaDriver *driver = nullptr;
  CUgraphExec exec = nullptr; ///< the graph itself is not kept
};

} // namespace kiln::runtime::cuda

#endif // KILN_RUNTIME_CUDA_CUDAOBJECTS_H
