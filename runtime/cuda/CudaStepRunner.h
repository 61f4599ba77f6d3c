//===- CudaStepRunner.h - Running a CUDA artifact's steps --------*- C++
//-*-===//
//
// Part of Kiln. What CompiledModel runs a CUDA step library with
// (runtime/CudaStepABI.h). The library's kiln_cuda_step launches the step's
// kernels through a launcher this runner provides, on one of two devices:
//
//  - a GPU, through the CUDA driver (runtime/cuda/CudaDriver.h): the
//    artifact's cubin is loaded when it was compiled for this GPU's
//    architecture, else its PTX, which the driver compiles for it; the
//    weights, the arena, the KV cache pools and the step's inputs live in
//    device memory planned once at load; each step uploads its inputs and
//    block tables, replays a decode-sized step's launches as a CUDA Graph
//    captured the first time its (tokens, rows) shape runs (prefill chunks
//    launch directly), and downloads the logits;
//  - the block emulator the library carries (kiln_cuda_emulated_launch: the
//    same kernels compiled for the host), when KILN_CUDA_EMULATE=1: device
//    addresses are then host addresses, and the step runs on the CPU,
//    slowly, exactly as the GPU kernels are written. CI checks CUDA
//    artifacts this way.
//
// Without a driver or a GPU, create() throws an ArtifactError that says so
// and how to run the kernels in the emulator instead.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_CUDA_CUDASTEPRUNNER_H
#define KILN_RUNTIME_CUDA_CUDASTEPRUNNER_H

#include "runtime/StepABI.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace kiln::runtime::cuda {

/// The environment variable that runs CUDA artifacts in the emulator.
constexpr const char *kCudaEmulateEnv = "KILN_CUDA_EMULATE";

/// What a runner needs from the artifact and the model.
struct CudaStepInputs {
  std::string artifactPath;
  std::string arch; ///< the cubin's, e.g. sm_90
  std::string_view ptx, cubin, weights;
  int64_t arenaBytes = 0, maxTokens = 0, vocabSize = 0;
  int64_t cacheBytes = 0; ///< keys and values together
  // The step library's symbols (kiln_cuda_step and the emulator's).
  void *stepFn = nullptr, *emulatedLaunch = nullptr, *emulatedError = nullptr;
};

class CudaStepRunner {
public:
  virtual ~CudaStepRunner();
  /// The GPU, or the emulator when KILN_CUDA_EMULATE=1. Throws ArtifactError
  /// naming the artifact when neither can run it.
  static std::unique_ptr<CudaStepRunner> create(const CudaStepInputs &in);
  /// Runs one step of `args` (host memory, as for a CPU step; its cache's
  /// block tables are the host's): copies in, launches, copies the logits
  /// out to args.logits. Throws std::runtime_error naming the failing
  /// launch.
  virtual void step(const kiln_step_args &args) = 0;
  /// "NVIDIA H200, sm_90, 132 SMs, 139.8 GiB (cubin)" or "the CPU block
  /// emulator".
  virtual std::string describe() const = 0;
};

} // namespace kiln::runtime::cuda

#endif // KILN_RUNTIME_CUDA_CUDASTEPRUNNER_H
