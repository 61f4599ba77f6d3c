//===- WeightFile.h - Tensors of a model file by name -----------*- C++ -*-===//
//
// Part of Kiln. The one interface executors use to reach weights named in a
// module's kiln.weights_source: open the file in its format, look tensors up
// by Kiln's canonical names, read their bytes in place. MLIR-free.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_FRONTENDS_FORMATS_WEIGHTFILE_H
#define KILN_FRONTENDS_FORMATS_WEIGHTFILE_H

#include "frontends/formats/MappedFile.h"
#include "frontends/formats/TensorInfo.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kiln::formats {

enum class WeightFileFormat { Llama2c, GGUF, Safetensors };

class WeightFile {
public:
  /// Opens `path` as `format`; throws FormatError.
  static std::unique_ptr<WeightFile> open(WeightFileFormat format,
                                          const std::string &path);

  /// `files` holds the file of each TensorInfo::shard (one unless sharded);
  /// `path` names the whole (a file, or a model directory).
  WeightFile(std::string path,
             std::vector<std::shared_ptr<const MappedFile>> files,
             std::vector<TensorInfo> tensors);

  const std::string &path() const { return sourcePath; }
  const std::vector<TensorInfo> &tensors() const { return tensorList; }
  /// The tensor named `name`, or null.
  const TensorInfo *find(const std::string &name) const;
  const uint8_t *data(const TensorInfo &tensor) const {
    return files.at(tensor.shard)->data() + tensor.offset;
  }

private:
  std::string sourcePath;
  std::vector<std::shared_ptr<const MappedFile>> files;
  std::vector<TensorInfo> tensorList;
  std::map<std::string, size_t> index;
};

} // namespace kiln::formats

#endif // KILN_FRONTENDS_FORMATS_WEIGHTFILE_H
