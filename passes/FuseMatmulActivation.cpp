//===- FuseMatmulActivation.cpp - An activation into its matmul -----------===//
//
// Part of Kiln. See the pass description in Passes.td. The rules are
// declarative, in passes/rules/MatmulActivation.pdll, compiled to PDL at
// build time and applied by the engine all PDL rules share
// (passes/PdlRules.h); this file holds the pass and the native rewrite the
// rules call.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/PdlRules.h"

#include "ir/KilnOps.h"

#include "mlir/Dialect/PDL/IR/PDL.h"
#include "mlir/Dialect/PDLInterp/IR/PDLInterp.h"
#include "mlir/Parser/Parser.h"

namespace kiln {
#define GEN_PASS_DEF_FUSEMATMULACTIVATION
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// passes/rules/MatmulActivation.pdll as PDL, compiled when Kiln was built.
constexpr llvm::StringLiteral kRules =
#include "passes/rules/MatmulActivation.pdl.inc"
    ;

/// The activation `op` computes (the rules only call this on silu, gelu and
/// relu ops).
Activation activationOf(Operation *op) {
  if (auto gelu = dyn_cast<GeluOp>(op))
    return gelu.getTanh() ? Activation::GeluTanh : Activation::Gelu;
  return isa<SiluOp>(op) ? Activation::Silu : Activation::Relu;
}

/// The native rewrite FuseMatmulActivation(root, matmul): root, an
/// activation of the kiln.matmul `matmul`, becomes one kiln.fused_matmul.
LogicalResult fuseMatmulActivation(PatternRewriter &rewriter, PDLResultList &,
                                   ArrayRef<PDLValue> args) {
  Operation *root = args[0].cast<Operation *>();
  auto matmul = dyn_cast<MatmulOp>(args[1].cast<Operation *>());
  if (!matmul || root->getNumResults() != 1)
    return failure();
  rewriter.setInsertionPoint(root);
  auto fused = rewriter.create<FusedMatmulOp>(
      rewriter.getFusedLoc({root->getLoc(), matmul.getLoc()}),
      root->getResult(0).getType(), matmul.getInput(), matmul.getWeight(),
      matmul.getBias(), /*residual=*/Value(),
      ActivationAttr::get(root->getContext(), activationOf(root)));
  rewriter.replaceOp(root, fused);
  rewriter.eraseOp(matmul);
  return success();
}

struct FuseMatmulActivationPass
    : kiln::impl::FuseMatmulActivationBase<FuseMatmulActivationPass> {
  void runOnOperation() override {
    Operation *op = getOperation();
    PdlRuleSet rules;
    rules.origin = "passes/rules/MatmulActivation.pdll";
    rules.builtin = true;
    rules.rewrites["FuseMatmulActivation"] = fuseMatmulActivation;
    rules.patterns = parseSourceString<ModuleOp>(
        kRules, ParserConfig(&getContext()), rules.origin);
    if (!rules.patterns || failed(prepareRules(rules)) ||
        failed(applyPdlRules(op, std::move(rules))))
      signalPassFailure();
  }
};

} // namespace
