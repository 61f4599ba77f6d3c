//===- MemoryPlanAttrs.cpp - kiln.buffers and kiln.memory_plan ------------===//
//
// Part of Kiln. See MemoryPlanAttrs.h.
//
//===----------------------------------------------------------------------===//

#include "ir/MemoryPlanAttrs.h"

#include "ir/KilnDialect.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace kiln {

/// The plan of the nearest enclosing op that has one (the step function).
static MemoryPlanAttr enclosingPlan(Operation *op) {
  for (Operation *parent = op->getParentOp(); parent;
       parent = parent->getParentOp())
    if (auto plan = getMemoryPlan(parent))
      return plan;
  return {};
}

/// Checks one buffer of `op`'s result `index` against the step's plan.
static LogicalResult verifyBuffer(Operation *op, unsigned index,
                                  BufferAttr buffer, MemoryPlanAttr plan) {
  auto error = [&]() {
    return op->emitError() << "'" << kBuffersAttrName << "' entry #" << index;
  };
  Type type = op->getResult(index).getType();
  if (!isa<RankedTensorType>(type))
    return error() << " is a buffer, but result #" << index << " has type "
                   << type << ", which is not a ranked tensor";
  if (!plan)
    return success();
  if (buffer.getOffset() % plan.getAlignment() != 0)
    return error() << ": offset " << buffer.getOffset()
                   << " is not a multiple of the memory plan's alignment ("
                   << plan.getAlignment() << ")";
  int64_t grown, bytes, end;
  if (llvm::MulOverflow(buffer.getBytesPerToken(), plan.getMaxTokens(),
                        grown) ||
      llvm::AddOverflow(grown, buffer.getBytesFixed(), bytes) ||
      llvm::AddOverflow(buffer.getOffset(), bytes, end))
    return error() << ": the buffer's end at " << plan.getMaxTokens()
                   << " tokens does not fit in 64 bits";
  if (end > plan.getArenaBytes())
    return error() << ": the buffer ends at byte " << end << " at "
                   << plan.getMaxTokens()
                   << " tokens, past the memory plan's arena_bytes ("
                   << plan.getArenaBytes() << ")";
  return success();
}

LogicalResult verifyBuffersAttr(Operation *op, Attribute attr) {
  auto entries = dyn_cast<ArrayAttr>(attr);
  if (!entries)
    return op->emitError() << "'" << kBuffersAttrName
                           << "' must be an array with one entry per result, "
                              "not "
                           << attr;
  if (entries.size() != op->getNumResults())
    return op->emitError() << "'" << kBuffersAttrName << "' has "
                           << entries.size() << " entries, but the op has "
                           << op->getNumResults() << " result"
                           << (op->getNumResults() == 1 ? "" : "s")
                           << ": it needs one entry per result";
  MemoryPlanAttr plan = enclosingPlan(op);
  for (auto [index, entry] : llvm::enumerate(entries)) {
    if (isa<UnitAttr>(entry))
      continue;
    if (auto buffer = dyn_cast<BufferAttr>(entry)) {
      if (failed(verifyBuffer(op, index, buffer, plan)))
        return failure();
      continue;
    }
    auto view = dyn_cast<BufferViewAttr>(entry);
    if (!view)
      return op->emitError()
             << "'" << kBuffersAttrName << "' entry #" << index
             << " must be a #kiln.buffer, a #kiln.buffer_view or unit (no "
                "storage), not "
             << entry;
    if (view.getOperand() >= op->getNumOperands())
      return op->emitError()
             << "'" << kBuffersAttrName << "' entry #" << index
             << " is a view of operand #" << view.getOperand()
             << ", but the op has " << op->getNumOperands() << " operand"
             << (op->getNumOperands() == 1 ? "" : "s");
    Type type = op->getOperand(view.getOperand()).getType();
    if (!isa<RankedTensorType>(type))
      return op->emitError()
             << "'" << kBuffersAttrName << "' entry #" << index
             << " is a view of operand #" << view.getOperand()
             << ", which has type " << type << ", not a ranked tensor";
  }
  return success();
}

LogicalResult verifyMemoryPlanAttr(Operation *op, Attribute attr) {
  if (!isa<MemoryPlanAttr>(attr))
    return op->emitError() << "'" << kMemoryPlanAttrName
                           << "' must be a #kiln.memory_plan, not " << attr;
  if (!op->hasAttr(KilnDialect::kStepAttrName))
    return op->emitError() << "'" << kMemoryPlanAttrName
                           << "' is only valid on a kiln.step function";
  return success();
}

Attribute getBufferEntry(Value value) {
  auto result = dyn_cast<OpResult>(value);
  if (!result)
    return {};
  auto entries = result.getOwner()->getAttrOfType<ArrayAttr>(kBuffersAttrName);
  if (!entries || entries.size() != result.getOwner()->getNumResults())
    return {};
  Attribute entry = entries[result.getResultNumber()];
  return isa<BufferAttr, BufferViewAttr>(entry) ? entry : Attribute();
}

BufferAttr getBuffer(Value value) {
  // A chain of views ends at an op result with a buffer, or at nothing: each
  // step goes to an operand, defined earlier in a verified block.
  while (Attribute entry = getBufferEntry(value)) {
    if (auto buffer = dyn_cast<BufferAttr>(entry))
      return buffer;
    Operation *op = cast<OpResult>(value).getOwner();
    int64_t operand = cast<BufferViewAttr>(entry).getOperand();
    if (operand >= op->getNumOperands())
      return {};
    value = op->getOperand(operand);
  }
  return {};
}

MemoryPlanAttr getMemoryPlan(Operation *step) {
  return step->getAttrOfType<MemoryPlanAttr>(kMemoryPlanAttrName);
}

} // namespace kiln
