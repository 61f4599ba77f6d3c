//===- Passes.h - Kiln's passes ---------------------------------*- C++ -*-===//
//
// Part of Kiln. Declarations and registration of every Kiln pass.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_PASSES_H
#define KILN_PASSES_PASSES_H

#include "ir/KilnDialect.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Pass/Pass.h"

namespace kiln {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace kiln

#endif // KILN_PASSES_PASSES_H
