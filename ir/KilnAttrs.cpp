//===- KilnAttrs.cpp - Attributes of the kiln dialect ---------------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "ir/KilnAttrs.h"

#include "ir/KilnDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace kiln;

#include "ir/KilnEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "ir/KilnAttrs.cpp.inc"

void KilnDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "ir/KilnAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// RopeScalingAttr
//===----------------------------------------------------------------------===//

LogicalResult
RopeScalingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        RopeScalingKind kind, APFloat factorValue,
                        APFloat lowFreqValue, APFloat highFreqValue,
                        int64_t originalContext) {
  double factor = factorValue.convertToDouble();
  double lowFreqFactor = lowFreqValue.convertToDouble();
  double highFreqFactor = highFreqValue.convertToDouble();
  if (!(factor > 0.0))
    return emitError() << "rope_scaling: factor must be positive, got "
                       << factor;
  if (kind == RopeScalingKind::Linear) {
    if (lowFreqFactor != 0.0 || highFreqFactor != 0.0 || originalContext != 0)
      return emitError() << "rope_scaling: linear scaling takes only a factor";
    return success();
  }
  // llama3
  if (!(lowFreqFactor > 0.0) || !(highFreqFactor > lowFreqFactor))
    return emitError() << "rope_scaling: llama3 scaling needs 0 < "
                          "low_freq_factor < high_freq_factor, got "
                       << lowFreqFactor << " and " << highFreqFactor;
  if (originalContext <= 0)
    return emitError() << "rope_scaling: llama3 scaling needs a positive "
                          "original_context, got "
                       << originalContext;
  return success();
}

//===----------------------------------------------------------------------===//
// WeightsSourceAttr
//===----------------------------------------------------------------------===//

LogicalResult
WeightsSourceAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                          WeightsFormat format, StringRef path) {
  if (path.empty())
    return emitError() << "weights_source: the path is empty";
  return success();
}
