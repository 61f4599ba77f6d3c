//===- FusionDiagnostics.h - Why a fusion did not happen --------*- C++ -*-===//
//
// Part of Kiln. Every built-in fusion rule checks its preconditions one by
// one and, when one fails on a candidate, calls reportNotFused with the rule's
// name and the precondition. That gives users:
//
//  - `--kiln-explain-fusion` (kiln-opt and kiln): a remark per candidate that
//    did not fuse, e.g. "matmul-silu: %5 has 2 users";
//  - `kiln.fuse_required` on an op of the candidate: the same message as a
//    compile error, so a model that must be fused cannot silently regress.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_FUSIONDIAGNOSTICS_H
#define KILN_PASSES_FUSIONDIAGNOSTICS_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace kiln {

/// Registers the `--kiln-explain-fusion` command-line flag (call before
/// parsing options; kiln-opt and kiln do).
void registerFusionCLOptions();

/// Whether `--kiln-explain-fusion` was given (or set by setExplainFusion).
bool explainFusion();
void setExplainFusion(bool explain);

/// Reports that `rule` did not fuse the candidate rooted at `op` because of
/// `reason`. Returns failure when this is an error (the candidate carries
/// kiln.fuse_required on `op` or on one of `related`), so the pass can
/// signalPassFailure(); success otherwise (a remark, if explaining).
mlir::LogicalResult
reportNotFused(mlir::Operation *op, llvm::StringRef rule,
               const llvm::Twine &reason,
               llvm::ArrayRef<mlir::Operation *> related = {});

/// How a value is named in messages: "%5" as the printer numbers it in its
/// function, or the op and result number.
std::string describeValue(mlir::Value value);

/// The single-use precondition most rules share: "" when `value` has exactly
/// one use, else "%3 has 2 users".
std::string describeExtraUses(mlir::Value value);

} // namespace kiln

#endif // KILN_PASSES_FUSIONDIAGNOSTICS_H
