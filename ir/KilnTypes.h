//===- KilnTypes.h - Types of the kiln dialect ------------------*- C++ -*-===//
//
// Part of Kiln. Block-quantized element types (q8_0, q4_0, q4_k, q5_k, q6_k)
// and the KV cache.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_KILNTYPES_H
#define KILN_IR_KILNTYPES_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Types.h"

#include "ir/KilnTypeInterfaces.h.inc"

#define GET_TYPEDEF_CLASSES
#include "ir/KilnTypes.h.inc"

namespace kiln {

/// Returns the block-quantized element type of `type` (a tensor type or an
/// element type), or null if it has none.
BlockQuantizedTypeInterface getBlockQuantizedElementType(mlir::Type type);

/// True for the element types activations may have: f32, f16 and bf16.
bool isActivationElementType(mlir::Type type);

} // namespace kiln

#endif // KILN_IR_KILNTYPES_H
