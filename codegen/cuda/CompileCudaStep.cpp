//===- CompileCudaStep.cpp - From a planned module to a CUDA step ---------===//
//
// Part of Kiln. compileStep for CUDA targets (codegen/CompileStep.h): packs
// the weights row-major, emits kernels.cu and step.cpp
// (CudaStepEmitter.cpp), compiles kernels.cu with NVRTC for the target's
// architecture into PTX and a cubin, and compiles the step, with the
// kernels' host form for the block emulator, into the step library.
//
//===----------------------------------------------------------------------===//

#include "codegen/CompileStep.h"

#include "codegen/cpu/HostCompiler.h"

#ifdef KILN_HAVE_NVRTC
#include "codegen/cuda/Nvrtc.h"
#endif

#include <algorithm>
#include <chrono>
#include <thread>

namespace kiln::codegen {

#ifdef KILN_HAVE_NVRTC
namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

} // namespace
#endif

CompiledStep compileCudaStep(mlir::ModuleOp module, WeightProvider &weights,
                             const CompileStepOptions &options,
                             const std::string &stepAbiText) {
#ifndef KILN_HAVE_NVRTC
  (void)module;
  (void)weights;
  (void)stepAbiText;
  throw std::runtime_error(
      "--target " + options.target.spec() +
      ": this Kiln was built without the CUDA toolkit (NVRTC), which CUDA "
      "targets compile with; install it in /usr/local/cuda and rebuild");
#else
  auto progress = [&](const std::string &stage) {
    if (options.progress)
      options.progress(stage);
  };
  std::unique_ptr<StepEmitter> emitter = createCudaStepEmitter(options.target);
  EmittedStepFiles files =
      emitStepFiles(module, weights, options, *emitter, stepAbiText);
  CompiledStep &compiled = files.compiled;
  const EmittedStep &emitted = files.emitted;
  auto in = [&](const std::string &name) { return files.path(name); };

  auto start = std::chrono::steady_clock::now();
  const target::CudaTarget &gpu = options.target.cuda();
  std::string arch =
      "sm_" + std::to_string(gpu.smMajor) + std::to_string(gpu.smMinor);
  progress("compiling " + std::to_string(emitted.kernelSummaries.size()) +
           " CUDA kernels for " + arch + " with NVRTC");
  cuda::NvrtcOptions nvrtc;
  nvrtc.arch = arch;
  for (const SourceFile &header : emitted.headers)
    nvrtc.headers.push_back({header.name, header.text});
  const SourceFile &kernelsSource = emitted.kernels.front();
  cuda::NvrtcResult result =
      cuda::compileWithNvrtc(kernelsSource.text, kernelsSource.name, nvrtc);
  compiled.device = "cuda";
  compiled.cudaArch = arch;
  compiled.nvrtcVersion = cuda::nvrtcVersion();
  compiled.nvrtcLog = result.log;
  compiled.ptxPath = in("kernels.ptx");
  compiled.cubinPath = in("kernels.cubin");
  writeStepFile(compiled.ptxPath, result.ptx);
  writeStepFile(compiled.cubinPath,
                std::string_view(result.cubin.data(), result.cubin.size()));
  // The PTX is readable generated code too: with the sources (kiln compile
  // --emit-source), where tests and users read what the kernels became.
  compiled.sources.push_back({"kernels.ptx", result.ptx});

  progress("compiling the step and the emulated kernels");
  compiled.libraryPath = in("step.so");
  unsigned jobs = options.jobs
                      ? options.jobs
                      : std::max(1u, std::thread::hardware_concurrency());
  // The emulator reports errors as exceptions, caught at its launcher.
  compileSharedLibrary(findHostCompiler(),
                       {in("kernels_host.cpp"), in(emitted.step.name)},
                       {"-fexceptions"}, compiled.libraryPath, jobs);
  compiled.compileSeconds = secondsSince(start);
  return compiled;
#endif
}

} // namespace kiln::codegen
