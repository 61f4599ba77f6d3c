//===- FuseAttention.cpp - Fuse the attention chain into kiln.attention ---===//
//
// Part of Kiln. See the pass description in Passes.td. The inverse of
// DecomposeAttention: decomposing and fusing again gives the same op.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "ir/KilnOps.h"
#include "passes/FusionDiagnostics.h"

#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/STLExtras.h"

namespace kiln {
#define GEN_PASS_DEF_FUSEATTENTION
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

constexpr llvm::StringLiteral kRule = "attention";

/// The ops of one attention chain, root last; `scale` may be null.
struct AttentionChain {
  KVReadOp read;
  AttentionScoresOp scores;
  ScaleOp scale;
  AttentionMaskOp mask;
  SoftmaxOp softmax;
  AttentionOutputOp output;

  /// The ops found so far, for kiln.fuse_required.
  SmallVector<Operation *> ops() {
    SmallVector<Operation *> all;
    for (Operation *op :
         {read.getOperation(), scores.getOperation(), scale.getOperation(),
          mask.getOperation(), softmax.getOperation(), output.getOperation()})
      if (op)
        all.push_back(op);
    return all;
  }
};

} // namespace

/// Matches the chain rooted at `chain.output`, from the root back to the
/// cache read, filling `chain`; returns the first precondition that fails, or
/// "" if it fuses.
static std::string matchChain(AttentionChain &chain) {
  Value probs = chain.output.getProbs();
  chain.softmax = probs.getDefiningOp<SoftmaxOp>();
  if (!chain.softmax)
    return "the probabilities " + describeValue(probs) +
           " are not a kiln.softmax";
  if (std::string why = describeExtraUses(probs); !why.empty())
    return why;

  Value masked = chain.softmax.getInput();
  chain.mask = masked.getDefiningOp<AttentionMaskOp>();
  if (!chain.mask)
    return "the softmax input " + describeValue(masked) +
           " is not a kiln.attention_mask";
  if (std::string why = describeExtraUses(masked); !why.empty())
    return why;

  // The scale is optional: without one, the scale is 1.
  Value scaled = chain.mask.getScores();
  if ((chain.scale = scaled.getDefiningOp<ScaleOp>())) {
    if (std::string why = describeExtraUses(scaled); !why.empty())
      return why;
    scaled = chain.scale.getInput();
  }
  chain.scores = scaled.getDefiningOp<AttentionScoresOp>();
  if (!chain.scores)
    return "the scores " + describeValue(scaled) +
           " are not a kiln.attention_scores";
  if (std::string why = describeExtraUses(scaled); !why.empty())
    return why;

  Value keys = chain.scores.getKeys(), values = chain.output.getValues();
  chain.read = keys.getDefiningOp<KVReadOp>();
  if (!chain.read || chain.read.getKeys() != keys)
    return "the keys " + describeValue(keys) +
           " are not the keys of a kiln.kv_read";
  if (chain.read.getValues() != values)
    return "the keys " + describeValue(keys) + " and the values " +
           describeValue(values) + " do not come from the same kiln.kv_read";

  if (chain.mask.getPositions() != chain.read.getPositions())
    return "the mask reads positions " +
           describeValue(chain.mask.getPositions()) + ", the cache read " +
           describeValue(chain.read.getPositions());

  RankedTensorType queryType = chain.scores.getQuery().getType();
  auto cache = cast<KVCacheType>(chain.read.getCache().getType());
  int64_t headDim = queryType.getDimSize(2);
  if (!ShapedType::isDynamic(headDim) && headDim != cache.getHeadDim())
    return "the query head size " + std::to_string(headDim) +
           " differs from the cache's " + std::to_string(cache.getHeadDim());
  if (chain.output.getType() != queryType) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "the output type " << chain.output.getType()
       << " differs from the query type " << queryType;
    return os.str();
  }
  if (chain.scale && !(chain.scale.getFactor().convertToDouble() > 0.0)) {
    SmallString<16> factor;
    chain.scale.getFactor().toString(factor);
    return ("the scale factor " + factor + " is not positive").str();
  }
  return "";
}

/// attention_output(softmax(attention_mask(scale(attention_scores(q, K), s),
///                                         pos, window)), V)
///   = attention(q, cache[layer], seqs, pos, scale = s, window)
///   where K, V = kv_read(cache[layer], seqs, pos).
/// Preconditions: exactly this chain (no kiln.scale means s = 1); scores,
/// scaled scores, masked scores and probabilities each have one use; K and V
/// are the two results of one kv_read; the mask's positions are the read's
/// positions; the query's head size is the cache's; the output has the
/// query's type; s > 0.
/// Benefit: no [T, H, S] scores in memory, one kernel instead of six.
static void fuseChain(AttentionChain &chain, RewriterBase &rewriter) {
  AttentionOutputOp output = chain.output;
  FloatAttr scale =
      chain.scale ? chain.scale.getFactorAttr() : rewriter.getF64FloatAttr(1.0);
  rewriter.setInsertionPoint(output);
  rewriter.replaceOpWithNewOp<AttentionOp>(
      output, output.getType(), chain.scores.getQuery(), chain.read.getCache(),
      chain.read.getLayerAttr(), chain.read.getSeqIds(),
      chain.read.getPositions(), scale, chain.mask.getWindowAttr());
  // The intermediates had one use each, so they are dead now; the read may
  // still feed other ops.
  rewriter.eraseOp(chain.softmax);
  rewriter.eraseOp(chain.mask);
  if (chain.scale)
    rewriter.eraseOp(chain.scale);
  rewriter.eraseOp(chain.scores);
  if (chain.read->use_empty())
    rewriter.eraseOp(chain.read);
}

namespace {

struct FuseAttentionPass : kiln::impl::FuseAttentionBase<FuseAttentionPass> {
  void runOnOperation() override {
    SmallVector<AttentionOutputOp> roots;
    getOperation()->walk([&](AttentionOutputOp op) { roots.push_back(op); });
    IRRewriter rewriter(&getContext());
    bool failedRequired = false;
    // Fusing one chain erases only that chain's ops, never another root.
    for (AttentionOutputOp root : roots) {
      AttentionChain chain;
      chain.output = root;
      std::string why = matchChain(chain);
      if (why.empty()) {
        fuseChain(chain, rewriter);
        continue;
      }
      if (failed(reportNotFused(root, kRule, why, chain.ops())))
        failedRequired = true;
    }
    if (failedRequired)
      signalPassFailure();
  }
};

} // namespace
