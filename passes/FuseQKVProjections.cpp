//===- FuseQKVProjections.cpp - One matmul for the projections of a value -===//
//
// Part of Kiln. See the pass description in Passes.td. The weights are packed
// in the IR with kiln.concat of the kiln.weight values, so the module still
// refers to its weights by name; executors evaluate the concat (the reference
// interpreter on every step), and packing once per model is theirs to do.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "ir/KilnOps.h"
#include "passes/FusionDiagnostics.h"

#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

namespace kiln {
#define GEN_PASS_DEF_FUSEQKVPROJECTIONS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {
constexpr llvm::StringLiteral kRule = "qkv";
} // namespace

/// Prints a type as the IR does, for messages.
static std::string typeString(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type;
  return os.str();
}

/// The matmuls that read `x` as their input, grouped by block, each group in
/// program order.
static llvm::MapVector<Block *, SmallVector<MatmulOp>>
matmulUsersByBlock(Value x) {
  llvm::MapVector<Block *, SmallVector<MatmulOp>> groups;
  for (OpOperand &use : x.getUses())
    if (auto matmul = dyn_cast<MatmulOp>(use.getOwner());
        matmul && &use == &matmul.getInputMutable())
      groups[matmul->getBlock()].push_back(matmul);
  for (auto &entry : groups)
    llvm::sort(entry.second,
               [](MatmulOp a, MatmulOp b) { return a->isBeforeInBlock(b); });
  return groups;
}

/// The operand of `group` defined last in `block`, or null if every operand
/// is defined outside it (or is one of its arguments): the fused matmul goes
/// right after it.
static Value lastOperandInBlock(ArrayRef<MatmulOp> group, Block *block) {
  Value last;
  for (MatmulOp matmul : group)
    for (Value operand : matmul->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def || def->getBlock() != block)
        continue;
      if (!last || last.getDefiningOp()->isBeforeInBlock(def))
        last = operand;
    }
  return last;
}

/// Why `group` cannot be fused, or "" if it can. `after` is where the fused
/// matmul would go (see lastOperandInBlock).
static std::string checkGroup(ArrayRef<MatmulOp> group, Value after) {
  MatmulOp first = group.front();
  Type elementType = first.getWeight().getType().getElementType();
  for (MatmulOp other : group.drop_front()) {
    if (bool(first.getBias()) != bool(other.getBias())) {
      MatmulOp with = first.getBias() ? first : other;
      MatmulOp without = first.getBias() ? other : first;
      return describeValue(with) + " has a bias and " + describeValue(without) +
             " does not";
    }
    Type otherType = other.getWeight().getType().getElementType();
    if (otherType != elementType)
      return "the weight of " + describeValue(first) + " is " +
             typeString(elementType) + ", the weight of " +
             describeValue(other) + " is " + typeString(otherType);
  }
  for (MatmulOp matmul : group)
    if (matmul.getWeight().getType().isDynamicDim(0))
      return "the weight " + describeValue(matmul.getWeight()) + " of " +
             describeValue(matmul) + " has a dynamic number of rows";
  // Every use of a result must follow the fused matmul, which must follow
  // every operand; nothing is moved to make room.
  if (!after)
    return "";
  Block *block = first->getBlock();
  for (MatmulOp matmul : group)
    for (Operation *user : matmul->getUsers()) {
      Operation *ancestor = block->findAncestorOpInBlock(*user);
      if (ancestor && !after.getDefiningOp()->isBeforeInBlock(ancestor))
        return describeValue(matmul) + " is used before " +
               describeValue(after) + ", an operand of the fused matmul, " +
               "is defined";
    }
  return "";
}

/// x·W_1ᵀ (+ b_1), ..., x·W_nᵀ (+ b_n)
///   = split(x·concat(W_1, ..., W_n)ᵀ (+ concat(b_1, ..., b_n)), axis 1)
/// Preconditions: n ≥ 2 matmuls of `x` in one block; all weights have one
/// element type and a static number of rows; all have a bias or none has; a
/// point follows every operand and precedes every use of a result.
/// Benefit: `x` is read once, and one large matmul keeps the machine busier
/// than two or three narrow ones (Kiln's Q, K and V projections; the gate
/// and up projections of a feed-forward that was not fused into kiln.swiglu).
static void fuseGroup(Value x, ArrayRef<MatmulOp> group, Value after,
                      RewriterBase &rewriter) {
  if (after)
    rewriter.setInsertionPointAfterValue(after);
  else
    rewriter.setInsertionPointToStart(group.front()->getBlock());
  SmallVector<Location> locs;
  SmallVector<Value> weights, biases;
  SmallVector<Type> resultTypes;
  int64_t rows = 0;
  for (MatmulOp matmul : group) {
    locs.push_back(matmul.getLoc());
    weights.push_back(matmul.getWeight());
    if (matmul.getBias())
      biases.push_back(matmul.getBias());
    resultTypes.push_back(matmul.getType());
    rows += matmul.getWeight().getType().getDimSize(0);
  }
  Location loc = rewriter.getFusedLoc(locs);
  MatmulOp first = group.front();
  RankedTensorType weightType = first.getWeight().getType();
  Value packed = rewriter.create<ConcatOp>(
      loc, weightType.clone({rows, weightType.getDimSize(1)}), weights,
      rewriter.getI64IntegerAttr(0));
  Value bias;
  if (!biases.empty()) {
    auto biasType = cast<RankedTensorType>(biases.front().getType());
    bias = rewriter.create<ConcatOp>(loc, biasType.clone({rows}), biases,
                                     rewriter.getI64IntegerAttr(0));
  }
  RankedTensorType resultType = first.getType();
  auto inputType = cast<RankedTensorType>(x.getType());
  Value fused = rewriter.create<MatmulOp>(
      loc, resultType.clone({inputType.getDimSize(0), rows}), x, packed, bias);
  auto split = rewriter.create<SplitOp>(loc, resultTypes, fused,
                                        rewriter.getI64IntegerAttr(1));
  for (auto [matmul, result] : llvm::zip(group, split.getResults()))
    rewriter.replaceOp(matmul, result);
}

namespace {

struct FuseQKVProjectionsPass
    : kiln::impl::FuseQKVProjectionsBase<FuseQKVProjectionsPass> {
  void runOnOperation() override {
    SmallVector<MatmulOp> matmuls;
    getOperation()->walk([&](MatmulOp op) { matmuls.push_back(op); });
    IRRewriter rewriter(&getContext());
    // Every matmul of an examined input is marked before any is erased, so
    // no erased op is looked at again.
    llvm::DenseSet<Operation *> examined;
    bool failedRequired = false;
    auto report = [&](MatmulOp op, const std::string &why,
                      ArrayRef<Operation *> related) {
      if (failed(reportNotFused(op, kRule, why, related)))
        failedRequired = true;
    };
    for (MatmulOp matmul : matmuls) {
      if (examined.contains(matmul))
        continue;
      Value x = matmul.getInput();
      auto groups = matmulUsersByBlock(x);
      SmallVector<Operation *> all;
      for (auto &entry : groups)
        for (MatmulOp op : entry.second)
          all.push_back(op);
      examined.insert(all.begin(), all.end());
      if (all.size() < 2)
        continue; // a single projection: nothing to fuse
      if (llvm::all_of(groups, [](auto &g) { return g.second.size() < 2; })) {
        report(matmul, // the first of them in program order
               "the " + std::to_string(all.size()) + " matmuls of " +
                   describeValue(x) + " are in different blocks",
               all);
        continue;
      }
      for (auto &entry : groups) {
        ArrayRef<MatmulOp> group = entry.second;
        if (group.size() < 2)
          continue;
        Value after = lastOperandInBlock(group, entry.first);
        std::string why = checkGroup(group, after);
        if (why.empty()) {
          fuseGroup(x, group, after, rewriter);
          continue;
        }
        SmallVector<Operation *> related;
        for (MatmulOp op : group)
          related.push_back(op);
        report(group.front(), why, related);
      }
    }
    if (failedRequired)
      signalPassFailure();
  }
};

} // namespace
