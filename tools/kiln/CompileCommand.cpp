//===- CompileCommand.cpp - kiln compile ----------------------------------===//
//
// Part of Kiln's command line. See CompileCommand.h.
//
//===----------------------------------------------------------------------===//

#include "tools/kiln/CompileCommand.h"

#include "tools/kiln/LoadedModel.h"

#include "codegen/CompileStep.h"
#include "codegen/WriteArtifact.h"
#include "codegen/cpu/HostCompiler.h"
#include "ir/KilnOps.h"
#include "passes/FusionDiagnostics.h"
#include "passes/Pipelines.h"
#include "passes/target/TargetDescription.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace mlir;

namespace kiln {

namespace {

/// Stage messages on a terminal; nothing when stderr is not one.
struct Progress {
  bool enabled;
  int stage = 0, stages;
  std::chrono::steady_clock::time_point start =
      std::chrono::steady_clock::now();

  Progress(bool quiet, int stages)
      : enabled(!quiet && isatty(STDERR_FILENO)), stages(stages) {}
  void operator()(const std::string &what) {
    if (!enabled)
      return;
    double t =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    std::fprintf(stderr, "\r\033[K[%d/%d %5.1fs] %s", ++stage, stages, t,
                 what.c_str());
    std::fflush(stderr);
  }
  void done() {
    if (enabled)
      std::fprintf(stderr, "\r\033[K");
  }
};

codegen::PackedType packedType(const std::string &dtype) {
  if (dtype == "f32")
    return codegen::PackedType::F32;
  if (dtype == "f16")
    return codegen::PackedType::F16;
  if (dtype == "bf16")
    return codegen::PackedType::BF16;
  throw std::runtime_error("--dtype must be f32, f16 or bf16, not '" + dtype +
                           "'");
}

fs::path cacheDirectory() {
  if (const char *dir = std::getenv("KILN_CACHE_DIR"); dir && *dir)
    return dir;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return fs::path(xdg) / "kiln";
  if (const char *home = std::getenv("HOME"); home && *home)
    return fs::path(home) / ".cache" / "kiln";
  return fs::temp_directory_path() / "kiln-cache";
}

/// What an artifact depends on: Kiln's version, the options, and the
/// identity (path, size, modification time) of every input file.
std::string cacheKey(const CompileOptions &o, const std::string &targetSpec) {
  llvm::SHA256 hash;
  auto add = [&](const std::string &text) {
    hash.update(text);
    hash.update(llvm::StringRef("\0", 1));
  };
  add(codegen::kKilnVersion);
  // A rebuilt Kiln may generate other code: the executable's identity.
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  add(self.string());
  add(std::to_string(fs::file_size(self, ec)));
  add(std::to_string(fs::last_write_time(self, ec).time_since_epoch().count()));
  add(targetSpec);
  add(o.dtype);
  add(std::to_string(o.maxTokens));
  add(std::to_string(o.context));
  add(o.fusion ? "fusion" : "no-fusion");
  for (const std::string &file :
       {o.model, o.tokenizer, o.fusionRules, o.tuningFile}) {
    if (file.empty()) {
      add("-");
      continue;
    }
    std::error_code ec;
    fs::path path = fs::absolute(file, ec);
    add(path.string());
    if (fs::is_regular_file(path, ec)) {
      add(std::to_string(fs::file_size(path, ec)));
      add(std::to_string(
          fs::last_write_time(path, ec).time_since_epoch().count()));
    }
  }
  std::array<uint8_t, 32> digest = hash.final();
  std::string hex;
  for (int i = 0; i < 12; ++i) {
    char byte[3];
    std::snprintf(byte, sizeof byte, "%02x", digest[i]);
    hex += byte;
  }
  return hex;
}

/// Compiles without the cache, writing the artifact to `output`.
void compileUncached(const CompileOptions &o,
                     const target::TargetDescription &target,
                     const std::string &output) {
  Progress progress(o.quiet, 6);
  progress("importing " + o.model);
  LoadedModel model = loadModel(o.model);
  runtime::Tokenizer tokenizer = loadTokenizer(model, o.model, o.tokenizer);
  for (auto decl : model.module->getOps<WeightDeclOp>())
    if (isa<BlockQuantizedTypeInterface>(
            decl.getTensorType().getElementType())) {
      std::fprintf(stderr,
                   "kiln: notice: %s has block-quantized (q8_0/q4_0) "
                   "weights; they are widened to %s at compile time until "
                   "Kiln reads them in place\n",
                   o.model.c_str(), o.dtype.c_str());
      break;
    }

  progress("running the pipeline for " + target.name);
  setExplainFusion(o.explainFusion);
  PassManager pm(model.context.get());
  KilnPipelineOptions pipeline;
  pipeline.target = target.spec();
  pipeline.maxTokens = o.maxTokens;
  pipeline.tuningFile = o.tuningFile;
  pipeline.fusionRules = o.fusionRules;
  pipeline.fusion = o.fusion;
  addKilnPipeline(pm, pipeline);
  if (failed(pm.run(*model.module)))
    throw std::runtime_error(o.model + ": the pipeline failed (see the "
                                       "errors above)");

  fs::path work =
      fs::temp_directory_path() / ("kiln-compile-" + std::to_string(getpid()));
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{work};
  codegen::CompileStepOptions step;
  step.target = target;
  step.weightType = packedType(o.dtype);
  step.workDir = work.string();
  step.progress = [&](const std::string &stage) { progress(stage); };
  codegen::CompiledStep compiled =
      codegen::compileStep(*model.module, *model.weights, step);

  progress("writing " + output);
  codegen::ArtifactModelInfo info;
  info.source = fs::absolute(o.model).string();
  info.contextLength = o.context > 0 ? o.context : model.contextLength;
  info.stopsAtEos = model.stopsAtEos;
  info.tokenizer = tokenizer.spec();
  codegen::writeArtifact(*model.module, compiled, step, info, output);
  progress.done();
}

} // namespace

CompileResult compileModel(const CompileOptions &o) {
  auto start = std::chrono::steady_clock::now();
  llvm::Expected<target::TargetDescription> target =
      target::parseTarget(o.target);
  if (!target)
    throw std::runtime_error("--target: " + llvm::toString(target.takeError()));
  if (!target->isCpu())
    throw std::runtime_error("--target " + o.target +
                             ": only CPU targets compile to artifacts yet "
                             "(the CUDA backend comes later)");
  packedType(o.dtype); // check early

  CompileResult result;
  result.artifact = o.output;
  fs::path cached;
  if (o.useCache) {
    fs::path dir = cacheDirectory();
    std::error_code ec;
    fs::create_directories(dir, ec);
    cached = dir / (cacheKey(o, target->spec()) + ".kiln");
    if (fs::exists(cached)) {
      if (fs::absolute(o.output) != fs::absolute(cached)) {
        fs::copy_file(cached, o.output, fs::copy_options::overwrite_existing);
      }
      result.fromCache = true;
    }
  }
  if (!result.fromCache) {
    compileUncached(o, *target, o.output);
    if (!cached.empty() && fs::absolute(o.output) != fs::absolute(cached)) {
      std::error_code ec;
      fs::copy_file(o.output, cached, fs::copy_options::overwrite_existing, ec);
    }
  }
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return result;
}

std::string compiledArtifactFor(const CompileOptions &options) {
  llvm::Expected<target::TargetDescription> target =
      target::parseTarget(options.target);
  if (!target)
    throw std::runtime_error("--target: " + llvm::toString(target.takeError()));
  fs::path dir = cacheDirectory();
  std::error_code ec;
  fs::create_directories(dir, ec);
  CompileOptions o = options;
  o.output = (dir / (cacheKey(options, target->spec()) + ".kiln")).string();
  o.useCache = false;
  if (!fs::exists(o.output))
    compileModel(o);
  return o.output;
}

} // namespace kiln
