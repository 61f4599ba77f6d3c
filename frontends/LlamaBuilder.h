//===- LlamaBuilder.h - Kiln IR for Llama-family models ---------*- C++ -*-===//
//
// Part of Kiln. Every importer reads its file into a ModelConfig and a tensor
// directory, then calls buildLlamaModule: one place knows how a Llama, a
// Mistral or a Qwen2 step is written in the kiln dialect, so the IR of one
// model does not depend on the file it came from.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_FRONTENDS_LLAMABUILDER_H
#define KILN_FRONTENDS_LLAMABUILDER_H

#include "frontends/formats/ModelConfig.h"
#include "frontends/formats/TensorInfo.h"
#include "ir/KilnAttrs.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>
#include <vector>

namespace kiln {

/// Where the module's weights come from (becomes kiln.weights_source).
struct WeightsLocation {
  WeightsFormat format = WeightsFormat::GGUF;
  std::string path;
};

/// Builds the unfused step function (docs/step-contract.md) of the model
/// `config` whose weights are `tensors`. Checks that every tensor the model
/// needs is present with the shape the config implies; throws
/// formats::FormatError naming `location.path` and the tensor otherwise.
mlir::OwningOpRef<mlir::ModuleOp>
buildLlamaModule(mlir::MLIRContext *context, const formats::ModelConfig &config,
                 const std::vector<formats::TensorInfo> &tensors,
                 const WeightsLocation &location);

/// The kiln IR element type of a stored tensor type.
mlir::Type getIRElementType(mlir::MLIRContext *context,
                            formats::ElementType type);

} // namespace kiln

#endif // KILN_FRONTENDS_LLAMABUILDER_H
