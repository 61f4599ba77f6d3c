//===- DecomposeAttention.cpp - Expand kiln.attention ---------------------===//
//
// Part of Kiln. See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "ir/KilnOps.h"

#include "mlir/IR/PatternMatch.h"

namespace kiln {
#define GEN_PASS_DEF_DECOMPOSEATTENTION
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// attention(q, cache, layer, scale, window)
///   = attention_output(softmax(attention_mask(scale(attention_scores(q, K)),
///                                             window)), V)
///   where K, V = kv_read(cache, layer).
/// Always applies; the expansion materializes [T, H, S] scores.
static void expandAttention(AttentionOp op, RewriterBase &rewriter) {
  rewriter.setInsertionPoint(op);
  Location loc = op.getLoc();
  RankedTensorType queryType = op.getQuery().getType();
  auto cache = cast<KVCacheType>(op.getCache().getType());
  int64_t tokens = queryType.getDimSize(0);
  int64_t heads = queryType.getDimSize(1);
  Type elementType = queryType.getElementType();

  // S, the number of positions attended over, is only known per step.
  auto contextType = RankedTensorType::get(
      {tokens, ShapedType::kDynamic, cache.getNumKvHeads(), cache.getHeadDim()},
      elementType);
  auto scoresType =
      RankedTensorType::get({tokens, heads, ShapedType::kDynamic}, elementType);

  auto read = rewriter.create<KVReadOp>(loc, contextType, contextType,
                                        op.getCache(), op.getLayerAttr(),
                                        op.getSeqIds(), op.getPositions());
  Value scores = rewriter.create<AttentionScoresOp>(
      loc, scoresType, op.getQuery(), read.getKeys());
  scores = rewriter.create<ScaleOp>(loc, scoresType, scores, op.getScaleAttr());
  scores = rewriter.create<AttentionMaskOp>(
      loc, scoresType, scores, op.getPositions(), op.getWindowAttr());
  Value probs = rewriter.create<SoftmaxOp>(loc, scoresType, scores);
  rewriter.replaceOpWithNewOp<AttentionOutputOp>(op, queryType, probs,
                                                 read.getValues());
}

struct DecomposeAttentionPass
    : kiln::impl::DecomposeAttentionBase<DecomposeAttentionPass> {
  void runOnOperation() override {
    SmallVector<AttentionOp> ops;
    getOperation()->walk([&](AttentionOp op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (AttentionOp op : ops)
      expandAttention(op, rewriter);
  }
};

} // namespace
