//===- WeightFile.cpp - Tensors of a model file by name -------------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "frontends/formats/WeightFile.h"

#include "frontends/formats/FormatError.h"
#include "frontends/formats/GGUF.h"
#include "frontends/formats/HuggingFace.h"
#include "frontends/formats/Llama2c.h"
#include "frontends/formats/Safetensors.h"

namespace kiln::formats {

std::unique_ptr<WeightFile> WeightFile::open(WeightFileFormat format,
                                             const std::string &path) {
  switch (format) {
  case WeightFileFormat::Llama2c: {
    Llama2cCheckpoint ckpt = readLlama2c(path);
    return std::make_unique<WeightFile>(path, std::vector{ckpt.file},
                                        std::move(ckpt.tensors));
  }
  case WeightFileFormat::GGUF: {
    GGUFFile gguf = GGUFFile::open(path);
    return std::make_unique<WeightFile>(path, std::vector{gguf.mapping()},
                                        gguf.tensors());
  }
  case WeightFileFormat::Safetensors: {
    SafetensorsModel model = openSafetensorsModel(path);
    std::vector<TensorInfo> named;
    for (TensorInfo &t : model.tensors)
      if (std::optional<std::string> name = canonicalHFTensorName(t.name)) {
        t.name = *name;
        named.push_back(std::move(t));
      }
    return std::make_unique<WeightFile>(path, std::move(model.files),
                                        std::move(named));
  }
  }
  throw FormatError(path, "unknown weights format");
}

WeightFile::WeightFile(std::string path,
                       std::vector<std::shared_ptr<const MappedFile>> files,
                       std::vector<TensorInfo> tensors)
    : sourcePath(std::move(path)), files(std::move(files)),
      tensorList(std::move(tensors)) {
  for (size_t i = 0; i < tensorList.size(); ++i) {
    if (tensorList[i].shard >= this->files.size())
      throw FormatError(sourcePath, "tensor '" + tensorList[i].name +
                                        "' refers to a missing shard");
    if (!index.emplace(tensorList[i].name, i).second)
      throw FormatError(sourcePath,
                        "tensor '" + tensorList[i].name + "' appears twice");
  }
}

const TensorInfo *WeightFile::find(const std::string &name) const {
  auto it = index.find(name);
  return it == index.end() ? nullptr : &tensorList[it->second];
}

} // namespace kiln::formats
