//===- FuzzLlama2c.cpp - libFuzzer target: llama2.c checkpoints -----------===//
//
// Part of Kiln. Any bytes given to the llama2.c reader either parse or throw
// FormatError; a parsed checkpoint's tensors are read through.
//
//===----------------------------------------------------------------------===//

#include "frontends/formats/FormatError.h"
#include "frontends/formats/Llama2c.h"

#include <vector>

using namespace kiln;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  try {
    auto file = formats::MappedFile::borrow("fuzz.bin", data, size);
    formats::Llama2cCheckpoint ckpt = formats::readLlama2c(file);
    std::vector<float> row;
    for (const formats::TensorInfo &t : ckpt.tensors) {
      int64_t n = t.shape.back();
      row.resize(static_cast<size_t>(n));
      formats::dequantize(t.type, file->data() + t.offset, row.data(), n);
    }
  } catch (const formats::FormatError &) {
  }
  return 0;
}
