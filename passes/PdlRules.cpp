//===- PdlRules.cpp - Apply fusion rules written in PDL -------------------===//
//
// Part of Kiln. See PdlRules.h and docs/fusion.md.
//
// The driver is a small one of our own rather than MLIR's greedy driver: the
// greedy driver folds every op a rule creates before anything verifies it,
// so a rule that forgets a required attribute would crash Kiln in a folder;
// here each rewrite's new ops are verified first, and an op erased while
// still used is reported instead of leaving dangling uses.
//
//===----------------------------------------------------------------------===//

#include "passes/PdlRules.h"

#include "passes/FusionDiagnostics.h"

#include "ir/KilnDialect.h"

#include "mlir/Dialect/PDL/IR/PDL.h"
#include "mlir/Dialect/PDL/IR/PDLOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Rewrite/FrozenRewritePatternSet.h"
#include "mlir/Rewrite/PatternApplicator.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringSet.h"

#include <algorithm>
#include <optional>
#include <string>

using namespace mlir;

namespace kiln {

namespace {

/// Marks the string attribute appended to every call of a Kiln constraint:
/// the name of the pattern making the call, for messages (the second for a
/// negated call, `not HasOneUse(x)`).
constexpr llvm::StringLiteral kRuleArgPrefix = "kiln.rule:";
constexpr llvm::StringLiteral kNegatedRuleArgPrefix = "kiln.rule.not:";

/// The names of the native constraints Kiln registers.
constexpr llvm::StringLiteral kConstraintNames[] = {
    "HasOneUse", "HasRank", "HasElementType", "SameType"};

bool isKilnConstraint(StringRef name) {
  return llvm::is_contained(kConstraintNames, name);
}

/// The argument `value` as a T, or null when it is something else.
template <typename T> T as(const PDLValue &value) {
  std::optional<T> result = value.dyn_cast<T>();
  return result ? *result : T();
}

/// Splits off the trailing rule-name argument prepareRules added, if present:
/// returns the pattern's name and sets `negated` for a `not` call.
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

std::string typeString(Type type) {
  std::string text;
  llvm::raw_string_ostream(text) << type;
  return text;
}

/// Watches what rules do to the IR, so that a wrong rule is an error rather
/// than a crash: an op erased while its results are still used (the uses
/// are redirected to a placeholder so the IR stays walkable), and a created
/// op that does not verify (a missing attribute, say, which a folder would
/// dereference).
struct RuleSafetyListener : RewriterBase::Listener {
  StringRef origin;
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
        << "a rule in '" << origin << "' erased '" << op->getName()
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
            << "a rule in '" << origin << "' created an invalid '"
            << op->getName() << "' (see the error above)";
        broken = true;
      }
    inserted.clear();
  }
};

struct RuleRewriter : PatternRewriter {
  RuleRewriter(MLIRContext *ctx, RuleSafetyListener &listener)
      : PatternRewriter(ctx, &listener) {}
};

/// A constraint that rejected a match at a candidate root.
struct Rejection {
  std::string rule;   ///< the rule, as messages name it
  std::string reason; ///< why, as messages say it
  Operation *subject; ///< the op defining the rejected value, if any
};

/// The first rejection at each candidate root; the driver sets `root` to the
/// op it is matching at.
struct RejectionLog {
  Operation *root = nullptr;
  llvm::MapVector<Operation *, Rejection> rejected;

  void record(Rejection rejection) {
    if (root)
      rejected.insert({root, std::move(rejection)});
  }
  void forget(Operation *op) { rejected.erase(op); }
};

/// Applies `patterns` to the ops nested in `root`, sweeping in program order
/// until none applies (at most `maxSweeps` sweeps). Unlike the greedy driver
/// it does not fold, so no op a rule created is inspected by C++ code before
/// it has been verified.
LogicalResult drive(Operation *root, const FrozenRewritePatternSet &patterns,
                    StringRef origin, RejectionLog &log, bool &converged) {
  constexpr int maxSweeps = 16;
  PatternApplicator applicator(patterns);
  applicator.applyDefaultCostModel();
  RuleSafetyListener listener;
  listener.origin = origin;
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

/// Why a constraint call rejected its arguments, as a built-in rule says it.
std::string describeRejection(StringRef constraint, bool negated,
                              ArrayRef<PDLValue> args) {
  Value value = as<Value>(args[0]);
  std::string name = describeValue(value);
  if (negated)
    return name + " satisfies " + constraint.str();
  if (constraint == "HasOneUse")
    return describeExtraUses(value);
  if (constraint == "HasRank")
    return name + " does not have rank " +
           std::to_string(cast<IntegerAttr>(as<Attribute>(args[1])).getInt());
  if (constraint == "HasElementType")
    return name + " does not have element type " +
           typeString(as<Type>(args[1]));
  if (constraint == "SameType") {
    Value other = as<Value>(args[1]);
    return name + " and " + describeValue(other) + " have different types (" +
           typeString(value.getType()) + ", " + typeString(other.getType()) +
           ")";
  }
  return name + " fails " + constraint.str();
}

} // namespace

LogicalResult prepareRules(PdlRuleSet &rules) {
  ModuleOp module = *rules.patterns;
  StringRef origin = rules.origin;
  // Only patterns at the top level: anything else (a kiln module given by
  // mistake) would reach the PDL compiler, which does not expect it.
  for (Operation &op : module.getBody()->getOperations()) {
    if (!isa<pdl::PatternOp>(op)) {
      mlir::emitError(op.getLoc())
          << "rule file '" << origin << "' holds '" << op.getName()
          << "', not a PDL pattern (pdl.pattern)";
      return failure();
    }
  }
  bool ok = true;
  auto checkRewrite = [&](Operation *op, StringRef name) {
    if (rules.rewrites.count(name))
      return;
    mlir::emitError(op->getLoc())
        << "rule file '" << origin << "' calls the native rewrite '" << name
        << "', which Kiln does not provide";
    ok = false;
  };
  module.walk([&](Operation *op) {
    if (auto rewrite = dyn_cast<pdl::ApplyNativeRewriteOp>(op)) {
      checkRewrite(op, rewrite.getName());
    } else if (auto rewrite = dyn_cast<pdl::RewriteOp>(op)) {
      if (rewrite.getName())
        checkRewrite(op, *rewrite.getName());
    } else if (auto constraint = dyn_cast<pdl::ApplyNativeConstraintOp>(op)) {
      if (!isKilnConstraint(constraint.getName())) {
        mlir::emitError(constraint.getLoc())
            << "rule file '" << origin << "' calls the native constraint '"
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

LogicalResult applyPdlRules(Operation *root, PdlRuleSet rules) {
  // The PDL compiler does not handle a module without patterns.
  if (rules.patterns->getBody()->empty()) {
    mlir::emitWarning(root->getLoc())
        << "the rules in '" << rules.origin << "' hold no patterns";
    return success();
  }
  bool builtin = rules.builtin;
  RejectionLog log;
  // User remarks are emitted once per (rule, constraint, value), however
  // often the driver re-examines a candidate.
  llvm::StringSet<> reported;
  auto reject = [&](StringRef pattern, StringRef constraint, bool negated,
                    ArrayRef<PDLValue> args) {
    Value subject = as<Value>(args[0]);
    if (!subject)
      return;
    if (builtin) {
      // PDLL names are identifiers: the pattern matmul_silu is the rule
      // matmul-silu.
      std::string rule = pattern.str();
      std::replace(rule.begin(), rule.end(), '_', '-');
      log.record({rule, describeRejection(constraint, negated, args),
                  subject.getDefiningOp()});
      return;
    }
    std::string message =
        ("rule " + pattern + ": constraint " + (negated ? "not " : "") +
         constraint + " rejected " + describeValue(subject))
            .str();
    log.record({pattern.str(), message, subject.getDefiningOp()});
    if (!explainFusion())
      return;
    std::string key = message + "@" +
                      std::to_string(reinterpret_cast<uintptr_t>(
                          subject.getAsOpaquePointer()));
    if (!reported.insert(key).second)
      return;
    if (Operation *owner = subject.getDefiningOp())
      owner->emitRemark() << message;
    else
      mlir::emitRemark(subject.getLoc()) << message;
  };

  auto constraint =
      [&reject](StringRef name, size_t arity,
                bool (*holds)(ArrayRef<PDLValue>)) -> PDLConstraintFunction {
    return [=](PatternRewriter &, PDLResultList &,
               ArrayRef<PDLValue> args) -> LogicalResult {
      bool negated;
      StringRef pattern = takeRuleName(args, arity, negated);
      if (args.size() != arity)
        return failure();
      bool result = holds(args);
      // The interpreter inverts the result of a negated call.
      if (result == negated)
        reject(pattern, name, negated, args);
      return success(result);
    };
  };

  PDLPatternModule patternModule(std::move(rules.patterns));
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
  for (auto &rewrite : rules.rewrites)
    patternModule.registerRewriteFunction(rewrite.getKey(),
                                          std::move(rewrite.getValue()));

  RewritePatternSet patterns(root->getContext());
  patterns.add(std::move(patternModule));
  FrozenRewritePatternSet frozen(std::move(patterns));
  bool converged;
  if (failed(drive(root, frozen, rules.origin, log, converged)))
    return failure();
  if (!converged)
    mlir::emitWarning(root->getLoc())
        << "the rules in '" << rules.origin
        << "' still applied after 16 sweeps; stopped";

  // Candidates that some rule matched, whose constraints rejected them, and
  // that no rule rewrote since.
  bool missedRequired = false;
  for (auto &[candidate, rejection] : log.rejected) {
    if (builtin) {
      missedRequired |= failed(reportNotFused(
          candidate, rejection.rule, rejection.reason, {rejection.subject}));
      continue;
    }
    if (!candidate->hasAttr(KilnDialect::kFuseRequiredAttrName))
      continue;
    candidate->emitError() << rejection.reason
                           << " (the candidate is marked kiln.fuse_required)";
    missedRequired = true;
  }
  return failure(missedRequired);
}

} // namespace kiln
