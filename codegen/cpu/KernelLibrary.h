//===- KernelLibrary.h - The kernel library as text -------------*- C++ -*-===//
//
// Part of Kiln. The headers of codegen/cpu/kernels/, embedded into Kiln at
// build time: the CPU emitter writes them beside the kernels it
// instantiates, so an artifact's sources compile on their own and show the
// code that runs.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_CPU_KERNELLIBRARY_H
#define KILN_CODEGEN_CPU_KERNELLIBRARY_H

#include <vector>

namespace kiln::codegen::cpu {

struct KernelLibraryFile {
  const char *path; ///< relative to the sources, e.g. "kernels/Gemm.h"
  const char *text;
};

/// Every header of the kernel library.
const std::vector<KernelLibraryFile> &kernelLibrary();

} // namespace kiln::codegen::cpu

#endif // KILN_CODEGEN_CPU_KERNELLIBRARY_H
