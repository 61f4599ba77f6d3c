//===- KilnFolders.cpp - Folders and canonicalizations of kiln ops --------===//
//
// Part of Kiln. Each rule is stated algebraically above its code; all of them
// run under `kiln-opt --canonicalize` and are tested in
// test/ir/canonicalize.mlir.
//
//===----------------------------------------------------------------------===//

#include "ir/KilnOps.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace kiln;

//===----------------------------------------------------------------------===//
// Element-wise
//===----------------------------------------------------------------------===//

// relu(relu(x)) = relu(x)
OpFoldResult ReluOp::fold(FoldAdaptor) {
  if (getInput().getDefiningOp<ReluOp>())
    return getInput();
  return {};
}

// scale(x, 1) = x
OpFoldResult ScaleOp::fold(FoldAdaptor) {
  if (getFactor().isExactlyValue(1.0))
    return getInput();
  return {};
}

namespace {
// scale(scale(x, a), b) = scale(x, a * b)
struct CombineScales : OpRewritePattern<ScaleOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ScaleOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<ScaleOp>();
    if (!inner)
      return rewriter.notifyMatchFailure(op, "input is not a kiln.scale");
    double factor =
        inner.getFactor().convertToDouble() * op.getFactor().convertToDouble();
    rewriter.replaceOpWithNewOp<ScaleOp>(op, op.getType(), inner.getInput(),
                                         rewriter.getF64FloatAttr(factor));
    return success();
  }
};
} // namespace

void ScaleOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                          MLIRContext *context) {
  results.add<CombineScales>(context);
}

//===----------------------------------------------------------------------===//
// Views
//===----------------------------------------------------------------------===//

// reshape(x : T -> T) = x
// reshape(reshape(x)) = reshape(x)
OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto inner = getInput().getDefiningOp<ReshapeOp>()) {
    if (inner.getInput().getType() == getType())
      return inner.getInput();
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  return {};
}

static bool isIdentityPermutation(ArrayRef<int64_t> perm) {
  for (auto [i, p] : llvm::enumerate(perm))
    if (p != static_cast<int64_t>(i))
      return false;
  return true;
}

// transpose(x, identity) = x
// transpose(transpose(x, q), p) = transpose(x, q ∘ p)
OpFoldResult TransposeOp::fold(FoldAdaptor) {
  if (isIdentityPermutation(getPermutation()))
    return getInput();
  auto inner = getInput().getDefiningOp<TransposeOp>();
  if (!inner)
    return {};
  // result[j] = inner.result[p[j]] = x[q[p[j]]].
  ArrayRef<int64_t> p = getPermutation(), q = inner.getPermutation();
  SmallVector<int64_t> composed;
  for (int64_t pj : p)
    composed.push_back(q[pj]);
  if (isIdentityPermutation(composed))
    return inner.getInput();
  getInputMutable().assign(inner.getInput());
  setPermutation(composed);
  return getResult();
}

// split(x) with one result = x
LogicalResult SplitOp::fold(FoldAdaptor,
                            SmallVectorImpl<OpFoldResult> &results) {
  if (getNumResults() != 1 || getResult(0).getType() != getInput().getType())
    return failure();
  results.push_back(getInput());
  return success();
}

// concat(x) = x
// concat(split(x, axis a), axis a) = x   (all results, in order)
OpFoldResult ConcatOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1 && getInputs()[0].getType() == getType())
    return getInputs()[0];
  auto split = getInputs()[0].getDefiningOp<SplitOp>();
  if (!split || split.getAxis() != getAxis() ||
      split.getNumResults() != getInputs().size() ||
      split.getInput().getType() != getType())
    return {};
  for (auto [i, input] : llvm::enumerate(getInputs()))
    if (input != split.getResult(i))
      return {};
  return split.getInput();
}

//===----------------------------------------------------------------------===//
// FusedMatmulOp
//===----------------------------------------------------------------------===//

namespace {
// fused_matmul(x, w, b) with no prologue, activation or residual
//   = matmul(x, w, b)
struct FusedMatmulWithoutEpilogue : OpRewritePattern<FusedMatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(FusedMatmulOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getActivation() || op.getResidual() || op.getNormWeight())
      return rewriter.notifyMatchFailure(
          op, "has a prologue, an activation or a residual");
    rewriter.replaceOpWithNewOp<MatmulOp>(op, op.getType(), op.getInput(),
                                          op.getWeight(), op.getBias());
    return success();
  }
};
} // namespace

void FusedMatmulOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                                MLIRContext *context) {
  results.add<FusedMatmulWithoutEpilogue>(context);
}
