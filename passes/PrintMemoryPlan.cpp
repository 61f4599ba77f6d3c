//===- PrintMemoryPlan.cpp - Print a step's memory plan -------------------===//
//
// Part of Kiln. See the pass description in Passes.td. The live ranges are
// recomputed from the IR (MemoryPlan.cpp); offsets and sizes are read from
// the recorded plan and checked against it, so a plan that no longer matches
// its IR is an error rather than a wrong table.
//
//===----------------------------------------------------------------------===//

#include "passes/MemoryPlan.h"
#include "passes/Passes.h"

#include "ir/KilnDialect.h"

#include "mlir/IR/AsmState.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

namespace kiln {
#define GEN_PASS_DEF_PRINTMEMORYPLAN
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// A short form of `loc` for one table cell: the name of a NameLoc (the
/// importer names ops after their weights), file:line:col, and for a fused
/// op's location its first part and how many others it has.
static std::string describeLoc(Location loc) {
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    ArrayRef<Location> parts = fused.getLocations();
    if (parts.empty())
      return "-";
    std::string first = describeLoc(parts.front());
    return parts.size() == 1 ? first
                             : first + "+" + std::to_string(parts.size() - 1);
  }
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return (llvm::sys::path::filename(file.getFilename().getValue()) + ":" +
            Twine(file.getLine()) + ":" + Twine(file.getColumn()))
        .str();
  return "-";
}

/// "N bytes (x.xx MiB)".
static std::string describeBytes(int64_t bytes) {
  return llvm::formatv("{0} bytes ({1:f2} MiB)", bytes,
                       static_cast<double>(bytes) / (1024.0 * 1024.0))
      .str();
}

struct PrintMemoryPlanPass
    : kiln::impl::PrintMemoryPlanBase<PrintMemoryPlanPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp step = getOperation();
    MemoryPlanAttr summary = getMemoryPlan(step);
    if (!summary) {
      step.emitError() << "@" << step.getName()
                       << " has no memory plan (kiln.memory_plan): run "
                          "--kiln-plan-memory first";
      return signalPassFailure();
    }
    int64_t maxTokens = summary.getMaxTokens();
    int64_t at = tokens > 0 ? static_cast<int64_t>(tokens) : maxTokens;
    if (at > maxTokens) {
      step.emitError() << "tokens=" << at << " exceeds the " << maxTokens
                       << " tokens @" << step.getName()
                       << " was planned for; its offsets are valid only up "
                          "to there";
      return signalPassFailure();
    }
    FailureOr<StepBuffers> plan =
        analyzeStepBuffers(step, summary.getContextLength());
    if (failed(plan) || failed(readOffsets(step, *plan)))
      return signalPassFailure();
    print(step, *plan, at, maxTokens, summary.getContextLength());
  }

  /// Takes each buffer's offset from `kiln.buffers`, checking that the size
  /// recorded there is the size the IR implies, and that each view is
  /// recorded as a view of the operand the IR implies.
  LogicalResult readOffsets(func::FuncOp step, StepBuffers &plan) {
    auto stale = [](Value value, const Twine &why) {
      return value.getDefiningOp()->emitError()
             << "the memory plan does not match the IR here (result #"
             << cast<OpResult>(value).getResultNumber() << " " << why
             << "): run --kiln-plan-memory again";
    };
    for (StepBuffer &buffer : plan.buffers) {
      auto entry = dyn_cast_or_null<BufferAttr>(getBufferEntry(buffer.value));
      if (!entry || entry.getBytesPerToken() != buffer.size.bytesPerToken ||
          entry.getBytesFixed() != buffer.size.bytesFixed)
        return stale(buffer.value,
                     "is not planned, or was planned at another size");
      buffer.offset = entry.getOffset();
    }
    // In program order, so that the first stale view is the one reported.
    for (Operation &op : step.getBody().front())
      for (Value result : op.getResults()) {
        auto view = plan.views.find(result);
        if (view == plan.views.end())
          continue;
        auto entry = dyn_cast_or_null<BufferViewAttr>(getBufferEntry(result));
        if (!entry || entry.getOperand() != view->second)
          return stale(result, "is a view of operand #" + Twine(view->second) +
                                   ", and the plan does not record it as one");
      }
    return success();
  }

  void print(func::FuncOp step, const StepBuffers &plan, int64_t at,
             int64_t maxTokens, std::optional<int64_t> contextLength) {
    AsmState state(step);
    SmallVector<std::array<std::string, 7>> rows;
    rows.push_back({"#", "value", "op", "location", "live", "offset", "bytes"});
    for (auto [i, buffer] : llvm::enumerate(plan.buffers)) {
      std::string name;
      llvm::raw_string_ostream os(name);
      buffer.value.printAsOperand(os, state);
      Operation *op = buffer.value.getDefiningOp();
      rows.push_back(
          {std::to_string(i), name, op->getName().getStringRef().str(),
           describeLoc(op->getLoc()),
           llvm::formatv("[{0}, {1}]", buffer.firstOp, buffer.lastOp),
           std::to_string(buffer.offset), std::to_string(buffer.size.at(at))});
    }
    std::array<size_t, 7> width{};
    for (const auto &row : rows)
      for (size_t c = 0; c < row.size(); ++c)
        width[c] = std::max(width[c], row[c].size());

    // Build the whole table first and write it with one call, so that it
    // does not interleave with other output line by line.
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "memory plan of @" << step.getName() << " at " << at
       << " tokens (offsets planned for up to " << maxTokens << " tokens";
    if (contextLength)
      os << ", " << *contextLength << " cached positions";
    auto count = [](size_t n, StringRef what) {
      return std::to_string(n) + " " + what.str() + (n == 1 ? "" : "s");
    };
    os << "): " << count(plan.buffers.size(), "buffer") << ", "
       << count(plan.views.size(), "view") << ", " << count(plan.numOps, "op")
       << "\n";
    for (const auto &row : rows) {
      for (size_t c = 0; c < row.size(); ++c) {
        // Numbers right-aligned, names left-aligned.
        bool right = c == 0 || c >= 5;
        os << (c ? "  " : "")
           << (right ? llvm::right_justify(row[c], width[c])
                     : llvm::left_justify(row[c], width[c]));
      }
      os << "\n";
    }
    int64_t arena = arenaBytes(plan.buffers, at);
    int64_t naive = naiveBytes(plan.buffers, at);
    os << "peak arena: " << describeBytes(arena) << "\n";
    os << "naive sum:  " << describeBytes(naive)
       << ", every buffer allocated on its own\n";
    os << "peak / naive: "
       << llvm::formatv("{0:f3}",
                        naive ? static_cast<double>(arena) / naive : 0.0)
       << "\n";
    os << "live bound: " << describeBytes(liveBytesBound(plan.buffers, at))
       << ", the most bytes live at once\n";
    // The price of offsets fixed for the largest step: what a plan made for
    // exactly this many tokens would need.
    if (at < maxTokens) {
      SmallVector<StepBuffer> replanned(plan.buffers.begin(),
                                        plan.buffers.end());
      os << "planned for " << at
         << " tokens: " << describeBytes(placeBuffers(replanned, at)) << "\n";
    }
    llvm::outs() << text;
    llvm::outs().flush();
  }
};

} // namespace
