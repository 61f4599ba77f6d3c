//===- PdlRules.h - Apply fusion rules written in PDL -----------*- C++ -*-===//
//
// Part of Kiln. The engine behind every fusion rule written in PDLL: Kiln's
// built-in declarative rules (compiled to PDL at build time, e.g.
// passes/rules/MatmulActivation.pdll) and users' rule files
// (--kiln-fusion-rules, passes/ApplyFusionRules.cpp). It registers Kiln's
// native constraints (passes/rules/KilnConstraints.pdll), applies the
// patterns with a small driver that verifies every op a rule creates, and
// reports candidates whose constraints rejected them:
//
//  - built-in rules speak like the C++ rules (FusionDiagnostics.h): one
//    remark per candidate under --kiln-explain-fusion at the candidate's
//    root op, "matmul-silu: %5 has 2 users" (a pattern `matmul_silu` is the
//    rule `matmul-silu`), and an error instead when the candidate carries
//    kiln.fuse_required;
//  - user rules name the pattern and the constraint, "rule R: constraint C
//    rejected %v", at the value, and the same error for kiln.fuse_required.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_PDLRULES_H
#define KILN_PASSES_PDLRULES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/StringMap.h"

#include <string>

namespace kiln {

struct PdlRuleSet {
  /// The PDL patterns (a module of pdl.pattern ops).
  mlir::OwningOpRef<mlir::ModuleOp> patterns;
  /// Where they come from, for messages: a file path or a built-in name.
  std::string origin;
  /// Built-in rules report as C++ rules do (see above).
  bool builtin = false;
  /// Native rewrites the patterns may call, by name (built-in rules only:
  /// users rewrite with op<...>, replace and erase).
  llvm::StringMap<mlir::PDLRewriteFunction> rewrites;
};

/// Checks that `rules.patterns` holds only patterns that call Kiln's native
/// constraints and the rewrites in `rules.rewrites`, emitting errors at the
/// offending calls, and tags each constraint call with its pattern's name.
mlir::LogicalResult prepareRules(PdlRuleSet &rules);

/// Applies prepared rules to the ops nested in `root`, sweeping in program
/// order until none applies (16 sweeps at most, then a warning). Fails when
/// a rule broke the IR or a candidate marked kiln.fuse_required was rejected
/// (errors emitted).
mlir::LogicalResult applyPdlRules(mlir::Operation *root, PdlRuleSet rules);

} // namespace kiln

#endif // KILN_PASSES_PDLRULES_H
