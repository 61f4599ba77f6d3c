//===- FuseRmsNormPrologue.cpp - Fold rms_norm into the matmuls it feeds --===//
//
// Part of Kiln. See the pass description in Passes.td.
//
// One rule, "rms-norm-prologue". Every kiln.rms_norm is examined once, in
// program order; a candidate that does not fuse is reported once through
// reportNotFused.
//
//===----------------------------------------------------------------------===//

#include "passes/FusionDiagnostics.h"
#include "passes/Passes.h"

#include "ir/KilnOps.h"

#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/SetVector.h"

namespace kiln {
#define GEN_PASS_DEF_FUSERMSNORMPROLOGUE
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

constexpr llvm::StringLiteral kRule = "rms-norm-prologue";

/// Whether `op` is a matmul-like op that can take an rms_norm prologue on its
/// input, i.e. a kiln.matmul, or a kiln.fused_matmul or kiln.swiglu without
/// one.
static bool canTakePrologue(Operation *op) {
  if (isa<MatmulOp>(op))
    return true;
  if (auto fused = dyn_cast<FusedMatmulOp>(op))
    return !fused.getNormWeight();
  if (auto swiglu = dyn_cast<SwigluOp>(op))
    return !swiglu.getNormWeight();
  return false;
}

/// The first use of `norm`'s result that cannot absorb the norm, described,
/// or "" when every use can.
static std::string findBlocker(RmsNormOp norm) {
  for (OpOperand &use : norm.getResult().getUses()) {
    Operation *user = use.getOwner();
    std::string where = describeValue(norm.getResult()) + " is used by " +
                        user->getName().getStringRef().str();
    if (!canTakePrologue(user))
      return where + (isa<FusedMatmulOp, SwigluOp>(user)
                          ? ", which already has a prologue"
                          : ", which takes no prologue");
    // Only the matmul input is normalized; a norm used as a weight, bias or
    // residual must stay.
    if (use.getOperandNumber() != 0)
      return where + " as operand " + std::to_string(use.getOperandNumber()) +
             ", not as its input";
  }
  return "";
}

/// Rebuilds `user` (a matmul-like op reading `norm` as its input) as the same
/// op with `norm` as its prologue.
static void absorbNorm(Operation *user, RmsNormOp norm, IRRewriter &rewriter) {
  rewriter.setInsertionPoint(user);
  Location loc = rewriter.getFusedLoc({user->getLoc(), norm.getLoc()});
  Value x = norm.getInput(), g = norm.getWeight();
  FloatAttr eps = norm.getEpsilonAttr();
  Operation *fused;
  if (auto matmul = dyn_cast<MatmulOp>(user)) {
    fused = rewriter.create<FusedMatmulOp>(
        loc, matmul.getType(), x, matmul.getWeight(), matmul.getBias(),
        /*residual=*/Value(), /*activation=*/ActivationAttr(), g, eps);
  } else if (auto matmul = dyn_cast<FusedMatmulOp>(user)) {
    fused = rewriter.create<FusedMatmulOp>(
        loc, matmul.getType(), x, matmul.getWeight(), matmul.getBias(),
        matmul.getResidual(), matmul.getActivationAttr(), g, eps);
  } else {
    auto swiglu = cast<SwigluOp>(user);
    fused = rewriter.create<SwigluOp>(loc, swiglu.getType(), x,
                                      swiglu.getGate(), swiglu.getUp(), g, eps);
  }
  fused->setDiscardableAttrs(user->getDiscardableAttrDictionary());
  rewriter.replaceOp(user, fused);
}

// matmul(rms_norm(x, g), W, ...) = fused_matmul(x rms_norm(g, eps), W, ...)
// swiglu(rms_norm(x, g), W1, W3) = swiglu(x rms_norm(g, eps), W1, W3)
//   (kiln.fused_matmul keeps its bias, activation and residual)
//
// Preconditions: every use of the norm is the input operand of a kiln.matmul,
// or of a kiln.fused_matmul or kiln.swiglu that has no prologue yet; the norm
// then disappears. A norm with one consumer that is not a matmul (a residual
// add, a step output) must be materialized anyway, and is left alone.
//
// Benefit: where it pays, and only there. The normalized [T, D] activations
// are never written and read back, and one kernel (with its thread barrier)
// per norm disappears: in a Llama block the two norms feed the packed QKV
// matmul and the SwiGLU, and the final norm feeds the classifier, so every
// norm goes. The cost is recomputing each row's sum of squares (D
// multiply-adds) in every consumer and every tile that needs the row: with
// several consumers (unpacked Q, K and V) that is 3·T·D extra work against
// the matmuls' T·D·N, under 1% for N ≥ 300. When a norm feeds a non-matmul
// too, the norm must be written out anyway and fusing saves nothing.
//
// Returns failure only when the candidate does not fuse and must
// (kiln.fuse_required); a norm that nothing uses is left alone.
static LogicalResult fusePrologue(RmsNormOp norm, IRRewriter &rewriter) {
  if (norm.use_empty())
    return success();
  SmallVector<Operation *> users(norm.getResult().getUsers());
  if (std::string reason = findBlocker(norm); !reason.empty())
    return reportNotFused(norm, kRule, reason, users);
  llvm::SetVector<Operation *> distinct(users.begin(), users.end());
  for (Operation *user : distinct)
    absorbNorm(user, norm, rewriter);
  rewriter.eraseOp(norm);
  return success();
}

struct FuseRmsNormProloguePass
    : kiln::impl::FuseRmsNormPrologueBase<FuseRmsNormProloguePass> {
  void runOnOperation() override {
    SmallVector<RmsNormOp> norms;
    getOperation()->walk([&](RmsNormOp norm) { norms.push_back(norm); });
    IRRewriter rewriter(&getContext());
    bool missedRequired = false;
    for (RmsNormOp norm : norms)
      missedRequired |= failed(fusePrologue(norm, rewriter));
    if (missedRequired)
      signalPassFailure();
  }
};

} // namespace
