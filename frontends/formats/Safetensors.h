//===- Safetensors.h - Reading safetensors files ----------------*- C++ -*-===//
//
// Part of Kiln. A safetensors file is a little-endian uint64 header length N,
// N bytes of JSON mapping tensor names to {dtype, shape, data_offsets} (plus
// an optional "__metadata__"), then the data; offsets are relative to the
// data. Hugging Face models come as one model.safetensors or as shards
// listed by model.safetensors.index.json. Everything is validated; problems
// throw FormatError naming the file and the tensor.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_FRONTENDS_FORMATS_SAFETENSORS_H
#define KILN_FRONTENDS_FORMATS_SAFETENSORS_H

#include "frontends/formats/MappedFile.h"
#include "frontends/formats/TensorInfo.h"

#include <memory>
#include <string>
#include <vector>

namespace kiln::formats {

/// The tensors of one safetensors file, names as stored, offsets absolute.
/// Only F32, F16 and BF16 tensors are accepted.
std::vector<TensorInfo> readSafetensors(const MappedFile &file);

/// The tensors of a model: `path` is a directory holding model.safetensors or
/// model.safetensors.index.json, or one of those files. TensorInfo::shard
/// indexes `files`.
struct SafetensorsModel {
  std::vector<std::shared_ptr<const MappedFile>> files;
  std::vector<TensorInfo> tensors;
};
SafetensorsModel openSafetensorsModel(const std::string &path);

} // namespace kiln::formats

#endif // KILN_FRONTENDS_FORMATS_SAFETENSORS_H
