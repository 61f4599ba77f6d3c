//===- kiln-opt.cpp - Kiln's optimizer driver -----------------------------===//
//
// Part of Kiln. `mlir-opt` for the kiln dialect: parses, verifies, runs passes
// and prints. Registers only what Kiln uses, so this file compiles quickly.
//
//===----------------------------------------------------------------------===//

#include "ir/KilnDialect.h"
#include "passes/FusionDiagnostics.h"
#include "passes/Passes.h"
#include "passes/Pipelines.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<kiln::KilnDialect, mlir::arith::ArithDialect,
                  mlir::func::FuncDialect, mlir::tensor::TensorDialect>();

  // Upstream passes users combine with Kiln's (canonicalize, cse, inline...).
  mlir::registerTransformsPasses();
  kiln::registerKilnPasses();
  kiln::registerKilnPipelines();
  kiln::registerFusionCLOptions();

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Kiln optimizer driver\n", registry));
}
