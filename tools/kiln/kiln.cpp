//===- kiln.cpp - The kiln command line -----------------------------------===//
//
// Part of Kiln. Subcommands:
//   kiln run MODEL       generate text (compiled; .mlir or --interpret: the
//                        reference interpreter)
//   kiln import MODEL    write the model's kiln module as MLIR text
//   kiln inspect MODEL   print configuration, tensors, tokenizer and chat
//                        template (of a model file or an artifact)
//   kiln tokenize TEXT   print token ids
//   kiln chat-template T C  render chat template T over conversation C
//   kiln targets         print the native and the named compilation targets
//   kiln make-model      write a synthetic Llama with random weights
//   kiln compile MODEL   compile into an artifact (one step library per target)
//   kiln bench ARTIFACT  time prefill and decode against measured limits
//   kiln eval ARTIFACT   perplexity over a text; KL divergence and top-1
//                        agreement against a reference model
//   kiln serve MODEL     an OpenAI-compatible HTTP server (docs/server.md)
//
//===----------------------------------------------------------------------===//

#include "tools/kiln/BenchCommand.h"
#include "tools/kiln/ChatRun.h"
#include "tools/kiln/ChatTemplateCommand.h"
#include "tools/kiln/DemoCommand.h"
#include "tools/kiln/EngineRun.h"
#include "tools/kiln/EvalCommand.h"
#include "tools/kiln/InspectCommand.h"
#include "tools/kiln/InterpreterExecutor.h"
#include "tools/kiln/ServeCommand.h"
#include "tools/kiln/TerminalProgress.h"

#include "codegen/driver/Compiler.h"
#include "codegen/driver/LoadedModel.h"
#include "frontends/formats/Quantize.h"
#include "frontends/formats/SyntheticModel.h"
#include "ir/KilnOps.h"
#include "ir/interpreter/Interpreter.h"
#include "runtime/ChatTemplate.h"
#include "runtime/CompiledModel.h"
#include "runtime/MemoryAmount.h"
#include "runtime/engine/CompiledModelExecutor.h"

#include "passes/target/TargetDescription.h"

#include "mlir/IR/Verifier.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

using namespace mlir;
using namespace kiln;

namespace {

//===----------------------------------------------------------------------===//
// kiln run
//===----------------------------------------------------------------------===//

struct RunOptions {
  std::string model, tokenizer, prompt;
  int32_t steps = 256;
  float temperature = 1.0f, topP = 0.9f, minP = 0.0f;
  float repetitionPenalty = 1.0f;
  int32_t topK = 0;
  std::string promptsFile; ///< --prompts: one prompt a line
  int32_t concurrency = 1; ///< --concurrency: prompts in flight
  uint64_t seed = 0;
  int32_t context = 0;
  bool fusion = false, explainFusion = false;
  std::string fusionRules;
  bool interpret = false;
  std::string target = "native", dtype, kvType = "f32";
  int threads = 0;
  /// KV cache blocks: bytes ("512MiB") or a share of available memory
  /// ("40%"); empty: enough for the whole context.
  std::string kvMemory;
  bool noParseSpecial = false; ///< control-token text stays text
  bool chat = false;           ///< --chat: through the chat template
  std::string chatTemplate;    ///< --chat-template FILE
  bool printPrompt = false;    ///< --print-prompt
};

/// Checks a --kv-memory value when the command line is parsed.
CLI::Validator memoryAmount() {
  return CLI::Validator(
      [](std::string &text) -> std::string {
        try {
          runtime::MemoryAmount::parse(text);
          return "";
        } catch (const std::invalid_argument &e) {
          return e.what();
        }
      },
      "SIZE|PERCENT%");
}

/// The sampling settings of `kiln run`'s flags.
runtime::SamplingParams samplingOf(const RunOptions &o) {
  runtime::SamplingParams p;
  p.temperature = o.temperature;
  p.topP = o.topP;
  p.topK = o.topK;
  p.minP = o.minP;
  p.repetitionPenalty = o.repetitionPenalty;
  if (o.seed)
    p.seed = o.seed;
  else // the time, as llama2.c seeds
    p.seed = static_cast<uint64_t>(
        std::chrono::system_clock::now().time_since_epoch().count());
  return p;
}

/// Runs what `kiln run` was asked to on `engine`: a chat, a prompts file or
/// one prompt.
int runOnEngine(const RunOptions &o, runtime::Engine &engine) {
  runtime::SamplingParams sampling = samplingOf(o);
  if (o.chat) {
    ChatRunOptions chat;
    chat.prompt = o.prompt;
    chat.templatePath = o.chatTemplate;
    chat.printPrompt = o.printPrompt;
    chat.maxTokens = o.steps;
    chat.sampling = sampling;
    return runChat(chat, engine);
  }
  EngineRunOptions run;
  run.steps = o.steps;
  run.sampling = sampling;
  if (!o.promptsFile.empty())
    return runPromptFile(engine, o.promptsFile, o.concurrency, run);
  return runOnePrompt(engine, o.prompt, run);
}

/// The engine's sequences: one per request in flight.
int32_t sequencesFor(const RunOptions &o) {
  return o.promptsFile.empty() ? 1 : o.concurrency;
}

/// Runs a compiled artifact: no MLIR involved.
int runArtifact(const RunOptions &o, const std::string &path) {
  runtime::CompiledModelOptions options;
  options.threads = o.threads;
  options.contextLength = o.context;
  options.maxSequences = sequencesFor(o);
  if (!o.kvMemory.empty())
    options.kvMemoryBytes = runtime::MemoryAmount::parse(o.kvMemory).resolve();
  std::unique_ptr<runtime::CompiledModel> model =
      runtime::CompiledModel::load(path, options);
  if (model->manifest().libraries.size() > 1)
    std::fprintf(stderr, "kiln: using %s\n",
                 model->stepLibraryChoice().c_str());
  runtime::Tokenizer tokenizer =
      o.tokenizer.empty() ? runtime::Tokenizer(model->tokenizerSpec())
                          : runtime::Tokenizer(readTokenizerFile(o.tokenizer));
  tokenizer.setParseSpecial(!o.noParseSpecial);
  std::vector<int32_t> stops =
      runtime::modelStopTokens(tokenizer.spec(), model->manifest().stopsAtEos);
  const runtime::PagedKVCache &kv = model->kvCache();
  runtime::Engine engine(
      std::make_unique<runtime::CompiledModelExecutor>(std::move(model)),
      std::move(tokenizer), std::move(stops));
  int status = runOnEngine(o, engine);
  runtime::EngineMetrics m = engine.metrics();
  std::fprintf(stderr,
               "kiln: KV cache: at most %d of %d blocks of %d positions used, "
               "%lld bytes a position, %.1f MiB pool\n",
               m.kvPeakUsedBlocks, m.kv.totalBlocks, m.kv.blockPositions,
               static_cast<long long>(kv.bytesPerPosition()),
               double(kv.poolBytes()) / (1024.0 * 1024.0));
  return status;
}

/// Runs the IR in the reference interpreter (.mlir modules, --interpret,
/// --fusion experiments).
int runInterpreted(const RunOptions &o) {
  LoadedModel model = loadModel(o.model);
  if (o.fusion || !o.fusionRules.empty())
    fuseLoadedModel(model, o.fusion, o.explainFusion, o.fusionRules);
  runtime::Tokenizer tokenizer = loadTokenizer(model, o.model, o.tokenizer);
  tokenizer.setParseSpecial(!o.noParseSpecial);
  int32_t context = o.context > 0 ? o.context : int32_t(model.contextLength);
  if (context <= 0)
    context = o.steps;
  std::vector<int32_t> stops =
      runtime::modelStopTokens(tokenizer.spec(), model.stopsAtEos);
  runtime::Engine engine(
      std::make_unique<InterpreterExecutor>(
          model, findStepFunction(*model.module), sequencesFor(o), context),
      std::move(tokenizer), std::move(stops));
  return runOnEngine(o, engine);
}

int run(const RunOptions &o) {
  if (runtime::hasArtifactMagic(o.model))
    return runArtifact(o, o.model);
  bool interpreted = o.interpret || o.fusion || !o.fusionRules.empty() ||
                     llvm::StringRef(o.model).ends_with(".mlir");
  if (interpreted)
    return runInterpreted(o);
  // A model file: compile it into the cache (instant when unchanged), run
  // the artifact.
  CompileOptions compile;
  compile.model = o.model;
  compile.tokenizer = o.tokenizer;
  compile.target = o.target;
  compile.dtype = o.dtype;
  compile.kvType = o.kvType;
  compile.context = o.context;
  TerminalProgress progress(false);
  progress.attach(compile);
  return runArtifact(o, compiledArtifactFor(compile));
}

//===----------------------------------------------------------------------===//
// kiln compile
//===----------------------------------------------------------------------===//

int compile(CompileOptions o, bool quiet) {
  CompileResult result;
  {
    TerminalProgress progress(quiet);
    progress.attach(o);
    result = compileModel(o);
  }
  std::string targets;
  if (result.targets.size() > 1)
    for (const std::string &name : result.targets)
      targets += (targets.empty() ? " for " : ", ") + name;
  const char *cached =
      result.fromCache ? " (unchanged: from the compile cache)" : "";
  if (!result.artifact.empty()) {
    std::error_code ec;
    uintmax_t bytes = std::filesystem::file_size(result.artifact, ec);
    std::printf("wrote %s%s (%.1f MiB) in %.2f s%s\n", result.artifact.c_str(),
                targets.c_str(), double(bytes) / (1024.0 * 1024.0),
                result.seconds, cached);
  }
  if (!o.emitSource.empty())
    std::printf("wrote %zu generated sources%s to %s%s\n",
                result.sourcesWritten, targets.c_str(), o.emitSource.c_str(),
                result.artifact.empty() ? cached : "");
  return 0;
}

//===----------------------------------------------------------------------===//
// kiln import
//===----------------------------------------------------------------------===//

int import(const std::string &modelPath, const std::string &output) {
  auto context = makeContext();
  ImportedModel model = readModel(modelPath);
  // The weights path is written relative to the output's directory, so the
  // module runs again from wherever the pair is moved together.
  if (output != "-") {
    namespace fs = std::filesystem;
    fs::path outDir = fs::absolute(output).parent_path();
    model.location.path =
        fs::relative(fs::absolute(modelPath), outDir).string();
  }
  OwningOpRef<ModuleOp> module = importModel(context.get(), model);
  if (failed(verify(*module)))
    throw std::runtime_error(modelPath + ": the imported module does not "
                                         "verify");
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os);
  if (output == "-") {
    std::cout << os.str();
    return 0;
  }
  std::ofstream out(output);
  out << os.str();
  if (!out)
    throw std::runtime_error(output + ": cannot write");
  return 0;
}

//===----------------------------------------------------------------------===//
// kiln tokenize
//===----------------------------------------------------------------------===//

int tokenize(const std::string &tokenizerPath, const std::string &text,
             bool noBos, bool noParseSpecial) {
  runtime::Tokenizer tokenizer(readTokenizerFile(tokenizerPath));
  tokenizer.setParseSpecial(!noParseSpecial);
  std::vector<int32_t> ids = tokenizer.encode(text, !noBos);
  for (size_t i = 0; i < ids.size(); ++i)
    std::printf("%s%d", i ? " " : "", ids[i]);
  std::printf("\n");
  return 0;
}

//===----------------------------------------------------------------------===//
// kiln targets
//===----------------------------------------------------------------------===//

/// With a spec: that target's description. Without: this machine's, then a
/// line for each named target.
int targets(const std::string &spec) {
  llvm::raw_ostream &os = llvm::outs();
  if (!spec.empty()) {
    llvm::Expected<target::TargetDescription> t = target::parseTarget(spec);
    if (!t)
      throw std::runtime_error(llvm::toString(t.takeError()));
    target::printTarget(os, *t);
    os.flush();
    return 0;
  }
  os << "native (detected on this machine):\n";
  target::printTarget(os, target::detectHostCpu());
  os << "\nnamed targets (--target NAME[,key=value...]; docs/targets.md):\n";
  for (const std::string &name : target::namedTargets())
    os << "  " << llvm::left_justify(name, 18)
       << target::summarizeTarget(llvm::cantFail(target::parseTarget(name)))
       << "\n";
  os.flush();
  return 0;
}

//===----------------------------------------------------------------------===//
// kiln make-model
//===----------------------------------------------------------------------===//

struct MakeModelOptions {
  std::string config, format = "gguf", dtype = "f32", output, chatTemplate;
  uint64_t seed = 0;
  int llama2cVersion = 0;
  int shards = 1;
};

/// "260.1K", "109.5M", "1.10B".
std::string humanCount(uint64_t n) {
  char text[32];
  double v = static_cast<double>(n);
  if (v >= 1e9)
    std::snprintf(text, sizeof text, "%.2fB", v / 1e9);
  else if (v >= 1e6)
    std::snprintf(text, sizeof text, "%.1fM", v / 1e6);
  else
    std::snprintf(text, sizeof text, "%.1fK", v / 1e3);
  return text;
}

/// "5.0 KiB", "417.9 MiB", "4.10 GiB".
std::string humanBytes(uint64_t n) {
  char text[32];
  double v = static_cast<double>(n);
  if (v >= 1024.0 * 1024 * 1024)
    std::snprintf(text, sizeof text, "%.2f GiB", v / (1024.0 * 1024 * 1024));
  else if (v >= 1024.0 * 1024)
    std::snprintf(text, sizeof text, "%.1f MiB", v / (1024.0 * 1024));
  else
    std::snprintf(text, sizeof text, "%.1f KiB", v / 1024.0);
  return text;
}

/// Runs `write` to make `path`; removes a half-written file when it throws.
template <typename Write>
uint64_t writeOrRemove(const std::string &path, Write write) {
  try {
    return write();
  } catch (...) {
    std::remove(path.c_str());
    throw;
  }
}

/// Writes a synthetic model (and, for llama2.c, its tokenizer.bin beside
/// it) and says what was written.
int makeModel(const MakeModelOptions &o) {
  namespace fs = std::filesystem;
  formats::SyntheticModelSpec spec{formats::syntheticConfig(o.config), o.seed};
  if (!o.chatTemplate.empty())
    spec.chatTemplate = runtime::readChatTemplateFile(o.chatTemplate);
  bool llama2c = o.format == "llama2c", hf = o.format == "hf";
  if (llama2c && o.dtype != "f32")
    throw std::runtime_error("llama2.c checkpoints are float32; use --format "
                             "gguf for --dtype " +
                             o.dtype);
  if (o.shards != 1 && !hf)
    throw std::runtime_error("--shards splits Hugging Face weights; use "
                             "--format hf");
  std::optional<formats::QuantizationScheme> quantized =
      formats::parseQuantizationScheme(o.dtype);
  if (quantized && o.format != "gguf")
    throw std::runtime_error("--dtype " + o.dtype +
                             " is a GGUF block type; use --format gguf");
  if (quantized)
    for (const formats::ModelTensor &t : formats::modelTensors(spec.config)) {
      formats::ElementType blocks =
          formats::schemeTensorType(*quantized, t.name, t.shape);
      if (formats::isBlockQuantized(blocks) &&
          !formats::rowBytes(blocks, t.shape.back()))
        throw std::runtime_error(
            "--dtype " + o.dtype + ": the " + o.config + " config's tensor '" +
            t.name + "' has rows of " + std::to_string(t.shape.back()) +
            " weights, not a multiple of the " +
            std::to_string(formats::blockSize(blocks)) + "-weight block");
    }
  formats::ElementType type = o.dtype == "f16"    ? formats::ElementType::F16
                              : o.dtype == "bf16" ? formats::ElementType::BF16
                                                  : formats::ElementType::F32;
  uint64_t bytes;
  std::string written;
  if (hf) {
    // A directory: removed after a failure only if this made it.
    bool existed = fs::exists(o.output);
    try {
      bytes =
          formats::writeSyntheticHuggingFace(spec, o.output, type, o.shards);
    } catch (...) {
      if (!existed)
        fs::remove_all(o.output);
      throw;
    }
    written = "Hugging Face directory (config.json, " +
              std::string(o.shards == 1 ? "model.safetensors"
                                        : std::to_string(o.shards) +
                                              " safetensors shards") +
              ", tokenizer.json)";
  } else {
    bytes = writeOrRemove(o.output, [&] {
      if (llama2c)
        return formats::writeSyntheticLlama2c(spec, o.output, o.llama2cVersion);
      if (!quantized)
        return formats::writeSyntheticGGUF(spec, o.output, type);
      // As llama.cpp makes them: an F32 file, then quantized with
      // llama-quantize's rules (--pure, or the q4_k_m mix:
      // formats/Quantize.h).
      std::string f32 = o.output + ".f32.tmp";
      struct Remove {
        std::string path;
        ~Remove() { std::remove(path.c_str()); }
      } remove{f32};
      formats::writeSyntheticGGUF(spec, f32, formats::ElementType::F32);
      return formats::quantizeGGUFFile(f32, o.output, *quantized);
    });
    written = !llama2c                ? "GGUF v3"
              : o.llama2cVersion == 1 ? "llama2.c checkpoint (version 1)"
                                      : "llama2.c checkpoint (legacy)";
  }

  const formats::ModelConfig &c = spec.config;
  std::printf("wrote %s: %s, %s, %s\n", o.output.c_str(), written.c_str(),
              o.dtype.c_str(), humanBytes(bytes).c_str());
  std::printf("  config      %s: dim %lld, hidden %lld, %lld layers, %lld "
              "heads (%lld kv), vocab %lld, context %lld, %s classifier\n",
              o.config.c_str(), (long long)c.dim, (long long)c.hiddenDim,
              (long long)c.numLayers, (long long)c.numHeads,
              (long long)c.numKvHeads, (long long)c.vocabSize,
              (long long)c.contextLength, c.tiedClassifier ? "tied" : "untied");
  uint64_t parameters = formats::syntheticParameterCount(c);
  std::printf("  parameters  %s (%llu), N(0, %g) weights from seed %llu\n",
              humanCount(parameters).c_str(), (unsigned long long)parameters,
              formats::kSyntheticWeightStddev, (unsigned long long)o.seed);
  if (!llama2c)
    return 0;

  // llama2.c keeps the vocabulary in a file of its own.
  std::string tokenizerPath = o.output + ".tokenizer.bin";
  uint64_t tokenizerBytes = writeOrRemove(tokenizerPath, [&] {
    return formats::writeLlama2cTokenizer(
        formats::syntheticVocabulary(c.vocabSize, " "), tokenizerPath);
  });
  std::printf("wrote %s: llama2.c tokenizer, %lld tokens, %s\n",
              tokenizerPath.c_str(), (long long)c.vocabSize,
              humanBytes(tokenizerBytes).c_str());
  std::printf("  run it with --tokenizer %s\n", tokenizerPath.c_str());
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"Kiln: a compiler for Transformer inference"};
  app.require_subcommand(1);

  RunOptions runOptions;
  CLI::App *runCmd = app.add_subcommand(
      "run", "Generate text with a model (GGUF, llama2.c, a Hugging Face "
             "directory or .mlir)");
  runCmd->add_option("model", runOptions.model, "Model file or .mlir module")
      ->required();
  runCmd->add_option("--tokenizer", runOptions.tokenizer,
                     "tokenizer.bin, tokenizer.json or a GGUF holding the "
                     "vocabulary");
  runCmd->add_option("-p,--prompt", runOptions.prompt, "Prompt text");
  runCmd->add_flag("--no-parse-special", runOptions.noParseSpecial,
                   "Tokenize control-token text in the prompt (<s>, "
                   "<|eot_id|>, ...) as the characters it is, not as the "
                   "control token");
  CLI::Option *chatFlag =
      runCmd->add_flag("--chat", runOptions.chat,
                       "Chat through the model's chat template: -p is the "
                       "user's turn (without -p, a turn per line of stdin); "
                       "the reply ends at an end-of-turn token");
  runCmd
      ->add_option("--chat-template", runOptions.chatTemplate,
                   "With --chat: this Jinja chat template instead of the "
                   "model's (or Kiln's default, Llama 2's [INST] format, "
                   "for a model without one)")
      ->needs(chatFlag);
  runCmd
      ->add_flag("--print-prompt", runOptions.printPrompt,
                 "With --chat: print each rendered prompt on stderr")
      ->needs(chatFlag);
  runCmd
      ->add_option("-n,--steps", runOptions.steps,
                   "Positions to run, prompt included (default 256); with "
                   "--chat, the most tokens of each reply")
      ->check(CLI::PositiveNumber);
  runCmd
      ->add_option("--temperature", runOptions.temperature,
                   "0 for greedy (default 1.0)")
      ->check(CLI::NonNegativeNumber);
  runCmd
      ->add_option("--top-p", runOptions.topP,
                   "Nucleus sampling mass (default 0.9; 1 disables)")
      ->check(CLI::Range(0.0f, 1.0f));
  runCmd
      ->add_option("--top-k", runOptions.topK,
                   "Sample among the k most likely tokens (default off)")
      ->check(CLI::NonNegativeNumber);
  runCmd
      ->add_option("--min-p", runOptions.minP,
                   "Keep tokens at least this times as likely as the most "
                   "likely one (default 0: off)")
      ->check(CLI::Range(0.0f, 1.0f));
  runCmd
      ->add_option("--repetition-penalty", runOptions.repetitionPenalty,
                   "Divide the logits of tokens already seen (positive) or "
                   "multiply them (negative) by this (default 1: off)")
      ->check(CLI::PositiveNumber);
  CLI::Option *promptsOption =
      runCmd
          ->add_option("--prompts", runOptions.promptsFile,
                       "Generate for every line of this file (a prompt a "
                       "line); each output is printed on its own line, in "
                       "input order, with newlines written as \\n")
          ->excludes("--prompt")
          ->excludes(chatFlag);
  runCmd
      ->add_option("--concurrency", runOptions.concurrency,
                   "With --prompts: prompts generated at once, batched "
                   "into the same steps (default 1)")
      ->check(CLI::PositiveNumber)
      ->needs(promptsOption);
  runCmd->add_option("--seed", runOptions.seed,
                     "Random seed (default: the time)");
  runCmd
      ->add_option("--context", runOptions.context,
                   "Context length (default: the model's)")
      ->check(CLI::PositiveNumber);
  runCmd->add_flag("--fusion", runOptions.fusion,
                   "Run the fusion passes on the IR before executing it");
  runCmd->add_flag("--explain-fusion", runOptions.explainFusion,
                   "With --fusion or --fusion-rules: a remark for every "
                   "candidate not fused");
  runCmd->add_option("--fusion-rules", runOptions.fusionRules,
                     "After --fusion (if given), apply the user fusion rules "
                     "of this .pdll or PDL .mlir file");
  runCmd->add_flag("--interpret", runOptions.interpret,
                   "Run the IR in the reference interpreter instead of "
                   "compiling (implied by .mlir, --fusion, --fusion-rules)");
  runCmd->add_option("--target", runOptions.target,
                     "Target to compile a model file for (default native)");
  runCmd
      ->add_option("--dtype", runOptions.dtype,
                   "Packed weight type when compiling: f32, f16, bf16 "
                   "(default: the model's own types)")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
  runCmd
      ->add_option("--kv-type", runOptions.kvType,
                   "KV cache element type when compiling: f32, f16, bf16")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
  runCmd
      ->add_option("--threads", runOptions.threads,
                   "Threads for a compiled model (default: all cores)")
      ->check(CLI::NonNegativeNumber);
  runCmd
      ->add_option("--kv-memory", runOptions.kvMemory,
                   "KV cache blocks for a compiled model: bytes (512MiB, "
                   "2GiB) or a share of available memory (40%) (default: "
                   "enough for the whole context)")
      ->check(memoryAmount());

  DemoOptions demoOptions;
  CLI::App *demoCmd = app.add_subcommand(
      "demo", "Make a synthetic model, compile it, generate and benchmark");
  demoCmd
      ->add_option("--config", demoOptions.config,
                   "Synthetic model shape: llama-110m (default), llama-1b, "
                   "tiny, tiny-llama3")
      ->check(CLI::IsMember(formats::syntheticConfigNames()));
  demoCmd->add_option("--dir", demoOptions.dir,
                      "Where the model, artifact and kernels go (default "
                      "kiln-demo)");
  demoCmd->add_option("--target", demoOptions.target,
                      "Target (default native)");
  demoCmd
      ->add_option("--threads", demoOptions.threads,
                   "Threads (default: all cores)")
      ->check(CLI::NonNegativeNumber);

  CompileOptions compileOptions;
  bool compileQuiet = false;
  CLI::App *compileCmd = app.add_subcommand(
      "compile", "Compile a model into an executable artifact");
  compileCmd
      ->add_option("model", compileOptions.model,
                   "Model file or directory, or a .mlir module (kiln import)")
      ->required();
  compileCmd->add_option("-o,--output", compileOptions.output,
                         "Artifact file (required unless --emit-source)");
  compileCmd->add_option("--target", compileOptions.target,
                         "native (default), portable, avx2, avx512[+bf16], "
                         "with ,key=value overrides (docs/targets.md); "
                         "several (portable,avx2,avx512) make one artifact "
                         "that runs the best this CPU supports; or one GPU: "
                         "cuda:sm_80|sm_86|sm_89|sm_90, cuda:native (asks "
                         "the CUDA driver)");
  compileCmd->add_option("--emit-source", compileOptions.emitSource,
                         "Write the generated kernel sources into this "
                         "directory (a subdirectory per target when several)");
  compileCmd
      ->add_option("--dtype", compileOptions.dtype,
                   "Pack every matrix as f32, f16 or bf16 (default: keep "
                   "the model's types; quantized blocks stay blocks)")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
  compileCmd
      ->add_option("--kv-type", compileOptions.kvType,
                   "KV cache element type: f32 (default), f16, bf16")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
  compileCmd
      ->add_option("--quantize", compileOptions.quantize,
                   "Quantize an f32/f16/bf16 model's matrices to q8_0, "
                   "q4_0, q4_k, q5_k or q6_k blocks as llama-quantize --pure "
                   "does, or to llama.cpp's q4_k_m mix, read in place "
                   "(docs/quantization.md)")
      ->check(
          CLI::IsMember({"q8_0", "q4_0", "q4_k", "q5_k", "q6_k", "q4_k_m"}));
  compileCmd->add_option("--tokenizer", compileOptions.tokenizer,
                         "Tokenizer to store (default: the model's)");
  compileCmd->add_option("--chat-template", compileOptions.chatTemplate,
                         "Jinja chat template to store instead of the "
                         "model's (kiln run --chat uses it)");
  compileCmd->add_option("--fusion-rules", compileOptions.fusionRules,
                         "User fusion rules (.pdll or PDL .mlir)");
  compileCmd->add_flag("--explain-fusion", compileOptions.explainFusion,
                       "A remark for every fusion candidate not fused");
  compileCmd->add_flag(
      "--no-fusion", [&](int64_t) { compileOptions.fusion = false; },
      "Skip Kiln's fusion passes: the model as imported, every op its own "
      "kernel (--fusion-rules still apply), to measure what fusion is worth");
  compileCmd->add_option("--tuning-file", compileOptions.tuningFile,
                         "Tile overrides (docs/passes/tiling.md)");
  compileCmd
      ->add_option("--max-tokens", compileOptions.maxTokens,
                   "Most tokens per step (default 512)")
      ->check(CLI::PositiveNumber);
  compileCmd
      ->add_option("--context", compileOptions.context,
                   "KV cache positions (default: the model's)")
      ->check(CLI::PositiveNumber);
  compileCmd->add_flag(
      "--no-cache", [&](int64_t) { compileOptions.useCache = false; },
      "Compile even if the cache has this artifact");
  compileCmd->add_flag("-q,--quiet", compileQuiet, "No progress");

  std::string importModelPath, importOutput = "-";
  CLI::App *importCmd =
      app.add_subcommand("import", "Write a model's kiln module as MLIR text");
  importCmd->add_option("model", importModelPath, "Model file or directory")
      ->required();
  importCmd->add_option("-o,--output", importOutput,
                        "Output .mlir file (default: stdout)");

  std::string inspectModelPath;
  CLI::App *inspectCmd = app.add_subcommand(
      "inspect", "Print a model's or an artifact's configuration, tensors "
                 "(sections), tokenizer and chat template");
  inspectCmd
      ->add_option("model", inspectModelPath,
                   "Model file or directory, or an artifact")
      ->required();

  std::string tokenizerPath, text;
  bool noBos = false, noParseSpecial = false;
  CLI::App *tokenizeCmd =
      app.add_subcommand("tokenize", "Print the token ids of a text");
  tokenizeCmd
      ->add_option("--tokenizer", tokenizerPath,
                   "tokenizer.bin, tokenizer.json, a GGUF, or a Hugging Face "
                   "model directory")
      ->required();
  tokenizeCmd->add_option("text", text, "Text to encode")->required();
  tokenizeCmd->add_flag("--no-bos", noBos,
                        "Do not start with BOS (none is added anyway when "
                        "the text starts with it)");
  tokenizeCmd->add_flag("--no-parse-special", noParseSpecial,
                        "Tokenize control-token text such as <s> as the "
                        "characters it is, not as the control token");

  ChatTemplateCommandOptions chatTemplateOptions;
  CLI::App *chatTemplateCmd = app.add_subcommand(
      "chat-template", "Render a chat template over a conversation and print "
                       "the prompt (nothing else)");
  chatTemplateCmd
      ->add_option("template", chatTemplateOptions.templatePath,
                   "Jinja chat template file")
      ->required();
  chatTemplateCmd
      ->add_option("conversation", chatTemplateOptions.conversationPath,
                   "JSON object: {\"messages\": [{\"role\": ..., "
                   "\"content\": ...}], \"add_generation_prompt\": true}; "
                   "other members (e.g. tools) are template variables too")
      ->required();
  chatTemplateCmd->add_option("--bos-token", chatTemplateOptions.bosToken,
                              "bos_token's text (default <s>)");
  chatTemplateCmd->add_option("--eos-token", chatTemplateOptions.eosToken,
                              "eos_token's text (default </s>)");
  chatTemplateCmd->add_option("--date", chatTemplateOptions.date,
                              "YYYY-MM-DD that strftime_now() formats "
                              "(default: today)");

  std::string targetSpec;
  CLI::App *targetsCmd = app.add_subcommand(
      "targets", "Print this machine's target and the named targets");
  targetsCmd->add_option("--target", targetSpec,
                         "Print only this target (native, avx2, "
                         "cuda:sm_90,smem=100KiB, ...) and its canonical spec");

  MakeModelOptions makeModelOptions;
  CLI::App *makeModelCmd = app.add_subcommand(
      "make-model", "Write a synthetic Llama with random weights (for demos "
                    "and benchmarks)");
  makeModelCmd
      ->add_option("--config", makeModelOptions.config,
                   "Shape: llama-110m, llama-1b, tiny or tiny-llama3 (tiny "
                   "with Llama 3.1 rope scaling from a context of 64)")
      ->required()
      ->check(CLI::IsMember(formats::syntheticConfigNames()));
  makeModelCmd->add_option("--seed", makeModelOptions.seed,
                           "Seed of the weights (default 0)");
  makeModelCmd
      ->add_option("--format", makeModelOptions.format,
                   "gguf (default; holds its vocabulary), llama2c (writes "
                   "FILE.tokenizer.bin beside it) or hf (a Hugging Face "
                   "directory with config.json, safetensors and "
                   "tokenizer.json)")
      ->check(CLI::IsMember({"gguf", "llama2c", "hf"}));
  makeModelCmd
      ->add_option("--dtype", makeModelOptions.dtype,
                   "Weight type: f32 (default), f16 or bf16 (GGUF and hf); "
                   "q8_0, q4_0, q4_k, q5_k, q6_k (GGUF: matrices quantized "
                   "as llama-quantize --pure does, norms f32) or q4_k_m "
                   "(llama.cpp's mix)")
      ->check(CLI::IsMember({"f32", "f16", "bf16", "q8_0", "q4_0", "q4_k",
                             "q5_k", "q6_k", "q4_k_m"}));
  makeModelCmd
      ->add_option("--llama2c-version", makeModelOptions.llama2cVersion,
                   "llama2.c layout: 0 (legacy, default) or 1 (export.py's "
                   "version 1)")
      ->check(CLI::IsMember({0, 1}));
  makeModelCmd
      ->add_option("--shards", makeModelOptions.shards,
                   "hf: split the weights into N safetensors files with an "
                   "index (default 1)")
      ->check(CLI::Range(1, 99999));
  makeModelCmd->add_option("--chat-template", makeModelOptions.chatTemplate,
                           "Jinja chat template to store with the "
                           "vocabulary (GGUF and hf)");
  makeModelCmd
      ->add_option("-o,--output", makeModelOptions.output,
                   "Model file (a directory for --format hf)")
      ->required();

  BenchOptions benchOptions;
  CLI::App *benchCmd = app.add_subcommand(
      "bench", "Time prefill and decode of an artifact against the machine's "
               "measured read bandwidth and FMA peak (bench/README.md)");
  benchCmd->add_option("artifact", benchOptions.artifact, "Artifact file")
      ->required();
  benchCmd
      ->add_option("--prompt-tokens", benchOptions.promptTokens,
                   "Prompt lengths to prefill (default 128,512)")
      ->delimiter(',');
  benchCmd
      ->add_option("--gen-tokens", benchOptions.genTokens,
                   "Tokens to decode (default 128)")
      ->check(CLI::PositiveNumber);
  benchCmd
      ->add_option("--threads", benchOptions.threads,
                   "Thread counts (default: 1 and all cores)")
      ->delimiter(',');
  benchCmd
      ->add_option("--repeat", benchOptions.repeat,
                   "Timed runs of each; the median is reported, with the "
                   "slowest and fastest (default 5)")
      ->check(CLI::PositiveNumber);
  benchCmd->add_option("--seed", benchOptions.seed,
                       "Seed of the random token ids (default 1)");
  benchCmd
      ->add_option_function<int64_t>(
          "--triad-mib",
          [&](int64_t mib) { benchOptions.triadArrayBytes = mib << 20; },
          "MiB of each triad array; the read probe reads 3x this "
          "(default: 4x the last-level cache in all, at least 256 each)")
      ->check(CLI::PositiveNumber);
  benchCmd->add_option("--json", benchOptions.json, "Write every number here");
  benchCmd->add_option("--plot", benchOptions.plot,
                       "Draw tokens/s vs threads into this PNG (gnuplot)");
  benchCmd->add_flag("--profile", benchOptions.profile,
                     "Add per-kernel time tables for a prefill and a decode");
  benchCmd->add_flag("--keep-page-cache", benchOptions.keepPageCache,
                     "Do not evict the artifact from the page cache before "
                     "each load (bench/README.md)");
  benchCmd->add_flag("--mapped-weights", benchOptions.mappedWeights,
                     "Read the weights in the artifact's mapping, not in the "
                     "copy in transparent huge pages the runtime makes by "
                     "default (bench/README.md)");
  benchCmd
      ->add_option("--batch", benchOptions.batch,
                   "Batch sizes: time decode of B sequences together, one "
                   "token of each a step, instead of the usual figures "
                   "(bench/README.md, \"Batched decode\")")
      ->delimiter(',');
  benchCmd
      ->add_option("--kv-memory", benchOptions.kvMemory,
                   "With --batch: the KV cache's block pool, bytes (2GiB) or "
                   "a share of available memory (40%) (default: enough for "
                   "every sequence)")
      ->check(memoryAmount());

  ServeOptions serveOptions;
  CLI::App *serveCmd = addServeCommand(app, serveOptions);

  EvalOptions evalOptions;
  CLI::App *evalCmd = addEvalCommand(app, evalOptions);

  CLI11_PARSE(app, argc, argv);

  try {
    if (*runCmd)
      return run(runOptions);
    if (*compileCmd)
      return compile(compileOptions, compileQuiet);
    if (*demoCmd)
      return runDemo(demoOptions);
    if (*importCmd)
      return import(importModelPath, importOutput);
    if (*inspectCmd)
      return runInspect(inspectModelPath);
    if (*tokenizeCmd)
      return tokenize(tokenizerPath, text, noBos, noParseSpecial);
    if (*chatTemplateCmd)
      return runChatTemplate(chatTemplateOptions);
    if (*targetsCmd)
      return targets(targetSpec);
    if (*benchCmd) {
      benchOptions.command = "kiln";
      for (int i = 1; i < argc; ++i)
        benchOptions.command += std::string(" ") + argv[i];
      return runBench(benchOptions);
    }
    if (*makeModelCmd)
      return makeModel(makeModelOptions);
    if (*serveCmd)
      return runServe(serveOptions);
    if (*evalCmd)
      return runEval(evalOptions);
  } catch (const std::exception &e) {
    std::fflush(stdout);
    std::fprintf(stderr, "kiln: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
