//===- Pipelines.h - Kiln's pass pipelines ----------------------*- C++ -*-===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_PIPELINES_H
#define KILN_PASSES_PIPELINES_H

#include "mlir/Pass/PassManager.h"

namespace kiln {

/// The built-in fusion rules, in the order they must run: SwiGLU before the
/// matmul epilogue (which would otherwise take silu(x·W1ᵀ) for itself), QKV
/// after SwiGLU (so W1 and W3 are not packed with Q, K, V), attention last,
/// then canonicalization.
void addFusionPasses(mlir::OpPassManager &pm);

/// Registers `--kiln-fusion` (the pipeline above) with the pass registry.
void registerKilnPipelines();

} // namespace kiln

#endif // KILN_PASSES_PIPELINES_H
