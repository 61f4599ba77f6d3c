//===- MemoryPlan.h - Activation buffers of a step --------------*- C++ -*-===//
//
// Part of Kiln. The analysis behind `--kiln-plan-memory` and
// `--kiln-print-memory-plan` (docs/passes/memory-planning.md): which values
// of a step function need storage of their own, how many bytes each needs as
// a function of the step's token count T, when each is live, and where in
// one arena each goes. The plan is recorded in typed attributes
// (`kiln.buffers`, `kiln.memory_plan`: ir/MemoryPlanAttrs.h).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_MEMORYPLAN_H
#define KILN_PASSES_MEMORYPLAN_H

#include "ir/MemoryPlanAttrs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace kiln {

/// Every offset is a multiple of this, and every buffer is padded to it, so
/// that kernels can use aligned vector loads (one cache line, one AVX-512
/// register). The plan records it as its `alignment`.
constexpr int64_t kBufferAlignment = 64;

inline int64_t alignBytes(int64_t bytes) {
  return (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
}

/// Bytes of a buffer when the step has `tokens` tokens:
/// `bytesPerToken * tokens + bytesFixed`. Both are non-negative, so the size
/// never decreases as T grows.
struct BufferSize {
  int64_t bytesPerToken = 0;
  int64_t bytesFixed = 0;

  int64_t at(int64_t tokens) const {
    return bytesPerToken * tokens + bytesFixed;
  }
  /// The space the buffer takes in the arena: its size padded to the
  /// alignment.
  int64_t paddedAt(int64_t tokens) const { return alignBytes(at(tokens)); }
};

/// One buffer: a value that needs storage of its own (a view shares its
/// source's buffer instead).
struct StepBuffer {
  mlir::Value value;
  /// Live range, as indices of the step's ops in program order: from the op
  /// that writes the buffer to the last op that reads it or one of its views
  /// (both included). The op that writes a buffer may read others that die
  /// there, so they overlap in time: no op writes over its own inputs.
  unsigned firstOp = 0, lastOp = 0;
  BufferSize size;
  /// Byte offset in the arena, once placed.
  int64_t offset = -1;

  bool liveWith(const StepBuffer &other) const {
    return firstOp <= other.lastOp && other.firstOp <= lastOp;
  }
};

/// The buffers of one step function, in definition order.
struct StepBuffers {
  llvm::SmallVector<StepBuffer> buffers;
  /// Every planned value, buffer owners and views alike, to its buffer.
  llvm::DenseMap<mlir::Value, unsigned> bufferOf;
  /// The values that are views of an operand (kiln.reshape results), to the
  /// number of that operand.
  llvm::DenseMap<mlir::Value, unsigned> views;
  unsigned numOps = 0;
};

/// Finds the buffers of `step` (a func.func marked kiln.step): every ranked
/// tensor result that depends on the step's arguments. Sizes are affine in T;
/// the logit-row count R is bounded by T, and a cached-position count S by
/// `contextLength` (when the step reads the cache and there is none, that is
/// an error). Emits an error at the op at fault and fails when a value cannot
/// be sized.
mlir::FailureOr<StepBuffers>
analyzeStepBuffers(mlir::func::FuncOp step,
                   std::optional<int64_t> contextLength);

/// Sets every buffer's offset (deterministic greedy placement, sizes taken at
/// `maxTokens`) and returns the arena size at `maxTokens`.
int64_t placeBuffers(llvm::MutableArrayRef<StepBuffer> buffers,
                     int64_t maxTokens);

/// Arena bytes needed at `tokens` with the placed offsets.
int64_t arenaBytes(llvm::ArrayRef<StepBuffer> buffers, int64_t tokens);
/// Bytes of all buffers allocated separately (padded), at `tokens`.
int64_t naiveBytes(llvm::ArrayRef<StepBuffer> buffers, int64_t tokens);
/// The most bytes live at once, at `tokens`: no placement can do better.
int64_t liveBytesBound(llvm::ArrayRef<StepBuffer> buffers, int64_t tokens);

} // namespace kiln

#endif // KILN_PASSES_MEMORYPLAN_H
