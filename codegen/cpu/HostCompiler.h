//===- HostCompiler.h - Compile generated C++ into a library ----*- C++ -*-===//
//
// Part of Kiln. Generated CPU kernels are compiled by the host's C++
// compiler: $CXX if set, else the first of c++, clang++, g++ and clang++-19
// on PATH. Each source compiles to an object in parallel (one job per core),
// then one link makes the shared library the artifact carries.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_CPU_HOSTCOMPILER_H
#define KILN_CODEGEN_CPU_HOSTCOMPILER_H

#include "passes/target/TargetDescription.h"

#include <string>
#include <vector>

namespace kiln::codegen {

/// The compiler to use; throws with a clear message when there is none.
std::string findHostCompiler();

/// The -m flags that let the compiler use `target`'s ISA, and no more.
std::vector<std::string> targetFlags(const target::TargetDescription &target);

/// The CPU features code compiled with targetFlags(target) needs, named as
/// runtime/CpuFeatures.h names them (the artifact manifest's list, which the
/// runtime checks before loading the code).
std::vector<std::string>
requiredCpuFeatures(const target::TargetDescription &target);

/// Compiles `sources` (paths; headers beside them) into the shared library
/// `output` with `jobs` compilers at once. Throws with the compiler's
/// messages on failure.
void compileSharedLibrary(const std::string &compiler,
                          const std::vector<std::string> &sources,
                          const std::vector<std::string> &flags,
                          const std::string &output, unsigned jobs);

} // namespace kiln::codegen

#endif // KILN_CODEGEN_CPU_HOSTCOMPILER_H
