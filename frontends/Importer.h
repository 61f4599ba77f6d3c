//===- Importer.h - From model files to kiln IR -----------------*- C++ -*-===//
//
// Part of Kiln. `kiln import`, `kiln run` and `kiln inspect` start here:
// readModel() recognizes the file (GGUF magic, llama2.c version-1 magic, else
// a legacy llama2.c checkpoint), validates it and extracts the configuration,
// tensor directory and tokenizer; importModel() turns that into IR.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_FRONTENDS_IMPORTER_H
#define KILN_FRONTENDS_IMPORTER_H

#include "frontends/LlamaBuilder.h"
#include "frontends/formats/ModelConfig.h"
#include "frontends/formats/TensorInfo.h"
#include "frontends/formats/WeightFile.h"
#include "runtime/Tokenizer.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <optional>
#include <string>
#include <vector>

namespace kiln {

struct ImportedModel {
  formats::ModelConfig config;
  std::vector<formats::TensorInfo> tensors;
  WeightsLocation location;
  /// The vocabulary stored in the file (GGUF), if any.
  std::optional<runtime::TokenizerSpec> tokenizer;
  /// Printable metadata (key, value) for `kiln inspect`.
  std::vector<std::pair<std::string, std::string>> metadata;
};

/// Reads and validates a model file; throws formats::FormatError.
ImportedModel readModel(const std::string &path);

/// Builds the model's kiln module (weights by reference to its file).
mlir::OwningOpRef<mlir::ModuleOp> importModel(mlir::MLIRContext *context,
                                              const ImportedModel &model);

/// The WeightFileFormat a WeightsFormat reads with.
formats::WeightFileFormat toWeightFileFormat(WeightsFormat format);

} // namespace kiln

#endif // KILN_FRONTENDS_IMPORTER_H
