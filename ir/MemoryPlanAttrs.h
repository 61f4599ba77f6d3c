//===- MemoryPlanAttrs.h - kiln.buffers and kiln.memory_plan ----*- C++ -*-===//
//
// Part of Kiln. The memory plan is the seam between memory planning
// (passes/PlanMemory.cpp) and code generation: where every activation of a
// step lives in one arena. It travels as two discardable attributes, so the
// IR stays at graph level and the reference interpreter ignores them:
//
//   %s = kiln.silu %x {kiln.buffers = [
//       #kiln.buffer<offset = 32768, bytes_fixed = 0, bytes_per_token = 64>]}
//   %k = kiln.reshape %x {kiln.buffers = [#kiln.buffer_view<operand = 0>]}
//   func.func @step(...) attributes {kiln.step, kiln.memory_plan =
//       #kiln.memory_plan<alignment = 64, max_tokens = 512,
//                         arena_bytes = 65536, naive_bytes = 147456>}
//
// `kiln.buffers` has one entry per result: a #kiln.buffer (storage of its
// own), a #kiln.buffer_view (the storage of one of the op's operands) or
// `unit` (no storage: the result is not an activation). The typed attributes
// (ir/KilnAttrs.td) verify their own fields; the checks that need the op and
// the step's plan are here. docs/passes/memory-planning.md says how the plan
// is made and what reads it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_MEMORYPLANATTRS_H
#define KILN_IR_MEMORYPLANATTRS_H

#include "ir/KilnAttrs.h"

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/StringRef.h"

namespace kiln {

/// On every op with a planned result: an array with one entry per result.
inline constexpr llvm::StringLiteral kBuffersAttrName = "kiln.buffers";
/// On the step function: a #kiln.memory_plan.
inline constexpr llvm::StringLiteral kMemoryPlanAttrName = "kiln.memory_plan";

/// Checks a kiln.buffers value on `op`: one entry per result, a buffer only
/// for a ranked tensor result, a view only of an operand that exists and is a
/// ranked tensor, and, under a function with a memory plan, every buffer at
/// an aligned offset and inside the arena at the plan's max_tokens.
mlir::LogicalResult verifyBuffersAttr(mlir::Operation *op,
                                      mlir::Attribute attr);

/// Checks a kiln.memory_plan value: a #kiln.memory_plan on a kiln.step
/// function.
mlir::LogicalResult verifyMemoryPlanAttr(mlir::Operation *op,
                                         mlir::Attribute attr);

/// The kiln.buffers entry of `value`'s result, a BufferAttr or a
/// BufferViewAttr; null for a block argument, an op without kiln.buffers and
/// a `unit` entry.
mlir::Attribute getBufferEntry(mlir::Value value);

/// The buffer that holds `value`: its own, or for a view, the buffer of the
/// operand it views (through views of views); null when there is none.
BufferAttr getBuffer(mlir::Value value);

/// The memory plan recorded on `step`, or null.
MemoryPlanAttr getMemoryPlan(mlir::Operation *step);

} // namespace kiln

#endif // KILN_IR_MEMORYPLANATTRS_H
