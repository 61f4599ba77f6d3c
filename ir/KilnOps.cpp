//===- KilnOps.cpp - Verifiers of the kiln dialect's ops ------------------===//
//
// Part of Kiln. Every message names the operand or attribute at fault and what
// was expected. Dimensions that are dynamic (`?`) are checked once they are
// known, by the executors.
//
//===----------------------------------------------------------------------===//

#include "ir/KilnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

using namespace mlir;
using namespace kiln;

//===----------------------------------------------------------------------===//
// Shape helpers
//===----------------------------------------------------------------------===//

/// Two dimensions agree unless both are known and differ.
static bool dimsAgree(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

namespace {
/// Prints a shape as `[?, 64]` in diagnostics.
struct ShapeStr {
  ArrayRef<int64_t> shape;
};
} // namespace

static InFlightDiagnostic &operator<<(InFlightDiagnostic &diag, ShapeStr s) {
  diag << "[";
  llvm::interleave(
      s.shape,
      [&](int64_t d) {
        if (ShapedType::isDynamic(d))
          diag << "?";
        else
          diag << d;
      },
      [&] { diag << ", "; });
  return diag << "]";
}

static InFlightDiagnostic &operator<<(InFlightDiagnostic &&diag, ShapeStr s) {
  return diag << s;
}

static std::string dimStr(int64_t d) {
  return ShapedType::isDynamic(d) ? "?" : std::to_string(d);
}

/// Checks that `type` has rank `rank`; `what` names the value and `layout`
/// spells its expected dimensions, e.g. "[T, H, d]".
static LogicalResult verifyRank(Operation *op, RankedTensorType type,
                                int64_t rank, StringRef what,
                                StringRef layout) {
  if (type.getRank() == rank)
    return success();
  return op->emitOpError() << what << " must have rank " << rank << " "
                           << layout << ", got " << type;
}

/// Checks that the result's shape is `expected` (dynamic dims in either agree
/// with anything).
static LogicalResult verifyResultShape(Operation *op, RankedTensorType result,
                                       ArrayRef<int64_t> expected) {
  bool ok = result.getRank() == static_cast<int64_t>(expected.size());
  for (auto [got, want] : llvm::zip(result.getShape(), expected))
    ok = ok && dimsAgree(got, want);
  if (ok)
    return success();
  return op->emitOpError() << "result shape " << ShapeStr{result.getShape()}
                           << " does not follow from the operands; expected "
                           << ShapeStr{expected};
}

/// Checks that two values have the same element type.
static LogicalResult verifySameElementType(Operation *op, Type a,
                                           StringRef aName, Type b,
                                           StringRef bName) {
  Type ea = getElementTypeOrSelf(a), eb = getElementTypeOrSelf(b);
  if (ea == eb)
    return success();
  return op->emitOpError() << aName << " element type " << ea
                           << " differs from " << bName << " element type "
                           << eb;
}

/// A tensor of a block-quantized type must have a known last dimension that
/// is a multiple of the block size.
static LogicalResult verifyBlockQuantizedShape(Operation *op,
                                               RankedTensorType type,
                                               StringRef what) {
  BlockQuantizedTypeInterface quant = getBlockQuantizedElementType(type);
  if (!quant)
    return success();
  if (type.getRank() == 0)
    return op->emitOpError() << what << " of block-quantized type " << type
                             << " must have at least one dimension";
  int64_t last = type.getShape().back();
  int64_t block = quant.getBlockSize();
  if (ShapedType::isDynamic(last) || last % block != 0)
    return op->emitOpError()
           << what << " has last dimension " << dimStr(last) << ", which is "
           << "not a multiple of the " << type.getElementType()
           << " block size " << block;
  return success();
}

/// Shared by the matmul family: `input [M, K]` times `weight [N, K]`ᵀ gives
/// `[M, N]`; `weightName` names the weight operand in messages.
static LogicalResult verifyMatmulOperands(Operation *op, RankedTensorType input,
                                          RankedTensorType weight,
                                          RankedTensorType result,
                                          StringRef weightName) {
  if (failed(verifyRank(op, input, 2, "input", "[M, K]")) ||
      failed(verifyRank(op, weight, 2, weightName, "[N, K]")) ||
      failed(verifyBlockQuantizedShape(op, weight, weightName)))
    return failure();
  int64_t inK = input.getDimSize(1), wK = weight.getDimSize(1);
  if (!dimsAgree(inK, wK))
    return op->emitOpError() << "inner dimensions disagree: input [M, K] has "
                             << "K = " << inK << " but " << weightName
                             << " [N, K] has K = " << wK;
  if (failed(verifySameElementType(op, result, "result", input, "input")))
    return failure();
  return verifyResultShape(op, result,
                           {input.getDimSize(0), weight.getDimSize(0)});
}

/// A [N] bias of a [M, N] result.
static LogicalResult verifyBias(Operation *op, Value bias,
                                RankedTensorType result) {
  if (!bias)
    return success();
  auto type = cast<RankedTensorType>(bias.getType());
  if (failed(verifyRank(op, type, 1, "bias", "[N]")) ||
      failed(verifySameElementType(op, type, "bias", result, "result")))
    return failure();
  if (!dimsAgree(type.getDimSize(0), result.getDimSize(1)))
    return op->emitOpError() << "bias has " << type.getDimSize(0)
                             << " elements but the result has N = "
                             << dimStr(result.getDimSize(1));
  return success();
}

/// Grouped-query attention: the number of query heads is a multiple of the
/// number of key/value heads.
static LogicalResult verifyHeadGroups(Operation *op, int64_t queryHeads,
                                      int64_t kvHeads) {
  if (ShapedType::isDynamic(queryHeads) || ShapedType::isDynamic(kvHeads))
    return op->emitOpError()
           << "head counts must be static, got " << dimStr(queryHeads)
           << " query heads and " << dimStr(kvHeads) << " key/value heads";
  if (kvHeads <= 0 || queryHeads % kvHeads != 0)
    return op->emitOpError()
           << "query heads (" << queryHeads
           << ") must be a multiple of key/value heads (" << kvHeads << ")";
  return success();
}

/// An [T] index operand (positions, sequence ids) agrees with T tokens.
static LogicalResult verifyTokenCount(Operation *op, Value indices,
                                      StringRef name, int64_t tokens) {
  int64_t n = cast<RankedTensorType>(indices.getType()).getDimSize(0);
  if (dimsAgree(n, tokens))
    return success();
  return op->emitOpError() << name << " has " << n << " entries but there are "
                           << tokens << " tokens";
}

static LogicalResult verifyLayer(Operation *op, int64_t layer,
                                 KVCacheType cache) {
  if (layer >= 0 && layer < cache.getNumLayers())
    return success();
  return op->emitOpError() << "layer " << layer << " is out of range for a "
                           << "cache of " << cache.getNumLayers() << " layers";
}

/// Cached keys or values have `heads` heads of size `headDim`, as the cache.
static LogicalResult verifyCacheEntryShape(Operation *op, StringRef what,
                                           int64_t heads, int64_t headDim,
                                           KVCacheType cache) {
  if (dimsAgree(heads, cache.getNumKvHeads()) &&
      dimsAgree(headDim, cache.getHeadDim()))
    return success();
  return op->emitOpError() << what << " have " << dimStr(heads)
                           << " heads of size " << dimStr(headDim)
                           << " but the cache holds " << cache.getNumKvHeads()
                           << " heads of size " << cache.getHeadDim();
}

static LogicalResult verifyWindow(Operation *op,
                                  std::optional<uint64_t> window) {
  if (!window || static_cast<int64_t>(*window) > 0)
    return success();
  return op->emitOpError() << "window must be positive, got "
                           << static_cast<int64_t>(*window);
}

//===----------------------------------------------------------------------===//
// WeightDeclOp / WeightOp
//===----------------------------------------------------------------------===//

LogicalResult WeightDeclOp::verify() {
  RankedTensorType type = getTensorType();
  if (!type.hasStaticShape())
    return emitOpError() << "weight @" << getSymName()
                         << " must have a static shape, got " << type;
  return verifyBlockQuantizedShape(*this, type,
                                   ("weight @" + getSymName()).str());
}

LogicalResult WeightOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto decl =
      symbolTable.lookupNearestSymbolFrom<WeightDeclOp>(*this, getNameAttr());
  if (!decl)
    return emitOpError() << getNameAttr()
                         << " does not name a kiln.weight_decl";
  if (decl.getTensorType() != getType())
    return emitOpError() << "weight " << getNameAttr() << " is declared as "
                         << decl.getTensorType() << " but used as "
                         << getType();
  return success();
}

//===----------------------------------------------------------------------===//
// EmbeddingOp / GatherRowsOp
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::verify() {
  RankedTensorType table = getTable().getType();
  if (failed(verifyRank(*this, table, 2, "table", "[V, D]")) ||
      failed(verifyBlockQuantizedShape(*this, table, "table")))
    return failure();
  return verifyResultShape(
      *this, getType(),
      {getIds().getType().getDimSize(0), table.getDimSize(1)});
}

LogicalResult GatherRowsOp::verify() {
  RankedTensorType input = getInput().getType();
  if (input.getRank() < 1)
    return emitOpError() << "input must have at least one dimension";
  if (failed(verifySameElementType(*this, getType(), "result", input, "input")))
    return failure();
  SmallVector<int64_t> expected(input.getShape());
  expected[0] = getRows().getType().getDimSize(0);
  return verifyResultShape(*this, getType(), expected);
}

static LogicalResult verifyNormParameter(Operation *op, Value param,
                                         StringRef name,
                                         RankedTensorType input);
static LogicalResult verifyEpsilon(Operation *op, APFloat eps);

/// An rms_norm prologue (kiln.fused_matmul, kiln.swiglu) has both its weight
/// `[K]` and its epsilon, or neither.
static LogicalResult verifyRmsNormPrologue(Operation *op, Value weight,
                                           FloatAttr epsilon,
                                           RankedTensorType input) {
  if (!weight && !epsilon)
    return success();
  if (!weight || !epsilon)
    return op->emitOpError()
           << "an rms_norm prologue needs both norm_weight and norm_epsilon";
  if (failed(verifyEpsilon(op, epsilon.getValue())))
    return failure();
  return verifyNormParameter(op, weight, "norm_weight", input);
}

//===----------------------------------------------------------------------===//
// MatmulOp / FusedMatmulOp / SwigluOp
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::verify() {
  if (failed(verifyMatmulOperands(*this, getInput().getType(),
                                  getWeight().getType(), getType(), "weight")))
    return failure();
  return verifyBias(*this, getBias(), getType());
}

LogicalResult FusedMatmulOp::verify() {
  if (failed(verifyMatmulOperands(*this, getInput().getType(),
                                  getWeight().getType(), getType(),
                                  "weight")) ||
      failed(verifyBias(*this, getBias(), getType())) ||
      failed(verifyRmsNormPrologue(*this, getNormWeight(), getNormEpsilonAttr(),
                                   getInput().getType())))
    return failure();
  if (Value residual = getResidual();
      residual && residual.getType() != getType())
    return emitOpError() << "residual type " << residual.getType()
                         << " differs from result type " << getType();
  return success();
}

LogicalResult SwigluOp::verify() {
  if (failed(verifyRmsNormPrologue(*this, getNormWeight(), getNormEpsilonAttr(),
                                   getInput().getType())))
    return failure();
  return verifyMatmulOperands(*this, getInput().getType(), getGate().getType(),
                              getType(), "gate");
}

//===----------------------------------------------------------------------===//
// Norms and rotary embedding
//===----------------------------------------------------------------------===//

/// A norm weight (or bias) `[D]` matches the input's last dimension `D`.
static LogicalResult verifyNormParameter(Operation *op, Value param,
                                         StringRef name,
                                         RankedTensorType input) {
  if (!param)
    return success();
  auto type = cast<RankedTensorType>(param.getType());
  if (failed(verifyRank(op, type, 1, name, "[D]")))
    return failure();
  if (input.getRank() < 1)
    return op->emitOpError() << "input must have at least one dimension";
  int64_t d = input.getShape().back();
  if (!dimsAgree(type.getDimSize(0), d))
    return op->emitOpError()
           << name << " has " << type.getDimSize(0)
           << " elements but the normalized dimension has " << dimStr(d);
  return success();
}

static LogicalResult verifyEpsilon(Operation *op, APFloat eps) {
  if (eps.isNegative() || eps.isNaN() || eps.isInfinity())
    return op->emitOpError() << "epsilon must be finite and non-negative";
  return success();
}

LogicalResult RmsNormOp::verify() {
  if (failed(verifyEpsilon(*this, getEpsilonAttr().getValue())))
    return failure();
  return verifyNormParameter(*this, getWeight(), "weight",
                             getInput().getType());
}

LogicalResult LayerNormOp::verify() {
  if (failed(verifyEpsilon(*this, getEpsilonAttr().getValue())) ||
      failed(verifyNormParameter(*this, getWeight(), "weight",
                                 getInput().getType())) ||
      failed(
          verifyNormParameter(*this, getBias(), "bias", getInput().getType())))
    return failure();
  if (getBias() && getBias().getType() != getWeight().getType())
    return emitOpError() << "bias type " << getBias().getType()
                         << " differs from weight type "
                         << getWeight().getType();
  return success();
}

LogicalResult RopeOp::verify() {
  RankedTensorType input = getInput().getType();
  if (failed(verifyRank(*this, input, 3, "input", "[T, H, d]")))
    return failure();
  int64_t headDim = input.getDimSize(2);
  if (ShapedType::isDynamic(headDim) || headDim % 2 != 0)
    return emitOpError() << "head size " << dimStr(headDim)
                         << " must be static and even: rotary embedding "
                            "rotates pairs of elements";
  if (!(getTheta().convertToDouble() > 0.0))
    return emitOpError() << "theta must be positive";
  // The attribute checks the factors themselves; only the op knows how many
  // pairs it rotates.
  if (RopeScalingAttr scaling = getScalingAttr();
      scaling && scaling.getKind() == RopeScalingKind::Factors &&
      static_cast<int64_t>(scaling.getFreqFactors().size()) != headDim / 2)
    return emitOpError() << "scaling has " << scaling.getFreqFactors().size()
                         << " freq_factors but a head of size " << headDim
                         << " rotates " << headDim / 2 << " pairs";
  return verifyTokenCount(*this, getPositions(), "positions",
                          input.getDimSize(0));
}

//===----------------------------------------------------------------------===//
// View ops
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  RankedTensorType in = getInput().getType(), out = getType();
  if (failed(verifySameElementType(*this, out, "result", in, "input")))
    return failure();
  auto countDynamic = [](RankedTensorType t) {
    return llvm::count_if(t.getShape(), ShapedType::isDynamic);
  };
  auto staticProduct = [](RankedTensorType t) {
    int64_t p = 1;
    for (int64_t d : t.getShape())
      if (!ShapedType::isDynamic(d))
        p *= d;
    return p;
  };
  if (countDynamic(in) != countDynamic(out))
    return emitOpError() << "input has " << countDynamic(in)
                         << " dynamic dimensions but the result has "
                         << countDynamic(out)
                         << "; reshape keeps the token dimension";
  if (staticProduct(in) != staticProduct(out))
    return emitOpError() << "reshape changes the number of elements: "
                         << ShapeStr{in.getShape()} << " has "
                         << staticProduct(in) << " per dynamic index, "
                         << ShapeStr{out.getShape()} << " has "
                         << staticProduct(out);
  return success();
}

LogicalResult TransposeOp::verify() {
  RankedTensorType in = getInput().getType();
  ArrayRef<int64_t> perm = getPermutation();
  if (static_cast<int64_t>(perm.size()) != in.getRank())
    return emitOpError() << "permutation has " << perm.size()
                         << " entries but the input has rank " << in.getRank();
  SmallVector<bool> seen(perm.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= in.getRank() || seen[p])
      return emitOpError() << "permutation [" << perm
                           << "] is not a permutation of 0.."
                           << in.getRank() - 1;
    seen[p] = true;
  }
  if (failed(verifySameElementType(*this, getType(), "result", in, "input")))
    return failure();
  SmallVector<int64_t> expected;
  for (int64_t p : perm)
    expected.push_back(in.getDimSize(p));
  return verifyResultShape(*this, getType(), expected);
}

/// Checks `axis` and that `part` has the shape of `whole` except along it.
static LogicalResult verifyAlongAxis(Operation *op, int64_t axis,
                                     RankedTensorType whole,
                                     RankedTensorType part, StringRef what) {
  if (part.getRank() != whole.getRank())
    return op->emitOpError() << what << " has rank " << part.getRank()
                             << " but should have rank " << whole.getRank();
  if (failed(verifySameElementType(op, part, what, whole, "the whole")))
    return failure();
  for (int64_t i = 0; i < whole.getRank(); ++i)
    if (i != axis && !dimsAgree(part.getDimSize(i), whole.getDimSize(i)))
      return op->emitOpError()
             << what << " has shape " << ShapeStr{part.getShape()}
             << ", which differs from " << ShapeStr{whole.getShape()}
             << " in dimension " << i << " (only axis " << axis
             << " may differ)";
  return success();
}

/// The sizes of the parts along `axis` add up to the whole's.
static LogicalResult verifyAxisSum(Operation *op, int64_t axis,
                                   RankedTensorType whole, TypeRange parts) {
  int64_t sum = 0;
  for (Type t : parts) {
    int64_t d = cast<RankedTensorType>(t).getDimSize(axis);
    if (ShapedType::isDynamic(d))
      return success();
    sum += d;
  }
  if (dimsAgree(sum, whole.getDimSize(axis)))
    return success();
  return op->emitOpError() << "sizes along axis " << axis << " add up to "
                           << sum << " but the whole has "
                           << whole.getDimSize(axis);
}

static LogicalResult verifyAxis(Operation *op, int64_t axis, int64_t rank) {
  if (axis >= 0 && axis < rank)
    return success();
  return op->emitOpError() << "axis " << axis << " is out of range for rank "
                           << rank;
}

LogicalResult SplitOp::verify() {
  RankedTensorType in = getInput().getType();
  int64_t axis = getAxis();
  if (getNumResults() == 0)
    return emitOpError() << "must have at least one result";
  if (failed(verifyAxis(*this, axis, in.getRank())))
    return failure();
  for (auto [i, t] : llvm::enumerate(getResultTypes()))
    if (failed(verifyAlongAxis(*this, axis, in, cast<RankedTensorType>(t),
                               ("result #" + Twine(i)).str())))
      return failure();
  return verifyAxisSum(*this, axis, in, getResultTypes());
}

LogicalResult ConcatOp::verify() {
  RankedTensorType out = getType();
  int64_t axis = getAxis();
  if (getInputs().empty())
    return emitOpError() << "must have at least one input";
  if (failed(verifyAxis(*this, axis, out.getRank())))
    return failure();
  for (auto [i, t] : llvm::enumerate(getInputs().getTypes()))
    if (failed(verifyAlongAxis(*this, axis, out, cast<RankedTensorType>(t),
                               ("input #" + Twine(i)).str())))
      return failure();
  // Along a leading axis, whole rows (each a whole number of blocks) are
  // moved, so every block stays intact.
  if (BlockQuantizedTypeInterface quant = getBlockQuantizedElementType(out);
      quant && axis == out.getRank() - 1)
    return emitOpError() << "cannot concatenate block-quantized "
                         << out.getElementType() << " tensors along their "
                         << "last axis " << axis << ", which holds their "
                         << "blocks of " << quant.getBlockSize()
                         << "; concatenate along a leading axis";
  return verifyAxisSum(*this, axis, out, getInputs().getTypes());
}

//===----------------------------------------------------------------------===//
// KV cache
//===----------------------------------------------------------------------===//

LogicalResult KVAppendOp::verify() {
  auto cache = cast<KVCacheType>(getCache().getType());
  RankedTensorType keys = getKeys().getType();
  if (failed(verifyLayer(*this, getLayer(), cache)) ||
      failed(verifyRank(*this, keys, 3, "keys", "[T, Hkv, d]")) ||
      failed(verifyCacheEntryShape(*this, "keys", keys.getDimSize(1),
                                   keys.getDimSize(2), cache)))
    return failure();
  int64_t tokens = keys.getDimSize(0);
  if (failed(verifyTokenCount(*this, getSeqIds(), "seq_ids", tokens)))
    return failure();
  return verifyTokenCount(*this, getPositions(), "positions", tokens);
}

LogicalResult KVReadOp::verify() {
  auto cache = cast<KVCacheType>(getCache().getType());
  RankedTensorType keys = getKeys().getType();
  if (getValues().getType() != keys)
    return emitOpError() << "values type " << getValues().getType()
                         << " differs from keys type " << keys;
  if (failed(verifyLayer(*this, getLayer(), cache)) ||
      failed(verifyRank(*this, keys, 4, "keys", "[T, S, Hkv, d]")) ||
      failed(verifyCacheEntryShape(*this, "keys", keys.getDimSize(2),
                                   keys.getDimSize(3), cache)))
    return failure();
  return verifyTokenCount(*this, getPositions(), "positions",
                          keys.getDimSize(0));
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

LogicalResult AttentionScoresOp::verify() {
  RankedTensorType q = getQuery().getType(), k = getKeys().getType();
  if (failed(verifyRank(*this, q, 3, "query", "[T, H, d]")) ||
      failed(verifyRank(*this, k, 4, "keys", "[T, S, Hkv, d]")) ||
      failed(verifyHeadGroups(*this, q.getDimSize(1), k.getDimSize(2))) ||
      failed(verifySameElementType(*this, k, "keys", q, "query")) ||
      failed(verifySameElementType(*this, getType(), "result", q, "query")))
    return failure();
  if (!dimsAgree(q.getDimSize(2), k.getDimSize(3)))
    return emitOpError() << "query head size " << dimStr(q.getDimSize(2))
                         << " differs from key head size "
                         << dimStr(k.getDimSize(3));
  if (!dimsAgree(q.getDimSize(0), k.getDimSize(0)))
    return emitOpError() << "query has " << dimStr(q.getDimSize(0))
                         << " tokens but keys have " << dimStr(k.getDimSize(0));
  return verifyResultShape(*this, getType(),
                           {q.getDimSize(0), q.getDimSize(1), k.getDimSize(1)});
}

LogicalResult AttentionMaskOp::verify() {
  RankedTensorType scores = getScores().getType();
  if (failed(verifyRank(*this, scores, 3, "scores", "[T, H, S]")) ||
      failed(verifyWindow(*this, getWindow())))
    return failure();
  return verifyTokenCount(*this, getPositions(), "positions",
                          scores.getDimSize(0));
}

LogicalResult AttentionOutputOp::verify() {
  RankedTensorType p = getProbs().getType(), v = getValues().getType();
  if (failed(verifyRank(*this, p, 3, "probs", "[T, H, S]")) ||
      failed(verifyRank(*this, v, 4, "values", "[T, S, Hkv, d]")) ||
      failed(verifyHeadGroups(*this, p.getDimSize(1), v.getDimSize(2))) ||
      failed(verifySameElementType(*this, v, "values", p, "probs")) ||
      failed(verifySameElementType(*this, getType(), "result", p, "probs")))
    return failure();
  if (!dimsAgree(p.getDimSize(2), v.getDimSize(1)))
    return emitOpError() << "probs cover " << dimStr(p.getDimSize(2))
                         << " positions but values have "
                         << dimStr(v.getDimSize(1));
  return verifyResultShape(*this, getType(),
                           {p.getDimSize(0), p.getDimSize(1), v.getDimSize(3)});
}

LogicalResult AttentionOp::verify() {
  auto cache = cast<KVCacheType>(getCache().getType());
  RankedTensorType q = getQuery().getType();
  if (failed(verifyRank(*this, q, 3, "query", "[T, H, d]")) ||
      failed(verifyLayer(*this, getLayer(), cache)) ||
      failed(verifyHeadGroups(*this, q.getDimSize(1), cache.getNumKvHeads())) ||
      failed(verifyWindow(*this, getWindow())))
    return failure();
  if (!dimsAgree(q.getDimSize(2), cache.getHeadDim()))
    return emitOpError() << "query head size " << dimStr(q.getDimSize(2))
                         << " differs from the cache's head size "
                         << cache.getHeadDim();
  if (!(getScale().convertToDouble() > 0.0))
    return emitOpError() << "scale must be positive";
  return verifyTokenCount(*this, getPositions(), "positions", q.getDimSize(0));
}

#define GET_OP_CLASSES
#include "ir/KilnOps.cpp.inc"
