//===- KilnOps.h - Operations of the kiln dialect ---------------*- C++ -*-===//
//
// Part of Kiln. The one header users of the dialect include.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_KILNOPS_H
#define KILN_IR_KILNOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "ir/KilnAttrs.h"
#include "ir/KilnDialect.h"
#include "ir/KilnTypes.h"

#define GET_OP_CLASSES
#include "ir/KilnOps.h.inc"

#endif // KILN_IR_KILNOPS_H
