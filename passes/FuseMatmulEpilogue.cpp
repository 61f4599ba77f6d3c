//===- FuseMatmulEpilogue.cpp - Fuse epilogues into matmuls ---------------===//
//
// Part of Kiln. See the pass description in Passes.td.
//
// Two rules, applied in this order so that `act(matmul) + r` ends as one op:
// "matmul-<act>" (matmul-silu, matmul-gelu, matmul-gelu_tanh, matmul-relu)
// examines every element-wise activation once, then "matmul-residual"
// examines every kiln.add once, each in program order. A candidate that does
// not fuse is reported once through reportNotFused.
//
//===----------------------------------------------------------------------===//

#include "passes/FusionDiagnostics.h"
#include "passes/Passes.h"

#include "ir/KilnOps.h"

#include "mlir/IR/PatternMatch.h"

#include <algorithm>

namespace kiln {
#define GEN_PASS_DEF_FUSEMATMULEPILOGUE
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

constexpr llvm::StringLiteral kResidualRule = "matmul-residual";

/// The operands and epilogue of a kiln.matmul or kiln.fused_matmul.
struct MatmulParts {
  Operation *op = nullptr;
  Value input, weight, bias, residual;
  ActivationAttr activation;
};

/// The kiln.matmul or kiln.fused_matmul that defines `value`, if any.
static std::optional<MatmulParts> matchMatmul(Value value) {
  MatmulParts parts;
  if (auto matmul = value.getDefiningOp<MatmulOp>()) {
    parts.op = matmul;
    parts.input = matmul.getInput();
    parts.weight = matmul.getWeight();
    parts.bias = matmul.getBias();
  } else if (auto fused = value.getDefiningOp<FusedMatmulOp>()) {
    parts.op = fused;
    parts.input = fused.getInput();
    parts.weight = fused.getWeight();
    parts.bias = fused.getBias();
    parts.residual = fused.getResidual();
    parts.activation = fused.getActivationAttr();
  } else {
    return std::nullopt;
  }
  return parts;
}

/// The epilogue activation that `op` computes, if it is an activation.
static std::optional<Activation> getActivation(Operation *op) {
  if (isa<SiluOp>(op))
    return Activation::Silu;
  if (auto gelu = dyn_cast<GeluOp>(op))
    return gelu.getTanh() ? Activation::GeluTanh : Activation::Gelu;
  if (isa<ReluOp>(op))
    return Activation::Relu;
  return std::nullopt;
}

/// Replaces `root` by a kiln.fused_matmul computing `parts` (whose op must
/// have no use left but `root`) with the given epilogue, and erases both.
static void replaceWithFusedMatmul(Operation *root, const MatmulParts &parts,
                                   ActivationAttr activation, Value residual,
                                   IRRewriter &rewriter) {
  rewriter.setInsertionPoint(root);
  Location loc = rewriter.getFusedLoc({root->getLoc(), parts.op->getLoc()});
  auto fused = rewriter.create<FusedMatmulOp>(loc, root->getResult(0).getType(),
                                              parts.input, parts.weight,
                                              parts.bias, residual, activation);
  rewriter.replaceOp(root, fused);
  rewriter.eraseOp(parts.op);
}

// act(fused_matmul(x, W, b)) = fused_matmul(x, W, b) activation<act>
//   for act = silu, gelu, gelu tanh (activation<gelu_tanh>) or relu; the
//   bias stays optional.
//
// (act(matmul(x, W, b)) is the declarative rule of MatmulActivation.pdll.)
//
// Preconditions: the producer has exactly one use (the activation), no
// activation yet (there is one slot) and no residual (act(y + r) is not
// act(y) + r).
//
// Benefit: the activation is applied to each output tile while it is in
// registers, instead of in a second pass over [T, N] in memory.
//
// Returns failure only when the candidate does not fuse and must
// (kiln.fuse_required); an op that is not a candidate is left alone.
static LogicalResult fuseActivation(Operation *op, IRRewriter &rewriter) {
  std::optional<Activation> activation = getActivation(op);
  if (!activation)
    return success();
  // Plain matmuls are the declarative rules' (FuseMatmulActivation.cpp).
  std::optional<MatmulParts> producer = matchMatmul(op->getOperand(0));
  if (!producer || !isa<FusedMatmulOp>(producer->op))
    return success();

  // Rule names as the declarative rules spell them: matmul-gelu-tanh.
  std::string rule = ("matmul-" + stringifyActivation(*activation)).str();
  std::replace(rule.begin(), rule.end(), '_', '-');
  std::string name = describeValue(op->getOperand(0));
  std::string reason;
  if (producer->activation)
    reason = name + " already has activation<" +
             stringifyActivation(producer->activation.getValue()).str() + ">";
  else if (producer->residual)
    reason = name + " already has a residual, and act(y + r) is not act(y) + r";
  else
    reason = describeExtraUses(op->getOperand(0));
  if (!reason.empty())
    return reportNotFused(op, rule, reason, {producer->op});

  replaceWithFusedMatmul(op, *producer,
                         ActivationAttr::get(op->getContext(), *activation),
                         /*residual=*/Value(), rewriter);
  return success();
}

/// Why the add operand `value`, defined by the matmul `parts`, cannot become
/// the matmul of a residual epilogue, or "" when it can.
static std::string findResidualBlocker(Value value, const MatmulParts &parts) {
  if (parts.residual)
    return describeValue(value) + " already has a residual";
  return describeExtraUses(value);
}

// add(m, r) = add(r, m) = fused_matmul(x, W, b) activation<act> residual r
//   where m = matmul(x, W, b) or fused_matmul(x, W, b) activation<act>, the
//   bias and the activation each optional.
//
// Preconditions: m has exactly one use (the add; so r is not m) and no
// residual yet. r has m's type (kiln.add's verifier ensures it) and is
// available where the fused op is created, at the add, as are m's operands.
// When both operands qualify, the rhs becomes the matmul and the lhs the
// residual: builders write `x + f(x)` (`kiln.add %x0, %attn`), so the rhs is
// the branch's output projection.
//
// Benefit: the residual stream is added to each output tile in registers;
// the [T, D] projection is never written and read back.
//
// Returns failure only when the candidate does not fuse and must
// (kiln.fuse_required); an add with no matmul operand is left alone.
static LogicalResult fuseResidual(AddOp add, IRRewriter &rewriter) {
  Value lhs = add.getLhs(), rhs = add.getRhs();
  std::optional<MatmulParts> lhsMatmul = matchMatmul(lhs);
  std::optional<MatmulParts> rhsMatmul = matchMatmul(rhs);
  if (!lhsMatmul && !rhsMatmul)
    return success();
  if (lhs == rhs)
    return reportNotFused(add, kResidualRule,
                          "both operands are " + describeValue(lhs) +
                              ", so there is no other residual",
                          {lhsMatmul->op});

  std::string rhsReason, lhsReason;
  if (rhsMatmul) {
    rhsReason = findResidualBlocker(rhs, *rhsMatmul);
    if (rhsReason.empty()) {
      replaceWithFusedMatmul(add, *rhsMatmul, rhsMatmul->activation, lhs,
                             rewriter);
      return success();
    }
  }
  if (lhsMatmul) {
    lhsReason = findResidualBlocker(lhs, *lhsMatmul);
    if (lhsReason.empty()) {
      replaceWithFusedMatmul(add, *lhsMatmul, lhsMatmul->activation, rhs,
                             rewriter);
      return success();
    }
  }

  std::string reason = lhsReason.empty()   ? rhsReason
                       : rhsReason.empty() ? lhsReason
                                           : lhsReason + "; " + rhsReason;
  SmallVector<Operation *, 2> related;
  for (const std::optional<MatmulParts> &parts : {lhsMatmul, rhsMatmul})
    if (parts)
      related.push_back(parts->op);
  return reportNotFused(add, kResidualRule, reason, related);
}

struct FuseMatmulEpiloguePass
    : kiln::impl::FuseMatmulEpilogueBase<FuseMatmulEpiloguePass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    bool missedRequired = false;

    // Activations first, so that an activated matmul can then take a
    // residual too.
    SmallVector<Operation *> activations;
    getOperation()->walk([&](Operation *op) {
      if (isa<SiluOp, GeluOp, ReluOp>(op))
        activations.push_back(op);
    });
    for (Operation *op : activations)
      missedRequired |= failed(fuseActivation(op, rewriter));

    SmallVector<AddOp> adds;
    getOperation()->walk([&](AddOp add) { adds.push_back(add); });
    for (AddOp add : adds)
      missedRequired |= failed(fuseResidual(add, rewriter));

    if (missedRequired)
      signalPassFailure();
  }
};

} // namespace
