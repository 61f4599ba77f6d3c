//===- CubinResources.h - What each kernel of a cubin uses -------*- C++
//-*-===//
//
// Part of Kiln's CUDA code generation. Per kernel of a cubin (the ELF that
// ptxas writes): its registers and its stack frame, read from the cubin's
// .nv.info section (attributes EIATTR_REGCOUNT and EIATTR_FRAME_SIZE, keyed
// by symbol), and the spill stores and loads ptxas reported in its verbose
// log. A frame of zero bytes means no local memory: no spills, no arrays
// the compiler could not keep in registers.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_CUDA_CUBINRESOURCES_H
#define KILN_CODEGEN_CUDA_CUBINRESOURCES_H

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace kiln::codegen::cuda {

class CubinError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct KernelResources {
  int registers = -1;       ///< -1: not in the cubin
  int frameBytes = -1;      ///< local memory per thread; -1: not in the cubin
  int spillStoreBytes = -1; ///< from the ptxas log; -1: not reported
  int spillLoadBytes = -1;
};

/// The resources of every kernel (entry function) in `cubin`, by name.
/// Throws CubinError if the bytes are not a cubin Kiln can read.
std::map<std::string, KernelResources>
readCubinResources(const std::vector<char> &cubin);

/// Adds the spill figures of ptxas's verbose log ("Function properties for
/// K ... N bytes spill stores, M bytes spill loads") to `resources`.
void addPtxasSpills(std::map<std::string, KernelResources> &resources,
                    const std::string &log);

} // namespace kiln::codegen::cuda

#endif // KILN_CODEGEN_CUDA_CUBINRESOURCES_H
