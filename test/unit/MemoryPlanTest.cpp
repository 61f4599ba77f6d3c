//===- MemoryPlanTest.cpp - Planned buffers never collide -----------------===//
//
// Part of Kiln's unit tests. The promise of `--kiln-plan-memory`: offsets
// planned at max-tokens are valid for every smaller step. On synthetic
// Llama models (stories260K's shape and random ones), unfused and fused, this
// test reads the recorded plan back from the IR, recomputes live ranges on
// its own, and checks that no two buffers live at the same time overlap when
// sized at T in {1, 2, 17, 512}; also that every activation is planned and
// that planning is deterministic.
//
//===----------------------------------------------------------------------===//

#include "SyntheticModel.h"

#include "frontends/LlamaBuilder.h"
#include "ir/KilnOps.h"
#include "ir/MemoryPlanAttrs.h"
#include "ir/interpreter/Interpreter.h"
#include "passes/Passes.h"
#include "passes/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <random>

using namespace mlir;
using namespace kiln;
using kiln::test::SyntheticModel;

namespace {

constexpr int64_t kMaxTokens = 512;

/// A buffer as the IR records it, with a live range computed here.
struct RecordedBuffer {
  int64_t offset = 0, perToken = 0, fixed = 0;
  unsigned first = 0, last = 0;
  std::string name;
};

/// Reads `kiln.buffers` of every op of `step`; a #kiln.buffer_view shares
/// the buffer of the operand it names. A buffer is live from its op to the
/// last op that uses it or one of its views.
std::vector<RecordedBuffer> readPlan(func::FuncOp step) {
  std::vector<RecordedBuffer> buffers;
  DenseMap<Value, size_t> owner;
  unsigned index = 0;
  for (Operation &op : step.getBody().front()) {
    unsigned i = index++;
    for (Value operand : op.getOperands())
      if (auto it = owner.find(operand); it != owner.end())
        buffers[it->second].last = i;
    auto entries = op.getAttrOfType<ArrayAttr>(kBuffersAttrName);
    bool activation = !isa<WeightOp, ConcatOp>(op);
    for (OpResult result : op.getResults()) {
      bool tensor = isa<RankedTensorType>(result.getType());
      Attribute entry = getBufferEntry(result);
      // Every activation has a buffer; weights (and packed weights) none.
      EXPECT_EQ(bool(entry), tensor && activation)
          << op.getName().getStringRef().str() << " at op " << i;
      // A result without storage has a `unit` entry, if the op has any.
      if (!entry) {
        if (entries)
          EXPECT_TRUE(isa<UnitAttr>(entries[result.getResultNumber()]));
        continue;
      }
      if (auto view = dyn_cast<BufferViewAttr>(entry)) {
        // Views are reshapes of their input.
        EXPECT_TRUE(isa<ReshapeOp>(op)) << "a view at op " << i;
        EXPECT_EQ(view.getOperand(), 0) << "at op " << i;
        Value source = op.getOperand(view.getOperand());
        if (!owner.count(source)) {
          ADD_FAILURE() << "a view of a value without a buffer at op " << i;
          continue;
        }
        EXPECT_EQ(getBuffer(result), getBuffer(source)) << "at op " << i;
        owner[result] = owner[source];
        continue;
      }
      auto buffer = cast<BufferAttr>(entry);
      RecordedBuffer b;
      b.offset = buffer.getOffset();
      b.perToken = buffer.getBytesPerToken();
      b.fixed = buffer.getBytesFixed();
      b.first = b.last = i;
      b.name = op.getName().getStringRef().str() + " at op " +
               std::to_string(i) + " #" +
               std::to_string(result.getResultNumber());
      EXPECT_EQ(b.offset % 64, 0) << b.name;
      owner[result] = buffers.size();
      buffers.push_back(b);
    }
  }
  return buffers;
}

/// The invariant: at every T up to max-tokens, buffers live at the same time
/// occupy disjoint byte ranges, all inside the recorded arena.
void expectNoCollisions(func::FuncOp step) {
  MemoryPlanAttr plan = getMemoryPlan(step);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan.getAlignment(), 64);
  EXPECT_EQ(plan.getMaxTokens(), kMaxTokens);
  int64_t arena = plan.getArenaBytes();
  EXPECT_LT(arena, plan.getNaiveBytes());
  std::vector<RecordedBuffer> buffers = readPlan(step);
  ASSERT_FALSE(buffers.empty());
  for (int64_t tokens : {1, 2, 17, 512}) {
    for (const RecordedBuffer &b : buffers)
      EXPECT_LE(b.offset + b.perToken * tokens + b.fixed, arena) << b.name;
    for (size_t i = 0; i < buffers.size(); ++i)
      for (size_t j = i + 1; j < buffers.size(); ++j) {
        const RecordedBuffer &a = buffers[i], &b = buffers[j];
        if (a.last < b.first || b.last < a.first)
          continue;
        int64_t aEnd = a.offset + a.perToken * tokens + a.fixed;
        int64_t bEnd = b.offset + b.perToken * tokens + b.fixed;
        EXPECT_TRUE(aEnd <= b.offset || bEnd <= a.offset)
            << "at T = " << tokens << ": " << a.name << " [" << a.offset << ", "
            << aEnd << ") and " << b.name << " [" << b.offset << ", " << bEnd
            << ") are live together and overlap";
      }
  }
}

std::string print(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os);
  return text;
}

void plan(MLIRContext &context, ModuleOp module, bool fuse) {
  PassManager pm(&context);
  if (fuse)
    addFusionPasses(pm);
  pm.addNestedPass<func::FuncOp>(createPlanMemory());
  ASSERT_TRUE(succeeded(pm.run(module)));
  ASSERT_TRUE(succeeded(verify(module)));
}

void checkModel(MLIRContext &context, const formats::ModelConfig &config,
                uint32_t seed) {
  SyntheticModel m = SyntheticModel::random(config, seed);
  for (bool fuse : {false, true}) {
    SCOPED_TRACE(fuse ? "fused" : "unfused");
    OwningOpRef<ModuleOp> module = buildLlamaModule(
        &context, config, m.tensorInfos(), {WeightsFormat::GGUF, "m.gguf"});
    OwningOpRef<ModuleOp> again = module->clone();
    plan(context, *module, fuse);
    expectNoCollisions(findStepFunction(*module));
    // Deterministic: the same IR gets the same plan.
    plan(context, *again, fuse);
    EXPECT_EQ(print(*module), print(*again));
  }
}

TEST(MemoryPlan, Stories260KShapeHasNoCollisions) {
  MLIRContext context;
  formats::ModelConfig c;
  c.dim = 64;
  c.hiddenDim = 172;
  c.numLayers = 5;
  c.numHeads = 8;
  c.numKvHeads = 4;
  c.headDim = 8;
  c.vocabSize = 512;
  c.contextLength = 512;
  checkModel(context, c, 260);
}

TEST(MemoryPlan, RandomModelsHaveNoCollisions) {
  MLIRContext context;
  std::mt19937 rng(2026);
  auto pick = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  for (int trial = 0; trial < 8; ++trial) {
    formats::ModelConfig c;
    c.numKvHeads = pick(1, 3);
    c.numHeads = c.numKvHeads * pick(1, 3);
    c.headDim = 2 * pick(1, 5);
    c.dim = c.numHeads * c.headDim;
    c.hiddenDim = pick(5, 41);
    c.numLayers = pick(1, 3);
    c.vocabSize = pick(7, 53);
    c.contextLength = pick(8, 300);
    if (pick(0, 1) == 0) {
      c.architecture = "qwen2";
      c.qkvBias = true;
      c.ropePairs = formats::RopePairs::Halves;
    }
    if (pick(0, 2) == 0)
      c.slidingWindow = pick(1, 4);
    c.tiedClassifier = pick(0, 1) == 0;
    SCOPED_TRACE("trial " + std::to_string(trial));
    checkModel(context, c, 300 + trial);
  }
}

} // namespace
