//===- PlanMemory.cpp - Place a step's activations in one arena -----------===//
//
// Part of Kiln. See the pass description in Passes.td and
// docs/passes/memory-planning.md. The analysis and the placement are in
// MemoryPlan.cpp; this file checks the pass's inputs and records the plan.
//
//===----------------------------------------------------------------------===//

#include "passes/MemoryPlan.h"
#include "passes/Passes.h"

#include "ir/KilnDialect.h"

#include "mlir/IR/Builders.h"

namespace kiln {
#define GEN_PASS_DEF_PLANMEMORY
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// The dictionary that describes one planned result: where its storage
/// starts and how large it is at T tokens; `view` if that storage is its
/// operand's (the offset and size are then the operand's buffer's).
static DictionaryAttr bufferEntry(Builder &b, const StepBuffer &buffer,
                                  bool view) {
  SmallVector<NamedAttribute> entries = {
      b.getNamedAttr("bytes_fixed",
                     b.getI64IntegerAttr(buffer.size.bytesFixed)),
      b.getNamedAttr("bytes_per_token",
                     b.getI64IntegerAttr(buffer.size.bytesPerToken)),
      b.getNamedAttr("offset", b.getI64IntegerAttr(buffer.offset))};
  if (view)
    entries.push_back(b.getNamedAttr("view", b.getUnitAttr()));
  return b.getDictionaryAttr(entries);
}

/// Writes `kiln.buffers` on every op with a planned result (replacing any
/// earlier plan) and `kiln.memory_plan` on the step.
static void recordPlan(func::FuncOp step, const StepBuffers &plan,
                       int64_t maxTokens,
                       std::optional<int64_t> contextLength) {
  Builder b(step.getContext());
  for (Operation &op : step.getBody().front()) {
    op.removeAttr(kBuffersAttrName);
    SmallVector<Attribute> entries;
    bool any = false;
    for (Value result : op.getResults()) {
      auto it = plan.bufferOf.find(result);
      if (it == plan.bufferOf.end()) {
        entries.push_back(b.getDictionaryAttr({}));
        continue;
      }
      entries.push_back(bufferEntry(b, plan.buffers[it->second],
                                    plan.views.contains(result)));
      any = true;
    }
    if (any)
      op.setAttr(kBuffersAttrName, b.getArrayAttr(entries));
  }

  SmallVector<NamedAttribute> summary = {
      b.getNamedAttr("alignment", b.getI64IntegerAttr(kBufferAlignment)),
      b.getNamedAttr("arena_bytes",
                     b.getI64IntegerAttr(arenaBytes(plan.buffers, maxTokens))),
      b.getNamedAttr("max_tokens", b.getI64IntegerAttr(maxTokens)),
      b.getNamedAttr("naive_bytes",
                     b.getI64IntegerAttr(naiveBytes(plan.buffers, maxTokens)))};
  if (contextLength)
    summary.push_back(
        b.getNamedAttr("context_length", b.getI64IntegerAttr(*contextLength)));
  step->setAttr(kMemoryPlanAttrName, b.getDictionaryAttr(summary));
}

struct PlanMemoryPass : kiln::impl::PlanMemoryBase<PlanMemoryPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp step = getOperation();
    // T and R are known only through the step contract's arguments.
    if (!step->hasAttr(KilnDialect::kStepAttrName)) {
      step.emitError() << "kiln-plan-memory plans kiln.step functions "
                          "(docs/step-contract.md); @"
                       << step.getName() << " is not one";
      return signalPassFailure();
    }
    int64_t tokens = maxTokens, context = contextLength;
    if (tokens < 1 || context < 0) {
      step.emitError() << "kiln-plan-memory needs max-tokens >= 1 and "
                          "context-length >= 0, got max-tokens="
                       << tokens << " context-length=" << context;
      return signalPassFailure();
    }
    std::optional<int64_t> bound;
    if (context > 0)
      bound = context;
    else if (auto attr = step->getAttrOfType<IntegerAttr>(
                 KilnDialect::kContextLengthAttrName))
      bound = attr.getInt();

    FailureOr<StepBuffers> plan = analyzeStepBuffers(step, bound);
    if (failed(plan))
      return signalPassFailure();
    placeBuffers(plan->buffers, tokens);
    recordPlan(step, *plan, tokens, bound);
  }
};

} // namespace
