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

/// Writes the artifact for `compiled` (the step of `module`, compiled with
/// `options`) to `path`. Throws std::runtime_error (or runtime's
/// ArtifactError) naming the file on failure.
void writeArtifact(mlir::ModuleOp module, const CompiledStep &compiled,
                   const CompileStepOptions &options,
                   const ArtifactModelInfo &model, const std::string &path);

} // namespace kiln::codegen

#endif // KILN_CODEGEN_WRITEARTIFACT_H
