//===- CheckCpuLegality.cpp - Reject what CPU code generation cannot take -===//
//
// Part of Kiln. See the pass description in Passes.td.
//
// The checks mirror what codegen/cpu/CpuStepEmitter.cpp and
// codegen/WeightPacker.cpp refuse at compile time, so that the refusal comes
// from kiln-opt, as a diagnostic on the op, and all at once.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "ir/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/raw_ostream.h"

namespace kiln {
#define GEN_PASS_DEF_CHECKCPULEGALITY
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// `type` as the IR prints it, unquoted (a Type streamed into a diagnostic
/// is quoted).
static std::string str(Type type) {
  std::string text;
  llvm::raw_string_ostream(text) << type;
  return text;
}

/// Whether `value` is a weight: defined by kiln.weight, or by a kiln.concat
/// whose inputs are all weights. Weights are read and packed at compile time.
static bool isWeight(Value value) {
  if (value.getDefiningOp<WeightOp>())
    return true;
  auto concat = value.getDefiningOp<ConcatOp>();
  return concat && llvm::all_of(concat.getInputs(), isWeight);
}

/// Whether `op` is an op the CPU code generator handles: a kiln compute op
/// with a kernel, an op that is packed or is a view (kiln.weight,
/// kiln.concat of weights, kiln.reshape), or the step's func.return.
static bool hasCpuLowering(Operation *op) {
  return isa<
      // Weights and views: no kernel of their own.
      WeightOp, ConcatOp, ReshapeOp, func::ReturnOp,
      // Embedding, row selection and matmuls.
      EmbeddingOp, GatherRowsOp, MatmulOp, FusedMatmulOp, SwigluOp,
      // Element-wise math.
      AddOp, MulOp, SiluOp, GeluOp, ReluOp, ScaleOp, SoftmaxOp,
      // Norms and rotary embedding.
      RmsNormOp, LayerNormOp, RopeOp,
      // Data movement.
      TransposeOp, SplitOp,
      // The KV cache and attention.
      KVAppendOp, KVReadOp, AttentionScoresOp, AttentionMaskOp,
      AttentionOutputOp, AttentionOp>(op);
}

/// A concat must be of weights (packed at compile time, whole rows after
/// whole rows); reports the first input that is not one, or an axis the
/// packer cannot lay out.
static LogicalResult checkConcat(ConcatOp concat) {
  for (auto [index, input] : llvm::enumerate(concat.getInputs()))
    if (!isWeight(input))
      return concat.emitOpError()
             << "input #" << index
             << " is not a weight: a concat of activations has no CPU "
                "kernel (the CPU backend concatenates weights only, packing "
                "them at compile time)";
  if (concat.getAxis() != 0)
    return concat.emitOpError()
           << "concatenates weights along axis " << concat.getAxis()
           << ": the CPU backend packs weights concatenated along axis 0 "
              "only (whole rows)";
  return success();
}

/// Activations are f32 in every CPU kernel. Weights (converted when packed)
/// and i32 index tensors are not activations.
static LogicalResult checkActivations(Operation *op) {
  if (isa<WeightOp>(op) || (isa<ConcatOp>(op) && isWeight(op->getResult(0))))
    return success();
  for (OpResult result : op->getResults()) {
    auto type = dyn_cast<TensorType>(result.getType());
    if (!type)
      continue;
    Type element = type.getElementType();
    if (element.isF32() || element.isInteger(32))
      continue;
    return op->emitOpError()
           << "result #" << result.getResultNumber() << " has type " << type
           << ": the CPU kernels compute activations in f32, not "
           << str(element);
  }
  return success();
}

/// The CPU kernels read and write an f32 KV cache.
static LogicalResult checkCache(Operation *op, Value cache) {
  auto type = dyn_cast<KVCacheType>(cache.getType());
  if (!type || type.getElementType().isF32())
    return success();
  return op->emitOpError() << "reads or writes " << type
                           << ": the CPU kernels keep an f32 KV cache, not "
                           << str(type.getElementType());
}

/// The embedding kernel copies rows out of the packed weights.
static LogicalResult checkEmbedding(EmbeddingOp embedding) {
  if (isWeight(embedding.getTable()))
    return success();
  return embedding.emitOpError()
         << "table must be a weight (kiln.weight, or a kiln.concat of "
            "weights), not a computed activation: the CPU embedding kernel "
            "reads its rows from the weights packed at compile time";
}

/// Kernels run per step on values that depend on the step's arguments; an
/// op computed from weights alone (a transpose of a weight, say) would have
/// to run at compile time, and neither the memory plan nor the weight packer
/// does that.
static LogicalResult checkPerStep(Operation *op,
                                  const DenseSet<Value> &perStep) {
  if (isa<WeightOp, ConcatOp, ReshapeOp, func::ReturnOp>(op) ||
      op->getNumOperands() == 0 ||
      llvm::any_of(op->getOperands(),
                   [&](Value v) { return perStep.contains(v); }))
    return success();
  return op->emitOpError()
         << "computes from weights only: the CPU backend runs kernels on "
            "each step's activations and does not evaluate ops at compile "
            "time (fold the computation into the weights)";
}

/// Checks one op of a step; every violation is reported.
static LogicalResult checkOp(Operation *op) {
  if (!hasCpuLowering(op))
    return op->emitOpError()
           << "has no CPU kernel: the CPU backend compiles the kiln ops of a "
              "step and its func.return only";
  bool ok = true;
  if (auto concat = dyn_cast<ConcatOp>(op))
    ok &= succeeded(checkConcat(concat));
  if (auto embedding = dyn_cast<EmbeddingOp>(op))
    ok &= succeeded(checkEmbedding(embedding));
  if (auto append = dyn_cast<KVAppendOp>(op))
    ok &= succeeded(checkCache(op, append.getCache()));
  if (auto read = dyn_cast<KVReadOp>(op))
    ok &= succeeded(checkCache(op, read.getCache()));
  if (auto attention = dyn_cast<AttentionOp>(op))
    ok &= succeeded(checkCache(op, attention.getCache()));
  ok &= succeeded(checkActivations(op));
  return success(ok);
}

struct CheckCpuLegalityPass
    : kiln::impl::CheckCpuLegalityBase<CheckCpuLegalityPass> {
  void runOnOperation() override {
    func::FuncOp step = getOperation();
    if (!step->hasAttr(KilnDialect::kStepAttrName))
      return;
    bool ok = true;
    // Values that depend on the step's arguments (not on weights alone).
    DenseSet<Value> perStep(step.getArguments().begin(),
                            step.getArguments().end());
    // Top-level ops only: an op with regions is rejected as a whole.
    for (Block &block : step.getBody())
      for (Operation &op : block) {
        ok &= succeeded(checkOp(&op));
        ok &= succeeded(checkPerStep(&op, perStep));
        if (llvm::any_of(op.getOperands(),
                         [&](Value v) { return perStep.contains(v); }))
          perStep.insert(op.result_begin(), op.result_end());
      }
    if (!ok)
      signalPassFailure();
  }
};

} // namespace
