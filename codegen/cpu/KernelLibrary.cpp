//===- KernelLibrary.cpp - The kernel library as text ---------------------===//
//
// Part of Kiln. See KernelLibrary.h. The .inc files are written by the build
// (codegen/CMakeLists.txt) from codegen/cpu/kernels/.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/KernelLibrary.h"

namespace kiln::codegen::cpu {

const std::vector<KernelLibraryFile> &kernelLibrary() {
  static const std::vector<KernelLibraryFile> files = {
      {
          "kernels/Vector.h",
#include "kernels/Vector.h.inc"
      },
      {
          "kernels/Amx.h",
#include "kernels/Amx.h.inc"
      },
      {
          "kernels/Quant.h",
#include "kernels/Quant.h.inc"
      },
      {
          "kernels/KQuant.h",
#include "kernels/KQuant.h.inc"
      },
      {
          "kernels/Elementwise.h",
#include "kernels/Elementwise.h.inc"
      },
      {
          "kernels/Norms.h",
#include "kernels/Norms.h.inc"
      },
      {
          "kernels/Gemm.h",
#include "kernels/Gemm.h.inc"
      },
      {
          "kernels/Attention.h",
#include "kernels/Attention.h.inc"
      },
      {
          "kernels/AttentionPieces.h",
#include "kernels/AttentionPieces.h.inc"
      },
      {
          "kernels/Rope.h",
#include "kernels/Rope.h.inc"
      },
      {
          "kernels/KVCache.h",
#include "kernels/KVCache.h.inc"
      },
      {
          "kernels/Gather.h",
#include "kernels/Gather.h.inc"
      },
  };
  return files;
}

} // namespace kiln::codegen::cpu
