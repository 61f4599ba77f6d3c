//===- DemoCommand.cpp - kiln demo ----------------------------------------===//
//
// Part of Kiln's command line. See DemoCommand.h.
//
//===----------------------------------------------------------------------===//

#include "tools/kiln/DemoCommand.h"

#include "tools/kiln/BenchCommand.h"
#include "tools/kiln/TerminalProgress.h"

#include "codegen/driver/Compiler.h"
#include "frontends/formats/SyntheticModel.h"
#include "runtime/CompiledModel.h"
#include "runtime/Generator.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace kiln {

namespace {

void say(const std::string &text) {
  std::printf("[kiln demo] %s\n", text.c_str());
  std::fflush(stdout);
}

double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since)
      .count();
}

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

} // namespace

int runDemo(const DemoOptions &o) {
  fs::create_directories(o.dir);
  std::string model = (fs::path(o.dir) / (o.config + ".gguf")).string();
  std::string artifact = (fs::path(o.dir) / (o.config + ".kiln")).string();
  fs::path kernels = fs::path(o.dir) / "kernels";

  // 1. A synthetic model: the weights are random, so the text will be too.
  auto start = std::chrono::steady_clock::now();
  if (!fs::exists(model)) {
    formats::SyntheticModelSpec spec{formats::syntheticConfig(o.config), 0};
    formats::writeSyntheticGGUF(spec, model, formats::ElementType::F32);
    say("made " + model + " (" + o.config + ", random N(0, 0.02) weights, " +
        "seed 0) in " + fixed(seconds(start), 1) + " s");
  } else {
    say("using " + model + " (made earlier)");
  }

  // 2. Compile it for this machine (cached: an unchanged model compiles once).
  CompileOptions compile;
  compile.model = model;
  compile.output = artifact;
  compile.target = o.target;
  compile.emitSource = kernels.string();
  CompileResult compiled;
  {
    TerminalProgress progress(false);
    progress.attach(compile);
    compiled = compileModel(compile);
  }
  say("compiled " + artifact + " for " + o.target + " in " +
      fixed(compiled.seconds, 1) + " s" +
      (compiled.fromCache ? " (from the compile cache)" : ""));

  // 3. Load it (no MLIR from here on) and look inside.
  runtime::CompiledModelOptions options;
  options.threads = o.threads;
  std::unique_ptr<runtime::CompiledModel> loaded =
      runtime::CompiledModel::load(artifact, options);
  const runtime::ArtifactManifest &m = loaded->manifest();
  say("artifact: target " + m.target + ", " + m.weightType + " weights, " +
      std::to_string(m.kernels.size()) + " kernels, arena " +
      fixed(double(m.arenaBytes) / (1024 * 1024), 1) + " MiB for up to " +
      std::to_string(m.maxTokens) + " tokens per step");

  // 4. A short greedy generation.
  runtime::Tokenizer tokenizer(loaded->tokenizerSpec());
  runtime::GenerationOptions generation;
  generation.steps = 40;
  generation.contextLength = int32_t(m.contextLength);
  generation.sampler.temperature = 0;
  std::string text;
  runtime::GenerationResult result = runtime::generate(
      tokenizer,
      [&](const runtime::StepBatch &batch) { return loaded->step(batch); },
      "Once upon a time", generation,
      [&](const std::string &piece) { text += piece; });
  say("generated (random weights, so random words): " + text);
  say("prefill " + std::to_string(result.promptTokens) + " tokens in " +
      fixed(result.prefillSeconds * 1e3, 1) + " ms, decode " +
      std::to_string(result.decodedTokens) + " tokens at " +
      fixed(result.decodeSeconds > 0
                ? result.decodedTokens / result.decodeSeconds
                : 0.0,
            1) +
      " tokens/s on " + std::to_string(loaded->threadPool().threads()) +
      " threads");

  // 5. A quick benchmark against this machine's measured limits: one
  // prompt length, a few decode steps, all cores, a small bandwidth probe.
  say("quick benchmark (kiln bench; a full one: kiln bench " + artifact + ")");
  int threads = loaded->threadPool().threads();
  loaded.reset(); // the bench loads the artifact itself
  BenchOptions bench;
  bench.artifact = artifact;
  bench.promptTokens = {std::min<int64_t>(128, m.maxTokens)};
  bench.genTokens = 32;
  bench.threads = {threads};
  bench.repeat = 1;
  bench.triadArrayBytes = 64ll << 20;
  bench.command = "kiln demo (quick bench: --prompt-tokens " +
                  std::to_string(bench.promptTokens[0]) +
                  " --gen-tokens 32 --repeat 1)";
  std::fflush(stdout);
  runBench(bench);

  say("the artifact:  " + fs::absolute(artifact).string());
  say("its kernels:   " + fs::absolute(kernels).string() + "/ (" +
      std::to_string(compiled.sourcesWritten) +
      " files; step.cpp calls them in order)");
  say("next: kiln run " + artifact + " -p \"...\"; kiln bench " + artifact);
  return 0;
}

} // namespace kiln
