//===- StepLibrary.h - An artifact's compiled step, loaded ------*- C++ -*-===//
//
// Part of Kiln. The "code" section of an artifact is a shared library that
// exports the step ABI (runtime/StepABI.h). StepLibrary loads those bytes
// without leaving a file behind: they go into an anonymous memory file
// (memfd_create) that dlopen reads through /proc/self/fd; where that is not
// possible, into a temporary file that is unlinked as soon as dlopen has
// mapped it. The library must come from a trusted artifact: loading it runs
// its code (docs/artifact.md).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_STEPLIBRARY_H
#define KILN_RUNTIME_STEPLIBRARY_H

#include "runtime/StepABI.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::runtime {

class Artifact;

class StepLibrary {
public:
  using StepFn = int32_t (*)(const kiln_step_args *);

  /// Loads `code` (the bytes of a shared library) and resolves
  /// kiln_step_abi_version and kiln_step; the version must equal
  /// KILN_STEP_ABI_VERSION. Throws ArtifactError naming `artifactName` and,
  /// for loader failures, dlerror()'s message.
  static StepLibrary load(std::string_view code,
                          const std::string &artifactName);
  /// load(artifact.section("code"), artifact.path()).
  static StepLibrary load(const Artifact &artifact);

  ~StepLibrary();
  StepLibrary(StepLibrary &&other) noexcept;
  StepLibrary &operator=(StepLibrary &&other) noexcept;
  StepLibrary(const StepLibrary &) = delete;
  StepLibrary &operator=(const StepLibrary &) = delete;

  /// Runs one step: kiln_step(&args), whose result (0 on success) is
  /// returned as is.
  int32_t step(const kiln_step_args &args) const { return stepFn(&args); }
  StepFn stepFunction() const { return stepFn; }
  /// The library's symbol `name`, or null when it has none.
  void *symbol(const char *name) const;
  /// What the library's kiln_step_abi_version() returned.
  int32_t abiVersion() const { return version; }

  /// The names of the step's kernel calls (kiln_step_call_name), in order:
  /// the rows of a profile (kiln_step_args::call_seconds).
  std::vector<std::string> callNames() const;

private:
  StepLibrary(void *handle, StepFn stepFn, int32_t version)
      : handle(handle), stepFn(stepFn), version(version) {}

  void *handle = nullptr; ///< dlopen's; dlclose'd by the destructor.
  StepFn stepFn = nullptr;
  int32_t version = 0;
};

} // namespace kiln::runtime

#endif // KILN_RUNTIME_STEPLIBRARY_H
