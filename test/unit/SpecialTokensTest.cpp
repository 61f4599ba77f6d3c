//===- SpecialTokensTest.cpp - Control tokens written in text -------------===//
//
// Part of Kiln's unit tests. A rendered chat prompt holds its control tokens
// as text ("<s>", "<|endoftext|>", DeepSeek's "<｜begin▁of▁sentence｜>");
// encoding must give their ids as llama.cpp's parse_special does, and the
// characters when parsing is off. The expected ids are llama.cpp's
// (../shared/vocab/special-tokens.json).
//
//===----------------------------------------------------------------------===//

#include "runtime/Tokenizer.h"

#include "TestData.h"
#include "VocabVectors.h"
#include "frontends/formats/GGUF.h"
#include "frontends/formats/TokenizerLoaders.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <map>
#include <memory>

using kiln::formats::GGUFFile;
using kiln::formats::tokenizerFromGGUF;
using kiln::runtime::Tokenizer;
using kiln::test::Ids;
using kiln::test::idsToString;

namespace {

class SpecialTokens : public ::testing::Test {
protected:
  Tokenizer &vocab(const std::string &name) {
    auto it = tokenizers.find(name);
    if (it == tokenizers.end())
      it = tokenizers
               .emplace(name, std::make_unique<Tokenizer>(
                                  tokenizerFromGGUF(GGUFFile::open(
                                      kiln::test::vocabDir() + "/" + name))))
               .first;
    return *it->second;
  }

  std::map<std::string, std::unique_ptr<Tokenizer>> tokenizers;
};

TEST_F(SpecialTokens, MatchLlamaCppWithParsingOnAndOff) {
  std::string path = kiln::test::vocabDir() + "/special-tokens.json";
  KILN_REQUIRE_TEST_FILE(path);
  auto cases = nlohmann::json::parse(kiln::test::readFile(path)).at("cases");
  size_t parsed = 0, plain = 0;
  for (const auto &c : cases) {
    std::string text = c.at("text");
    bool parseSpecial = c.at("parse_special");
    Tokenizer &tok = vocab(c.at("vocab"));
    tok.setParseSpecial(parseSpecial);
    Ids expected = c.at("ids").get<Ids>();
    Ids got = tok.encode(text, c.at("add_bos").get<bool>());
    EXPECT_EQ(got, expected) << c.at("vocab").get<std::string>() << " \""
                             << text << "\" parse_special " << parseSpecial
                             << "\n  expected: " << idsToString(expected)
                             << "\n  got:      " << idsToString(got);
    ++(parseSpecial ? parsed : plain);
  }
  EXPECT_EQ(parsed, 9u);
  EXPECT_EQ(plain, 9u);
}

TEST_F(SpecialTokens, NoSecondBosWhenTheTextStartsWithIt) {
  std::string path = kiln::test::vocabDir() + "/ggml-vocab-llama-spm.gguf";
  KILN_REQUIRE_TEST_FILE(path);
  const Tokenizer &tok = vocab("ggml-vocab-llama-spm.gguf");
  ASSERT_TRUE(tok.parsesSpecial()); // the default
  // "<s>[INST] Hello [/INST]" as llama.cpp gives it without BOS: the
  // template's <s> is the only BOS.
  Ids prompt{1, 518, 25580, 29962, 15043, 518, 29914, 25580, 29962};
  EXPECT_EQ(tok.encode("<s>[INST] Hello [/INST]", true), prompt);
  // Without one in the text, BOS is added as before.
  Ids hello = tok.encode("Hello", false);
  hello.insert(hello.begin(), 1);
  EXPECT_EQ(tok.encode("Hello", true), hello);
  // Two in the text stay two (the template asked for them).
  EXPECT_EQ(tok.encode("<s><s>double", true), (Ids{1, 1, 3765}));
}

TEST_F(SpecialTokens, ParsedTokensDecodeBackToNothing) {
  std::string path = kiln::test::vocabDir() + "/ggml-vocab-gpt-2.gguf";
  KILN_REQUIRE_TEST_FILE(path);
  Tokenizer &tok = vocab("ggml-vocab-gpt-2.gguf");
  tok.setParseSpecial(false);
  Ids plain = tok.encode("Hello<|endoftext|>World", false);
  // Unparsed, the characters round-trip.
  EXPECT_EQ(tok.decode(plain), "Hello<|endoftext|>World");
  tok.setParseSpecial(true);
  // Parsed, the control token is one id and prints as nothing.
  EXPECT_EQ(tok.decode(tok.encode("Hello<|endoftext|>World", false)),
            "HelloWorld");
}

} // namespace
