//===- StepContract.cpp - The model-step calling convention ---------------===//
//
// Part of Kiln. See StepContract.h and docs/step-contract.md.
//
//===----------------------------------------------------------------------===//

#include "ir/StepContract.h"

#include "ir/KilnTypes.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace kiln;

StringRef kiln::getStepArgName(StepArg arg) {
  switch (arg) {
  case StepArg::Tokens:
    return "tokens";
  case StepArg::Positions:
    return "positions";
  case StepArg::SeqIds:
    return "seq_ids";
  case StepArg::LogitRows:
    return "logit_rows";
  case StepArg::Cache:
    return "cache";
  }
  llvm_unreachable("unknown step argument");
}

/// The index arguments are exactly `tensor<?xi32>`: the token count is a
/// property of each step, never of the compiled model.
static bool isDynamicIndexVector(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getRank() == 1 && tensor.isDynamicDim(0) &&
         tensor.getElementType().isSignlessInteger(32);
}

LogicalResult kiln::verifyStepFunction(FunctionOpInterface func) {
  auto fail = [&]() {
    return func->emitError() << "step function @" << func.getName() << ": ";
  };
  ArrayRef<Type> args = func.getArgumentTypes();
  ArrayRef<Type> results = func.getResultTypes();
  if (args.size() != kNumStepArgs)
    return fail() << "expected " << kNumStepArgs
                  << " arguments (tokens, positions, seq_ids, logit_rows, "
                     "cache), got "
                  << args.size();
  for (auto arg : {StepArg::Tokens, StepArg::Positions, StepArg::SeqIds,
                   StepArg::LogitRows}) {
    unsigned i = static_cast<unsigned>(arg);
    if (!isDynamicIndexVector(args[i]))
      return fail() << "argument #" << i << " (" << getStepArgName(arg)
                    << ") must be tensor<?xi32>, got " << args[i];
  }
  unsigned cacheIdx = static_cast<unsigned>(StepArg::Cache);
  auto cache = dyn_cast<KVCacheType>(args[cacheIdx]);
  if (!cache)
    return fail() << "argument #" << cacheIdx
                  << " (cache) must be a !kiln.kv_cache, got "
                  << args[cacheIdx];

  if (results.size() != kNumStepResults)
    return fail() << "expected " << kNumStepResults
                  << " results (logits, cache), got " << results.size();
  auto logits = dyn_cast<RankedTensorType>(results[0]);
  if (!logits || logits.getRank() != 2 || !logits.isDynamicDim(0) ||
      logits.isDynamicDim(1) ||
      !isActivationElementType(logits.getElementType()))
    return fail() << "result #0 (logits) must be tensor<?xVxf32> (or f16/bf16) "
                     "with a static vocabulary size V, got "
                  << results[0];
  if (results[1] != cache)
    return fail() << "result #1 (cache) must have the cache argument's type "
                  << cache << ", got " << results[1];
  return success();
}
