//===- KilnDialect.h - The kiln dialect -------------------------*- C++ -*-===//
//
// Part of Kiln. Include this (or KilnOps.h) to use the dialect.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_KILNDIALECT_H
#define KILN_IR_KILNDIALECT_H

#include "mlir/IR/Dialect.h"

#include "ir/KilnDialect.h.inc"

#endif // KILN_IR_KILNDIALECT_H
