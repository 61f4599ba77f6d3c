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

/// Writes `kiln.buffers` on every op with a planned result (replacing any
/// earlier plan; `unit` for a result without storage) and `kiln.memory_plan`
/// on the step.
static void recordPlan(func::FuncOp step, const StepBuffers &plan,
                       int64_t maxTokens,
                       std::optional<int64_t> contextLength) {
  MLIRContext *context = step.getContext();
  Builder b(context);
  for (Operation &op : step.getBody().front()) {
    op.removeAttr(kBuffersAttrName);
    SmallVector<Attribute> entries;
    bool any = false;
    for (Value result : op.getResults()) {
      auto it = plan.bufferOf.find(result);
      if (it == plan.bufferOf.end()) {
        entries.push_back(b.getUnitAttr());
        continue;
      }
      // A view names the operand whose storage it shares.
      if (auto view = plan.views.find(result); view != plan.views.end()) {
        entries.push_back(BufferViewAttr::get(context, view->second));
      } else {
        const StepBuffer &buffer = plan.buffers[it->second];
        entries.push_back(BufferAttr::get(context, buffer.offset,
                                          buffer.size.bytesFixed,
                                          buffer.size.bytesPerToken));
      }
      any = true;
    }
    if (any)
      op.setAttr(kBuffersAttrName, b.getArrayAttr(entries));
  }

  step->setAttr(kMemoryPlanAttrName,
                MemoryPlanAttr::get(context, kBufferAlignment, maxTokens,
                                    arenaBytes(plan.buffers, maxTokens),
                                    naiveBytes(plan.buffers, maxTokens),
                                    contextLength));
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
