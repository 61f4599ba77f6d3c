//===- ApplyFusionRules.cpp - User-written fusion rules in PDLL -----------===//
//
// Part of Kiln. See the pass description in Passes.td and docs/fusion.md
// ("User rules").
//
// Debian's LLVM 19 ships no in-process PDLL parser, so a .pdll file is turned
// into PDL by the packaged mlir-pdll (found by CMake: KILN_MLIR_PDLL); a .mlir
// file is PDL already. The PDL module is parsed here, checked for native
// constraints/rewrites Kiln does not provide, and applied through the PDL
// interpreter with Kiln's native constraints
// (passes/rules/KilnConstraints.pdll) registered. The driver is a small one of
// our own rather than MLIR's greedy driver: the greedy driver folds every op a
// rule creates before anything verifies it, so a rule that forgets a required
// attribute would crash Kiln in a folder; here each rewrite's new ops are
// verified first, and an op erased while still used is reported instead of
// leaving dangling uses.
//
//===----------------------------------------------------------------------===//

#include "passes/FusionDiagnostics.h"
#include "passes/Passes.h"

#include "ir/KilnDialect.h"

#include "mlir/Dialect/PDL/IR/PDL.h"
#include "mlir/Dialect/PDL/IR/PDLOps.h"
#include "mlir/Dialect/PDLInterp/IR/PDLInterp.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Rewrite/FrozenRewritePatternSet.h"
#include "mlir/Rewrite/PatternApplicator.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"

#include <functional>
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

/// Marks the string attribute appended to every call of a Kiln constraint:
/// the name of the pattern making the call, for remarks (the second for a
/// negated call, `not HasOneUse(x)`).
constexpr llvm::StringLiteral kRuleArgPrefix = "kiln.rule:";
constexpr llvm::StringLiteral kNegatedRuleArgPrefix = "kiln.rule.not:";

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

/// The names of the native constraints Kiln registers.
constexpr llvm::StringLiteral kConstraintNames[] = {
    "HasOneUse", "HasRank", "HasElementType", "SameType"};

bool isKilnConstraint(StringRef name) {
  return llvm::is_contained(kConstraintNames, name);
}

/// Checks that every native constraint and rewrite the PDL module calls is
/// one Kiln provides (the PDL interpreter does not check), and appends the
/// calling pattern's name to each Kiln constraint call for remarks.
LogicalResult prepareRules(ModuleOp rules, StringRef rulesPath) {
  // Only patterns at the top level: anything else (a kiln module given by
  // mistake) would reach the PDL compiler, which does not expect it.
  for (Operation &op : rules.getBody()->getOperations()) {
    if (!isa<pdl::PatternOp>(op)) {
      mlir::emitError(op.getLoc())
          << "rule file '" << rulesPath << "' holds '" << op.getName()
          << "', not a PDL pattern (pdl.pattern)";
      return failure();
    }
  }
  bool ok = true;
  rules.walk([&](Operation *op) {
    if (auto rewrite = dyn_cast<pdl::ApplyNativeRewriteOp>(op)) {
      mlir::emitError(rewrite.getLoc())
          << "rule file '" << rulesPath << "' calls the native rewrite '"
          << rewrite.getName() << "', which Kiln does not provide";
      ok = false;
    } else if (auto rewrite = dyn_cast<pdl::RewriteOp>(op)) {
      if (rewrite.getName()) {
        mlir::emitError(rewrite.getLoc())
            << "rule file '" << rulesPath << "' calls the native rewrite '"
            << *rewrite.getName() << "', which Kiln does not provide";
        ok = false;
      }
    } else if (auto constraint = dyn_cast<pdl::ApplyNativeConstraintOp>(op)) {
      if (!isKilnConstraint(constraint.getName())) {
        mlir::emitError(constraint.getLoc())
            << "rule file '" << rulesPath << "' calls the native constraint '"
            << constraint.getName()
            << "', which Kiln does not provide (it provides HasOneUse, "
               "HasRank, HasElementType and SameType)";
        ok = false;
        return;
      }
      if (!constraint.getResults().empty())
        return;
      auto pattern = constraint->getParentOfType<pdl::PatternOp>();
      std::string rule = pattern && pattern.getSymName()
                             ? pattern.getSymName()->str()
                             : std::string("user rule");
      OpBuilder builder(constraint);
      MLIRContext *ctx = constraint.getContext();
      Value name = builder.create<pdl::AttributeOp>(
          constraint.getLoc(), pdl::AttributeType::get(ctx), Value(),
          builder.getStringAttr((constraint.getIsNegated()
                                     ? kNegatedRuleArgPrefix
                                     : kRuleArgPrefix) +
                                rule));
      constraint->insertOperands(constraint->getNumOperands(), name);
    }
  });
  return success(ok);
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
  if (failed(prepareRules(*rules, rulesPath)))
    return nullptr;
  return rules;
}

/// The argument `value` as a T, or null when it is something else.
template <typename T> T as(const PDLValue &value) {
  std::optional<T> result = value.dyn_cast<T>();
  return result ? *result : T();
}

/// Splits off the trailing rule-name argument prepareRules added, if present:
/// returns the rule's name and sets `negated` for a `not` call.
StringRef takeRuleName(ArrayRef<PDLValue> &args, size_t arity, bool &negated) {
  negated = false;
  if (args.size() == arity + 1) {
    if (auto str = dyn_cast_or_null<StringAttr>(as<Attribute>(args.back()))) {
      for (StringRef prefix : {kRuleArgPrefix, kNegatedRuleArgPrefix}) {
        if (str.getValue().starts_with(prefix)) {
          args = args.drop_back();
          negated = prefix == kNegatedRuleArgPrefix;
          return str.getValue().drop_front(prefix.size());
        }
      }
    }
  }
  return "user rule";
}

/// Watches what user rules do to the IR, so that a wrong rule is an error
/// rather than a crash: an op erased while its results are still used (the
/// uses are redirected to a placeholder so the IR stays walkable), and a
/// created op that does not verify (a missing attribute, say, which a folder
/// would dereference).
struct RuleSafetyListener : RewriterBase::Listener {
  StringRef rulesPath;
  bool broken = false;
  llvm::DenseSet<Operation *> erased;
  SmallVector<Operation *> inserted;

  void notifyOperationInserted(Operation *op,
                               OpBuilder::InsertPoint previous) override {
    // A new op may reuse the address of one erased earlier in this sweep.
    erased.erase(op);
    inserted.push_back(op);
  }

  void notifyOperationErased(Operation *op) override {
    erased.insert(op);
    if (op->use_empty())
      return;
    mlir::emitError(op->getLoc())
        << "a rule in '" << rulesPath << "' erased '" << op->getName()
        << "' while its results were still used";
    broken = true;
    OpBuilder builder(op);
    auto placeholder = builder.create<UnrealizedConversionCastOp>(
        op->getLoc(), op->getResultTypes(), ValueRange());
    op->replaceAllUsesWith(placeholder.getResults());
  }

  /// Verifies the ops created by the last rewrite.
  void verifyInserted() {
    for (Operation *op : inserted)
      if (!erased.contains(op) &&
          failed(mlir::verify(op, /*verifyRecursively=*/false))) {
        mlir::emitError(op->getLoc())
            << "a rule in '" << rulesPath << "' created an invalid '"
            << op->getName() << "' (see the error above)";
        broken = true;
      }
    inserted.clear();
  }
};

/// A PatternRewriter for the rule driver.
struct RuleRewriter : PatternRewriter {
  RuleRewriter(MLIRContext *ctx, RuleSafetyListener &listener)
      : PatternRewriter(ctx, &listener) {}
};

/// The ops at which some rule's constraint rejected a match, with the first
/// rejection's message, for kiln.fuse_required. The driver sets `root` to
/// the op it is matching at; constraints record against it.
struct RejectionLog {
  Operation *root = nullptr;
  llvm::MapVector<Operation *, std::string> rejected;

  void record(const std::string &message) {
    if (root)
      rejected.insert({root, message});
  }
  void forget(Operation *op) { rejected.erase(op); }
};

/// Applies `patterns` to the ops nested in `root`, sweeping in program order
/// until none applies (at most `maxSweeps` sweeps). Unlike the greedy driver
/// it does not fold, so no op a rule created is inspected by C++ code before
/// it has been verified (the pipeline canonicalizes afterwards). Fails when
/// a rule broke the IR (errors emitted).
LogicalResult applyRules(Operation *root,
                         const FrozenRewritePatternSet &patterns,
                         StringRef rulesPath, RejectionLog &log,
                         bool &converged) {
  constexpr int maxSweeps = 16;
  PatternApplicator applicator(patterns);
  applicator.applyDefaultCostModel();
  RuleSafetyListener listener;
  listener.rulesPath = rulesPath;
  RuleRewriter rewriter(root->getContext(), listener);
  converged = false;
  for (int sweep = 0; sweep < maxSweeps; ++sweep) {
    SmallVector<Operation *> ops;
    root->walk([&](Operation *op) {
      if (op != root)
        ops.push_back(op);
    });
    listener.erased.clear();
    bool changed = false;
    for (Operation *op : ops) {
      if (listener.erased.contains(op))
        continue;
      rewriter.setInsertionPoint(op);
      log.root = op;
      LogicalResult matched = applicator.matchAndRewrite(op, rewriter);
      log.root = nullptr;
      if (failed(matched)) {
        listener.inserted.clear();
        continue;
      }
      // A rule applied here after all (an earlier rejection was premature),
      // or the op is gone and its address may be reused.
      log.forget(op);
      for (Operation *erased : listener.erased)
        log.forget(erased);
      changed = true;
      listener.verifyInserted();
      if (listener.broken)
        return failure();
    }
    if (!changed) {
      converged = true;
      return success();
    }
  }
  return success();
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
    OwningOpRef<ModuleOp> pdlModule = loadRules(op, rules);
    if (!pdlModule)
      return signalPassFailure();
    // The PDL compiler does not handle a module without patterns.
    if (pdlModule->getBody()->empty()) {
      mlir::emitWarning(op->getLoc())
          << "kiln-apply-fusion-rules: the rule file '" << rules
          << "' holds no patterns";
      return;
    }

    // Remarks are emitted once per (rule, constraint, value), however often
    // the driver re-examines a candidate.
    llvm::StringSet<> reported;
    RejectionLog log;
    auto reject = [&reported, &log](StringRef rule,
                                    const std::string &constraint,
                                    Value value) {
      std::string message = ("rule " + rule + ": constraint " + constraint +
                             " rejected " + describeValue(value))
                                .str();
      log.record(message);
      if (!explainFusion())
        return;
      std::string key = message + "@" +
                        std::to_string(reinterpret_cast<uintptr_t>(
                            value.getAsOpaquePointer()));
      if (!reported.insert(key).second)
        return;
      if (Operation *owner = value.getDefiningOp())
        owner->emitRemark() << message;
      else
        mlir::emitRemark(value.getLoc()) << message;
    };

    auto constraint =
        [reject](StringRef name, size_t arity,
                 bool (*holds)(ArrayRef<PDLValue>)) -> PDLConstraintFunction {
      return [=](PatternRewriter &, PDLResultList &,
                 ArrayRef<PDLValue> args) -> LogicalResult {
        bool negated;
        StringRef rule = takeRuleName(args, arity, negated);
        if (args.size() != arity)
          return failure();
        bool result = holds(args);
        // The interpreter inverts the result of a negated call.
        if (result != negated)
          return success(result);
        if (Value subject = as<Value>(args[0]))
          reject(rule, negated ? "not " + name.str() : name.str(), subject);
        return success(result);
      };
    };

    PDLPatternModule patternModule(std::move(pdlModule));
    patternModule.registerConstraintFunction(
        "HasOneUse", constraint("HasOneUse", 1, [](ArrayRef<PDLValue> args) {
          Value value = as<Value>(args[0]);
          return value && value.hasOneUse();
        }));
    patternModule.registerConstraintFunction(
        "HasRank", constraint("HasRank", 2, [](ArrayRef<PDLValue> args) {
          Value value = as<Value>(args[0]);
          Attribute rank = as<Attribute>(args[1]);
          auto shaped = value ? dyn_cast<ShapedType>(value.getType()) : nullptr;
          auto rankAttr = dyn_cast_or_null<IntegerAttr>(rank);
          return shaped && shaped.hasRank() && rankAttr &&
                 shaped.getRank() == rankAttr.getInt();
        }));
    patternModule.registerConstraintFunction(
        "HasElementType",
        constraint("HasElementType", 2, [](ArrayRef<PDLValue> args) {
          Value value = as<Value>(args[0]);
          Type type = as<Type>(args[1]);
          return value && type && getElementTypeOrSelf(value.getType()) == type;
        }));
    patternModule.registerConstraintFunction(
        "SameType", constraint("SameType", 2, [](ArrayRef<PDLValue> args) {
          Value a = as<Value>(args[0]);
          Value b = as<Value>(args[1]);
          return a && b && a.getType() == b.getType();
        }));

    RewritePatternSet patterns(&getContext());
    patterns.add(std::move(patternModule));
    FrozenRewritePatternSet frozen(std::move(patterns));
    bool converged;
    if (failed(applyRules(op, frozen, rules, log, converged)))
      return signalPassFailure();
    // A candidate marked kiln.fuse_required that a rule matched but whose
    // constraints rejected it, and that no rule rewrote since: an error, as
    // for the built-in rules.
    bool missedRequired = false;
    for (auto &[candidate, message] : log.rejected) {
      if (!candidate->hasAttr(KilnDialect::kFuseRequiredAttrName))
        continue;
      candidate->emitError()
          << message << " (the candidate is marked kiln.fuse_required)";
      missedRequired = true;
    }
    if (missedRequired)
      return signalPassFailure();
    if (!converged)
      mlir::emitWarning(op->getLoc())
          << "kiln-apply-fusion-rules: the rules in '" << rules
          << "' still applied after 16 sweeps; stopped";
  }
};

} // namespace
