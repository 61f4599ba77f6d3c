//===- InterpreterTest.cpp - The reference interpreter --------------------===//
//
// Part of Kiln's unit tests. Hand-computed values for single ops; fused
// attention against its own definition; and, on random Llama models, the
// properties the step contract promises: float agrees with double, a prompt
// prefilled in one step gives the logits of one-token steps, and sequences
// batched together give the logits they give alone.
//
//===----------------------------------------------------------------------===//

#include "SyntheticModel.h"

#include "frontends/LlamaBuilder.h"
#include "ir/KilnOps.h"
#include "ir/interpreter/Interpreter.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace mlir;
using namespace kiln;
using kiln::test::InMemoryWeights;
using kiln::test::SyntheticModel;

namespace {

class NoWeights : public WeightProvider {
public:
  const float *getWeight(llvm::StringRef name, RankedTensorType) override {
    throw std::runtime_error("no weight " + name.str());
  }
};

class InterpreterTest : public ::testing::Test {
protected:
  InterpreterTest() {
    context.loadDialect<KilnDialect, func::FuncDialect, arith::ArithDialect,
                        tensor::TensorDialect>();
  }

  OwningOpRef<ModuleOp> parse(const char *source) {
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(source, &context);
    EXPECT_TRUE(module && succeeded(verify(*module)));
    return module;
  }

  /// Runs @f (no arguments) and returns its first result.
  Tensor<float> runNoArgs(ModuleOp module) {
    auto func = module.lookupSymbol<func::FuncOp>("f");
    Interpreter<float> interp(noWeights);
    auto results = interp.call(func, {});
    return std::get<Tensor<float>>(results.at(0));
  }

  MLIRContext context;
  NoWeights noWeights;
};

void expectNear(const std::vector<float> &got, const std::vector<float> &want,
                float tolerance = 1e-5f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tolerance) << "at element " << i;
}

TEST_F(InterpreterTest, MatmulWithBiasComputesXTimesWTransposed) {
  auto module = parse(R"mlir(
    func.func @f() -> tensor<?x3xf32> {
      %x = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
      %w = arith.constant dense<[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]> : tensor<3x2xf32>
      %b = arith.constant dense<[0.5, -0.5, 1.0]> : tensor<3xf32>
      %xd = tensor.cast %x : tensor<2x2xf32> to tensor<?x2xf32>
      %y = kiln.matmul %xd, %w bias %b : (tensor<?x2xf32>, tensor<3x2xf32>, tensor<3xf32>) -> tensor<?x3xf32>
      return %y : tensor<?x3xf32>
    })mlir");
  Tensor<float> y = runNoArgs(*module);
  EXPECT_EQ(y.shape, (std::vector<int64_t>{2, 3}));
  expectNear(y.data, {1.5f, 1.5f, 4.0f, 3.5f, 3.5f, 8.0f});
}

TEST_F(InterpreterTest, RmsNormScalesByTheRootMeanSquare) {
  auto module = parse(R"mlir(
    func.func @f() -> tensor<1x2xf32> {
      %x = arith.constant dense<[[3.0, 4.0]]> : tensor<1x2xf32>
      %w = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
      %y = kiln.rms_norm %x, %w epsilon = 0.0 : tensor<1x2xf32>, tensor<2xf32>
      return %y : tensor<1x2xf32>
    })mlir");
  // rms = sqrt((9 + 16) / 2)
  float rms = std::sqrt(12.5f);
  expectNear(runNoArgs(*module).data, {3.0f / rms, 8.0f / rms});
}

TEST_F(InterpreterTest, RopeRotatesTheLayoutsPairs) {
  // One token at position 1, one head of size 4, theta 100: pair 0 rotates
  // by 1 rad, pair 1 by 100^(-2/4) = 0.1 rad.
  auto module = parse(R"mlir(
    func.func @f() -> (tensor<1x1x4xf32>, tensor<1x1x4xf32>) {
      %x = arith.constant dense<[[[1.0, 2.0, 3.0, 4.0]]]> : tensor<1x1x4xf32>
      %p = arith.constant dense<[1]> : tensor<1xi32>
      %a = kiln.rope %x, %p layout<adjacent> theta = 100.0 : tensor<1x1x4xf32>, tensor<1xi32>
      %h = kiln.rope %x, %p layout<halves> theta = 100.0 : tensor<1x1x4xf32>, tensor<1xi32>
      return %a, %h : tensor<1x1x4xf32>, tensor<1x1x4xf32>
    })mlir");
  auto func = module->lookupSymbol<func::FuncOp>("f");
  Interpreter<double> interp(noWeights);
  auto results = interp.call(func, {});
  auto rotate = [](double a, double b, double t) {
    return std::pair{a * std::cos(t) - b * std::sin(t),
                     a * std::sin(t) + b * std::cos(t)};
  };
  auto [a0, a1] = rotate(1, 2, 1.0);
  auto [a2, a3] = rotate(3, 4, 0.1);
  std::vector<double> adjacent = std::get<Tensor<double>>(results[0]).data;
  EXPECT_NEAR(adjacent[0], a0, 1e-12);
  EXPECT_NEAR(adjacent[1], a1, 1e-12);
  EXPECT_NEAR(adjacent[2], a2, 1e-12);
  EXPECT_NEAR(adjacent[3], a3, 1e-12);
  auto [h0, h2] = rotate(1, 3, 1.0);
  auto [h1, h3] = rotate(2, 4, 0.1);
  std::vector<double> halves = std::get<Tensor<double>>(results[1]).data;
  EXPECT_NEAR(halves[0], h0, 1e-12);
  EXPECT_NEAR(halves[1], h1, 1e-12);
  EXPECT_NEAR(halves[2], h2, 1e-12);
  EXPECT_NEAR(halves[3], h3, 1e-12);
}

TEST_F(InterpreterTest, SoftmaxIgnoresMaskedPositions) {
  auto module = parse(R"mlir(
    func.func @f() -> tensor<2x1x3xf32> {
      %s = arith.constant dense<[[[1.0, 2.0, 3.0]], [[1.0, 2.0, 3.0]]]> : tensor<2x1x3xf32>
      %p = arith.constant dense<[0, 1]> : tensor<2xi32>
      %m = kiln.attention_mask %s, %p : tensor<2x1x3xf32>, tensor<2xi32>
      %y = kiln.softmax %m : tensor<2x1x3xf32>
      return %y : tensor<2x1x3xf32>
    })mlir");
  float e = std::exp(1.0f);
  expectNear(runNoArgs(*module).data,
             {1.0f, 0.0f, 0.0f, 1.0f / (1.0f + e), e / (1.0f + e), 0.0f});
}

TEST_F(InterpreterTest, TokenIdsOutsideTheVocabularyAreReported) {
  auto module = parse(R"mlir(
    func.func @f() -> tensor<?x2xf32> {
      %t = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
      %ids = arith.constant dense<[0, 7]> : tensor<2xi32>
      %idd = tensor.cast %ids : tensor<2xi32> to tensor<?xi32>
      %x = kiln.embedding %t[%idd] : tensor<2x2xf32>, tensor<?xi32> -> tensor<?x2xf32>
      return %x : tensor<?x2xf32>
    })mlir");
  try {
    runNoArgs(*module);
    FAIL() << "expected an InterpreterError";
  } catch (const InterpreterError &e) {
    EXPECT_NE(std::string(e.what()).find(
                  "token id 7 is outside the vocabulary [0, 2)"),
              std::string::npos)
        << e.what();
  }
}

/// kiln.attention equals the unfused chain it is defined as, on a cache
/// holding two sequences of different lengths, with GQA, with and without a
/// sliding window.
TEST_F(InterpreterTest, FusedAttentionMatchesItsDecomposition) {
  const char *source = R"mlir(
    func.func @f(%q: tensor<?x4x8xf32>,
                 %c: !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 8, f32>,
                 %s: tensor<?xi32>, %p: tensor<?xi32>)
        -> (tensor<?x4x8xf32>, tensor<?x4x8xf32>) {
      %a = kiln.attention %q, %c[0] seqs %s positions %p scale = 0.35
          : tensor<?x4x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 8, f32>, tensor<?xi32>
      %w = kiln.attention %q, %c[0] seqs %s positions %p scale = 0.35 window = 3
          : tensor<?x4x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 8, f32>, tensor<?xi32>
      return %a, %w : tensor<?x4x8xf32>, tensor<?x4x8xf32>
    })mlir";
  OwningOpRef<ModuleOp> fused = parse(source);
  OwningOpRef<ModuleOp> unfused = parse(source);
  PassManager pm(&context);
  pm.addPass(createDecomposeAttention());
  ASSERT_TRUE(succeeded(pm.run(*unfused)));

  auto cacheType =
      KVCacheType::get(&context, 1, 2, 8, Float32Type::get(&context));
  ReferenceKVCache<double> cache(cacheType);
  std::mt19937 rng(7);
  std::normal_distribution<double> normal;
  std::vector<double> k(16), v(16);
  // Sequence 3 holds 6 positions, sequence 5 holds 2.
  for (auto [seq, length] : {std::pair{3, 6}, std::pair{5, 2}})
    for (int p = 0; p < length; ++p) {
      for (int i = 0; i < 16; ++i) {
        k[i] = normal(rng);
        v[i] = normal(rng);
      }
      cache.append(0, seq, p, k.data(), v.data());
    }
  // Three tokens: sequence 3 at positions 4 and 5, sequence 5 at 1.
  Tensor<double> q;
  q.shape = {3, 4, 8};
  for (int i = 0; i < 3 * 4 * 8; ++i)
    q.data.push_back(normal(rng));
  std::vector<int32_t> seqs = {3, 3, 5}, positions = {4, 5, 1};

  auto run = [&](ModuleOp module) {
    Interpreter<double> interp(noWeights);
    return interp.call(module.lookupSymbol<func::FuncOp>("f"),
                       {q, CacheValue<double>{&cache, 0}, seqs, positions});
  };
  auto want = run(*unfused), got = run(*fused);
  for (int r = 0; r < 2; ++r) {
    const auto &a = std::get<Tensor<double>>(got[r]).data;
    const auto &b = std::get<Tensor<double>>(want[r]).data;
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i)
      EXPECT_NEAR(a[i], b[i], 1e-12) << "result " << r << " element " << i;
  }
}

//===----------------------------------------------------------------------===//
// Whole models
//===----------------------------------------------------------------------===//

formats::ModelConfig smallConfig(int64_t dim, int64_t heads, int64_t kvHeads,
                                 int64_t hidden) {
  formats::ModelConfig c;
  c.dim = dim;
  c.numHeads = heads;
  c.numKvHeads = kvHeads;
  c.headDim = dim / heads;
  c.hiddenDim = hidden;
  c.numLayers = 2;
  c.vocabSize = 37;
  c.contextLength = 32;
  return c;
}

/// Configurations with odd sizes, several GQA ratios, QKV bias, the halves
/// rotary layout, a sliding window and an untied classifier.
std::vector<formats::ModelConfig> randomConfigs() {
  std::vector<formats::ModelConfig> configs;
  configs.push_back(smallConfig(24, 3, 3, 41));
  configs.push_back(smallConfig(32, 4, 2, 50));
  formats::ModelConfig qwen = smallConfig(48, 6, 1, 29);
  qwen.architecture = "qwen2";
  qwen.qkvBias = true;
  qwen.ropePairs = formats::RopePairs::Halves;
  qwen.ropeTheta = 1e6;
  configs.push_back(qwen);
  formats::ModelConfig mistral = smallConfig(16, 2, 1, 33);
  mistral.slidingWindow = 3;
  mistral.tiedClassifier = false;
  configs.push_back(mistral);
  return configs;
}

double relativeDifference(const std::vector<double> &ref,
                          const std::vector<float> &got) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    num += (ref[i] - got[i]) * (ref[i] - got[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / den);
}

class ModelTest : public InterpreterTest {
protected:
  OwningOpRef<ModuleOp> build(const SyntheticModel &m) {
    OwningOpRef<ModuleOp> module = buildLlamaModule(
        &context, m.config, m.tensorInfos(), {WeightsFormat::GGUF, "x.gguf"});
    EXPECT_TRUE(succeeded(verify(*module)));
    return module;
  }

  template <typename T>
  std::vector<std::vector<T>>
  runSteps(ModuleOp module, const SyntheticModel &m,
           const std::vector<runtime::StepBatch> &steps) {
    InMemoryWeights weights(m);
    Interpreter<T> interp(weights);
    func::FuncOp step = findStepFunction(module);
    ReferenceKVCache<T> cache(
        cast<KVCacheType>(step.getArgumentTypes().back()));
    std::vector<std::vector<T>> logits;
    for (const runtime::StepBatch &batch : steps)
      logits.push_back(interp.step(step, batch, cache).data);
    return logits;
  }
};

runtime::StepBatch tokensOf(int32_t seq, const std::vector<int32_t> &tokens,
                            int32_t firstPosition, bool allLogits) {
  runtime::StepBatch b;
  for (size_t i = 0; i < tokens.size(); ++i)
    b.addToken(seq, tokens[i], firstPosition + static_cast<int32_t>(i),
               allLogits || i + 1 == tokens.size());
  return b;
}

TEST_F(ModelTest, FloatAgreesWithDouble) {
  uint32_t seed = 1;
  for (const formats::ModelConfig &config : randomConfigs()) {
    SyntheticModel m = SyntheticModel::random(config, seed++);
    auto module = build(m);
    std::vector<runtime::StepBatch> steps = {
        tokensOf(0, {1, 5, 9, 2, 30, 11}, 0, true), tokensOf(0, {4}, 6, true)};
    auto f = runSteps<float>(*module, m, steps);
    auto d = runSteps<double>(*module, m, steps);
    for (size_t s = 0; s < steps.size(); ++s)
      EXPECT_LT(relativeDifference(d[s], f[s]), 1e-5)
          << "dim " << config.dim << ", step " << s;
  }
}

TEST_F(ModelTest, PrefillInOneStepEqualsOneTokenSteps) {
  uint32_t seed = 11;
  const std::vector<int32_t> prompt = {1, 7, 3, 3, 19, 36, 0, 12};
  for (const formats::ModelConfig &config : randomConfigs()) {
    SyntheticModel m = SyntheticModel::random(config, seed++);
    auto module = build(m);
    auto prefill = runSteps<double>(*module, m, {tokensOf(0, prompt, 0, true)});
    std::vector<runtime::StepBatch> oneByOne;
    for (size_t i = 0; i < prompt.size(); ++i)
      oneByOne.push_back(
          tokensOf(0, {prompt[i]}, static_cast<int32_t>(i), true));
    auto single = runSteps<double>(*module, m, oneByOne);
    const int64_t vocab = config.vocabSize;
    for (size_t i = 0; i < prompt.size(); ++i)
      for (int64_t j = 0; j < vocab; ++j)
        EXPECT_NEAR(prefill[0][i * vocab + j], single[i][j], 1e-9)
            << "dim " << config.dim << ", token " << i;
  }
}

TEST_F(ModelTest, BatchedSequencesGiveTheirOwnLogits) {
  SyntheticModel m = SyntheticModel::random(randomConfigs()[1], 23);
  auto module = build(m);
  // Alone: sequence A prefills 4 tokens then decodes 1; B prefills 2 then 1.
  auto a = runSteps<double>(
      *module, m,
      {tokensOf(0, {1, 4, 8, 15}, 0, false), tokensOf(0, {16}, 4, false)});
  auto b = runSteps<double>(
      *module, m,
      {tokensOf(0, {1, 23}, 0, false), tokensOf(0, {42 % 37}, 2, false)});
  // Together, in cache slots 2 and 5, interleaved by the scheduler: first
  // both prefills in one step, then both decodes in one step.
  runtime::StepBatch prefill = tokensOf(2, {1, 4, 8, 15}, 0, false);
  for (auto [i, t] : {std::pair{0, 1}, std::pair{1, 23}})
    prefill.addToken(5, t, i, i == 1);
  runtime::StepBatch decode = tokensOf(5, {42 % 37}, 2, false);
  decode.addToken(2, 16, 4, true);
  auto together = runSteps<double>(*module, m, {prefill, decode});
  const int64_t vocab = m.config.vocabSize;
  for (int64_t j = 0; j < vocab; ++j) {
    EXPECT_NEAR(together[0][j], a[0][j], 1e-9);
    EXPECT_NEAR(together[0][vocab + j], b[0][j], 1e-9);
    EXPECT_NEAR(together[1][j], b[1][j], 1e-9);
    EXPECT_NEAR(together[1][vocab + j], a[1][j], 1e-9);
  }
}

TEST_F(ModelTest, StaleCacheValuesAreRejected) {
  auto module = parse(R"mlir(
    func.func @f(%c: !kiln.kv_cache<layers = 1, kv_heads = 1, head_dim = 2, f32>,
                 %k: tensor<?x1x2xf32>, %s: tensor<?xi32>) -> tensor<?x?x1x2xf32> {
      %c1 = kiln.kv_append %c[0] keys %k values %k seqs %s positions %s
          : !kiln.kv_cache<layers = 1, kv_heads = 1, head_dim = 2, f32>, tensor<?x1x2xf32>, tensor<?xi32>
      %ks, %vs = kiln.kv_read %c[0] seqs %s positions %s
          : !kiln.kv_cache<layers = 1, kv_heads = 1, head_dim = 2, f32>, tensor<?xi32>
          -> tensor<?x?x1x2xf32>, tensor<?x?x1x2xf32>
      return %ks : tensor<?x?x1x2xf32>
    })mlir");
  auto cacheType =
      KVCacheType::get(&context, 1, 1, 2, Float32Type::get(&context));
  ReferenceKVCache<float> cache(cacheType);
  Tensor<float> k;
  k.shape = {1, 1, 2};
  k.data = {1, 2};
  Interpreter<float> interp(noWeights);
  try {
    interp.call(module->lookupSymbol<func::FuncOp>("f"),
                {CacheValue<float>{&cache, 0}, k, std::vector<int32_t>{0}});
    FAIL() << "expected an InterpreterError";
  } catch (const InterpreterError &e) {
    EXPECT_NE(std::string(e.what()).find("a later kv_append replaced"),
              std::string::npos)
        << e.what();
  }
}

} // namespace
