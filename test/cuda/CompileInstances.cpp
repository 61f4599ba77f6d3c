//===- CompileInstances.cpp - KernelInstances.cuh through NVRTC -----------===//
//
// Part of Kiln's CUDA kernel tests. See CompileInstances.h.
//
//===----------------------------------------------------------------------===//

#include "test/cuda/CompileInstances.h"

#include "codegen/cuda/CudaKernelLibrary.h"

namespace kiln::cuda_test {

namespace {
const char *const kInstances =
#include "KernelInstances.cuh.inc"
    ;
} // namespace

codegen::cuda::NvrtcResult compileKernelInstances(const std::string &arch) {
  codegen::cuda::NvrtcOptions options;
  options.arch = arch;
  for (const codegen::cuda::CudaLibraryFile &file :
       codegen::cuda::cudaKernelLibrary())
    options.headers.push_back({file.name, file.text});
  return codegen::cuda::compileWithNvrtc(kInstances, "KernelInstances.cuh",
                                         options);
}

} // namespace kiln::cuda_test
