//===- FuzzSafetensors.cpp - libFuzzer target: safetensors files ----------===//
//
// Part of Kiln. Any bytes given to the safetensors reader either parse or
// throw FormatError; a parsed file's tensors are read through.
//
//===----------------------------------------------------------------------===//

#include "frontends/formats/FormatError.h"
#include "frontends/formats/Safetensors.h"

#include <vector>

using namespace kiln;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  try {
    auto file = formats::MappedFile::borrow("fuzz.safetensors", data, size);
    std::vector<float> row;
    for (const formats::TensorInfo &t : formats::readSafetensors(*file)) {
      int64_t n = t.shape.empty() ? 1 : t.shape.back();
      if (t.bytes == 0)
        continue;
      row.resize(static_cast<size_t>(n));
      formats::dequantize(t.type, file->data() + t.offset, row.data(), n);
    }
  } catch (const formats::FormatError &) {
  }
  return 0;
}
