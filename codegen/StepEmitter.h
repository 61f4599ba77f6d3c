//===- StepEmitter.h - From a step function to kernel sources ---*- C++ -*-===//
//
// Part of Kiln. A step emitter turns the fused, tiled and planned step
// function (--kiln-pipeline) into source files: one per kernel, each with a
// header naming the ops, locations, shapes and tiles it came from, and a
// step file that calls them in order with the arena offsets of the memory
// plan and the offsets of the packed weights. The interface is target
// neutral: the CPU emitter (codegen/cpu) writes C++ with SIMD vectors for
// the host compiler; the CUDA emitter writes CUDA C++ for NVRTC from the
// same tile attributes.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_STEPEMITTER_H
#define KILN_CODEGEN_STEPEMITTER_H

#include "codegen/WeightPacker.h"
#include "passes/target/TargetDescription.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln::codegen {

struct SourceFile {
  std::string name; ///< e.g. "k03_gemm.cpp"
  std::string text;
};

struct EmittedStep {
  /// Kernel sources, one per distinct kernel (identical ones across layers
  /// are emitted once and called with different pointers).
  std::vector<SourceFile> kernels;
  /// The step entry points (kiln_step, kiln_step_abi_version).
  SourceFile step;
  /// Headers the sources include (the step ABI, the kernel support header).
  std::vector<SourceFile> headers;
  /// Bytes of arena the step needs: the memory plan's arena plus scratch.
  int64_t arenaBytes = 0;
  int64_t maxTokens = 0;
  /// One line per kernel: name and the ops it implements.
  std::vector<std::string> kernelSummaries;
};

struct EmitOptions {
  /// The type every GEMM weight is packed as (`kiln compile --dtype`), or
  /// none: each keeps its own element type (Q8_0/Q4_0 blocks read in place).
  std::optional<PackedType> weightType;
  /// How the KV cache stores keys and values (`kiln compile --kv-type`): a
  /// storage choice, like the weights', that the IR's f32 cache type does
  /// not state. Kernels widen what they read to f32.
  PackedType cacheType = PackedType::F32;
};

class StepEmitter {
public:
  virtual ~StepEmitter();
  /// Emits `step`, packing the weights it reads through `packer`. Throws
  /// std::runtime_error naming the op and location for anything the target
  /// cannot compile.
  virtual EmittedStep emit(mlir::func::FuncOp step, WeightPacker &packer,
                           const EmitOptions &options) = 0;
};

/// The C++ SIMD emitter for a CPU target.
std::unique_ptr<StepEmitter>
createCpuStepEmitter(const target::TargetDescription &target);

/// The CUDA emitter for a CUDA target (codegen/cuda/CudaStepEmitter.cpp):
/// kernels.cu for NVRTC (and the host's block emulator) and a host step
/// that launches them (runtime/CudaStepABI.h).
std::unique_ptr<StepEmitter>
createCudaStepEmitter(const target::TargetDescription &target);

} // namespace kiln::codegen

#endif // KILN_CODEGEN_STEPEMITTER_H
