//===- LoadedModel.h - A model ready to run, from any file ------*- C++ -*-===//
//
// Part of Kiln's compiler driver. `kiln compile` and `kiln run` accept a model
// file (GGUF, llama2.c), a Hugging Face directory or a .mlir module; each
// ends as a kiln module plus the weights and tokenizer it needs. `kiln
// compile` (and `kiln run` on a model file, through the compile cache)
// turns the module into an artifact; `kiln run --interpret` (implied by a
// .mlir module) executes it in the reference interpreter.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_DRIVER_LOADEDMODEL_H
#define KILN_CODEGEN_DRIVER_LOADEDMODEL_H

#include "frontends/FileWeightProvider.h"
#include "frontends/Importer.h"
#include "runtime/Tokenizer.h"

#include "mlir/IR/MLIRContext.h"

#include <memory>
#include <optional>
#include <string>

namespace kiln {

struct LoadedModel {
  std::unique_ptr<mlir::MLIRContext> context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::unique_ptr<FileWeightProvider> weights;
  /// Set when the model came from a model file (not .mlir).
  std::optional<ImportedModel> imported;
  int64_t vocabSize = 0;
  int64_t contextLength = 0; ///< 0 when the module does not say.
  /// True for GGUF and Hugging Face models: generation stops at EOS/EOT.
  bool stopsAtEos = false;
};

/// Creates an MLIR context with the dialects Kiln's modules use.
std::unique_ptr<mlir::MLIRContext> makeContext();

/// Loads MODEL (a model file or a .mlir module). Throws std::exception with a
/// message naming the file on any problem.
LoadedModel loadModel(const std::string &path);

/// Reads a tokenizer from `path`: a GGUF (its vocabulary), a tokenizer.json
/// or a Hugging Face directory holding one, or llama2.c's tokenizer.bin.
runtime::TokenizerSpec readTokenizerFile(const std::string &path);

/// The tokenizer for `model`: `explicitPath` (tokenizer.bin or a GGUF) when
/// given, else one stored in the model file or a tokenizer.bin beside it.
/// Its vocabulary must have the model's size; throws otherwise, naming both.
runtime::Tokenizer loadTokenizer(const LoadedModel &model,
                                 const std::string &modelPath,
                                 const std::string &explicitPath);

} // namespace kiln

#endif // KILN_CODEGEN_DRIVER_LOADEDMODEL_H
