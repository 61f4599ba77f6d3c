//===- FileWeightProvider.h - Weights from a model file ---------*- C++ -*-===//
//
// Part of Kiln. Resolves a module's kiln.weights_source to its file and hands
// float32 weights to the reference interpreter and to `kiln compile`'s weight
// packer: f32 tensors straight from the mapping, others dequantized once and
// kept.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_FRONTENDS_FILEWEIGHTPROVIDER_H
#define KILN_FRONTENDS_FILEWEIGHTPROVIDER_H

#include "frontends/formats/WeightFile.h"
#include "ir/WeightProvider.h"

#include "mlir/IR/BuiltinOps.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kiln {

class FileWeightProvider : public WeightProvider {
public:
  explicit FileWeightProvider(std::unique_ptr<formats::WeightFile> file)
      : file(std::move(file)) {}

  /// Opens the weights source of `module`. A relative path resolves against
  /// `baseDir` (the directory of the .mlir file the module came from; empty
  /// for the current directory). Throws FormatError, or std::runtime_error
  /// when the module has no weights source.
  static std::unique_ptr<FileWeightProvider>
  forModule(mlir::ModuleOp module, const std::string &baseDir);

  /// Checks the tensor's shape and element type against `type`, the declared
  /// type; throws FormatError naming the tensor otherwise.
  const float *getWeight(llvm::StringRef name,
                         mlir::RankedTensorType type) override;

  /// The tensor's blocks straight from the mapping (its declared element
  /// type must be block-quantized); throws FormatError as getWeight does.
  const uint8_t *getBlocks(llvm::StringRef name,
                           mlir::RankedTensorType type) override;

  const formats::WeightFile &weightFile() const { return *file; }

private:
  /// The tensor `name`, checked against its declared type.
  const formats::TensorInfo &checkedTensor(const std::string &name,
                                           mlir::RankedTensorType type) const;

  std::unique_ptr<formats::WeightFile> file;
  std::map<std::string, std::vector<float>> dequantized;
};

} // namespace kiln

#endif // KILN_FRONTENDS_FILEWEIGHTPROVIDER_H
