//===- StepContract.h - The model-step calling convention -------*- C++ -*-===//
//
// Part of Kiln. A step function is a func.func marked `kiln.step` with the
// signature below (docs/step-contract.md):
//
//   func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>,
//                   %seq_ids: tensor<?xi32>, %logit_rows: tensor<?xi32>,
//                   %cache: !kiln.kv_cache<...>)
//       -> (tensor<?xVxf32>, !kiln.kv_cache<...>) attributes {kiln.step}
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_STEPCONTRACT_H
#define KILN_IR_STEPCONTRACT_H

#include "mlir/Interfaces/FunctionInterfaces.h"

namespace kiln {

/// Positions of a step function's arguments.
enum class StepArg : unsigned {
  Tokens = 0,    ///< [T] token ids of every token in the step.
  Positions = 1, ///< [T] position of each token within its sequence.
  SeqIds = 2,    ///< [T] the sequence (cache slot) each token belongs to.
  LogitRows = 3, ///< [R] indices into the step's tokens that need logits.
  Cache = 4,     ///< The KV cache of all sequences.
};
constexpr unsigned kNumStepArgs = 5;

/// Positions of a step function's results.
enum class StepResult : unsigned {
  Logits = 0, ///< [R, V] logits of the requested rows.
  Cache = 1,  ///< The KV cache after this step's appends.
};
constexpr unsigned kNumStepResults = 2;

/// Returns the human-readable name of a step argument (for messages and
/// generated code).
llvm::StringRef getStepArgName(StepArg arg);

/// Checks that `func` has the step signature; emits an error on `func` naming
/// the argument or result at fault otherwise.
mlir::LogicalResult verifyStepFunction(mlir::FunctionOpInterface func);

} // namespace kiln

#endif // KILN_IR_STEPCONTRACT_H
