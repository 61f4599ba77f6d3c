//===- FusionDiagnostics.cpp - Why a fusion did not happen ----------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "passes/FusionDiagnostics.h"

#include "ir/KilnDialect.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/ManagedStatic.h"

using namespace mlir;

namespace kiln {

namespace {
bool explainFlag = false;

struct FusionCLOptions {
  llvm::cl::opt<bool, /*ExternalStorage=*/true> explain{
      "kiln-explain-fusion",
      llvm::cl::desc("Emit a remark for every fusion candidate that did not "
                     "fuse, naming the rule and the failed precondition"),
      llvm::cl::location(explainFlag)};
};
llvm::ManagedStatic<FusionCLOptions> clOptions;
} // namespace

void registerFusionCLOptions() { *clOptions; }

bool explainFusion() { return explainFlag; }
void setExplainFusion(bool explain) { explainFlag = explain; }

LogicalResult reportNotFused(Operation *op, StringRef rule, const Twine &reason,
                             ArrayRef<Operation *> related) {
  bool required = op->hasAttr(KilnDialect::kFuseRequiredAttrName);
  for (Operation *other : related)
    required |= other && other->hasAttr(KilnDialect::kFuseRequiredAttrName);
  if (required) {
    op->emitError() << rule << ": " << reason
                    << " (the candidate is marked kiln.fuse_required)";
    return failure();
  }
  if (explainFlag)
    op->emitRemark() << rule << ": " << reason;
  return success();
}

std::string describeValue(Value value) {
  std::string text;
  llvm::raw_string_ostream os(text);
  // Number values as the printer does within the enclosing function.
  Operation *scope = value.getParentBlock()->getParentOp();
  while (scope && !isa<FunctionOpInterface>(scope) && scope->getParentOp())
    scope = scope->getParentOp();
  AsmState state(scope ? scope : value.getParentBlock()->getParentOp());
  value.printAsOperand(os, state);
  return os.str();
}

std::string describeExtraUses(Value value) {
  if (value.hasOneUse())
    return "";
  size_t uses = std::distance(value.use_begin(), value.use_end());
  return describeValue(value) + " has " + std::to_string(uses) + " users";
}

} // namespace kiln
