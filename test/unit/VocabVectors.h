//===- VocabVectors.h - llama.cpp's tokenizer test vectors ------*- C++ -*-===//
//
// Part of Kiln's unit tests. ../shared/vocab holds llama.cpp's vectors: for
// each vocabulary, texts (.inp) and the ids Hugging Face's tokenizer gives
// them (.out). Shared by the GGUF and tokenizer.json tokenizer tests.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TEST_UNIT_VOCABVECTORS_H
#define KILN_TEST_UNIT_VOCABVECTORS_H

#include "TestData.h"

#include "runtime/Tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace kiln::test {

using Ids = std::vector<int32_t>;

inline std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

inline std::string idsToString(const Ids &ids) {
  std::string out;
  for (int32_t id : ids)
    out += (out.empty() ? "" : " ") + std::to_string(id);
  return out;
}

struct VectorResult {
  size_t texts = 0;
  size_t encoded = 0; ///< Texts whose ids match exactly.
  size_t roundTripped = 0;
};

/// Encodes every text of `<vocab>.inp` without BOS with `tok` and compares
/// with the matching line of `<vocab>.out`, and checks decode(encode(x)) ==
/// x. Each failure is reported with `label`, its index, text, expected and
/// actual ids. The texts are split as llama.cpp's test-tokenizer-0 does: the
/// generator wrote each text followed by "\n__ggml_vocab_test__\n", so the
/// texts are what lies before each separator (they may themselves start or
/// end with newlines), and the .out has one line per text.
inline VectorResult checkVectors(const runtime::Tokenizer &tok,
                                 const std::string &vocab,
                                 const std::string &label) {
  VectorResult result;
  std::string base = kiln::test::vocabDir() + "/" + vocab;
  std::string inp = readFile(base + ".inp");
  const std::string separator = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  for (size_t start = 0, hit;
       (hit = inp.find(separator, start)) != std::string::npos;
       start = hit + separator.size())
    texts.push_back(inp.substr(start, hit - start));
  std::vector<Ids> expected;
  std::istringstream out(readFile(base + ".out"));
  for (std::string line; std::getline(out, line);) {
    Ids ids;
    std::istringstream fields(line);
    for (int32_t id; fields >> id;)
      ids.push_back(id);
    expected.push_back(ids);
  }
  EXPECT_EQ(texts.size(), expected.size()) << vocab;
  result.texts = std::min(texts.size(), expected.size());
  for (size_t i = 0; i < result.texts; ++i) {
    Ids got = tok.encode(texts[i], /*addBos=*/false);
    if (got == expected[i])
      ++result.encoded;
    else
      ADD_FAILURE() << label << " text " << i << " \"" << texts[i]
                    << "\"\n  expected: " << idsToString(expected[i])
                    << "\n  got:      " << idsToString(got);
    std::string back = tok.decode(got);
    if (back == texts[i])
      ++result.roundTripped;
    else
      ADD_FAILURE() << label << " text " << i << " \"" << texts[i]
                    << "\" decodes back as \"" << back << "\"";
  }
  std::cout << "[ vectors  ] " << label << ": " << result.encoded << "/"
            << result.texts << " encoded exactly, " << result.roundTripped
            << "/" << result.texts << " round-tripped\n";
  return result;
}

} // namespace kiln::test

#endif // KILN_TEST_UNIT_VOCABVECTORS_H
