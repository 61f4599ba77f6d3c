//===- CompileInstances.h - KernelInstances.cuh through NVRTC ----*- C++
//-*-===//
//
// Part of Kiln's CUDA kernel tests. KernelInstances.cuh and the kernel
// library's headers are built into the test binaries as text
// (test/cuda/CMakeLists.txt), so NVRTC compiles the same source on the build
// machine (kiln-cuda-nvrtc-tests) and on a GPU machine that may hold the
// source tree elsewhere, or not at all (kiln-cuda-kernel-tests --device=gpu).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TEST_CUDA_COMPILEINSTANCES_H
#define KILN_TEST_CUDA_COMPILEINSTANCES_H

#include "codegen/cuda/Nvrtc.h"

#include <string>

namespace kiln::cuda_test {

/// KernelInstances.cuh compiled by NVRTC for `arch` (e.g. "sm_90").
codegen::cuda::NvrtcResult compileKernelInstances(const std::string &arch);

} // namespace kiln::cuda_test

#endif // KILN_TEST_CUDA_COMPILEINSTANCES_H
