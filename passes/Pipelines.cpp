//===- Pipelines.cpp - Kiln's pass pipelines ------------------------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "passes/Pipelines.h"

#include "passes/Passes.h"
#include "passes/target/TargetDescription.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/raw_ostream.h"

using llvm::SmallVector;
using llvm::StringRef;

namespace kiln {

void addFusionPasses(mlir::OpPassManager &pm) {
  pm.addPass(createFuseSwiglu());
  pm.addPass(createFuseMatmulActivation());
  pm.addPass(createFuseMatmulEpilogue());
  pm.addPass(createFuseQKVProjections());
  pm.addPass(createFuseAttention());
  pm.addPass(createFuseRmsNormPrologue());
  pm.addPass(mlir::createCanonicalizerPass());
}

void addKilnPipeline(mlir::OpPassManager &pm,
                     const KilnPipelineOptions &options) {
  // Import cleanups: importers build straightforward IR (repeated weight
  // reads, foldable reshapes); fold and deduplicate before matching.
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
  if (options.fusion)
    addFusionPasses(pm);
  if (!options.fusionRules.empty()) {
    ApplyFusionRulesOptions rules;
    rules.rules = options.fusionRules;
    pm.addPass(createApplyFusionRules(rules));
    pm.addPass(mlir::createCanonicalizerPass());
  }
  TileOpsOptions tiling;
  tiling.targetSpec = options.target;
  tiling.prefillTokens = options.maxTokens;
  tiling.tuningFile = options.tuningFile;
  tiling.weightType = options.weightType;
  pm.addPass(createTileOps(tiling));
  PlanMemoryOptions memory;
  memory.maxTokens = options.maxTokens;
  mlir::OpPassManager &steps = pm.nest<mlir::func::FuncOp>();
  steps.addPass(createPlanMemory(memory));
  // What the CPU code generator cannot take is an error here, on the op. A
  // spec that does not parse is kiln-tile's error to report.
  llvm::Expected<target::TargetDescription> target =
      target::parseTarget(options.target);
  if (!target)
    llvm::consumeError(target.takeError());
  else if (target->isCpu())
    steps.addPass(createCheckCpuLegality());
}

/// Splits `text` at the commas outside braces and parentheses.
static SmallVector<StringRef> splitTopLevel(StringRef text) {
  SmallVector<StringRef> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '(' || c == '{')
      ++depth;
    else if (c == ')' || c == '}')
      --depth;
    else if (c == ',' && depth == 0) {
      parts.push_back(text.slice(start, i).trim());
      start = i + 1;
    }
  }
  parts.push_back(text.drop_front(start).trim());
  return parts;
}

/// Prints the passes of the textual pipeline `text` one per line, nested
/// pipelines indented under their op.
static void printPasses(StringRef text, llvm::raw_ostream &os, int indent,
                        int &index) {
  for (StringRef element : splitTopLevel(text)) {
    size_t paren = element.find('(');
    size_t brace = element.find('{');
    if (paren != StringRef::npos && paren < brace) {
      os.indent(indent) << "on each " << element.take_front(paren) << ":\n";
      printPasses(element.drop_front(paren + 1).drop_back(), os, indent + 2,
                  index);
      continue;
    }
    StringRef name = element.take_front(brace);
    StringRef options =
        brace == StringRef::npos ? StringRef() : element.drop_front(brace);
    os.indent(indent) << ++index << ". " << name;
    if (const mlir::PassInfo *info = mlir::PassInfo::lookup(name))
      os << " — " << info->getPassDescription();
    os << "\n";
    // Kiln's own options are the ones worth reading here.
    if (name.starts_with("kiln-") && !options.empty() && options != "{}")
      os.indent(indent + 3) << options << "\n";
  }
}

void printKilnPipeline(mlir::MLIRContext *context,
                       const KilnPipelineOptions &options,
                       llvm::raw_ostream &os) {
  mlir::PassManager pm(context, mlir::ModuleOp::getOperationName());
  addKilnPipeline(pm, options);
  std::string text;
  llvm::raw_string_ostream textOs(text);
  pm.printAsTextualPipeline(textOs);
  os << "Kiln's default pipeline (--kiln-pipeline), in order:\n";
  int index = 0;
  StringRef body = text;
  // The top level is `builtin.module(...)`: list what is inside.
  if (body.consume_front("builtin.module(") && body.consume_back(")"))
    printPasses(body, os, 2, index);
  else
    printPasses(body, os, 2, index);
  os << "As a textual pipeline:\n  " << text << "\n";
}

void registerKilnPipelines() {
  mlir::PassPipelineRegistration<>(
      "kiln-fusion",
      "Run Kiln's built-in fusion rules (swiglu, matmul epilogue, qkv, "
      "attention, rms_norm prologue) and canonicalize",
      addFusionPasses);
  mlir::PassPipelineRegistration<KilnPipelineOptions>(
      "kiln-pipeline",
      "Kiln's default pipeline: import cleanups, fusion, tiling for a target "
      "and memory planning (docs/passes/pipeline.md)",
      addKilnPipeline);
}

} // namespace kiln
