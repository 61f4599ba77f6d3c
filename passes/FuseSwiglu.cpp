//===- FuseSwiglu.cpp - Fuse the gated SiLU feed-forward ------------------===//
//
// Part of Kiln. See the pass description in Passes.td.
//
// One rule, "swiglu". Every kiln.mul is examined once, in program order; a
// candidate that does not fuse is reported once through reportNotFused.
//
//===----------------------------------------------------------------------===//

#include "passes/FusionDiagnostics.h"
#include "passes/Passes.h"

#include "ir/KilnOps.h"

#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/raw_ostream.h"

namespace kiln {
#define GEN_PASS_DEF_FUSESWIGLU
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

constexpr llvm::StringLiteral kRule = "swiglu";

/// The kiln.matmul that defines `value`, or null.
static MatmulOp getMatmul(Value value) {
  return value.getDefiningOp<MatmulOp>();
}

/// The kiln.silu of a kiln.matmul that defines `value`, or null.
static SiluOp getSiluOfMatmul(Value value) {
  auto silu = value.getDefiningOp<SiluOp>();
  return silu && getMatmul(silu.getInput()) ? silu : SiluOp();
}

/// Splits the operands of `mul` into a silu of a matmul (the gate branch) and
/// the other operand, preferring the order in which that other operand is a
/// matmul. The silu is null when neither operand is a silu of a matmul.
static std::pair<SiluOp, Value> splitOperands(MulOp mul) {
  Value lhs = mul.getLhs(), rhs = mul.getRhs();
  SiluOp lhsSilu = getSiluOfMatmul(lhs), rhsSilu = getSiluOfMatmul(rhs);
  if (lhsSilu && (getMatmul(rhs) || !rhsSilu))
    return {lhsSilu, rhs};
  if (rhsSilu)
    return {rhsSilu, lhs};
  return {SiluOp(), Value()};
}

/// The first precondition of the rule that the gate branch `silu` (of
/// `gate`) and the up projection `up` fail, or "" when they fuse.
static std::string findBlocker(SiluOp silu, MatmulOp gate, MatmulOp up) {
  if (gate.getBias())
    return describeValue(gate.getResult()) + " has a bias";
  if (up.getBias())
    return describeValue(up.getResult()) + " has a bias";
  if (gate.getInput() != up.getInput())
    return "the gate and up matmuls read different inputs (" +
           describeValue(gate.getInput()) + ", " +
           describeValue(up.getInput()) + ")";
  Type gateType = gate.getWeight().getType(), upType = up.getWeight().getType();
  if (gateType != upType) {
    std::string reason;
    llvm::raw_string_ostream(reason)
        << "the gate and up weights have different types (" << gateType << ", "
        << upType << ")";
    return reason;
  }
  for (Value value : {silu.getResult(), gate.getResult(), up.getResult()})
    if (std::string reason = describeExtraUses(value); !reason.empty())
      return reason;
  return "";
}

// mul(silu(matmul(x, W1)), matmul(x, W3)) = swiglu(x, W1, W3)
//   (kiln.mul is commutative: the silu branch may be either operand)
//
// Preconditions: both matmuls read the same `x` and have no bias; W1 and W3
// have the same type (kiln.swiglu takes one weight type); the silu, the gate
// matmul and the up matmul each have exactly one use, inside the chain, so
// no intermediate value is needed after the rewrite.
//
// Benefit: one op reads `x` once for both projections and never writes the
// [T, F] gate, activation and up tensors to memory.
//
// Returns failure only when the candidate does not fuse and must
// (kiln.fuse_required); a mul that is not a candidate is left alone.
static LogicalResult fuseSwiglu(MulOp mul, IRRewriter &rewriter) {
  auto [silu, upValue] = splitOperands(mul);
  if (!silu)
    return success();

  MatmulOp gate = getMatmul(silu.getInput());
  MatmulOp up = getMatmul(upValue);
  if (!up)
    return reportNotFused(mul, kRule,
                          "the operand multiplying the silu, " +
                              describeValue(upValue) + ", is not a kiln.matmul",
                          {silu, gate});
  if (std::string reason = findBlocker(silu, gate, up); !reason.empty())
    return reportNotFused(mul, kRule, reason, {silu, gate, up});

  rewriter.setInsertionPoint(mul);
  Location loc = rewriter.getFusedLoc(
      {mul.getLoc(), silu.getLoc(), gate.getLoc(), up.getLoc()});
  auto swiglu = rewriter.create<SwigluOp>(loc, mul.getType(), gate.getInput(),
                                          gate.getWeight(), up.getWeight());
  rewriter.replaceOp(mul, swiglu);
  rewriter.eraseOp(silu);
  rewriter.eraseOp(gate);
  rewriter.eraseOp(up);
  return success();
}

struct FuseSwigluPass : kiln::impl::FuseSwigluBase<FuseSwigluPass> {
  void runOnOperation() override {
    SmallVector<MulOp> muls;
    getOperation()->walk([&](MulOp mul) { muls.push_back(mul); });
    IRRewriter rewriter(&getContext());
    bool missedRequired = false;
    for (MulOp mul : muls)
      missedRequired |= failed(fuseSwiglu(mul, rewriter));
    if (missedRequired)
      signalPassFailure();
  }
};

} // namespace
