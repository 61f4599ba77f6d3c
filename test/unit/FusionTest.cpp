//===- FusionTest.cpp - Fused IR computes what unfused IR computes --------===//
//
// Part of Kiln's unit tests. The property the fusion passes promise: on
// random Llama-family models (odd sizes, several GQA ratios, with and without
// QKV bias, windowed attention, untied classifiers), the reference
// interpreter gives the same logits for the imported (unfused) module and
// for the module after `--kiln-fusion`, and the fused module has the fused
// ops the rules promise.
//
//===----------------------------------------------------------------------===//

#include "SyntheticModel.h"

#include "frontends/LlamaBuilder.h"
#include "ir/KilnOps.h"
#include "ir/interpreter/Interpreter.h"
#include "passes/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace mlir;
using namespace kiln;
using kiln::test::InMemoryWeights;
using kiln::test::SyntheticModel;

namespace {

/// A random small configuration: odd widths, heads from {1..6} with a
/// random divisor as key/value heads, sometimes Qwen2-style biases and
/// halves rope, a sliding window or an untied classifier.
formats::ModelConfig randomConfig(std::mt19937 &rng) {
  auto pick = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  formats::ModelConfig c;
  c.numHeads = pick(1, 6);
  std::vector<int64_t> divisors;
  for (int64_t d = 1; d <= c.numHeads; ++d)
    if (c.numHeads % d == 0)
      divisors.push_back(d);
  c.numKvHeads = divisors[pick(0, static_cast<int>(divisors.size()) - 1)];
  c.headDim = 2 * pick(1, 5);
  c.dim = c.numHeads * c.headDim;
  c.hiddenDim = pick(5, 41);
  c.numLayers = pick(1, 3);
  c.vocabSize = pick(7, 53);
  c.contextLength = 64;
  if (pick(0, 2) == 0) {
    c.architecture = "qwen2";
    c.qkvBias = true;
    c.ropePairs = formats::RopePairs::Halves;
  }
  if (pick(0, 3) == 0)
    c.slidingWindow = pick(1, 4);
  c.tiedClassifier = pick(0, 1) == 0;
  return c;
}

/// Logits of a prefill of 7 tokens then two decode steps, in double.
std::vector<double> logitsOf(ModuleOp module, const SyntheticModel &m) {
  InMemoryWeights weights(m);
  Interpreter<double> interp(weights);
  func::FuncOp step = findStepFunction(module);
  ReferenceKVCache<double> cache(
      cast<KVCacheType>(step.getArgumentTypes().back()));
  std::vector<double> all;
  runtime::StepBatch prefill;
  for (int32_t i = 0; i < 7; ++i)
    prefill.addToken(0, (5 * i + 1) % m.config.vocabSize, i, true);
  for (const runtime::StepBatch &batch :
       {prefill,
        [&] {
          runtime::StepBatch b;
          b.addToken(0, 2 % m.config.vocabSize, 7, true);
          return b;
        }(),
        [&] {
          runtime::StepBatch b;
          b.addToken(0, 3 % m.config.vocabSize, 8, true);
          return b;
        }()}) {
    Tensor<double> logits = interp.step(step, batch, cache);
    all.insert(all.end(), logits.data.begin(), logits.data.end());
  }
  return all;
}

template <typename OpT> int count(ModuleOp module) {
  int n = 0;
  module.walk([&](OpT) { ++n; });
  return n;
}

TEST(FusionProperty, FusedModulesComputeTheUnfusedLogits) {
  MLIRContext context;
  std::mt19937 rng(2026);
  for (int trial = 0; trial < 12; ++trial) {
    formats::ModelConfig config = randomConfig(rng);
    SyntheticModel m = SyntheticModel::random(config, 100 + trial);
    OwningOpRef<ModuleOp> unfused = buildLlamaModule(
        &context, config, m.tensorInfos(), {WeightsFormat::GGUF, "m.gguf"});
    OwningOpRef<ModuleOp> fused = unfused->clone();
    PassManager pm(&context);
    addFusionPasses(pm);
    ASSERT_TRUE(succeeded(pm.run(*fused)));
    ASSERT_TRUE(succeeded(verify(*fused)));

    SCOPED_TRACE("trial " + std::to_string(trial) + ": dim " +
                 std::to_string(config.dim) + ", heads " +
                 std::to_string(config.numHeads) + "/" +
                 std::to_string(config.numKvHeads) + ", layers " +
                 std::to_string(config.numLayers) +
                 (config.qkvBias ? ", qkv bias" : "") +
                 (config.slidingWindow ? ", window" : ""));
    const int layers = static_cast<int>(config.numLayers);
    EXPECT_EQ(count<AttentionOp>(*fused), layers);
    EXPECT_EQ(count<SwigluOp>(*fused), layers);
    EXPECT_EQ(count<SoftmaxOp>(*fused), 0);
    EXPECT_EQ(count<KVReadOp>(*fused), 0);
    // Attention output and FFN down projections take their residual adds;
    // the Q/K/V projection and the classifier take their rms_norm prologue,
    // as does the swiglu: no norm and no plain matmul is left.
    EXPECT_EQ(count<FusedMatmulOp>(*fused), 3 * layers + 1);
    EXPECT_EQ(count<RmsNormOp>(*fused), 0);
    EXPECT_EQ(count<MatmulOp>(*fused), 0);
    EXPECT_EQ(count<AddOp>(*fused), 0);
    // One fused Q/K/V projection per layer, its weights packed by a concat.
    EXPECT_EQ(count<ConcatOp>(*fused), layers * (config.qkvBias ? 2 : 1));

    std::vector<double> want = logitsOf(*unfused, m);
    std::vector<double> got = logitsOf(*fused, m);
    ASSERT_EQ(want.size(), got.size());
    double num = 0, den = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      num += (got[i] - want[i]) * (got[i] - want[i]);
      den += want[i] * want[i];
    }
    EXPECT_LE(std::sqrt(num / den), 1e-5);
  }
}

} // namespace
