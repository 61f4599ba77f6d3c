//===- Llama2c.h - Reading llama2.c checkpoints -----------------*- C++ -*-===//
//
// Part of Kiln. llama2.c checkpoints come in two float32 layouts Kiln reads:
//
//  - legacy: 7 int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads,
//    vocab_size, seq_len; a negative vocab_size means an unshared
//    classifier), then the tensors back to back;
//  - version 1 (llama2.c's export.py): a 256-byte header (uint32 magic
//    0x616b3432 "ak42", int32 version 1, the 7 int32 above, a uint8
//    shared-classifier flag, zero padding), then the tensors.
//
// Version 2 (int8 groups with float32 scales) is rejected by name. Tensors
// get Kiln's canonical (GGUF) names; see docs/step-contract.md.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_FRONTENDS_FORMATS_LLAMA2C_H
#define KILN_FRONTENDS_FORMATS_LLAMA2C_H

#include "frontends/formats/MappedFile.h"
#include "frontends/formats/ModelConfig.h"
#include "frontends/formats/TensorInfo.h"

#include <memory>
#include <string>
#include <vector>

namespace kiln::formats {

struct Llama2cCheckpoint {
  std::shared_ptr<const MappedFile> file;
  int version = 0; ///< 0 for the legacy layout.
  ModelConfig config;
  std::vector<TensorInfo> tensors;
};

/// The uint32 that starts a version 1+ export ("ak42" little-endian).
constexpr uint32_t kLlama2cMagic = 0x616b3432;

/// Reads and validates a checkpoint; throws FormatError naming the file and
/// what is wrong (a truncated file names the tensor that does not fit).
Llama2cCheckpoint readLlama2c(std::shared_ptr<const MappedFile> file);
Llama2cCheckpoint readLlama2c(const std::string &path);

} // namespace kiln::formats

#endif // KILN_FRONTENDS_FORMATS_LLAMA2C_H
