//===- CodegenTest.cpp - Compiled steps compute what the IR computes ------===//
//
// Part of Kiln's unit tests. The property CPU code generation promises: a
// random small Llama, run through the default pipeline for a target,
// compiled (codegen::compileStep), written into an artifact as `kiln
// compile` writes one and loaded by the runtime (runtime::CompiledModel),
// gives the logits the reference interpreter gives for the unfused module.
//
// Every ISA this CPU runs (portable, avx2, avx512) is checked; the others
// are skipped, naming the features the CPU lacks. Each model is compiled
// once and runs a fixed script: prefills of 1, 2, 3, 17 and 128 tokens
// (below, at and above the GEMMs' prefill threshold, and a full step of
// max-tokens), each followed by decode steps, then a step that mixes two
// sequences. Odd widths leave a partial panel and a partial block in every
// GEMM; a tuning file forcing small blocks runs the k-blocked accumulation,
// partial register blocks and partial KV blocks; f16 and bf16 weights are
// checked to their rounding on every ISA, and bf16 dot products where the
// CPU has them. The unfused modules (the pipeline without fusion: every
// imported op its own kernel) are checked on every ISA too. Every run's
// worst ratio is printed at the end.
// Llama110mTeacherForced checks the 110M shape against the f32 interpreter.
//
//===----------------------------------------------------------------------===//

#include "SyntheticModel.h"

#include "codegen/CompileStep.h"
#include "codegen/WriteArtifact.h"
#include "codegen/cpu/HostCompiler.h"
#include "frontends/FileWeightProvider.h"
#include "frontends/Importer.h"
#include "frontends/LlamaBuilder.h"
#include "frontends/formats/SyntheticModel.h"
#include "ir/KilnOps.h"
#include "ir/interpreter/Interpreter.h"
#include "passes/Pipelines.h"
#include "passes/target/TargetDescription.h"
#include "runtime/Artifact.h"
#include "runtime/CompiledModel.h"
#include "runtime/CpuFeatures.h"
#include "runtime/StepABI.h"
#include "runtime/TokenizerSpecJson.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace mlir;
using namespace kiln;
using kiln::test::InMemoryWeights;
using kiln::test::SyntheticModel;

namespace {

//===----------------------------------------------------------------------===//
// Compiling a module into an artifact, as `kiln compile` does
//===----------------------------------------------------------------------===//

/// A fresh directory under the system's temporary directory, removed with
/// everything in it when the test ends.
struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() /
           ("kiln-codegen-test-" + std::to_string(getpid()) + "-" +
            std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

target::TargetDescription parseTargetOrDie(const std::string &spec) {
  llvm::Expected<target::TargetDescription> t = target::parseTarget(spec);
  if (!t)
    throw std::runtime_error("target '" + spec +
                             "': " + llvm::toString(t.takeError()));
  return *t;
}

/// A vocabulary of `size` placeholder pieces: the artifact needs a
/// tokenizer section, these tests only pass token ids.
runtime::TokenizerSpec placeholderTokenizer(int64_t size) {
  runtime::TokenizerSpec spec;
  for (int64_t i = 0; i < size; ++i) {
    spec.tokens.push_back("<t" + std::to_string(i) + ">");
    spec.scores.push_back(0.0f);
  }
  return spec;
}

struct ArtifactSetup {
  explicit ArtifactSetup(target::TargetDescription target)
      : target(std::move(target)) {}
  target::TargetDescription target;
  codegen::PackedType weightType = codegen::PackedType::F32;
  codegen::PackedType cacheType = codegen::PackedType::F32; ///< --kv-type
  std::string tuningFile;
  int64_t maxTokens = 128;
  bool fusion = true; ///< false: every op of the imported module a kernel
  std::optional<runtime::TokenizerSpec> tokenizer;
};

/// Runs the default pipeline on a copy of `unfused`, compiles it and writes
/// `dir`/model.kiln with the writer `kiln compile` uses.
/// Returns the artifact's path; throws naming the stage that failed.
std::string compileArtifact(ModuleOp unfused, WeightProvider &weights,
                            const ArtifactSetup &setup, const fs::path &dir) {
  OwningOpRef<ModuleOp> module = unfused.clone();
  PassManager pm(unfused.getContext());
  KilnPipelineOptions pipeline;
  pipeline.target = setup.target.spec();
  pipeline.maxTokens = setup.maxTokens;
  pipeline.tuningFile = setup.tuningFile;
  pipeline.fusion = setup.fusion;
  addKilnPipeline(pm, pipeline);
  if (failed(pm.run(*module)))
    throw std::runtime_error("the pipeline failed for target " +
                             setup.target.spec() + " (see the errors above)");

  codegen::CompileStepOptions options;
  options.target = setup.target;
  options.weightType = setup.weightType;
  options.cacheType = setup.cacheType;
  options.workDir = (dir / "work").string();
  codegen::CompiledStep compiled =
      codegen::compileStep(*module, weights, options);

  func::FuncOp step = codegen::getStepFunction(*module);
  int64_t vocab =
      cast<RankedTensorType>(step.getResultTypes().front()).getDimSize(1);
  auto context =
      step->getAttrOfType<IntegerAttr>(KilnDialect::kContextLengthAttrName);
  if (!context)
    throw std::runtime_error("the step declares no context length");
  codegen::ArtifactModelInfo info;
  info.source = "CodegenTest";
  info.contextLength = context.getInt();
  info.tokenizer =
      setup.tokenizer ? *setup.tokenizer : placeholderTokenizer(vocab);
  std::string path = (dir / "model.kiln").string();
  codegen::writeArtifact(*module, compiled, options, info, path);
  return path;
}

/// ‖got − want‖ / ‖want‖.
double relativeError(const std::vector<float> &got,
                     const std::vector<double> &want) {
  if (got.size() != want.size())
    return INFINITY;
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    den += want[i] * want[i];
  }
  return std::sqrt(num / den);
}

//===----------------------------------------------------------------------===//
// Models and the step script
//===----------------------------------------------------------------------===//

struct TestModel {
  std::string name;
  formats::ModelConfig config;
  uint32_t seed;
};

formats::ModelConfig llamaConfig(int64_t dim, int64_t hidden, int64_t vocab,
                                 int64_t layers, int64_t heads, int64_t kvHeads,
                                 int64_t headDim) {
  formats::ModelConfig c;
  c.dim = dim;
  c.hiddenDim = hidden;
  c.vocabSize = vocab;
  c.numLayers = layers;
  c.numHeads = heads;
  c.numKvHeads = kvHeads;
  c.headDim = headDim;
  c.contextLength = 256; // the longest script sequence is 131 positions
  return c;
}

/// "gqa5": five query heads share one key/value head, tied classifier.
TestModel gqa5Model() {
  return {"gqa5", llamaConfig(40, 100, 97, 2, 5, 1, 8), 11};
}

/// "qwen": Qwen2-style QKV biases and rotate-half RoPE, three query heads
/// per key/value head, an untied classifier and a 20-position sliding
/// window (the 128-token prefill attends past it).
TestModel qwenModel() {
  formats::ModelConfig c = llamaConfig(72, 172, 300, 1, 6, 2, 12);
  c.architecture = "qwen2";
  c.qkvBias = true;
  c.ropePairs = formats::RopePairs::Halves;
  c.tiedClassifier = false;
  c.slidingWindow = 20;
  return {"qwen", c, 12};
}

/// "wide32": heads of 32 (whole vectors on every ISA), so prefill attention
/// runs its row groups: 8 rows a register block on AVX-512, 2 on AVX2.
TestModel wideHeadModel() {
  return {"wide32", llamaConfig(64, 100, 97, 2, 2, 1, 32), 14};
}

/// "mha3": two layers of 6 heads sharing 3 key/value heads (group of 2).
TestModel mhaModel() {
  return {"mha3", llamaConfig(72, 100, 97, 2, 6, 3, 12), 13};
}

struct ScriptStep {
  bool reset = false; ///< start from an empty cache
  runtime::StepBatch batch;
  std::string what;
};

/// Prefills of T ∈ {1, 2, 3, 17, 128} tokens (logits of every row, or of
/// seven rows of the 128), each followed by three decode steps; then two
/// sequences prefilled in one step (a 5-token and a 9-token prompt) and a
/// step decoding both. Token ids are random.
std::vector<ScriptStep> makeScript(int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> token(0, int32_t(vocab) - 1);
  std::vector<ScriptStep> script;
  for (int32_t t : {1, 2, 3, 17, 128}) {
    ScriptStep prefill;
    prefill.reset = true;
    prefill.what = "prefill of " + std::to_string(t) + " tokens";
    for (int32_t i = 0; i < t; ++i) {
      bool rows = t <= 17 || i == 0 || i == 1 || i == 2 || i == 63 ||
                  i == 100 || i == 126 || i == 127;
      prefill.batch.addToken(0, token(rng), i, rows);
    }
    script.push_back(prefill);
    for (int32_t i = 0; i < 3; ++i) {
      ScriptStep decode;
      decode.what = "decode at position " + std::to_string(t + i) +
                    " after a prefill of " + std::to_string(t);
      decode.batch.addToken(0, token(rng), t + i, true);
      script.push_back(decode);
    }
  }
  ScriptStep mixed;
  mixed.reset = true;
  mixed.what = "two sequences prefilled in one step (5 and 9 tokens)";
  for (int32_t i = 0; i < 5; ++i)
    mixed.batch.addToken(0, token(rng), i, i == 4);
  for (int32_t i = 0; i < 9; ++i)
    mixed.batch.addToken(1, token(rng), i, i == 3 || i == 8);
  script.push_back(mixed);
  ScriptStep both;
  both.what = "two sequences decoding in one step";
  both.batch.addToken(1, token(rng), 9, true);
  both.batch.addToken(0, token(rng), 5, true);
  script.push_back(both);
  return script;
}

/// The script's logits from the reference interpreter (double) on the
/// unfused module, one vector per step.
std::vector<std::vector<double>>
referenceLogits(ModuleOp unfused, WeightProvider &weights,
                const std::vector<ScriptStep> &script) {
  Interpreter<double> interp(weights);
  func::FuncOp step = findStepFunction(unfused);
  auto cacheType = cast<KVCacheType>(step.getArgumentTypes().back());
  std::unique_ptr<ReferenceKVCache<double>> cache;
  std::vector<std::vector<double>> all;
  for (const ScriptStep &s : script) {
    if (s.reset || !cache)
      cache = std::make_unique<ReferenceKVCache<double>>(cacheType);
    all.push_back(interp.step(step, s.batch, *cache).data);
  }
  return all;
}

/// A model, its unfused module and its reference logits. The reference is
/// computed once per model and shared by every ISA and weight type.
struct Prepared {
  SyntheticModel model;
  std::unique_ptr<MLIRContext> context;
  OwningOpRef<ModuleOp> unfused;
  std::vector<ScriptStep> script;
  std::vector<std::vector<double>> reference;
};

std::unique_ptr<MLIRContext> makeContext() {
  auto context = std::make_unique<MLIRContext>();
  context->loadDialect<KilnDialect, func::FuncDialect, arith::ArithDialect,
                       tensor::TensorDialect>();
  return context;
}

Prepared &prepare(const TestModel &m) {
  static std::map<std::string, std::unique_ptr<Prepared>> cache;
  std::unique_ptr<Prepared> &p = cache[m.name];
  if (p)
    return *p;
  p = std::make_unique<Prepared>();
  p->model = SyntheticModel::random(m.config, m.seed);
  p->context = makeContext();
  p->unfused =
      buildLlamaModule(p->context.get(), m.config, p->model.tensorInfos(),
                       {WeightsFormat::GGUF, m.name + ".gguf"});
  if (failed(verify(*p->unfused)))
    throw std::runtime_error(m.name + ": the built module does not verify");
  p->script = makeScript(m.config.vocabSize, m.seed + 1000);
  InMemoryWeights weights(p->model);
  p->reference = referenceLogits(*p->unfused, weights, p->script);
  return *p;
}

/// The worst ‖Δ‖/‖ref‖ of each run, printed when the program ends.
std::map<std::string, double> &worstRatios() {
  static std::map<std::string, double> worst;
  return worst;
}

struct PrintWorst : ::testing::Environment {
  void TearDown() override {
    for (const auto &[run, ratio] : worstRatios())
      std::printf("[  worst   ] %-34s max ||d||/||ref|| = %.3g\n", run.c_str(),
                  ratio);
  }
};
const auto *const printWorst =
    ::testing::AddGlobalTestEnvironment(new PrintWorst);

/// Compiles `m` with `setup`, runs the script through the artifact and
/// expects every step's relative error within `tolerance`. `sources`, if
/// given, receives the artifact's generated sources.
void checkAgainstReference(
    const TestModel &m, const ArtifactSetup &setup, double tolerance,
    const std::string &label,
    std::vector<std::pair<std::string, std::string>> *sources = nullptr) {
  Prepared &p = prepare(m);
  InMemoryWeights weights(p.model);
  TempDir dir;
  std::string artifact = compileArtifact(*p.unfused, weights, setup, dir.path);
  runtime::CompiledModelOptions options;
  options.threads = 3; // several tasks per kernel, whatever the host
  options.maxSequences = 2;
  std::unique_ptr<runtime::CompiledModel> model =
      runtime::CompiledModel::load(artifact, options);
  ASSERT_EQ(model->manifest().weightType,
            codegen::packedTypeName(setup.weightType).str());
  if (sources)
    *sources = runtime::unpackSources(
        model->artifact().section(runtime::section::kSources));

  double worst = 0;
  for (size_t i = 0; i < p.script.size(); ++i) {
    const ScriptStep &s = p.script[i];
    if (s.reset)
      model->reset();
    std::vector<float> got = model->step(s.batch);
    ASSERT_EQ(got.size(), p.reference[i].size()) << s.what;
    double ratio = relativeError(got, p.reference[i]);
    EXPECT_LE(ratio, tolerance) << label << ", " << s.what;
    worst = std::max(worst, ratio);
  }
  double &recorded = worstRatios()[label];
  recorded = std::max(recorded, worst);
}

//===----------------------------------------------------------------------===//
// Per ISA
//===----------------------------------------------------------------------===//

class CodegenIsa : public ::testing::TestWithParam<const char *> {
protected:
  void SetUp() override {
    target = parseTargetOrDie(GetParam());
    std::vector<std::string> missing =
        runtime::missingCpuFeatures(codegen::requiredCpuFeatures(target));
    if (!missing.empty()) {
      std::string list;
      for (const std::string &f : missing)
        list += (list.empty() ? "" : ", ") + f;
      GTEST_SKIP() << "this CPU cannot run " << GetParam() << " code: it lacks "
                   << list;
    }
  }
  std::string label(const TestModel &m, const char *dtype) const {
    return std::string(GetParam()) + " " + dtype + " " + m.name;
  }

  target::TargetDescription target;
};

TEST_P(CodegenIsa, RandomLlamasMatchTheInterpreter) {
  for (const TestModel &m :
       {gqa5Model(), qwenModel(), mhaModel(), wideHeadModel()}) {
    SCOPED_TRACE(m.name);
    ArtifactSetup setup(target);
    checkAgainstReference(m, setup, 1e-5, label(m, "f32"));
  }
}

/// The unfused modules (`kiln compile --no-fusion`): matmuls, rms_norm, the
/// attention pieces over kv_read (scores, scale, mask with qwen's window,
/// softmax, output), add, silu and mul each run as their own kernel, and
/// give the interpreter's logits too. The compiled module must really be
/// unfused: its sources instantiate the unfused kernels and no fused ones.
TEST_P(CodegenIsa, UnfusedModulesMatchTheInterpreter) {
  for (const TestModel &m : {gqa5Model(), qwenModel(), wideHeadModel()}) {
    SCOPED_TRACE(m.name);
    ArtifactSetup setup(target);
    setup.fusion = false;
    std::vector<std::pair<std::string, std::string>> sources;
    checkAgainstReference(m, setup, 1e-5, label(m, "f32 unfused"), &sources);
    std::string all;
    for (const auto &[name, text] : sources)
      all += text;
    for (const char *kernel :
         {"kv_read<Config>", "attention_scores<Config>",
          "attention_mask<Config>", "kiln::kernels::softmax(",
          "attention_output<Config>", "Binary::Add", "Binary::Mul",
          "Unary::Silu", "Unary::Scale", "rms_norm<Config>"})
      EXPECT_NE(all.find(kernel), std::string::npos) << kernel;
    for (const char *fused : {"Attention<Config>", "SWIGLU = true",
                              "HAS_PROLOGUE = true", "HAS_RESIDUAL = true"})
      EXPECT_EQ(all.find(fused), std::string::npos) << fused;
  }
}

/// Blocks much smaller than the shapes: k = 12 against K = 40 and 100 (full
/// blocks, then a partial one of 4: the k-blocked accumulation into y),
/// m = 5 with mr = 3 (register blocks of 3 and 2 rows, so every dispatch
/// case runs, and prefill from 3 rows), n of two panels of one vector each
/// (N = 56 QKV rows and 97 vocabulary rows: a partial panel, and a last task
/// with fewer panels), decode with prefill's k (batch invariance), swiglu
/// register blocks of 2 rows, and attention blocks of one vector of cached
/// positions. The generated sources must carry these constants: a tuning
/// file that did not apply would test nothing.
TEST_P(CodegenIsa, SmallTilesFromATuningFile) {
  int64_t v = target.cpu().vectorFloats();
  TempDir dir;
  std::string tuning = (dir.path / "small-tiles.txt").string();
  std::ofstream(tuning)
      << "# Small blocks that do not divide the shapes (CodegenTest.cpp).\n"
      << "matmul : prefill m=5 n=" << 2 * v << " k=12 mr=3 nr=" << v << "\n"
      << "matmul : decode n=" << v << " nr=" << v << "\n"
      << "swiglu : prefill m=4 n=" << v << " k=24 mr=2 nr=" << v << "\n"
      << "swiglu : decode n=" << v << " nr=" << v << "\n"
      << "attention : prefill kv=" << v << " q=4\n"
      << "norm : prefill rows=3\n";
  TestModel m = gqa5Model();
  ArtifactSetup setup(target);
  setup.tuningFile = tuning;
  std::vector<std::pair<std::string, std::string>> sources;
  checkAgainstReference(m, setup, 1e-5, label(m, "f32 small tiles"), &sources);

  std::string gemm =
      "constexpr int64_t PREFILL_M = 5, PREFILL_N = " + std::to_string(2 * v) +
      ", PREFILL_K = 12;";
  std::string swiglu =
      "constexpr int64_t PREFILL_M = 4, PREFILL_N = " + std::to_string(v) +
      ", PREFILL_K = 24;";
  int gemms = 0, swiglus = 0, attentions = 0;
  for (const auto &[name, text] : sources) {
    if (name.find("_gemm.cpp") != std::string::npos) {
      ++gemms;
      EXPECT_NE(text.find(gemm), std::string::npos) << name;
      EXPECT_NE(text.find(" MR = 3,"), std::string::npos) << name;
      EXPECT_NE(
          text.find("DECODE_N = " + std::to_string(v) + ", DECODE_K = 12;"),
          std::string::npos)
          << name;
    } else if (name.find("_swiglu.cpp") != std::string::npos) {
      ++swiglus;
      EXPECT_NE(text.find(swiglu), std::string::npos) << name;
    } else if (name.find("_attention.cpp") != std::string::npos) {
      ++attentions;
      EXPECT_NE(text.find("KV_BLOCK = " + std::to_string(v) + ";"),
                std::string::npos)
          << name;
      EXPECT_NE(text.find("Q_BLOCK = 4,"), std::string::npos) << name;
    }
  }
  // QKV, output and down projections and the classifier; one swiglu and
  // one attention shape.
  EXPECT_GE(gemms, 3);
  EXPECT_GE(swiglus, 1);
  EXPECT_GE(attentions, 1);
}

INSTANTIATE_TEST_SUITE_P(Isa, CodegenIsa,
                         ::testing::Values("portable", "avx2", "avx512"),
                         [](const auto &info) {
                           return std::string(info.param);
                         });

//===----------------------------------------------------------------------===//
// Half-precision weights
//===----------------------------------------------------------------------===//

/// bf16 and f16 GEMM panels on every ISA this CPU runs (bf16 lane-pair
/// loads depend on the vector width; f16 widens with F16C on avx2 and
/// avx512 and in software on portable): within 1e-2 of the double reference
/// (their rounding, 2^-9 and 2^-12 per weight, not a kernel's mistake, sets
/// the bound).
TEST(Codegen, PackedHalfWeights) {
  std::vector<target::TargetDescription> runnable;
  for (const char *isa : {"avx512", "avx2", "portable"}) {
    target::TargetDescription t = parseTargetOrDie(isa);
    if (runtime::missingCpuFeatures(codegen::requiredCpuFeatures(t)).empty())
      runnable.push_back(t);
  }
  ASSERT_FALSE(runnable.empty()) << "portable code needs no CPU features";
  TestModel m = qwenModel();
  for (const target::TargetDescription &target : runnable)
    for (codegen::PackedType type :
         {codegen::PackedType::BF16, codegen::PackedType::F16}) {
      std::string name = codegen::packedTypeName(type).str();
      SCOPED_TRACE(target.name + " " + name);
      ArtifactSetup setup(target);
      setup.weightType = type;
      checkAgainstReference(m, setup, 1e-2,
                            target.name + " " + name + " " + m.name);
    }
}

/// A KV cache of f16 or bf16 elements (`kiln compile --kv-type`): keys and
/// values rounded once as they are appended, widened as attention reads
/// them, on every ISA this CPU runs. qwen has a sliding window and groups
/// of three query heads; wide32's heads are whole vectors, so prefill reads
/// the values in vectors. Within 1e-2 of the double reference (bf16 keeps 8
/// bits of mantissa).
TEST(Codegen, HalfKvCacheElements) {
  for (const char *isa : {"native", "portable"}) {
    target::TargetDescription target = parseTargetOrDie(isa);
    for (codegen::PackedType type :
         {codegen::PackedType::BF16, codegen::PackedType::F16})
      for (const TestModel &m : {qwenModel(), wideHeadModel()}) {
        std::string name = "kv " + codegen::packedTypeName(type).str();
        SCOPED_TRACE(std::string(isa) + " " + name + " " + m.name);
        ArtifactSetup setup(target);
        setup.cacheType = type;
        checkAgainstReference(m, setup, 1e-2,
                              std::string(isa) + " " + name + " " + m.name);
      }
  }
}

/// bf16 dot products (avx512+bf16: vdpbf16ps over weight and activation
/// pairs along K). An odd hidden size (171) pads the down projection's
/// pairs with zero, and odd k blocks from a tuning file (9 and 5) round up
/// to whole pairs. The activations are rounded to bf16 as well as the
/// weights, so the bound allows two roundings a product: 1.5e-2.
TEST(Codegen, Bf16DotProducts) {
  target::TargetDescription target = parseTargetOrDie("avx512+bf16");
  std::vector<std::string> missing =
      runtime::missingCpuFeatures(codegen::requiredCpuFeatures(target));
  if (!missing.empty())
    GTEST_SKIP() << "this CPU cannot run avx512+bf16 code: it lacks "
                 << missing.front();
  TestModel m = qwenModel();
  m.name = "qwen-171";
  m.config.hiddenDim = 171;
  for (bool smallTiles : {false, true}) {
    SCOPED_TRACE(smallTiles ? "small tiles" : "default tiles");
    TempDir dir;
    ArtifactSetup setup(target);
    setup.weightType = codegen::PackedType::BF16;
    if (smallTiles) {
      setup.tuningFile = (dir.path / "odd-k.txt").string();
      std::ofstream(setup.tuningFile)
          << "matmul : prefill m=5 n=32 k=9 mr=3 nr=16\n"
          << "matmul : decode n=16 k=5 nr=16\n"
          << "swiglu : prefill m=4 n=16 mr=2 nr=16\n"
          << "swiglu : decode n=16 nr=16\n";
    }
    std::vector<std::pair<std::string, std::string>> sources;
    checkAgainstReference(m, setup, 1.5e-2,
                          std::string("avx512+bf16 bf16-dot ") + m.name +
                              (smallTiles ? " small tiles" : ""),
                          &sources);
    int gemms = 0;
    for (const auto &[file, text] : sources)
      if (file.find("_gemm.cpp") != std::string::npos ||
          file.find("_swiglu.cpp") != std::string::npos) {
        ++gemms;
        EXPECT_NE(text.find("BF16_DOT = true;"), std::string::npos) << file;
      }
    EXPECT_GE(gemms, 4);
  }
}

//===----------------------------------------------------------------------===//
// The 110M shape
//===----------------------------------------------------------------------===//

/// Prefix sharing through the paged cache: a second sequence whose prompt
/// starts with a first one's 40 tokens maps their two whole blocks of 16
/// (not copies), computes only the rest, and gets the logits a fresh model
/// gives for the whole prompt; the shared blocks are held once.
TEST(Codegen, SharedPrefixBlocksGiveTheSameLogits) {
  const TestModel m = gqa5Model();
  Prepared &p = prepare(m);
  InMemoryWeights weights(p.model);
  TempDir dir;
  std::string artifact = compileArtifact(
      *p.unfused, weights, ArtifactSetup(parseTargetOrDie("native")), dir.path);
  runtime::CompiledModelOptions options;
  options.maxSequences = 2;
  options.kvBlockPositions = 16;
  std::unique_ptr<runtime::CompiledModel> shared =
      runtime::CompiledModel::load(artifact, options);
  std::unique_ptr<runtime::CompiledModel> fresh =
      runtime::CompiledModel::load(artifact, options);

  std::mt19937 rng(4040);
  std::uniform_int_distribution<int32_t> token(0, m.config.vocabSize - 1);
  std::vector<int32_t> system(40), prompt;
  for (int32_t &t : system)
    t = token(rng);
  prompt = system;
  for (int i = 0; i < 9; ++i)
    prompt.push_back(token(rng));
  auto prefill = [](int32_t seq, const std::vector<int32_t> &tokens,
                    size_t from) {
    runtime::StepBatch batch;
    for (size_t i = from; i < tokens.size(); ++i)
      batch.addToken(seq, tokens[i], int32_t(i), i + 1 == tokens.size());
    return batch;
  };

  runtime::KVBlockTables &tables = shared->kvCache().tables();
  shared->step(prefill(0, system, 0));
  tables.cachePrefix(0, system);
  EXPECT_EQ(tables.usedBlocks(), 3); // positions 0..39
  ASSERT_EQ(tables.attachCachedPrefix(1, prompt), 32);
  EXPECT_EQ(tables.blockOf(1, 0), tables.blockOf(0, 0));
  EXPECT_EQ(tables.blockOf(1, 16), tables.blockOf(0, 16));
  std::vector<float> got = shared->step(prefill(1, prompt, 32));
  // Sequence 1 added two blocks (positions 32..47 and 48); its first two
  // are sequence 0's.
  EXPECT_EQ(tables.usedBlocks(), 5);
  EXPECT_NE(tables.blockOf(1, 32), tables.blockOf(0, 32));
  EXPECT_EQ(tables.checkInvariants(), std::nullopt);

  // Bitwise: the last row's arithmetic does not depend on whether the step
  // held the whole prompt or only what follows the shared blocks (batch
  // invariance).
  std::vector<float> want = fresh->step(prefill(0, prompt, 0));
  EXPECT_EQ(got, want);

  // Decoding on from the shared prefix also matches.
  runtime::StepBatch next;
  next.addToken(1, 7, int32_t(prompt.size()), true);
  std::vector<float> gotNext = shared->step(next);
  next.seqIds[0] = 0;
  std::vector<float> wantNext = fresh->step(next);
  EXPECT_EQ(gotNext, wantNext);
}

/// `kiln make-model --config llama-110m --seed 3`, compiled for this CPU
/// (native, f32), against the f32 reference interpreter on the unfused
/// module: 64 fixed random tokens teacher-forced one per step, every step's
/// logits within 1e-4.
TEST(Codegen, Llama110mTeacherForced) {
  auto start = std::chrono::steady_clock::now();
  TempDir dir;
  formats::SyntheticModelSpec spec{formats::syntheticConfig("llama-110m"), 3};
  std::string gguf = (dir.path / "llama-110m.gguf").string();
  formats::writeSyntheticGGUF(spec, gguf);

  std::unique_ptr<MLIRContext> context = makeContext();
  ImportedModel imported = readModel(gguf);
  OwningOpRef<ModuleOp> unfused = importModel(context.get(), imported);
  ASSERT_TRUE(succeeded(verify(*unfused)));
  FileWeightProvider weights(formats::WeightFile::open(
      toWeightFileFormat(imported.location.format), gguf));

  constexpr int kSteps = 64;
  ArtifactSetup setup(parseTargetOrDie("native"));
  setup.maxTokens = kSteps;
  setup.tokenizer = imported.tokenizer;
  std::string artifact = compileArtifact(*unfused, weights, setup, dir.path);
  runtime::CompiledModelOptions options;
  options.contextLength = kSteps;
  std::unique_ptr<runtime::CompiledModel> model =
      runtime::CompiledModel::load(artifact, options);

  Interpreter<float> interp(weights);
  func::FuncOp step = findStepFunction(*unfused);
  ReferenceKVCache<float> cache(
      cast<KVCacheType>(step.getArgumentTypes().back()));
  std::mt19937 rng(110);
  std::uniform_int_distribution<int32_t> token(
      0, int32_t(spec.config.vocabSize) - 1);
  double worst = 0;
  for (int32_t pos = 0; pos < kSteps; ++pos) {
    runtime::StepBatch batch;
    batch.addToken(0, token(rng), pos, true);
    std::vector<float> want = interp.step(step, batch, cache).data;
    std::vector<float> got = model->step(batch);
    double ratio =
        relativeError(got, std::vector<double>(want.begin(), want.end()));
    EXPECT_LE(ratio, 1e-4) << "step " << pos;
    worst = std::max(worst, ratio);
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::printf("[  110M    ] %s: %d teacher-forced steps, max ||d||/||ref|| = "
              "%.3g (%.1f s)\n",
              model->manifest().target.c_str(), kSteps, worst, seconds);
  worstRatios()["native f32 llama-110m"] = worst;
}

} // namespace
