//===- DiagnosticCapture.h - Collects MLIR diagnostics in tests -*- C++ -*-===//
//
// Part of Kiln's unit tests.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TEST_UNIT_DIAGNOSTICCAPTURE_H
#define KILN_TEST_UNIT_DIAGNOSTICCAPTURE_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <string>

namespace kiln::test {

/// Records every diagnostic emitted in `context` while alive, joined by
/// newlines, instead of printing it.
class DiagnosticCapture {
public:
  explicit DiagnosticCapture(mlir::MLIRContext &context)
      : handler(&context, [this](mlir::Diagnostic &diag) {
          text += diag.str() + "\n";
          return mlir::success();
        }) {}

  const std::string &str() const { return text; }

private:
  std::string text;
  mlir::ScopedDiagnosticHandler handler;
};

} // namespace kiln::test

#endif // KILN_TEST_UNIT_DIAGNOSTICCAPTURE_H
