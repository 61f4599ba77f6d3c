//===- CompileStep.h - From a planned module to a step library --*- C++ -*-===//
//
// Part of Kiln. The code generation half of `kiln compile`: given a module
// that went through --kiln-pipeline, packs its weights, emits the kernels
// and the step for the target, and compiles them into a shared library.
// Packing the result into an artifact is the caller's (tools/kiln).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_COMPILESTEP_H
#define KILN_CODEGEN_COMPILESTEP_H

#include "codegen/StepEmitter.h"

#include "mlir/IR/BuiltinOps.h"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::codegen {

struct CompileStepOptions {
  target::TargetDescription target;
  std::optional<PackedType> weightType; ///< EmitOptions::weightType
  /// The KV cache's element type (EmitOptions::cacheType).
  PackedType cacheType = PackedType::F32;
  /// Where sources, objects, the library and the packed weights go.
  std::string workDir;
  /// Compiler processes at once (0: one per hardware thread).
  unsigned jobs = 0;
  /// Called at each stage ("packing weights", "compiling 12 kernels").
  std::function<void(const std::string &)> progress;
};

struct CompiledStep {
  std::string libraryPath;
  std::string weightsPath;
  int64_t weightsBytes = 0;
  /// Every source the library was built from (kernels, step, headers).
  std::vector<SourceFile> sources;
  int64_t arenaBytes = 0;
  int64_t maxTokens = 0;
  PackedType cacheType = PackedType::F32;
  std::vector<std::string> kernelSummaries;
  std::vector<runtime::PackedWeight> weightEntries;
  double emitSeconds = 0, compileSeconds = 0;
  /// "cpu", or "cuda": then the library is a host step that launches the
  /// kernels of the PTX and cubin below (runtime/CudaStepABI.h).
  std::string device = "cpu";
  std::string cudaArch;     ///< sm_80, sm_90
  std::string ptxPath;      ///< the kernels as PTX (JIT on newer GPUs)
  std::string cubinPath;    ///< the kernels for cudaArch
  std::string nvrtcVersion; ///< the NVRTC that compiled them
  std::string nvrtcLog;     ///< its messages (ptxas's report included)
};

/// The step function of `module` (the one with kiln.step); throws if none.
mlir::func::FuncOp getStepFunction(mlir::ModuleOp module);

/// Compiles `module`'s step. Throws std::runtime_error naming the op, file or
/// tool on any failure.
CompiledStep compileStep(mlir::ModuleOp module, WeightProvider &weights,
                         const CompileStepOptions &options);

/// What every target's compileStep does first: creates options.workDir,
/// packs the weights into workDir/weights.bin as `emitter` asks while it
/// emits the step, and fills the compiled step's fields that come from
/// that (weights, arena, max tokens, cache type, kernel summaries, the
/// sources in order: StepABI.h, headers, kernels, step, each written into
/// workDir; emitSeconds).
struct EmittedStepFiles {
  CompiledStep compiled;
  EmittedStep emitted;
  /// `name` inside the work directory.
  std::string path(const std::string &name) const;
  std::string workDir;
};
EmittedStepFiles emitStepFiles(mlir::ModuleOp module, WeightProvider &weights,
                               const CompileStepOptions &options,
                               StepEmitter &emitter,
                               const std::string &stepAbiText);

/// Writes `text` to `path` (binary), creating its directory; throws naming
/// the path.
void writeStepFile(const std::string &path, std::string_view text);

/// compileStep for a CUDA target (codegen/cuda/CompileCudaStep.cpp);
/// `stepAbiText` is runtime/StepABI.h.
CompiledStep compileCudaStep(mlir::ModuleOp module, WeightProvider &weights,
                             const CompileStepOptions &options,
                             const std::string &stepAbiText);

} // namespace kiln::codegen

#endif // KILN_CODEGEN_COMPILESTEP_H
