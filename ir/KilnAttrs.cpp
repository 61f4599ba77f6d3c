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
#include "llvm/Support/MathExtras.h"

#include <cmath>

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

LogicalResult RopeScalingAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, RopeScalingKind kind,
    APFloat factorValue, APFloat lowFreqValue, APFloat highFreqValue,
    int64_t originalContext, DenseF32ArrayAttr freqFactors) {
  double factor = factorValue.convertToDouble();
  double lowFreqFactor = lowFreqValue.convertToDouble();
  double highFreqFactor = highFreqValue.convertToDouble();
  if (!(factor > 0.0) || !std::isfinite(factor))
    return emitError() << "rope_scaling: factor must be positive and finite, "
                          "got "
                       << factor;
  if (kind != RopeScalingKind::Factors && freqFactors)
    return emitError() << "rope_scaling: freq_factors belong to 'factors' "
                          "scaling, not '"
                       << stringifyRopeScalingKind(kind) << "'";
  bool llama3Fields =
      lowFreqFactor != 0.0 || highFreqFactor != 0.0 || originalContext != 0;
  if (kind == RopeScalingKind::Linear) {
    if (llama3Fields)
      return emitError() << "rope_scaling: linear scaling takes only a factor";
    return success();
  }
  if (kind == RopeScalingKind::Factors) {
    if (llama3Fields)
      return emitError() << "rope_scaling: factors scaling takes only a "
                            "factor and freq_factors";
    if (!freqFactors || freqFactors.empty())
      return emitError() << "rope_scaling: factors scaling needs "
                            "freq_factors, one per rotated pair";
    for (auto [i, f] : llvm::enumerate(freqFactors.asArrayRef()))
      if (!(f > 0.0f) || !std::isfinite(f))
        return emitError() << "rope_scaling: freq_factors[" << i
                           << "] must be positive and finite, got " << f;
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

//===----------------------------------------------------------------------===//
// Tiles
//===----------------------------------------------------------------------===//

/// Every named size positive.
static LogicalResult
verifySizes(function_ref<InFlightDiagnostic()> emitError, StringRef what,
            std::initializer_list<std::pair<StringRef, int64_t>> sizes) {
  for (auto [name, size] : sizes)
    if (size < 1)
      return emitError() << what << " tile size '" << name
                         << "' must be positive, not " << size;
  return success();
}

LogicalResult
GemmPhaseAttr::verify(function_ref<InFlightDiagnostic()> emitError, int64_t m,
                      int64_t n, int64_t k, int64_t mr, int64_t nr) {
  return verifySizes(emitError, "GEMM",
                     {{"m", m}, {"n", n}, {"k", k}, {"mr", mr}, {"nr", nr}});
}

LogicalResult
AttentionPhaseAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                           int64_t q, int64_t kv) {
  return verifySizes(emitError, "attention", {{"q", q}, {"kv", kv}});
}

LogicalResult
RowsPhaseAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      int64_t rows) {
  return verifySizes(emitError, "rows", {{"rows", rows}});
}

static LogicalResult
verifyPrefillFrom(function_ref<InFlightDiagnostic()> emitError,
                  int64_t prefillFrom) {
  if (prefillFrom < 1)
    return emitError() << "prefill_from must be positive, not " << prefillFrom;
  return success();
}

LogicalResult
GemmTilesAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      GemmPhaseAttr decode, GemmPhaseAttr prefill,
                      int64_t prefillFrom, StringRef) {
  if (!decode || !prefill)
    return emitError() << "GEMM tiles need decode and prefill sizes";
  // One packed layout serves both phases: the panels are nr rows.
  if (decode.getNr() != prefill.getNr())
    return emitError() << "decode nr (" << decode.getNr()
                       << ") and prefill nr (" << prefill.getNr()
                       << ") differ: both phases read one packed layout";
  // Batch invariance: a row's sums must not depend on how many rows the step
  // holds, so both phases split the reduction alike.
  if (decode.getK() != prefill.getK())
    return emitError() << "decode k (" << decode.getK() << ") and prefill k ("
                       << prefill.getK()
                       << ") differ: a row's sums would depend on the batch";
  return verifyPrefillFrom(emitError, prefillFrom);
}

LogicalResult AttentionTilesAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, AttentionPhaseAttr decode,
    AttentionPhaseAttr prefill, int64_t prefillFrom, StringRef) {
  if (!decode || !prefill)
    return emitError() << "attention tiles need decode and prefill sizes";
  // Batch invariance: the online softmax's blocks must not depend on how
  // many tokens the step holds.
  if (decode.getKv() != prefill.getKv())
    return emitError()
           << "decode kv (" << decode.getKv() << ") and prefill kv ("
           << prefill.getKv()
           << ") differ: a token's softmax would depend on the batch";
  return verifyPrefillFrom(emitError, prefillFrom);
}

LogicalResult
RowsTilesAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      RowsPhaseAttr decode, RowsPhaseAttr prefill,
                      int64_t prefillFrom, StringRef) {
  if (!decode || !prefill)
    return emitError() << "rows tiles need decode and prefill sizes";
  return verifyPrefillFrom(emitError, prefillFrom);
}

//===----------------------------------------------------------------------===//
// Memory plan
//===----------------------------------------------------------------------===//

/// Every named byte count or index non-negative.
static LogicalResult
verifyNonNegative(function_ref<InFlightDiagnostic()> emitError, StringRef what,
                  std::initializer_list<std::pair<StringRef, int64_t>> values) {
  for (auto [name, value] : values)
    if (value < 0)
      return emitError() << what << " '" << name
                         << "' must be non-negative, not " << value;
  return success();
}

LogicalResult BufferAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t offset, int64_t bytesFixed,
                                 int64_t bytesPerToken) {
  return verifyNonNegative(emitError, "buffer",
                           {{"offset", offset},
                            {"bytes_fixed", bytesFixed},
                            {"bytes_per_token", bytesPerToken}});
}

LogicalResult
BufferViewAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       int64_t operand) {
  return verifyNonNegative(emitError, "buffer view", {{"operand", operand}});
}

LogicalResult
MemoryPlanAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       int64_t alignment, int64_t maxTokens, int64_t arenaBytes,
                       int64_t naiveBytes,
                       std::optional<int64_t> contextLength) {
  if (alignment < 1 || !llvm::isPowerOf2_64(alignment))
    return emitError() << "memory plan 'alignment' must be a power of two, not "
                       << alignment;
  if (maxTokens < 1)
    return emitError() << "memory plan 'max_tokens' must be positive, not "
                       << maxTokens;
  if (contextLength && *contextLength < 1)
    return emitError() << "memory plan 'context_length' must be positive "
                          "(or left out), not "
                       << *contextLength;
  return verifyNonNegative(
      emitError, "memory plan",
      {{"arena_bytes", arenaBytes}, {"naive_bytes", naiveBytes}});
}
