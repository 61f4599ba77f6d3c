//===- ImporterTest.cpp - Model files to kiln IR --------------------------===//
//
// Part of Kiln's unit tests. The same weights written by the production
// writers as a legacy llama2.c checkpoint, a version-1 export, a GGUF file
// and Hugging Face directories import to the same IR and give the same
// logits; malformed files give errors naming the file and the tensor or key
// at fault; the shared stories260K files import and agree.
//
//===----------------------------------------------------------------------===//

#include "GGUFTestBytes.h"
#include "SyntheticModel.h"
#include "TestData.h"

#include "frontends/FileWeightProvider.h"
#include "frontends/Importer.h"
#include "frontends/formats/FormatError.h"
#include "frontends/formats/GGUFWriter.h"
#include "frontends/formats/ModelWriters.h"
#include "ir/KilnOps.h"
#include "ir/interpreter/Interpreter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <unistd.h>

using namespace mlir;
using namespace kiln;
using kiln::test::SyntheticModel;

namespace {

/// Imports the model file at `path` and runs `steps` with the reference
/// interpreter, returning each step's logits.
std::vector<std::vector<float>>
runFile(MLIRContext &context, const std::string &path,
        const std::vector<runtime::StepBatch> &steps) {
  ImportedModel model = readModel(path);
  OwningOpRef<ModuleOp> module = importModel(&context, model);
  EXPECT_TRUE(succeeded(verify(*module)));
  FileWeightProvider weights(formats::WeightFile::open(
      toWeightFileFormat(model.location.format), path));
  Interpreter<float> interp(weights);
  func::FuncOp step = findStepFunction(*module);
  ReferenceKVCache<float> cache(
      cast<KVCacheType>(step.getArgumentTypes().back()));
  std::vector<std::vector<float>> logits;
  for (const runtime::StepBatch &batch : steps)
    logits.push_back(interp.step(step, batch, cache).data);
  return logits;
}

/// ‖got - ref‖ / ‖ref‖.
double relativeError(const std::vector<float> &ref,
                     const std::vector<float> &got) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    double d = double(got.at(i)) - ref[i];
    num += d * d;
    den += double(ref[i]) * ref[i];
  }
  return std::sqrt(num / den);
}

formats::ModelConfig tinyConfig() {
  formats::ModelConfig c;
  c.dim = 16;
  c.hiddenDim = 40;
  c.numLayers = 2;
  c.numHeads = 4;
  c.numKvHeads = 2;
  c.headDim = 4;
  c.vocabSize = 23;
  c.contextLength = 12;
  return c;
}

class ImporterTest : public ::testing::Test {
protected:
  ImporterTest() {
    context.loadDialect<KilnDialect, func::FuncDialect>();
    dir = std::filesystem::temp_directory_path() /
          ("kiln-importer-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
  }
  ~ImporterTest() override { std::filesystem::remove_all(dir); }

  std::string write(const std::string &name, const std::string &bytes) {
    std::string path = (dir / name).string();
    test::writeFile(path, bytes);
    return path;
  }

  /// `m` written by the production writers as a llama2.c checkpoint of
  /// `version`, a GGUF file or a Hugging Face directory; returns the path.
  std::string llama2c(const SyntheticModel &m, const std::string &name,
                      int version = 0) {
    std::string path = (dir / name).string();
    formats::writeLlama2c(m.config, m.source(), path, version);
    return path;
  }
  std::string gguf(const SyntheticModel &m, const std::string &name) {
    std::string path = (dir / name).string();
    formats::writeGGUFModel(m.config, m.source(), path);
    return path;
  }
  std::string huggingFace(const SyntheticModel &m, const std::string &name,
                          int shards = 1) {
    std::string path = (dir / name).string();
    formats::HuggingFaceOptions options;
    options.shards = shards;
    formats::writeHuggingFaceModel(m.config, m.source(), path, options);
    return path;
  }

  static std::string readBytes(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  /// The module's text with the weights source normalized away.
  std::string irText(ModuleOp module) {
    module->setAttr(
        KilnDialect::kWeightsSourceAttrName,
        WeightsSourceAttr::get(&context, WeightsFormat::GGUF, "same"));
    std::string text;
    llvm::raw_string_ostream os(text);
    module.print(os);
    return os.str();
  }

  /// Imports every file of `paths` and expects one IR from all of them.
  void expectSameIR(const std::vector<std::string> &paths) {
    std::string reference;
    for (const std::string &path : paths) {
      OwningOpRef<ModuleOp> module = importModel(&context, readModel(path));
      ASSERT_TRUE(succeeded(verify(*module))) << path;
      std::string text = irText(*module);
      if (reference.empty())
        reference = text;
      EXPECT_EQ(text, reference) << path << " imports to different IR";
    }
  }

  std::vector<float> logitsOf(const std::string &path) {
    runtime::StepBatch batch;
    for (int32_t i = 0; i < 5; ++i)
      batch.addToken(0, (i * 7 + 1) % 23, i, true);
    return runFile(context, path, {batch}).at(0);
  }

  template <typename F> std::string errorOf(F f) {
    try {
      f();
    } catch (const formats::FormatError &e) {
      return e.what();
    }
    return "(no error)";
  }

  MLIRContext context;
  std::filesystem::path dir;
};

TEST_F(ImporterTest, EveryFormatBuildsTheSameIRAndLogits) {
  SyntheticModel m = SyntheticModel::random(tinyConfig(), 5);
  std::string legacy = llama2c(m, "legacy.bin");
  std::string v1 = llama2c(m, "v1.bin", /*version=*/1);
  std::string file = gguf(m, "model.gguf");

  expectSameIR({legacy, v1, file});
  std::vector<float> a = logitsOf(legacy), b = logitsOf(v1), c = logitsOf(file);
  ASSERT_EQ(a.size(), 5u * 23u);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a, c);
}

TEST_F(ImporterTest, UntiedClassifierUsesOutputWeight) {
  formats::ModelConfig config = tinyConfig();
  config.tiedClassifier = false;
  SyntheticModel m = SyntheticModel::random(config, 6);
  ImportedModel model = readModel(llama2c(m, "untied.bin"));
  EXPECT_FALSE(model.config.tiedClassifier);
  OwningOpRef<ModuleOp> module = importModel(&context, model);
  EXPECT_TRUE(module->lookupSymbol<WeightDeclOp>("output.weight"));
  EXPECT_EQ(logitsOf(gguf(m, "untied.gguf")),
            logitsOf(llama2c(m, "untied2.bin", /*version=*/1)));
}

TEST_F(ImporterTest, Llama2cErrorsNameTheProblem) {
  SyntheticModel m = SyntheticModel::random(tinyConfig(), 7);
  std::string bytes = readBytes(llama2c(m, "legacy.bin"));
  EXPECT_NE(errorOf([&] {
              readModel(write("short.bin", bytes.substr(0, 2000)));
            }).find("truncated: tensor 'blk."),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              readModel(write("tiny.bin", bytes.substr(0, 10)));
            }).find("a llama2.c checkpoint starts with 7 int32"),
            std::string::npos);

  std::string v2 = readBytes(llama2c(m, "v1.bin", /*version=*/1));
  v2[4] = 2;
  EXPECT_NE(errorOf([&] { readModel(write("v2.bin", v2)); })
                .find("llama2.c export version 2 (int8 weights in groups with "
                      "float32 scales) is not supported"),
            std::string::npos);

  std::string badHeads = bytes;
  badHeads[16] = 3; // n_kv_heads 3 does not divide n_heads 4
  EXPECT_NE(errorOf([&] {
              readModel(write("heads.bin", badHeads));
            }).find("n_heads (4) must be a multiple of n_kv_heads (3)"),
            std::string::npos);
}

TEST_F(ImporterTest, GGUFErrorsNameTheKeyOrTensor) {
  SyntheticModel m = SyntheticModel::random(tinyConfig(), 8);
  formats::GGUFWriter noWidth;
  noWidth.addString("general.architecture", "llama");
  EXPECT_NE(errorOf([&] {
              readModel(write("nowidth.gguf", noWidth.bytes()));
            }).find("missing metadata key 'llama.embedding_length'"),
            std::string::npos);

  formats::GGUFWriter phi;
  phi.addString("general.architecture", "phi3");
  EXPECT_NE(errorOf([&] {
              readModel(write("phi.gguf", phi.bytes()));
            }).find("architecture 'phi3' is not supported"),
            std::string::npos);

  // A tensor whose shape disagrees with the configuration.
  SyntheticModel wrong = m;
  wrong.shapes["blk.1.attn_k.weight"] = {4, 16};
  wrong.weights["blk.1.attn_k.weight"].resize(64);
  std::string path = gguf(wrong, "shape.gguf");
  EXPECT_NE(errorOf([&] { importModel(&context, readModel(path)); })
                .find("tensor 'blk.1.attn_k.weight' has shape [4, 16], the "
                      "model's configuration implies [8, 16]"),
            std::string::npos);
}

//===----------------------------------------------------------------------===//
// Llama 3 rope scaling: Hugging Face's rope_scaling, GGUF's rope_freqs
//===----------------------------------------------------------------------===//

/// A model trained (as it were) for 32 positions and scaled to 128, with a
/// head of 16: pairs of wavelength 2π·10^(i/2) (6.3, 19.9, 62.8, ...) give
/// one kept pair, one blended and six divided by the factor.
formats::ModelConfig llama3Config() {
  formats::ModelConfig c = tinyConfig();
  c.dim = 32;
  c.numHeads = 2;
  c.numKvHeads = 1;
  c.headDim = 16;
  c.contextLength = 128;
  c.ropeScaling = formats::RopeScalingConfig{
      formats::RopeScalingConfig::Kind::Llama3, 8.0, 1.0, 4.0, 32};
  return c;
}

/// Logits of positions 0..95 of one sequence: 64 positions past the
/// original context of 32.
std::vector<float> longLogits(MLIRContext &context, const std::string &path) {
  runtime::StepBatch batch;
  for (int32_t i = 0; i < 96; ++i)
    batch.addToken(0, (i * 7 + 1) % 23, i, true);
  return runFile(context, path, {batch}).at(0);
}

/// The same weights written with llama3 rope scaling as a Hugging Face
/// directory (rope_scaling {rope_type: llama3}, kiln.rope's llama3 formula)
/// and as GGUF (llama.cpp's rope_freqs tensor, kiln.rope's per-pair
/// factors) compute the same logits, and not those of the unscaled model.
TEST_F(ImporterTest, Llama3ScalingAgreesBetweenHuggingFaceAndGGUF) {
  SyntheticModel m = SyntheticModel::random(llama3Config(), 12);
  std::string hf = huggingFace(m, "llama3-hf");
  std::string file = gguf(m, "llama3.gguf");

  ImportedModel fromGGUF = readModel(file);
  EXPECT_FALSE(fromGGUF.config.ropeScaling);
  EXPECT_EQ(fromGGUF.config.ropeFreqFactors,
            formats::ggufRopeFreqFactors(m.config));
  OwningOpRef<ModuleOp> module = importModel(&context, fromGGUF);
  int ropes = 0;
  module->walk([&](RopeOp rope) {
    ++ropes;
    ASSERT_TRUE(rope.getScalingAttr());
    EXPECT_EQ(rope.getScalingAttr().getKind(), RopeScalingKind::Factors);
    EXPECT_EQ(rope.getScalingAttr().getFreqFactors().size(), 8u);
  });
  EXPECT_EQ(ropes, 4); // Q and K of two layers
  EXPECT_FALSE(module->lookupSymbol<WeightDeclOp>("rope_freqs.weight"))
      << "rope_freqs is a parameter of kiln.rope, not a weight";

  std::vector<float> a = longLogits(context, hf), b = longLogits(context, file);
  ASSERT_EQ(a.size(), 96u * 23u);
  ASSERT_EQ(a.size(), b.size());
  // The GGUF's factors are f32 numbers the converter's f32 arithmetic
  // rounded, the Hugging Face path evaluates the formula in the
  // interpreter's float: the frequencies differ by a few ulp, the angles at
  // position 95 by about 1e-6, the logits (also reordered Q and K rows, as
  // HuggingFaceLlamaUsesHalvesForTheSameModel) by far less than the bound.
  double error = relativeError(a, b);
  std::printf("llama3 scaling, Hugging Face vs GGUF, 96 positions: relative "
              "error %.3g\n",
              error);
  EXPECT_LT(error, 1e-5);

  SyntheticModel plain = m;
  plain.config.ropeScaling.reset();
  std::vector<float> unscaled = longLogits(context, gguf(plain, "plain.gguf"));
  std::vector<float> pastOriginal(b.begin() + 32 * 23, b.end());
  std::vector<float> unscaledPast(unscaled.begin() + 32 * 23, unscaled.end());
  EXPECT_GT(relativeError(unscaledPast, pastOriginal), 1e-2)
      << "the scaling must change the logits past the original context";
}

TEST_F(ImporterTest, GGUFRopeFreqsErrorsNameTheTensor) {
  formats::ModelConfig config = llama3Config();
  config.ropeScaling.reset();
  // The metadata, rope_freqs and the embedding the importer reads the
  // vocabulary size from; the other weights are looked up later.
  auto withFreqs = [&](const std::string &name, std::vector<int64_t> shape,
                       formats::ElementType type, const std::string &data) {
    formats::GGUFWriter w;
    formats::addGGUFModelMetadata(w, config);
    w.addTensor("rope_freqs.weight", shape, type, data);
    w.addTensor("token_embd.weight", {config.vocabSize, config.dim},
                formats::ElementType::F32,
                std::string(config.vocabSize * config.dim * 4, '\0'));
    return write(name, w.bytes());
  };
  auto f32Bytes = [](std::vector<float> values) {
    return std::string(reinterpret_cast<const char *>(values.data()),
                       values.size() * sizeof(float));
  };
  std::vector<float> good = {1, 2, 3, 4, 5, 6, 7, 8};

  EXPECT_NE(errorOf([&] {
              readModel(withFreqs("short.gguf", {4}, formats::ElementType::F32,
                                  f32Bytes({1, 2, 3, 4})));
            })
                .find("tensor 'rope_freqs.weight' (Llama 3 rope scaling) has "
                      "shape [4]; expected [8], one factor per rotated pair of "
                      "a head of size 16"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              readModel(withFreqs("matrix.gguf", {2, 8},
                                  formats::ElementType::F32,
                                  f32Bytes(std::vector<float>(16, 1.0f))));
            }).find("has shape [2, 8]; expected [8]"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              readModel(withFreqs("q8.gguf", {32}, formats::ElementType::Q8_0,
                                  std::string(34, '\0')));
            })
                .find("tensor 'rope_freqs.weight' (Llama 3 rope scaling) is "
                      "q8_0; expected f32 or f16"),
            std::string::npos);
  std::vector<float> zero = good;
  zero[5] = 0.0f;
  EXPECT_NE(errorOf([&] {
              readModel(withFreqs("zero.gguf", {8}, formats::ElementType::F32,
                                  f32Bytes(zero)));
            })
                .find("has value 0.000000 at 5; every factor must be positive "
                      "and finite"),
            std::string::npos);

  // F16 factors are read too (llama.cpp's converter writes F32).
  std::string half;
  for (float f : good) {
    uint16_t h = formats::floatToHalf(f);
    half.append(reinterpret_cast<const char *>(&h), 2);
  }
  ImportedModel model =
      readModel(withFreqs("half.gguf", {8}, formats::ElementType::F16, half));
  EXPECT_EQ(model.config.ropeFreqFactors, good);
}

//===----------------------------------------------------------------------===//
// Hugging Face directories
//===----------------------------------------------------------------------===//

TEST_F(ImporterTest, HuggingFaceQwen2BuildsTheGGUFsIR) {
  formats::ModelConfig config = tinyConfig();
  config.architecture = "qwen2";
  config.qkvBias = true;
  config.ropePairs = formats::RopePairs::Halves;
  config.ropeTheta = 1e6;
  config.normEpsilon = 1e-6;
  SyntheticModel m = SyntheticModel::random(config, 9);
  std::string file = gguf(m, "qwen2.gguf");
  std::string hf1 = huggingFace(m, "hf1");
  std::string hf3 = huggingFace(m, "hf3", /*shards=*/3);
  ASSERT_TRUE(
      std::filesystem::exists(dir / "hf3/model.safetensors.index.json"));

  for (const std::string &path : {file, hf1, hf3})
    EXPECT_TRUE(readModel(path).config.qkvBias) << path;
  expectSameIR({file, hf1, hf3});
  std::vector<float> a = logitsOf(file);
  EXPECT_EQ(logitsOf(hf1), a);
  EXPECT_EQ(logitsOf(hf3), a);
}

/// Hugging Face stores Llama's Q and K for rotate-half RoPE; GGUF converters
/// permute them for adjacent pairs. Both must compute the same model.
TEST_F(ImporterTest, HuggingFaceLlamaUsesHalvesForTheSameModel) {
  SyntheticModel m = SyntheticModel::random(tinyConfig(), 10);
  std::string file = gguf(m, "llama.gguf");
  std::string dirPath = huggingFace(m, "hf");
  ImportedModel hf = readModel(dirPath);
  EXPECT_EQ(hf.config.ropePairs, formats::RopePairs::Halves);
  std::vector<float> a = logitsOf(file), b = logitsOf(dirPath);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_LT(relativeError(a, b), 1e-6);
}

TEST_F(ImporterTest, SafetensorsAndConfigErrorsNameTheProblem) {
  SyntheticModel m = SyntheticModel::random(tinyConfig(), 11);
  std::filesystem::path hf = huggingFace(m, "broken");
  std::string weights = (hf / "model.safetensors").string();
  std::ifstream in(weights, std::ios::binary);
  std::string good((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  auto withWeights = [&](const std::string &bytes) {
    test::writeFile(weights, bytes);
    return errorOf([&] { readModel(hf.string()); });
  };

  EXPECT_NE(withWeights(good.substr(0, 4)).find("truncated"),
            std::string::npos);
  std::string longHeader = good;
  longHeader[6] = 1; // header length ~2^48
  EXPECT_NE(withWeights(longHeader).find("runs past the end of the file"),
            std::string::npos);
  std::string badJson = good;
  badJson[8] = '[';
  badJson[9] = '!';
  EXPECT_NE(withWeights(badJson).find("invalid JSON"), std::string::npos);
  std::string i64 = good;
  size_t at = i64.find("\"F32\"");
  i64.replace(at, 5, "\"I64\"");
  EXPECT_NE(withWeights(i64).find("has dtype I64; Kiln reads F32, F16 and "
                                  "BF16"),
            std::string::npos);
  EXPECT_NE(withWeights(good.substr(0, good.size() - 4)).find("is outside the"),
            std::string::npos);
  test::writeFile(weights, good);

  std::ofstream(hf / "config.json")
      << "{\"architectures\": [\"GPT2LMHeadModel\"]}";
  EXPECT_NE(errorOf([&] {
              readModel(hf.string());
            }).find("architecture 'GPT2LMHeadModel' is not supported"),
            std::string::npos);
  std::ofstream(hf / "config.json")
      << "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 16}";
  EXPECT_NE(errorOf([&] {
              readModel(hf.string());
            }).find("missing key \"intermediate_size\""),
            std::string::npos);
  std::ofstream(hf / "config.json") << "{not json";
  EXPECT_NE(errorOf([&] { readModel(hf.string()); }).find("invalid JSON"),
            std::string::npos);
}

//===----------------------------------------------------------------------===//
// The shared stories260K files
//===----------------------------------------------------------------------===//

std::vector<int32_t> goldenIds() {
  std::ifstream in(test::modelsDir() + "/golden_stories260K_greedy.ids");
  std::vector<int32_t> ids;
  int32_t id;
  while (in >> id)
    ids.push_back(id);
  return ids;
}

/// Logits of every position when the golden ids are fed one per step.
std::vector<std::vector<float>> teacherForced(MLIRContext &context,
                                              const std::string &path,
                                              const std::vector<int32_t> &ids) {
  std::vector<runtime::StepBatch> steps(ids.size());
  for (size_t pos = 0; pos < ids.size(); ++pos)
    steps[pos].addToken(0, ids[pos], static_cast<int32_t>(pos), true);
  return runFile(context, path, steps);
}

TEST_F(ImporterTest, Stories260KGGUFAndCheckpointGiveTheSameLogits) {
  std::string bin = test::modelsDir() + "/stories260K.bin";
  std::string gguf = test::modelsDir() + "/stories260K-f32.gguf";
  KILN_REQUIRE_TEST_FILE(bin);
  KILN_REQUIRE_TEST_FILE(gguf);
  std::vector<int32_t> ids = goldenIds();
  ids.resize(32);
  auto a = teacherForced(context, bin, ids);
  auto b = teacherForced(context, gguf, ids);
  for (size_t pos = 0; pos < ids.size(); ++pos)
    EXPECT_EQ(a[pos], b[pos]) << "position " << pos;
}

TEST_F(ImporterTest, Stories260KF16FollowsF32) {
  std::string f32 = test::modelsDir() + "/stories260K-f32.gguf";
  std::string f16 = test::modelsDir() + "/stories260K-f16.gguf";
  KILN_REQUIRE_TEST_FILE(f32);
  KILN_REQUIRE_TEST_FILE(f16);
  std::vector<int32_t> ids = goldenIds();
  ASSERT_GE(ids.size(), 256u);
  ids.resize(256);
  auto ref = teacherForced(context, f32, ids);
  auto got = teacherForced(context, f16, ids);
  double worst = 0;
  int agree = 0;
  for (size_t pos = 0; pos < ids.size(); ++pos) {
    worst = std::max(worst, relativeError(ref[pos], got[pos]));
    auto top = [](const std::vector<float> &v) {
      return std::max_element(v.begin(), v.end()) - v.begin();
    };
    agree += top(ref[pos]) == top(got[pos]);
  }
  std::printf("stories260K f16 vs f32 over 256 steps: worst |dlogits|/|ref| "
              "%.3g, top-1 agreement %d/256\n",
              worst, agree);
  EXPECT_LE(worst, 5e-3);
  EXPECT_GE(agree, 251); // >= 98%
}

} // namespace

namespace {

/// The reference-made quantized fixtures compute the f32 model up to their
/// rounding: teacher-forced on the same tokens, logits stay close.
TEST_F(ImporterTest, QuantizedFixturesFollowF32) {
  std::string f32 = test::modelsDir() + "/tiny-0.5M-f32.gguf";
  KILN_REQUIRE_TEST_FILE(f32);
  std::vector<int32_t> ids = goldenIds();
  ids.resize(64);
  auto ref = teacherForced(context, f32, ids);
  // Bounds are twice the error measured on these random-weight files
  // (printed): q8_0 0.019, q4_0 0.34, bf16 0.0073. Q4_0's step is 16 times
  // Q8_0's, and so is its logit error; bf16 keeps 8 bits of mantissa.
  for (auto [suffix, bound] : {std::pair{"q8_0", 0.04}, std::pair{"q4_0", 0.7},
                               std::pair{"bf16", 0.015}}) {
    std::string path = test::modelsDir() + "/tiny-0.5M-" + suffix + ".gguf";
    KILN_REQUIRE_TEST_FILE(path);
    auto got = teacherForced(context, path, ids);
    double worst = 0;
    for (size_t pos = 0; pos < ids.size(); ++pos)
      worst = std::max(worst, relativeError(ref[pos], got[pos]));
    std::printf("tiny-0.5M %s vs f32 over 64 steps: worst |dlogits|/|ref| "
                "%.3g\n",
                suffix, worst);
    EXPECT_LE(worst, bound) << suffix;
  }
}

} // namespace
