//===- FuzzTokenizerJson.cpp - libFuzzer target: tokenizer.json -----------===//
//
// Part of Kiln. Any bytes given to the tokenizer.json loader either load or
// throw; a loaded vocabulary encodes and decodes text.
//
//===----------------------------------------------------------------------===//

#include "frontends/formats/FormatError.h"
#include "frontends/formats/TokenizerLoaders.h"

#include <stdexcept>

using namespace kiln;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  try {
    runtime::Tokenizer tokenizer(formats::tokenizerFromJson(
        formats::MappedFile::borrow("fuzz/tokenizer.json", data, size)));
    std::vector<int32_t> ids = tokenizer.encode("Hello world, ü 1234!", true);
    (void)tokenizer.decode(ids);
  } catch (const formats::FormatError &) {
  } catch (const std::invalid_argument &) {
  } catch (const std::runtime_error &) {
    // PCRE2's match limit on a pathological expression from the file.
  }
  return 0;
}
