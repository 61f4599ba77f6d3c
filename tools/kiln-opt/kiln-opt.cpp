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
#include "passes/TuningFile.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"

#include <string>

// --kiln-fusion-rules=FILE: after the pipeline given on the command line, run
// the user fusion rules of FILE (docs/fusion.md, "User rules").
static llvm::cl::opt<std::string> fusionRulesFile(
    "kiln-fusion-rules",
    llvm::cl::desc("After the other passes, apply the user fusion rules of "
                   "this .pdll or PDL .mlir file (kiln-apply-fusion-rules)"),
    llvm::cl::value_desc("file"), llvm::cl::init(""));

// --kiln-print-pipeline[=OPTIONS]: list the passes --kiln-pipeline runs (with
// those pipeline options, e.g. "target=avx2 max-tokens=128") and exit.
static llvm::cl::opt<std::string> printPipeline(
    "kiln-print-pipeline",
    llvm::cl::desc("Print the passes of --kiln-pipeline (for the given "
                   "pipeline options, if any) and exit"),
    llvm::cl::value_desc("options"), llvm::cl::ValueOptional,
    llvm::cl::init("-"));

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<kiln::KilnDialect, mlir::arith::ArithDialect,
                  mlir::func::FuncDialect, mlir::tensor::TensorDialect>();

  // Upstream passes users combine with Kiln's (canonicalize, cse, inline...).
  mlir::registerTransformsPasses();
  kiln::registerKilnPasses();
  kiln::registerKilnPipelines();
  kiln::registerFusionCLOptions();
  kiln::registerTilingCLOptions();

  // MlirOptMain(argc, argv, ...) without the chance to extend the pipeline,
  // spelled out: parse the options, then append the user rules (if any) to
  // the pipeline the command line gave.
  auto [inputFilename, outputFilename] = mlir::registerAndParseCLIOptions(
      argc, argv, "Kiln optimizer driver\n", registry);
  if (printPipeline != "-") {
    mlir::MLIRContext context(registry);
    auto options = kiln::KilnPipelineOptions::createFromString(printPipeline);
    if (!options) {
      llvm::errs() << "kiln-opt: invalid --kiln-print-pipeline options '"
                   << printPipeline << "'\n";
      return EXIT_FAILURE;
    }
    kiln::printKilnPipeline(&context, *options, llvm::outs());
    return EXIT_SUCCESS;
  }
  mlir::MlirOptMainConfig config =
      mlir::MlirOptMainConfig::createFromCLOptions();
  if (!fusionRulesFile.empty()) {
    mlir::MlirOptMainConfig cliPipeline = config;
    std::string rules = fusionRulesFile;
    config.setPassPipelineSetupFn(
        [cliPipeline, rules](mlir::PassManager &pm) -> mlir::LogicalResult {
          if (mlir::failed(cliPipeline.setupPassPipeline(pm)))
            return mlir::failure();
          kiln::ApplyFusionRulesOptions options;
          options.rules = rules;
          pm.addPass(kiln::createApplyFusionRules(options));
          return mlir::success();
        });
  }
  if (config.shouldShowDialects())
    return mlir::asMainReturnCode(
        mlir::MlirOptMain(argc, argv, inputFilename, outputFilename, registry));

  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(inputFilename, &errorMessage);
  if (!input) {
    llvm::errs() << errorMessage << "\n";
    return EXIT_FAILURE;
  }
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFilename, &errorMessage);
  if (!output) {
    llvm::errs() << errorMessage << "\n";
    return EXIT_FAILURE;
  }
  if (mlir::failed(
          mlir::MlirOptMain(output->os(), std::move(input), registry, config)))
    return EXIT_FAILURE;
  output->keep();
  return EXIT_SUCCESS;
}
