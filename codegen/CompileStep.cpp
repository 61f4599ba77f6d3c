//===- CompileStep.cpp - From a planned module to a step library ----------===//
//
// Part of Kiln. See CompileStep.h.
//
//===----------------------------------------------------------------------===//

#include "codegen/CompileStep.h"

#include "codegen/cpu/HostCompiler.h"
#include "ir/KilnDialect.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <chrono>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <thread>

using namespace mlir;

namespace kiln::codegen {

namespace {

/// runtime/StepABI.h, embedded when Kiln was built.
constexpr const char *kStepABI =
#include "StepABI.h.inc"
    ;

void writeFile(const std::string &path, const std::string &text) {
  llvm::sys::fs::create_directories(llvm::sys::path::parent_path(path));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out)
    throw std::runtime_error("cannot write '" + path + "'");
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

/// Formats the written sources in the LLVM style when clang-format is
/// installed (scripts/setup installs it), so the kernels users read are laid
/// out like the rest of Kiln; keeps the texts in `sources` in step. The
/// step ABI and the kernel library (kernels/*.h) are Kiln's own files,
/// already formatted: only what the emitter wrote is.
template <typename PathFn>
void formatSources(std::vector<SourceFile> &sources, PathFn in) {
  std::optional<std::string> tool;
  for (const char *name : {"clang-format-19", "clang-format"})
    if (auto path = llvm::sys::findProgramByName(name)) {
      tool = *path;
      break;
    }
  if (!tool)
    return;
  std::vector<size_t> emitted;
  std::vector<std::string> paths;
  for (size_t i = 0; i < sources.size(); ++i) {
    llvm::StringRef name = sources[i].name;
    if (name == "StepABI.h" || name.starts_with("kernels/"))
      continue;
    emitted.push_back(i);
    paths.push_back(in(sources[i].name));
  }
  std::vector<llvm::StringRef> args = {*tool, "-i", "--style=LLVM"};
  for (const std::string &path : paths)
    args.push_back(path);
  if (llvm::sys::ExecuteAndWait(*tool, args) != 0)
    return; // formatting is a courtesy: unformatted sources compile the same
  for (size_t j = 0; j < emitted.size(); ++j) {
    std::ifstream file(paths[j], std::ios::binary);
    sources[emitted[j]].text.assign(std::istreambuf_iterator<char>(file),
                                    std::istreambuf_iterator<char>());
  }
}

} // namespace

func::FuncOp getStepFunction(ModuleOp module) {
  for (auto func : module.getOps<func::FuncOp>())
    if (func->hasAttr(KilnDialect::kStepAttrName))
      return func;
  throw std::runtime_error("the module has no kiln.step function");
}

CompiledStep compileStep(ModuleOp module, WeightProvider &weights,
                         const CompileStepOptions &options) {
  if (options.target.isCuda())
    return compileCudaStep(module, weights, options, kStepABI);
  auto progress = [&](const std::string &stage) {
    if (options.progress)
      options.progress(stage);
  };
  if (std::error_code ec = llvm::sys::fs::create_directories(options.workDir))
    throw std::runtime_error("cannot create '" + options.workDir +
                             "': " + ec.message());
  auto in = [&](const std::string &name) {
    llvm::SmallString<256> path(options.workDir);
    llvm::sys::path::append(path, name);
    return path.str().str();
  };

  CompiledStep compiled;
  auto start = std::chrono::steady_clock::now();
  progress("packing weights");
  compiled.weightsPath = in("weights.bin");
  WeightPacker packer(weights, compiled.weightsPath);
  std::unique_ptr<StepEmitter> emitter = createCpuStepEmitter(options.target);
  EmittedStep emitted = emitter->emit(getStepFunction(module), packer,
                                      {options.weightType, options.cacheType});
  compiled.weightsBytes = packer.finish();
  compiled.weightEntries = packer.entries();
  compiled.arenaBytes = emitted.arenaBytes;
  compiled.maxTokens = emitted.maxTokens;
  compiled.cacheType = options.cacheType;
  compiled.kernelSummaries = emitted.kernelSummaries;

  std::vector<std::string> sources;
  compiled.sources.push_back({"StepABI.h", kStepABI});
  for (const SourceFile &header : emitted.headers)
    compiled.sources.push_back(header);
  for (const SourceFile &kernel : emitted.kernels) {
    compiled.sources.push_back(kernel);
    sources.push_back(in(kernel.name));
  }
  compiled.sources.push_back(emitted.step);
  sources.push_back(in(emitted.step.name));
  for (const SourceFile &file : compiled.sources)
    writeFile(in(file.name), file.text);
  formatSources(compiled.sources, in);
  compiled.emitSeconds = secondsSince(start);

  start = std::chrono::steady_clock::now();
  progress("compiling " + std::to_string(emitted.kernels.size()) + " kernels");
  compiled.libraryPath = in("step.so");
  unsigned jobs = options.jobs
                      ? options.jobs
                      : std::max(1u, std::thread::hardware_concurrency());
  compileSharedLibrary(findHostCompiler(), sources, targetFlags(options.target),
                       compiled.libraryPath, jobs);
  compiled.compileSeconds = secondsSince(start);
  return compiled;
}

} // namespace kiln::codegen
