//===- FuzzTokenizerBin.cpp - libFuzzer target: tokenizer.bin -------------===//
//
// Part of Kiln. Any bytes given to the llama2.c tokenizer loader either load
// or throw; a loaded vocabulary encodes and decodes text.
//
//===----------------------------------------------------------------------===//

#include "frontends/formats/FormatError.h"
#include "frontends/formats/TokenizerLoaders.h"

#include <stdexcept>

using namespace kiln;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  try {
    runtime::Tokenizer tokenizer(formats::loadLlama2cTokenizer(
        formats::MappedFile::borrow("fuzz-tokenizer.bin", data, size)));
    std::vector<int32_t> ids = tokenizer.encode("Once upon a time, ü!", true);
    int32_t previous = ids.empty() ? 0 : ids[0];
    for (int32_t id : ids) {
      (void)tokenizer.decodePiece(previous, id);
      previous = id;
    }
  } catch (const formats::FormatError &) {
  } catch (const std::invalid_argument &) {
  }
  return 0;
}
