//===- Pipelines.cpp - Kiln's pass pipelines ------------------------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "passes/Pipelines.h"

#include "passes/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace kiln {

void addFusionPasses(mlir::OpPassManager &pm) {
  pm.addPass(createFuseSwiglu());
  pm.addPass(createFuseMatmulEpilogue());
  pm.addPass(createFuseQKVProjections());
  pm.addPass(createFuseAttention());
  pm.addPass(createFuseRmsNormPrologue());
  pm.addPass(mlir::createCanonicalizerPass());
}

void registerKilnPipelines() {
  mlir::PassPipelineRegistration<>(
      "kiln-fusion",
      "Run Kiln's built-in fusion rules (swiglu, matmul epilogue, qkv, "
      "attention, rms_norm prologue) and canonicalize",
      addFusionPasses);
}

} // namespace kiln
