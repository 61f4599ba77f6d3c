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

void writeStepFile(const std::string &path, std::string_view text) {
  llvm::sys::fs::create_directories(llvm::sys::path::parent_path(path));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), std::streamsize(text.size()));
  if (!out)
    throw std::runtime_error("cannot write '" + path + "'");
}

std::string EmittedStepFiles::path(const std::string &name) const {
  llvm::SmallString<256> joined(workDir);
  llvm::sys::path::append(joined, name);
  return joined.str().str();
}

EmittedStepFiles emitStepFiles(ModuleOp module, WeightProvider &weights,
                               const CompileStepOptions &options,
                               StepEmitter &emitter,
                               const std::string &stepAbiText) {
  if (std::error_code ec = llvm::sys::fs::create_directories(options.workDir))
    throw std::runtime_error("cannot create '" + options.workDir +
                             "': " + ec.message());
  EmittedStepFiles files;
  files.workDir = options.workDir;
  auto start = std::chrono::steady_clock::now();
  if (options.progress)
    options.progress("packing weights");
  CompiledStep &compiled = files.compiled;
  compiled.weightsPath = files.path("weights.bin");
  WeightPacker packer(weights, compiled.weightsPath);
  files.emitted = emitter.emit(getStepFunction(module), packer,
                               {options.weightType, options.cacheType});
  const EmittedStep &emitted = files.emitted;
  compiled.weightsBytes = packer.finish();
  compiled.weightEntries = packer.entries();
  compiled.arenaBytes = emitted.arenaBytes;
  compiled.maxTokens = emitted.maxTokens;
  compiled.cacheType = options.cacheType;
  compiled.kernelSummaries = emitted.kernelSummaries;
  compiled.sources.push_back({"StepABI.h", stepAbiText});
  for (const SourceFile &header : emitted.headers)
    compiled.sources.push_back(header);
  for (const SourceFile &kernel : emitted.kernels)
    compiled.sources.push_back(kernel);
  compiled.sources.push_back(emitted.step);
  for (const SourceFile &file : compiled.sources)
    writeStepFile(files.path(file.name), file.text);
  compiled.emitSeconds = secondsSince(start);
  return files;
}

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
  std::unique_ptr<StepEmitter> emitter = createCpuStepEmitter(options.target);
  EmittedStepFiles files =
      emitStepFiles(module, weights, options, *emitter, kStepABI);
  CompiledStep &compiled = files.compiled;
  auto in = [&](const std::string &name) { return files.path(name); };
  // The host compiler builds the emitted kernels and the step; the step ABI
  // and the library headers are included.
  std::vector<std::string> sources;
  for (const SourceFile &kernel : files.emitted.kernels)
    sources.push_back(in(kernel.name));
  sources.push_back(in(files.emitted.step.name));
  auto start = std::chrono::steady_clock::now();
  formatSources(compiled.sources, in);
  compiled.emitSeconds += secondsSince(start);

  start = std::chrono::steady_clock::now();
  if (options.progress)
    options.progress("compiling " +
                     std::to_string(files.emitted.kernels.size()) + " kernels");
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
