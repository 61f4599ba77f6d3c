//===- FileWeightProvider.cpp - Weights from a model file -----------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "frontends/FileWeightProvider.h"

#include "frontends/Importer.h"
#include "frontends/LlamaBuilder.h"
#include "frontends/formats/FormatError.h"
#include "ir/KilnOps.h"

#include <filesystem>

using namespace mlir;
using namespace kiln;
using formats::FormatError;

std::unique_ptr<FileWeightProvider>
FileWeightProvider::forModule(ModuleOp module, const std::string &baseDir) {
  auto source = module->getAttrOfType<WeightsSourceAttr>(
      KilnDialect::kWeightsSourceAttrName);
  if (!source)
    throw std::runtime_error("the module has no kiln.weights_source: it "
                             "cannot be run without its weights");
  std::filesystem::path path(source.getPath().str());
  if (path.is_relative() && !baseDir.empty())
    path = std::filesystem::path(baseDir) / path;
  return std::make_unique<FileWeightProvider>(formats::WeightFile::open(
      toWeightFileFormat(source.getFormat()), path.string()));
}

const formats::TensorInfo &
FileWeightProvider::checkedTensor(const std::string &name,
                                  RankedTensorType type) const {
  const formats::TensorInfo *info = file->find(name);
  if (!info)
    throw FormatError(file->path(), "tensor '" + name + "' is not in the file");
  std::vector<int64_t> declared(type.getShape().begin(), type.getShape().end());
  if (info->shape != declared)
    throw FormatError(file->path(), "tensor '" + name +
                                        "' does not have the shape the IR "
                                        "declares");
  if (getIRElementType(type.getContext(), info->type) != type.getElementType())
    throw FormatError(file->path(),
                      "tensor '" + name + "' is stored as " +
                          formats::elementTypeName(info->type) +
                          ", which is not the element type the IR declares");
  return *info;
}

const float *FileWeightProvider::getWeight(llvm::StringRef nameRef,
                                           RankedTensorType type) {
  std::string name = nameRef.str();
  auto cached = dequantized.find(name);
  if (cached != dequantized.end())
    return cached->second.data();

  const formats::TensorInfo &info = checkedTensor(name, type);
  const uint8_t *bytes = file->data(info);
  if (info.type == formats::ElementType::F32 &&
      reinterpret_cast<uintptr_t>(bytes) % alignof(float) == 0)
    return reinterpret_cast<const float *>(bytes);
  std::vector<float> &values = dequantized[name];
  values.resize(info.numElements());
  formats::dequantize(info.type, bytes, values.data(), info.numElements());
  return values.data();
}

const uint8_t *FileWeightProvider::getBlocks(llvm::StringRef nameRef,
                                             RankedTensorType type) {
  std::string name = nameRef.str();
  const formats::TensorInfo &info = checkedTensor(name, type);
  if (formats::blockSize(info.type) == 1)
    throw FormatError(file->path(), "tensor '" + name + "' is stored as " +
                                        formats::elementTypeName(info.type) +
                                        ", not in quantized blocks");
  return file->data(info);
}
