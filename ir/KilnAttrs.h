//===- KilnAttrs.h - Attributes of the kiln dialect -------------*- C++ -*-===//
//
// Part of Kiln. Enums (rope layout, activation, ...) and attributes (rope
// scaling, weights source, tiles, memory plan).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_KILNATTRS_H
#define KILN_IR_KILNATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"

#include <optional>

#include "ir/KilnEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "ir/KilnAttrs.h.inc"

#endif // KILN_IR_KILNATTRS_H
