//===- WeightFile.cpp - Tensors of a model file by name -------------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "frontends/formats/WeightFile.h"

#include "frontends/formats/FormatError.h"
#include "frontends/formats/GGUF.h"
#include "frontends/formats/Llama2c.h"

namespace kiln::formats {

std::unique_ptr<WeightFile> WeightFile::open(WeightFileFormat format,
                                             const std::string &path) {
  switch (format) {
  case WeightFileFormat::Llama2c: {
    Llama2cCheckpoint ckpt = readLlama2c(path);
    return std::make_unique<WeightFile>(ckpt.file, std::move(ckpt.tensors));
  }
  case WeightFileFormat::GGUF: {
    GGUFFile gguf = GGUFFile::open(path);
    return std::make_unique<WeightFile>(gguf.mapping(), gguf.tensors());
  }
  case WeightFileFormat::Safetensors:
    throw FormatError(path, "safetensors weights are not supported yet");
  }
  throw FormatError(path, "unknown weights format");
}

WeightFile::WeightFile(std::shared_ptr<const MappedFile> file,
                       std::vector<TensorInfo> tensors)
    : file(std::move(file)), tensorList(std::move(tensors)) {
  for (size_t i = 0; i < tensorList.size(); ++i)
    index.emplace(tensorList[i].name, i);
}

const TensorInfo *WeightFile::find(const std::string &name) const {
  auto it = index.find(name);
  return it == index.end() ? nullptr : &tensorList[it->second];
}

} // namespace kiln::formats
