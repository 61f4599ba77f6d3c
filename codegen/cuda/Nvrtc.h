//===- Nvrtc.h - CUDA C++ to PTX and cubin with NVRTC ------------*- C++
//-*-===//
//
// Part of Kiln's CUDA code generation. One call of NVRTC (the CUDA toolkit's
// runtime compiler, linked at build time): a CUDA C++ source and the
// headers it includes, compiled for one architecture to PTX (which the
// driver can JIT for newer GPUs) and a cubin (the exact machine code), with
// ptxas's verbose report in the log, from which CubinResources.h reads the
// spills. No GPU is needed.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_CUDA_NVRTC_H
#define KILN_CODEGEN_CUDA_NVRTC_H

#include <stdexcept>
#include <string>
#include <vector>

namespace kiln::codegen::cuda {

/// NVRTC rejected the source, or is not usable; the message carries NVRTC's
/// log.
class NvrtcError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct NvrtcHeader {
  std::string name; ///< as the source includes it, e.g. "Gemv.cuh"
  std::string text;
};

struct NvrtcOptions {
  std::string arch = "sm_90"; ///< sm_80, sm_86, sm_89, sm_90, ...
  std::vector<NvrtcHeader> headers;
  std::vector<std::string> includeDirs;
  std::vector<std::string> defines; ///< NAME or NAME=VALUE
};

struct NvrtcResult {
  std::string ptx;
  std::vector<char> cubin;
  std::string log; ///< NVRTC's and ptxas's messages (warnings included)
};

/// Compiles `source` (named `name` in messages) for options.arch with
/// -std=c++17 and ptxas -v. Throws NvrtcError with the log on failure.
NvrtcResult compileWithNvrtc(const std::string &source, const std::string &name,
                             const NvrtcOptions &options);

/// "13.0": the NVRTC Kiln was built against.
std::string nvrtcVersion();

/// The warnings in an NVRTC log: its lines that say "warning", each whole.
std::vector<std::string> nvrtcWarnings(const std::string &log);

} // namespace kiln::codegen::cuda

#endif // KILN_CODEGEN_CUDA_NVRTC_H
