//===- CudaKernelLibrary.cpp - The CUDA kernel library as text ------------===//
//
// Part of Kiln. See CudaKernelLibrary.h. The .inc files are written by the
// build (codegen/CMakeLists.txt) from codegen/cuda/kernels/.
//
//===----------------------------------------------------------------------===//

#include "codegen/cuda/CudaKernelLibrary.h"

namespace kiln::codegen::cuda {

const std::vector<CudaLibraryFile> &cudaKernelLibrary() {
  static const std::vector<CudaLibraryFile> files = {
      {
          "Device.cuh",
#include "cuda_kernels/Device.cuh.inc"
      },
      {
          "DeviceHost.h",
#include "cuda_kernels/DeviceHost.h.inc"
      },
      {
          "Elements.cuh",
#include "cuda_kernels/Elements.cuh.inc"
      },
      {
          "Matmul.cuh",
#include "cuda_kernels/Matmul.cuh.inc"
      },
      {
          "Gemv.cuh",
#include "cuda_kernels/Gemv.cuh.inc"
      },
      {
          "Gemm.cuh",
#include "cuda_kernels/Gemm.cuh.inc"
      },
      {
          "GemmMma.cuh",
#include "cuda_kernels/GemmMma.cuh.inc"
      },
      {
          "Norms.cuh",
#include "cuda_kernels/Norms.cuh.inc"
      },
      {
          "Rope.cuh",
#include "cuda_kernels/Rope.cuh.inc"
      },
      {
          "Elementwise.cuh",
#include "cuda_kernels/Elementwise.cuh.inc"
      },
      {
          "KVCache.cuh",
#include "cuda_kernels/KVCache.cuh.inc"
      },
      {
          "Attention.cuh",
#include "cuda_kernels/Attention.cuh.inc"
      },
      {
          "Sampling.cuh",
#include "cuda_kernels/Sampling.cuh.inc"
      },
      {
          "ReadProbe.cuh",
#include "cuda_kernels/ReadProbe.cuh.inc"
      },
  };
  return files;
}

const char *cudaStepAbiText() {
  return
#include "CudaStepABI.h.inc"
      ;
}

} // namespace kiln::codegen::cuda
