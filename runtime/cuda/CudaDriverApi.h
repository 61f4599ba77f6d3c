//===- CudaDriverApi.h - The CUDA driver API's ABI, declared ----*- C++ -*-===//
//
// Part of Kiln. The few types, constants and function signatures of the CUDA
// driver API (libcuda.so.1) that the runtime calls, declared here so that
// Kiln builds on machines without the CUDA toolkit: <cuda.h> is never
// included. CudaDriver (runtime/cuda/CudaDriver.h) fills a CudaDriverApi
// with dlsym at run time.
//
// Everything here must match the driver's ABI exactly, as <cuda.h> of CUDA
// 12 and 13 declares it for 64-bit hosts: handles are pointers to opaque
// structs, CUdevice and CUresult are ints, C enums are passed as int, and
// CUdeviceptr is 64 bits. Members are named for the symbols the driver
// exports, which for functions whose signature changed are the versioned
// ones <cuda.h> maps the plain names to (`#define cuMemAlloc cuMemAlloc_v2`).
// The per-thread-default-stream variants (_ptds, _ptsz) are not used: Kiln
// always passes its own streams.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_CUDA_CUDADRIVERAPI_H
#define KILN_RUNTIME_CUDA_CUDADRIVERAPI_H

#include <cstddef>

namespace kiln::runtime::cuda {

static_assert(sizeof(void *) == 8,
              "CUdeviceptr is 32 bits on 32-bit hosts; Kiln declares the "
              "64-bit ABI only");

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;

struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUgraph_st;
struct CUgraphExec_st;
using CUcontext = CUctx_st *;
using CUmodule = CUmod_st *;
using CUfunction = CUfunc_st *;
using CUstream = CUstream_st *;
using CUgraph = CUgraph_st *;
using CUgraphExec = CUgraphExec_st *;

/// CUresult values the runtime tells apart.
constexpr CUresult kCudaSuccess = 0;         ///< CUDA_SUCCESS
constexpr CUresult kCudaErrorNoDevice = 100; ///< CUDA_ERROR_NO_DEVICE

/// CUdevice_attribute values.
constexpr int kAttributeMultiprocessorCount = 16;
constexpr int kAttributeComputeCapabilityMajor = 75;
constexpr int kAttributeComputeCapabilityMinor = 76;

/// CUjit_option values: where cuModuleLoadDataEx writes the PTX compiler's
/// error log, and the log buffer's size (in, then bytes written out).
constexpr int kJitErrorLogBuffer = 5;
constexpr int kJitErrorLogBufferSizeBytes = 6;

/// CUstreamCaptureMode values.
enum class CaptureMode : int {
  /// CU_STREAM_CAPTURE_MODE_GLOBAL: no thread may make calls that are unsafe
  /// during a capture (cuMemAlloc, synchronizing calls) while it runs.
  Global = 0,
  /// CU_STREAM_CAPTURE_MODE_THREAD_LOCAL: only the capturing thread may not.
  ThreadLocal = 1,
};

/// The driver functions Kiln calls, resolved by CudaDriver. Every one
/// returns a CUresult (0 on success) except where noted.
struct CudaDriverApi {
  CUresult (*cuInit)(unsigned int flags) = nullptr;
  CUresult (*cuDriverGetVersion)(int *version) = nullptr;
  CUresult (*cuGetErrorName)(CUresult error, const char **name) = nullptr;
  CUresult (*cuGetErrorString)(CUresult error,
                               const char **description) = nullptr;

  CUresult (*cuDeviceGetCount)(int *count) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice *device, int ordinal) = nullptr;
  CUresult (*cuDeviceGetName)(char *name, int length,
                              CUdevice device) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int *value, int attribute,
                                   CUdevice device) = nullptr;
  CUresult (*cuDeviceTotalMem_v2)(size_t *bytes, CUdevice device) = nullptr;

  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *context,
                                       CUdevice device) = nullptr;
  CUresult (*cuDevicePrimaryCtxRelease_v2)(CUdevice device) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext context) = nullptr;

  CUresult (*cuModuleLoadDataEx)(CUmodule *module, const void *image,
                                 unsigned int numOptions, int *options,
                                 void **optionValues) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule module) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction *function, CUmodule module,
                                  const char *name) = nullptr;

  CUresult (*cuMemAlloc_v2)(CUdeviceptr *pointer, size_t bytes) = nullptr;
  CUresult (*cuMemFree_v2)(CUdeviceptr pointer) = nullptr;
  CUresult (*cuMemcpyHtoD_v2)(CUdeviceptr destination, const void *source,
                              size_t bytes) = nullptr;
  CUresult (*cuMemcpyDtoH_v2)(void *destination, CUdeviceptr source,
                              size_t bytes) = nullptr;
  CUresult (*cuMemsetD8_v2)(CUdeviceptr destination, unsigned char value,
                            size_t count) = nullptr;

  CUresult (*cuLaunchKernel)(CUfunction function, unsigned int gridX,
                             unsigned int gridY, unsigned int gridZ,
                             unsigned int blockX, unsigned int blockY,
                             unsigned int blockZ, unsigned int sharedMemBytes,
                             CUstream stream, void **kernelParams,
                             void **extra) = nullptr;

  CUresult (*cuStreamCreate)(CUstream *stream, unsigned int flags) = nullptr;
  CUresult (*cuStreamDestroy_v2)(CUstream stream) = nullptr;
  CUresult (*cuStreamSynchronize)(CUstream stream) = nullptr;
  CUresult (*cuStreamBeginCapture_v2)(CUstream stream, int mode) = nullptr;
  CUresult (*cuStreamEndCapture)(CUstream stream, CUgraph *graph) = nullptr;

  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec *exec, CUgraph graph,
                                          unsigned long long flags) = nullptr;
  CUresult (*cuGraphLaunch)(CUgraphExec exec, CUstream stream) = nullptr;
  CUresult (*cuGraphExecDestroy)(CUgraphExec exec) = nullptr;
  CUresult (*cuGraphDestroy)(CUgraph graph) = nullptr;
};

} // namespace kiln::runtime::cuda

#endif // KILN_RUNTIME_CUDA_CUDADRIVERAPI_H
