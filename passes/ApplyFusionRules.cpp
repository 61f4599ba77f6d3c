//===- ApplyFusionRules.cpp - User-written fusion rules in PDLL -----------===//
//
// Part of Kiln. See the pass description in Passes.td and docs/fusion.md
// ("User rules").
//
// Debian's LLVM 19 ships no in-process PDLL parser, so a .pdll file is turned
// into PDL by the packaged mlir-pdll (found by CMake: KILN_MLIR_PDLL); a .mlir
// file is PDL already. The PDL module is then checked and applied by the
// engine all PDL rules share (passes/PdlRules.h).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/PdlRules.h"

#include "mlir/Dialect/PDL/IR/PDL.h"
#include "mlir/Dialect/PDLInterp/IR/PDLInterp.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"

#include <optional>
#include <string>

namespace kiln {
#define GEN_PASS_DEF_APPLYFUSIONRULES
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

#ifndef KILN_MLIR_PDLL
#define KILN_MLIR_PDLL "mlir-pdll"
#endif
#ifndef KILN_ODS_INCLUDE_DIR
#define KILN_ODS_INCLUDE_DIR "."
#endif

namespace {

/// A temporary file removed when this goes out of scope.
struct TempFile {
  llvm::SmallString<128> path;
  ~TempFile() {
    if (!path.empty())
      llvm::sys::fs::remove(path);
  }
};

/// Runs mlir-pdll on `rulesPath`; on success returns the PDL text, on failure
/// emits an error at `op`'s location carrying mlir-pdll's own diagnostics.
std::optional<std::string> runMlirPdll(Operation *op, StringRef rulesPath) {
  TempFile out, err;
  if (llvm::sys::fs::createTemporaryFile("kiln-rules", "mlir", out.path) ||
      llvm::sys::fs::createTemporaryFile("kiln-rules", "err", err.path)) {
    mlir::emitError(op->getLoc())
        << "kiln-apply-fusion-rules: cannot create temporary "
           "files to compile '"
        << rulesPath << "'";
    return std::nullopt;
  }
  StringRef program = KILN_MLIR_PDLL;
  std::string ruleDir = llvm::sys::path::parent_path(rulesPath).str();
  if (ruleDir.empty())
    ruleDir = ".";
  SmallVector<StringRef> args = {program,
                                 rulesPath,
                                 "-x=mlir",
                                 "-I",
                                 ruleDir,
                                 "-I",
                                 KILN_ODS_INCLUDE_DIR,
                                 "-I",
                                 "/usr/lib/llvm-19/include"};
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(out.path),
                                          StringRef(err.path)};
  std::string execError;
  int rc = llvm::sys::ExecuteAndWait(program, args, /*Env=*/std::nullopt,
                                     redirects, /*SecondsToWait=*/0,
                                     /*MemoryLimit=*/0, &execError);
  if (rc != 0) {
    std::string errText;
    if (auto buffer = llvm::MemoryBuffer::getFile(err.path))
      errText = (*buffer)->getBuffer().rtrim().str();
    InFlightDiagnostic diag = mlir::emitError(op->getLoc());
    diag << "kiln-apply-fusion-rules: cannot compile the rule file '"
         << rulesPath << "'";
    if (rc < 0)
      diag << " (running " << program << ": " << execError << ")";
    if (!errText.empty())
      diag << ":\n" << errText;
    return std::nullopt;
  }
  auto buffer = llvm::MemoryBuffer::getFile(out.path);
  if (!buffer) {
    mlir::emitError(op->getLoc())
        << "kiln-apply-fusion-rules: cannot read mlir-pdll's "
           "output for '"
        << rulesPath << "'";
    return std::nullopt;
  }
  return (*buffer)->getBuffer().str();
}

/// Loads the rule file at `rulesPath` as a PDL module; emits errors on `op`.
OwningOpRef<ModuleOp> loadRules(Operation *op, StringRef rulesPath) {
  MLIRContext *ctx = op->getContext();
  if (!llvm::sys::fs::exists(rulesPath)) {
    mlir::emitError(op->getLoc()) << "kiln-apply-fusion-rules: rule file '"
                                  << rulesPath << "' does not exist";
    return nullptr;
  }
  OwningOpRef<ModuleOp> rules;
  if (rulesPath.ends_with(".pdll")) {
    std::optional<std::string> pdl = runMlirPdll(op, rulesPath);
    if (!pdl)
      return nullptr;
    rules = parseSourceString<ModuleOp>(*pdl, ParserConfig(ctx),
                                        (rulesPath + " (as PDL)").str());
  } else {
    llvm::SourceMgr sourceMgr;
    auto buffer = llvm::MemoryBuffer::getFile(rulesPath);
    if (!buffer) {
      mlir::emitError(op->getLoc())
          << "kiln-apply-fusion-rules: cannot read rule file '" << rulesPath
          << "': " << buffer.getError().message();
      return nullptr;
    }
    sourceMgr.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
    rules = parseSourceFile<ModuleOp>(sourceMgr, ParserConfig(ctx));
  }
  if (!rules) {
    mlir::emitError(op->getLoc())
        << "kiln-apply-fusion-rules: cannot parse the rule file '" << rulesPath
        << "' as PDL (see the errors above)";
    return nullptr;
  }
  return rules;
}

struct ApplyFusionRulesPass
    : kiln::impl::ApplyFusionRulesBase<ApplyFusionRulesPass> {
  using ApplyFusionRulesBase::ApplyFusionRulesBase;

  void runOnOperation() override {
    Operation *op = getOperation();
    if (rules.empty()) {
      mlir::emitError(op->getLoc())
          << "kiln-apply-fusion-rules: no rule file given "
             "(rules=FILE: a .pdll or PDL .mlir file)";
      return signalPassFailure();
    }
    PdlRuleSet ruleSet;
    ruleSet.origin = rules;
    ruleSet.patterns = loadRules(op, rules);
    if (!ruleSet.patterns || failed(prepareRules(ruleSet)) ||
        failed(applyPdlRules(op, std::move(ruleSet))))
      return signalPassFailure();
  }
};

} // namespace
