//===- KilnDialect.cpp - The kiln dialect ---------------------------------===//
//
// Part of Kiln. Dialect registration and the verifier of the dialect's
// discardable attributes (`kiln.step`, `kiln.weights_source`,
// `kiln.fuse_required`, the tiles and the memory plan).
//
//===----------------------------------------------------------------------===//

#include "ir/KilnDialect.h"

#include "ir/KilnOps.h"
#include "ir/MemoryPlanAttrs.h"
#include "ir/StepContract.h"
#include "ir/Tiling.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace kiln;

#include "ir/KilnDialect.cpp.inc"

void KilnDialect::initialize() {
  registerTypes();
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "ir/KilnOps.cpp.inc"
      >();
}

LogicalResult KilnDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  StringRef name = attr.getName().getValue();

  if (name == kStepAttrName) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError()
             << "'" << kStepAttrName << "' must be a unit attribute";
    auto func = dyn_cast<FunctionOpInterface>(op);
    if (!func)
      return op->emitError()
             << "'" << kStepAttrName << "' is only valid on a function";
    return verifyStepFunction(func);
  }

  if (name == kWeightsSourceAttrName) {
    if (!isa<ModuleOp>(op))
      return op->emitError()
             << "'" << kWeightsSourceAttrName << "' is only valid on a module";
    if (!isa<WeightsSourceAttr>(attr.getValue()))
      return op->emitError()
             << "'" << kWeightsSourceAttrName
             << "' must be a #kiln.weights_source<format, \"path\"> attribute";
    return success();
  }

  if (name == kContextLengthAttrName) {
    auto value = dyn_cast<IntegerAttr>(attr.getValue());
    if (!value || value.getInt() <= 0)
      return op->emitError()
             << "'" << kContextLengthAttrName << "' must be a positive integer";
    if (!op->hasAttr(kStepAttrName))
      return op->emitError() << "'" << kContextLengthAttrName
                             << "' is only valid on a kiln.step function";
    return success();
  }

  if (name == kFuseRequiredAttrName) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError()
             << "'" << kFuseRequiredAttrName << "' must be a unit attribute";
    return success();
  }

  // The memory plan, written by --kiln-plan-memory for code generation
  // (docs/passes/memory-planning.md).
  if (name == kBuffersAttrName)
    return verifyBuffersAttr(op, attr.getValue());
  if (name == kMemoryPlanAttrName)
    return verifyMemoryPlanAttr(op, attr.getValue());

  // Loop structure for code generation, written by --kiln-tile.
  if (name == kTilesAttrName)
    return verifyTilesAttr(op, attr.getValue());
  if (name == kTargetAttrName) {
    if (!isa<ModuleOp>(op) || !isa<StringAttr>(attr.getValue()))
      return op->emitError() << "'" << kTargetAttrName
                             << "' must be a target spec string on a module";
    return success();
  }

  return op->emitError() << "unknown kiln attribute '" << name << "'";
}
