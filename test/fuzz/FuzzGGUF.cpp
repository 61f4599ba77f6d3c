//===- FuzzGGUF.cpp - libFuzzer target: GGUF files ------------------------===//
//
// Part of Kiln. Any bytes given to the GGUF reader either parse or throw
// FormatError; a parsed file's tensors are read through (dequantized) and its
// vocabulary, if any, loaded and used. ASan and UBSan catch the rest.
//
//===----------------------------------------------------------------------===//

#include "frontends/formats/FormatError.h"
#include "frontends/formats/GGUF.h"
#include "frontends/formats/TokenizerLoaders.h"

#include <stdexcept>
#include <vector>

using namespace kiln;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  try {
    formats::GGUFFile gguf = formats::GGUFFile::read(
        formats::MappedFile::borrow("fuzz.gguf", data, size));
    for (const std::string &key : gguf.keys())
      (void)gguf.describe(key);
    std::vector<float> row;
    for (const formats::TensorInfo &t : gguf.tensors()) {
      // The first row of each tensor is enough to touch its bytes.
      int64_t n = t.shape.empty() ? 1 : t.shape.back();
      row.resize(static_cast<size_t>(n));
      formats::dequantize(t.type, gguf.data(t), row.data(), n);
    }
    if (gguf.find("tokenizer.ggml.model")) {
      runtime::Tokenizer tokenizer(formats::tokenizerFromGGUF(gguf));
      std::vector<int32_t> ids = tokenizer.encode("Hello world ü 123", true);
      (void)tokenizer.decode(ids);
    }
  } catch (const formats::FormatError &) {
  } catch (const std::invalid_argument &) {
    // Tokenizer spec validation.
  }
  return 0;
}
