//===- HostCompiler.cpp - Compile generated C++ into a library ------------===//
//
// Part of Kiln. See HostCompiler.h.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/HostCompiler.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

namespace kiln::codegen {

std::string findHostCompiler() {
  if (const char *cxx = std::getenv("CXX"); cxx && *cxx) {
    if (auto path = llvm::sys::findProgramByName(cxx))
      return *path;
    if (llvm::sys::fs::can_execute(cxx))
      return cxx;
    throw std::runtime_error(std::string("$CXX is '") + cxx +
                             "', which is not an executable compiler");
  }
  // clang++-19 is what Kiln itself is built with (scripts/setup).
  for (const char *name : {"c++", "clang++", "g++", "clang++-19"})
    if (auto path = llvm::sys::findProgramByName(name))
      return *path;
  throw std::runtime_error(
      "no C++ compiler found to compile the generated kernels: set $CXX or "
      "install one (c++, clang++, g++ or clang++-19 on PATH; Debian: apt "
      "install g++)");
}

std::vector<std::string> targetFlags(const target::TargetDescription &target) {
  const target::CpuTarget &cpu = target.cpu();
  std::vector<std::string> flags;
  switch (cpu.isa) {
  case target::CpuIsa::Portable:
    if (cpu.fma)
      flags.push_back("-mfma");
    if (cpu.f16c)
      flags.push_back("-mf16c");
    break;
  case target::CpuIsa::AVX2:
    flags = {"-mavx2", "-mfma", "-mf16c"};
    if (cpu.avxvnni)
      flags.push_back("-mavxvnni");
    break;
  case target::CpuIsa::AVX512:
    flags = {"-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq",
             "-mavx2",    "-mfma",      "-mf16c"};
    if (cpu.avx512bf16)
      flags.push_back("-mavx512bf16");
    if (cpu.avx512vnni)
      flags.push_back("-mavx512vnni");
    if (cpu.amxBf16 || cpu.amxInt8)
      flags.push_back("-mamx-tile");
    if (cpu.amxBf16)
      flags.push_back("-mamx-bf16");
    if (cpu.amxInt8)
      flags.push_back("-mamx-int8");
    // Wide vectors everywhere the kernels ask for them.
    flags.push_back("-mprefer-vector-width=512");
    break;
  }
  return flags;
}

std::vector<std::string>
requiredCpuFeatures(const target::TargetDescription &target) {
  const target::CpuTarget &cpu = target.cpu();
  std::vector<std::string> features;
  if (cpu.isa == target::CpuIsa::AVX2 || cpu.isa == target::CpuIsa::AVX512)
    features = {"avx2", "fma", "f16c"};
  if (cpu.isa == target::CpuIsa::AVX2 && cpu.avxvnni)
    features.push_back("avxvnni");
  if (cpu.isa == target::CpuIsa::AVX512) {
    for (const char *f : {"avx512f", "avx512bw", "avx512vl", "avx512dq"})
      features.push_back(f);
    if (cpu.avx512bf16)
      features.push_back("avx512bf16");
    if (cpu.avx512vnni)
      features.push_back("avx512vnni");
    if (cpu.amxBf16 || cpu.amxInt8)
      features.push_back("amx-tile");
    if (cpu.amxBf16)
      features.push_back("amx-bf16");
    if (cpu.amxInt8)
      features.push_back("amx-int8");
  }
  if (cpu.isa == target::CpuIsa::Portable) {
    if (cpu.fma)
      features.push_back("fma");
    if (cpu.f16c)
      features.push_back("f16c");
  }
  return features;
}

namespace {

/// Runs `args`, capturing stderr into `errors`; returns the exit code.
struct Job {
  llvm::sys::ProcessInfo process;
  llvm::SmallString<128> errorFile;
  std::string what;
};

Job start(const std::string &compiler, const std::vector<std::string> &args,
          const std::string &what) {
  Job job;
  job.what = what;
  llvm::sys::fs::createTemporaryFile("kiln-cxx", "err", job.errorFile);
  std::vector<llvm::StringRef> argv;
  argv.push_back(compiler);
  for (const std::string &arg : args)
    argv.push_back(arg);
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, std::nullopt,
                                                llvm::StringRef(job.errorFile)};
  std::string error;
  bool failed = false;
  job.process = llvm::sys::ExecuteNoWait(compiler, argv, std::nullopt,
                                         redirects, 0, &error, &failed);
  if (failed)
    throw std::runtime_error("cannot run the C++ compiler '" + compiler +
                             "': " + error);
  return job;
}

void finish(Job &job) {
  std::string error;
  llvm::sys::ProcessInfo done =
      llvm::sys::Wait(job.process, std::nullopt, &error);
  std::string messages;
  if (auto buffer = llvm::MemoryBuffer::getFile(job.errorFile))
    messages = (*buffer)->getBuffer().str();
  llvm::sys::fs::remove(job.errorFile);
  if (done.ReturnCode != 0)
    throw std::runtime_error("compiling " + job.what + " failed" +
                             (error.empty() ? "" : " (" + error + ")") + ":\n" +
                             messages);
}

} // namespace

void compileSharedLibrary(const std::string &compiler,
                          const std::vector<std::string> &sources,
                          const std::vector<std::string> &flags,
                          const std::string &output, unsigned jobs) {
  // No -ffast-math: sums run in the order the interpreter's do, so results
  // match the reference to rounding. -ffp-contract=off: the kernels fuse
  // exactly the multiply-adds they write (kernels/Vector.h's vfmadd), where
  // GCC would fuse across statements and Clang within expressions, each
  // choosing its own pairs, so an artifact's results do not depend on which
  // compiler `c++` is. Warnings are errors: the kernel library and the
  // emitter's instantiations are Kiln's own code, kept warning-free on GCC
  // and Clang (test/kernels builds it the same way).
  std::vector<std::string> common = {"-std=c++17",
                                     "-O3",
                                     "-fPIC",
                                     "-fno-math-errno",
                                     "-ffp-contract=off",
                                     "-fno-exceptions",
                                     "-fno-rtti",
                                     "-Wall",
                                     "-Wextra",
                                     "-Werror"};
  // Headers (kiln_kernels.h, StepABI.h, kernels/) are beside the sources.
  for (const std::string &source : sources) {
    std::string dir = llvm::sys::path::parent_path(source).str();
    std::string include = "-I" + (dir.empty() ? std::string(".") : dir);
    if (std::find(common.begin(), common.end(), include) == common.end())
      common.push_back(include);
  }
  common.insert(common.end(), flags.begin(), flags.end());
  std::vector<std::string> objects;
  std::vector<Job> running;
  for (const std::string &source : sources) {
    std::string object = source + ".o";
    objects.push_back(object);
    std::vector<std::string> args = common;
    args.insert(args.end(), {"-c", source, "-o", object});
    if (running.size() >= std::max(1u, jobs)) {
      finish(running.front());
      running.erase(running.begin());
    }
    running.push_back(start(compiler, args, source));
  }
  for (Job &job : running)
    finish(job);
  std::vector<std::string> link = {"-shared", "-o", output};
  link.insert(link.end(), objects.begin(), objects.end());
  link.push_back("-lm");
  Job job = start(compiler, link, output);
  finish(job);
}

} // namespace kiln::codegen
