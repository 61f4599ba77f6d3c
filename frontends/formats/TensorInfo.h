//===- TensorInfo.h - A tensor stored in a model file -----------*- C++ -*-===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_FRONTENDS_FORMATS_TENSORINFO_H
#define KILN_FRONTENDS_FORMATS_TENSORINFO_H

#include "frontends/formats/ElementType.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::formats {

/// Where a tensor's bytes are in its file. Shapes are outermost first, as in
/// kiln IR: a matrix W[out, in] stored row by row is {out, in}. (GGUF lists
/// dimensions innermost first; its reader reverses them.)
struct TensorInfo {
  std::string name;
  std::vector<int64_t> shape;
  ElementType type = ElementType::F32;
  uint64_t offset = 0; ///< Absolute byte offset in the file.
  uint64_t bytes = 0;  ///< Size in the file.
  /// Which file of a sharded model holds the tensor (safetensors shards).
  uint32_t shard = 0;

  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
};

} // namespace kiln::formats

#endif // KILN_FRONTENDS_FORMATS_TENSORINFO_H
