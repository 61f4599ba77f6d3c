//===- Pipelines.h - Kiln's pass pipelines ----------------------*- C++ -*-===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_PIPELINES_H
#define KILN_PASSES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <string>

namespace kiln {

/// The built-in fusion rules, in the order they must run: SwiGLU before the
/// matmul epilogue (which would otherwise take silu(x·W1ᵀ) for itself), QKV
/// after SwiGLU (so W1 and W3 are not packed with Q, K, V), attention, the
/// rms_norm prologue last (the others match plain matmuls), then
/// canonicalization.
void addFusionPasses(mlir::OpPassManager &pm);

/// Options of the default pipeline (`--kiln-pipeline="target=avx2 ..."`).
struct KilnPipelineOptions : mlir::PassPipelineOptions<KilnPipelineOptions> {
  Option<std::string> target{*this, "target",
                             llvm::cl::desc("Target spec (docs/targets.md)"),
                             llvm::cl::init("native")};
  Option<int64_t> maxTokens{
      *this, "max-tokens",
      llvm::cl::desc("The most tokens a step is planned and tiled for"),
      llvm::cl::init(512)};
  Option<std::string> tuningFile{
      *this, "tuning-file",
      llvm::cl::desc("Tile overrides (docs/passes/tiling.md)"),
      llvm::cl::init("")};
  Option<std::string> weightType{
      *this, "weight-type",
      llvm::cl::desc("The type GEMM weights are packed as (f32, f16, bf16; "
                     "kiln compile --dtype); empty: each weight's own type"),
      llvm::cl::init("")};
  Option<std::string> fusionRules{
      *this, "fusion-rules",
      llvm::cl::desc("User fusion rules (.pdll or PDL .mlir) applied after "
                     "the built-in ones"),
      llvm::cl::init("")};
  Option<bool> fusion{
      *this, "fusion",
      llvm::cl::desc("Run the built-in fusion passes (off: the unfused model, "
                     "to measure what fusion is worth)"),
      llvm::cl::init(true)};
};

/// Kiln's default pipeline, in order: import cleanups (canonicalize, CSE),
/// the built-in fusion passes (unless `fusion` is off) and user rules (if
/// given), tiling for the target, memory planning of each step, and, for a
/// CPU target, the check that the CPU code generator can compile each step.
void addKilnPipeline(mlir::OpPassManager &pm,
                     const KilnPipelineOptions &options);

/// Prints the passes of the default pipeline for `options`, one per line
/// with its summary, then as a textual pipeline (`--kiln-print-pipeline`).
void printKilnPipeline(mlir::MLIRContext *context,
                       const KilnPipelineOptions &options,
                       llvm::raw_ostream &os);

/// Registers `--kiln-fusion` and `--kiln-pipeline` with the pass registry.
void registerKilnPipelines();

} // namespace kiln

#endif // KILN_PASSES_PIPELINES_H
