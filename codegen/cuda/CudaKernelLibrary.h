//===- CudaKernelLibrary.h - The CUDA kernel library as text -----*- C++
//-*-===//
//
// Part of Kiln. The headers of codegen/cuda/kernels/, embedded into Kiln at
// build time: the CUDA emitter writes them beside the kernels it
// instantiates, hands them to NVRTC, and compiles them for the host (the
// block emulator, DeviceHost.h) into the step library, so an artifact's
// sources compile on their own and show the code that runs.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_CUDA_CUDAKERNELLIBRARY_H
#define KILN_CODEGEN_CUDA_CUDAKERNELLIBRARY_H

#include <vector>

namespace kiln::codegen::cuda {

struct CudaLibraryFile {
  const char *name; ///< as kernels include it, e.g. "Gemv.cuh"
  const char *text;
};

/// Every header of the CUDA kernel library.
const std::vector<CudaLibraryFile> &cudaKernelLibrary();

/// runtime/CudaStepABI.h.
const char *cudaStepAbiText();

} // namespace kiln::codegen::cuda

#endif // KILN_CODEGEN_CUDA_CUDAKERNELLIBRARY_H
