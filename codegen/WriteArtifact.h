//===- WriteArtifact.h - Pack a compiled step into an artifact --*- C++ -*-===//
//
// Part of Kiln. The last stage of `kiln compile`: one artifact file
// (docs/artifact.md) with the manifest the runtime reads
// (runtime/CompiledModel.h parseManifest), the step library, the packed
// weights, the tokenizer and the kernel sources. One writer, so `kiln
// compile` and the code generation tests produce the same format.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_WRITEARTIFACT_H
#define KILN_CODEGEN_WRITEARTIFACT_H

#include "codegen/CompileStep.h"
#include "runtime/Tokenizer.h"

#include <string>
#include <vector>

namespace kiln::codegen {

/// Kiln's version, recorded in every artifact's manifest.
inline constexpr const char *kKilnVersion = "0.1.0";

/// What the manifest says about the model beyond the compiled step.
struct ArtifactModelInfo {
  std::string source;        ///< the model file it was compiled from
  int64_t contextLength = 0; ///< KV cache positions the runtime allocates
  bool stopsAtEos = false;   ///< generation stops at EOS/EOT (GGUF, HF)
  runtime::TokenizerSpec tokenizer;
};

/// One step library of an artifact: a target and what compileStep made for
/// it.
struct ArtifactLibrary {
  target::TargetDescription target;
  const CompiledStep *compiled = nullptr;
};

/// Writes an artifact with one step library per entry of `libraries` (the
/// step of `module` compiled for each target; at least one, no two needing
/// the same CPU features) to `path`. Libraries are stored least demanding
/// first, that one in the "code" and "weights" sections; a library whose
/// packed weights are byte for byte an earlier one's shares its section
/// (docs/artifact.md). Throws std::runtime_error (or runtime's ArtifactError)
/// naming the file on failure.
void writeArtifact(mlir::ModuleOp module,
                   std::vector<ArtifactLibrary> libraries,
                   const ArtifactModelInfo &model, const std::string &path);

/// Writes the artifact for `compiled` (the step of `module`, compiled with
/// `options`) to `path`: one step library.
void writeArtifact(mlir::ModuleOp module, const CompiledStep &compiled,
                   const CompileStepOptions &options,
                   const ArtifactModelInfo &model, const std::string &path);

/// The directory a library's sources go under in the "sources" archive and
/// in `kiln compile --emit-source DIR` when an artifact has several: the
/// target's name (avx2, avx512+bf16).
std::string librarySourceDirectory(const target::TargetDescription &target);

} // namespace kiln::codegen

#endif // KILN_CODEGEN_WRITEARTIFACT_H
