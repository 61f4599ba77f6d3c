//===- Nvrtc.cpp - CUDA C++ to PTX and cubin with NVRTC -------------------===//
//
// Part of Kiln's CUDA code generation. See Nvrtc.h.
//
//===----------------------------------------------------------------------===//

#include "codegen/cuda/Nvrtc.h"

#include <nvrtc.h>

#include <memory>
#include <sstream>

namespace kiln::codegen::cuda {
namespace {

struct ProgramDeleter {
  void operator()(nvrtcProgram p) const { nvrtcDestroyProgram(&p); }
};
using Program =
    std::unique_ptr<std::remove_pointer_t<nvrtcProgram>, ProgramDeleter>;

void check(nvrtcResult result, const char *call, const std::string &name) {
  if (result != NVRTC_SUCCESS)
    throw NvrtcError(std::string(call) + " failed for " + name + ": " +
                     nvrtcGetErrorString(result));
}

std::string programLog(nvrtcProgram p) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(p, &size) != NVRTC_SUCCESS || size <= 1)
    return "";
  std::string log(size, '\0');
  nvrtcGetProgramLog(p, log.data());
  log.resize(size - 1); // the terminating NUL
  return log;
}

} // namespace

NvrtcResult compileWithNvrtc(const std::string &source, const std::string &name,
                             const NvrtcOptions &options) {
  std::vector<const char *> headerTexts, headerNames;
  for (const NvrtcHeader &h : options.headers) {
    headerTexts.push_back(h.text.c_str());
    headerNames.push_back(h.name.c_str());
  }
  nvrtcProgram raw = nullptr;
  check(nvrtcCreateProgram(&raw, source.c_str(), name.c_str(),
                           int(headerTexts.size()), headerTexts.data(),
                           headerNames.data()),
        "nvrtcCreateProgram", name);
  Program program(raw);

  // A real architecture (sm_XY, not compute_XY) makes NVRTC run ptxas too,
  // so the result has both the PTX and the cubin.
  std::vector<std::string> args = {"--gpu-architecture=" + options.arch,
                                   "-std=c++17", "--ptxas-options=-v"};
  for (const std::string &dir : options.includeDirs)
    args.push_back("-I" + dir);
  for (const std::string &define : options.defines)
    args.push_back("-D" + define);
  std::vector<const char *> argv;
  for (const std::string &a : args)
    argv.push_back(a.c_str());

  nvrtcResult compiled =
      nvrtcCompileProgram(raw, int(argv.size()), argv.data());
  NvrtcResult result;
  result.log = programLog(raw);
  if (compiled != NVRTC_SUCCESS)
    throw NvrtcError("NVRTC could not compile " + name + " for " +
                     options.arch + ": " + nvrtcGetErrorString(compiled) +
                     "\n" + result.log);

  size_t size = 0;
  check(nvrtcGetPTXSize(raw, &size), "nvrtcGetPTXSize", name);
  result.ptx.resize(size);
  check(nvrtcGetPTX(raw, result.ptx.data()), "nvrtcGetPTX", name);
  if (!result.ptx.empty() && result.ptx.back() == '\0')
    result.ptx.pop_back();
  check(nvrtcGetCUBINSize(raw, &size), "nvrtcGetCUBINSize", name);
  result.cubin.resize(size);
  check(nvrtcGetCUBIN(raw, result.cubin.data()), "nvrtcGetCUBIN", name);
  return result;
}

std::string nvrtcVersion() {
  int major = 0, minor = 0;
  if (::nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
    return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

std::vector<std::string> nvrtcWarnings(const std::string &log) {
  std::vector<std::string> warnings;
  std::istringstream lines(log);
  std::string line;
  while (std::getline(lines, line))
    if (line.find("warning") != std::string::npos)
      warnings.push_back(line);
  return warnings;
}

} // namespace kiln::codegen::cuda
