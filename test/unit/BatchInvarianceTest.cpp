//===- BatchInvarianceTest.cpp - Logits do not depend on the batch -------===//
//
// A token's logits are bitwise the same whatever else its step holds: other
// sequences, prefill chunks of any length, decode tokens, any batch size
// (docs/passes/tiling.md, "Batch invariance"). Sixteen sequences with
// different prompts and lengths run alone (the prompt in one step, then one
// token per step) and then together, mixed at random into steps of chunks;
// every row of logits must match bit for bit. The artifacts are the tiny
// synthetic model compiled for this CPU, f32 and bf16 (weights and cache),
// and the tiny-0.5M fixture's Q8_0 and Q4_0 files read in place (their
// activations quantized per row), with small tiles from a tuning file so
// that GEMMs split K into blocks, attention spans several key blocks and
// prefill chunks split into jobs.
//
//===----------------------------------------------------------------------===//

#include "TestData.h"
#include "codegen/driver/Compiler.h"
#include "frontends/formats/SyntheticModel.h"
#include "runtime/CompiledModel.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace kiln;

namespace {

constexpr int kSequences = 16;
constexpr int kDecodeSteps = 6;

/// One sequence's token stream (prompt, then teacher-forced decode tokens)
/// and the logits of every position.
struct Sequence {
  std::vector<int32_t> tokens;
  size_t promptLength = 0;
  std::vector<std::vector<float>> logits; // one row per position
};

class BatchInvarianceTest : public ::testing::TestWithParam<const char *> {
protected:
  void SetUp() override {
    dir = fs::temp_directory_path() /
          ("kiln-batch-invariance-" + std::to_string(getpid()) + "-" +
           GetParam());
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }

  /// The tiny model compiled with tiles much smaller than its shapes (K = 64
  /// and 172 in blocks of 24, key blocks of 16 positions, 4 query rows per
  /// job): every row-count-dependent choice the kernels make is exercised.
  /// q8_0 and q4_0: the tiny-0.5M fixture of that type (K = 128 and 384, k
  /// blocks rounded up to 32), its blocks read in place; empty when the
  /// fixture is missing.
  std::string compile(const std::string &dtype) {
    bool quantized = dtype == "q8_0" || dtype == "q4_0";
    std::string model = (dir / "tiny.gguf").string();
    if (quantized) {
      model = test::modelsDir() + "/tiny-0.5M-" + dtype + ".gguf";
      if (!test::fileExists(model))
        return "";
    } else {
      formats::SyntheticModelSpec spec{formats::syntheticConfig("tiny"), 11};
      formats::writeSyntheticGGUF(spec, model);
    }
    std::string tuning = (dir / "tiles.txt").string();
    std::ofstream(tuning) << "matmul : prefill k=24\n"
                          << "swiglu : prefill k=24\n"
                          << "attention : prefill q=4 kv=16\n";
    CompileOptions o;
    o.model = model;
    o.output = (dir / ("tiny-" + dtype + ".kiln")).string();
    o.dtype = quantized ? "" : dtype;
    o.kvType = quantized ? "f32" : dtype;
    o.tuningFile = tuning;
    o.maxTokens = 64;
    o.useCache = false;
    return compileModel(o).artifact;
  }

  fs::path dir;
};

/// Sixteen sequences: prompts of 1 to 57 tokens, then kDecodeSteps tokens
/// each.
std::vector<Sequence> makeSequences(int32_t vocab) {
  std::mt19937 rng(1414);
  std::uniform_int_distribution<int32_t> token(0, vocab - 1);
  std::vector<Sequence> sequences(kSequences);
  for (int s = 0; s < kSequences; ++s) {
    Sequence &seq = sequences[s];
    seq.promptLength = size_t(1 + (s * 23) % 57);
    for (size_t i = 0; i < seq.promptLength + kDecodeSteps; ++i)
      seq.tokens.push_back(token(rng));
    seq.logits.resize(seq.tokens.size());
  }
  return sequences;
}

/// Positions [from, to) of sequence `s` into `batch`, every row wanting
/// logits.
void addChunk(runtime::StepBatch &batch, int32_t s, const Sequence &seq,
              size_t from, size_t to) {
  for (size_t i = from; i < to; ++i)
    batch.addToken(s, seq.tokens[i], int32_t(i), true);
}

/// Runs `batch` and files each row's logits under its sequence and
/// position.
void runStep(runtime::CompiledModel &model, const runtime::StepBatch &batch,
             std::vector<Sequence> &sequences, int32_t vocab) {
  std::vector<float> logits = model.step(batch);
  ASSERT_EQ(logits.size(), batch.numTokens() * size_t(vocab));
  for (size_t t = 0; t < batch.numTokens(); ++t)
    sequences[batch.seqIds[t]].logits[batch.positions[t]].assign(
        logits.begin() + t * vocab, logits.begin() + (t + 1) * vocab);
}

TEST_P(BatchInvarianceTest, SixteenSequencesMatchEachRunAlone) {
  std::string artifact = compile(GetParam());
  if (artifact.empty())
    KILN_REQUIRE_TEST_FILE(test::modelsDir() + "/tiny-0.5M-" + GetParam() +
                           ".gguf");
  runtime::CompiledModelOptions options;
  options.maxSequences = kSequences;
  options.threads = 2;
  std::unique_ptr<runtime::CompiledModel> model =
      runtime::CompiledModel::load(artifact, options);
  const int32_t vocab = int32_t(model->manifest().vocabSize);

  // Alone: the prompt in one step, then one token per step.
  std::vector<Sequence> alone = makeSequences(vocab);
  for (int32_t s = 0; s < kSequences; ++s) {
    Sequence &seq = alone[s];
    runtime::StepBatch prompt;
    addChunk(prompt, s, seq, 0, seq.promptLength);
    runStep(*model, prompt, alone, vocab);
    for (size_t i = seq.promptLength; i < seq.tokens.size(); ++i) {
      runtime::StepBatch one;
      addChunk(one, s, seq, i, i + 1);
      runStep(*model, one, alone, vocab);
    }
    model->freeSequence(s);
  }

  // Together: every step takes a random set of sequences and from each a
  // chunk of 1 to 9 of its next tokens (prefill chunks of any length beside
  // decode tokens), until every sequence is done.
  std::vector<Sequence> together = makeSequences(vocab);
  std::vector<size_t> done(kSequences, 0);
  std::mt19937 rng(2828);
  int steps = 0;
  for (bool left = true; left; ++steps) {
    left = false;
    runtime::StepBatch batch;
    for (int32_t s = 0; s < kSequences; ++s) {
      size_t remaining = together[s].tokens.size() - done[s];
      if (!remaining || rng() % 3 == 0)
        continue;
      size_t take = std::min<size_t>(remaining, 1 + rng() % 9);
      addChunk(batch, s, together[s], done[s], done[s] + take);
      done[s] += take;
    }
    if (batch.numTokens())
      runStep(*model, batch, together, vocab);
    for (int32_t s = 0; s < kSequences; ++s)
      left = left || done[s] < together[s].tokens.size();
  }
  EXPECT_GT(steps, 10);

  for (int32_t s = 0; s < kSequences; ++s)
    for (size_t i = 0; i < alone[s].tokens.size(); ++i) {
      const std::vector<float> &a = alone[s].logits[i],
                               &b = together[s].logits[i];
      ASSERT_EQ(a.size(), size_t(vocab));
      ASSERT_EQ(b.size(), size_t(vocab));
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0)
          << "sequence " << s << ", position " << i
          << ": logits differ between the sequence alone and batched";
    }
}

INSTANTIATE_TEST_SUITE_P(Artifacts, BatchInvarianceTest,
                         ::testing::Values("f32", "bf16", "q8_0", "q4_0"),
                         [](const auto &info) {
                           return std::string(info.param);
                         });

} // namespace
