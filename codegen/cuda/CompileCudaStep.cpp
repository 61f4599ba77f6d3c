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

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>

namespace kiln::codegen {

namespace {

void writeBytes(const std::string &path, const char *data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data, std::streamsize(size));
  if (!out)
    throw std::runtime_error("cannot write '" + path + "'");
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

} // namespace

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
  if (std::error_code ec = llvm::sys::fs::create_directories(options.workDir))
    throw std::runtime_error("cannot create '" + options.workDir +
                             "': " + ec.message());
  auto in = [&](const std::string &name) {
    llvm::SmallString<256> path(options.workDir);
    llvm::sys::path::append(path, name);
    return path.str().str();
  };

  CompiledStep compiled;
  auto start = std::chrono::steady_clock::now();
  progress("packing weights");
  compiled.weightsPath = in("weights.bin");
  WeightPacker packer(weights, compiled.weightsPath);
  std::unique_ptr<StepEmitter> emitter = createCudaStepEmitter(options.target);
  EmittedStep emitted = emitter->emit(getStepFunction(module), packer,
                                      {options.weightType, options.cacheType});
  compiled.weightsBytes = packer.finish();
  compiled.weightEntries = packer.entries();
  compiled.arenaBytes = emitted.arenaBytes;
  compiled.maxTokens = emitted.maxTokens;
  compiled.cacheType = options.cacheType;
  compiled.kernelSummaries = emitted.kernelSummaries;

  compiled.sources.push_back({"StepABI.h", stepAbiText});
  for (const SourceFile &header : emitted.headers)
    compiled.sources.push_back(header);
  for (const SourceFile &kernel : emitted.kernels)
    compiled.sources.push_back(kernel);
  compiled.sources.push_back(emitted.step);
  for (const SourceFile &file : compiled.sources)
    writeBytes(in(file.name), file.text.data(), file.text.size());
  compiled.emitSeconds = secondsSince(start);

  start = std::chrono::steady_clock::now();
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
  writeBytes(compiled.ptxPath, result.ptx.data(), result.ptx.size());
  writeBytes(compiled.cubinPath, result.cubin.data(), result.cubin.size());
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
