//===- TokenizerTest.cpp - Tokenizers and their loaders -------------------===//
//
// Part of Kiln's unit tests. The vocabulary tests compare against llama.cpp's
// tokenizer test vectors (the ids the original Hugging Face tokenizers give),
// id for id; the llama2.c tests against llama2.c's own outputs.
//
//===----------------------------------------------------------------------===//

#include "runtime/Tokenizer.h"

#include "TestData.h"
#include "VocabVectors.h"
#include "frontends/formats/FormatError.h"
#include "frontends/formats/GGUF.h"
#include "frontends/formats/GGUFWriter.h"
#include "frontends/formats/TokenizerLoaders.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

using kiln::formats::FormatError;
using kiln::formats::GGUFFile;
using kiln::formats::GGUFWriter;
using kiln::formats::loadLlama2cTokenizer;
using kiln::formats::tokenizerFromGGUF;
using kiln::runtime::Tokenizer;
using kiln::runtime::TokenizerSpec;
using kiln::runtime::TokenType;

namespace {

using kiln::test::Ids;
using kiln::test::idsToString;
using kiln::test::readFile;
using kiln::test::VectorResult;

std::string tokenizerTempPath(const std::string &name) {
  static int counter = 0;
  return ::testing::TempDir() + "kiln-tokenizer-test-" +
         std::to_string(getpid()) + "-" + std::to_string(counter++) + "-" +
         name;
}

std::string writeTemp(const std::string &name, const std::string &bytes) {
  std::string path = tokenizerTempPath(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

/// Message of the exception `body` throws (fails the test when it throws
/// nothing or something else).
template <typename Exception, typename Body> std::string errorOf(Body body) {
  try {
    body();
  } catch (const Exception &e) {
    return e.what();
  } catch (const std::exception &e) {
    ADD_FAILURE() << "threw the wrong exception type: " << e.what();
    return "";
  }
  ADD_FAILURE() << "did not throw";
  return "";
}

//===----------------------------------------------------------------------===//
// llama2.c tokenizer files
//===----------------------------------------------------------------------===//

std::string le32(uint32_t v) {
  std::string out(4, '\0');
  for (int i = 0; i < 4; ++i)
    out[i] = static_cast<char>(v >> (8 * i));
  return out;
}

/// A llama2.c tokenizer file: max_token_length, then score, length, bytes.
std::string llama2cFile(const std::vector<std::pair<float, std::string>> &toks,
                        int32_t maxTokenLength = 8) {
  std::string out = le32(static_cast<uint32_t>(maxTokenLength));
  for (const auto &[score, piece] : toks) {
    uint32_t bits;
    std::memcpy(&bits, &score, sizeof(bits));
    out += le32(bits) + le32(static_cast<uint32_t>(piece.size())) + piece;
  }
  return out;
}

const std::vector<std::pair<float, std::string>> kThreeTokens = {
    {0.0f, "<unk>"}, {0.0f, "\n<s>\n"}, {-1.0f, "ab"}};

TEST(TokenizerLlama2c, EncodesTheLlama2PromptLikeLlama2c) {
  std::string path = kiln::test::modelsDir() + "/tokenizer.bin";
  KILN_REQUIRE_TEST_FILE(path);
  Tokenizer tok(loadLlama2cTokenizer(path, 32000));
  ASSERT_EQ(tok.vocabSize(), 32000);
  EXPECT_EQ(tok.encode("I believe the meaning of life is", true),
            (Ids{1, 306, 4658, 278, 6593, 310, 2834, 338}));
  EXPECT_EQ(tok.encode("I believe the meaning of life is", false),
            (Ids{306, 4658, 278, 6593, 310, 2834, 338}));
  EXPECT_EQ(tok.decode({1, 306, 4658, 278, 6593, 310, 2834, 338}),
            "I believe the meaning of life is");
  // The file is exactly 32000 tokens: reading to the end finds the same.
  EXPECT_EQ(loadLlama2cTokenizer(path).tokens.size(), 32000u);
}

TEST(TokenizerLlama2c, Tok512SpecialIdsAndTypes) {
  std::string path = kiln::test::modelsDir() + "/tok512.bin";
  KILN_REQUIRE_TEST_FILE(path);
  TokenizerSpec spec = loadLlama2cTokenizer(path, 512);
  ASSERT_EQ(spec.tokens.size(), 512u);
  EXPECT_EQ(spec.model, TokenizerSpec::Model::ScoreMerge);
  EXPECT_EQ(spec.bosId, 1);
  EXPECT_EQ(spec.eosId, 2);
  EXPECT_EQ(spec.spaceSymbol, " ");
  EXPECT_EQ(spec.tokens[1], "\n<s>\n");
  EXPECT_EQ(spec.types[0], TokenType::Unknown);
  EXPECT_EQ(spec.types[1], TokenType::Control);
  EXPECT_EQ(spec.types[3], TokenType::Byte);   // <0x00>
  EXPECT_EQ(spec.types[258], TokenType::Byte); // <0xFF>
  EXPECT_EQ(spec.types[259], TokenType::Normal);
}

TEST(TokenizerLlama2c, Tok512RoundTrips) {
  std::string path = kiln::test::modelsDir() + "/tok512.bin";
  KILN_REQUIRE_TEST_FILE(path);
  Tokenizer tok(loadLlama2cTokenizer(path, 512));
  for (const std::string text :
       {"Once upon a time, there was a little girl named Lily.",
        "She said, \"I can't find it!\"\nThe end.", "  two  spaces  ",
        "caf\xC3\xA9 \xE2\x9C\x85 \xF0\x9F\x9A\x80", "x"}) {
    Ids ids = tok.encode(text, true);
    ASSERT_FALSE(ids.empty());
    EXPECT_EQ(ids[0], 1) << text;
    EXPECT_EQ(tok.decode(ids), text);
    EXPECT_EQ(tok.decode(tok.encode(text, false)), text);
    // Piece by piece, llama2.c style, gives the same text.
    std::string pieces;
    for (size_t i = 1; i < ids.size(); ++i)
      pieces += tok.decodePiece(ids[i - 1], ids[i]);
    EXPECT_EQ(pieces, text);
  }
  EXPECT_EQ(tok.encode("", true), Ids{1});
  EXPECT_EQ(tok.encode("", false), Ids{});
  // Characters outside the 512 pieces fall back to their UTF-8 bytes
  // (<0xXX> = byte + 3): "ö" is C3 B6 (tok512 has "é" but not "ö").
  EXPECT_EQ(tok.encode("\xC3\xB6", false), (Ids{410, 0xC3 + 3, 0xB6 + 3}));
  EXPECT_EQ(tok.encode("\xC3\xA9", false), (Ids{410, 485}));
}

TEST(TokenizerLlama2c, DecodePieceRules) {
  std::string path = kiln::test::modelsDir() + "/tok512.bin";
  KILN_REQUIRE_TEST_FILE(path);
  TokenizerSpec spec = loadLlama2cTokenizer(path, 512);
  Tokenizer tok(spec);
  int32_t theId = -1; // " t" in tok512: a piece with a leading space
  for (int32_t id = 0; id < tok.vocabSize(); ++id)
    if (spec.tokens[id] == " t")
      theId = id;
  ASSERT_GE(theId, 0);
  EXPECT_EQ(tok.decodePiece(/*previous=*/1, theId), "t"); // after BOS
  EXPECT_EQ(tok.decodePiece(/*previous=*/theId, theId), " t");
  EXPECT_EQ(tok.decodePiece(theId, 0x0A + 3), "\n");   // <0x0A>
  EXPECT_EQ(tok.decodePiece(1, 0x20 + 3), " ");        // bytes stay
  EXPECT_EQ(tok.decodePiece(theId, 0xFF + 3), "\xFF"); // raw byte
  EXPECT_EQ(tok.decodePiece(theId, 1), "");            // BOS: control
  EXPECT_EQ(tok.decodePiece(theId, 2), "");            // EOS: control
  EXPECT_THROW(tok.decodePiece(1, 512), std::out_of_range);
}

TEST(TokenizerLlama2c, DecodesTheGoldenGenerationPieceByPiece) {
  std::string tokPath = kiln::test::modelsDir() + "/tok512.bin";
  std::string idsPath =
      kiln::test::modelsDir() + "/golden_stories260K_greedy.ids";
  std::string txtPath =
      kiln::test::modelsDir() + "/golden_stories260K_greedy.txt";
  KILN_REQUIRE_TEST_FILE(tokPath);
  KILN_REQUIRE_TEST_FILE(idsPath);
  KILN_REQUIRE_TEST_FILE(txtPath);
  Tokenizer tok(loadLlama2cTokenizer(tokPath, 512));
  Ids ids;
  std::istringstream in(readFile(idsPath));
  for (int32_t id; in >> id;)
    ids.push_back(id);
  ASSERT_EQ(ids.size(), 256u);
  // llama2.c prints each token after the first as it is fed; the last
  // token it sampled ("." here) and its closing newline are not in the ids.
  std::string printed;
  for (size_t i = 1; i < ids.size(); ++i)
    printed += tok.decodePiece(ids[i - 1], ids[i]);
  EXPECT_EQ(printed + ".\n", readFile(txtPath));
}

TEST(TokenizerLlama2c, ReadsToTheEndOrTheGivenCount) {
  std::string path = writeTemp("three.bin", llama2cFile(kThreeTokens));
  TokenizerSpec all = loadLlama2cTokenizer(path);
  EXPECT_EQ(all.tokens, (std::vector<std::string>{"<unk>", "\n<s>\n", "ab"}));
  EXPECT_EQ(all.scores, (std::vector<float>{0.0f, 0.0f, -1.0f}));
  EXPECT_EQ(loadLlama2cTokenizer(path, 2).tokens.size(), 2u);
  std::remove(path.c_str());
}

TEST(TokenizerLlama2c, LoaderErrorsNameTheTokenAndTheFile) {
  std::string full = llama2cFile(kThreeTokens);
  struct Case {
    const char *what;
    std::string bytes;
    int64_t vocabSize;
    const char *expected;
  };
  std::string negative = full;
  // Token 1's length field follows its score, 4 + 8 + 5 bytes in.
  std::memcpy(&negative[4 + 8 + 5 + 4], le32(0xFFFFFFFFu).data(), 4);
  const Case cases[] = {
      {"shorter than the header", std::string("\x07\x00", 2), -1, "too short"},
      {"count larger than the file", full, 4, "token 3"},
      {"bytes cut inside token 2", full.substr(0, full.size() - 1), 3,
       "token 2"},
      {"a partial record at the end", full + std::string(5, '\0'), -1,
       "token 3"},
      {"a negative length", negative, 3, "token 1 has negative length"},
      {"a negative max_token_length", le32(0xFFFFFFF0u), -1,
       "max_token_length"},
      {"no tokens", le32(8), -1, "no tokens"},
  };
  for (const Case &c : cases) {
    std::string path = writeTemp("bad.bin", c.bytes);
    std::string message =
        errorOf<FormatError>([&] { loadLlama2cTokenizer(path, c.vocabSize); });
    EXPECT_NE(message.find(c.expected), std::string::npos)
        << c.what << ": " << message;
    EXPECT_NE(message.find(path), std::string::npos)
        << c.what << ": " << message;
    std::remove(path.c_str());
  }
  EXPECT_NE(errorOf<FormatError>([] {
              loadLlama2cTokenizer("/nonexistent/tokenizer.bin");
            }).find("/nonexistent/tokenizer.bin"),
            std::string::npos);
}

TEST(TokenizerLlama2c, TruncatedTokenizerBinNamesTheTokenIndex) {
  std::string source = kiln::test::modelsDir() + "/tokenizer.bin";
  KILN_REQUIRE_TEST_FILE(source);
  std::string bytes = readFile(source);
  // Find where token 20000's record starts.
  size_t offset = 4;
  for (int i = 0; i < 20000; ++i) {
    uint32_t length;
    std::memcpy(&length, bytes.data() + offset + 4, 4);
    offset += 8 + length;
  }
  // Six bytes in: inside its length field.
  std::string path =
      writeTemp("tokenizer-cut.bin", bytes.substr(0, offset + 6));
  std::string message =
      errorOf<FormatError>([&] { loadLlama2cTokenizer(path, 32000); });
  EXPECT_NE(message.find("token 20000"), std::string::npos) << message;
  std::remove(path.c_str());
}

//===----------------------------------------------------------------------===//
// llama.cpp's vocabulary test vectors
//===----------------------------------------------------------------------===//

/// The vectors of `vocab` with the tokenizer its GGUF describes.
VectorResult checkVectors(const std::string &vocab) {
  std::string base = kiln::test::vocabDir() + "/" + vocab;
  Tokenizer tok(tokenizerFromGGUF(GGUFFile::open(base)));
  return kiln::test::checkVectors(tok, vocab, vocab);
}

TEST(TokenizerVectors, LlamaSpm) {
  std::string path = kiln::test::vocabDir() + "/ggml-vocab-llama-spm.gguf";
  KILN_REQUIRE_TEST_FILE(path);
  VectorResult r = checkVectors("ggml-vocab-llama-spm.gguf");
  EXPECT_EQ(r.texts, 46u);
  EXPECT_EQ(r.encoded, r.texts);
}

TEST(TokenizerVectors, Gpt2) {
  std::string path = kiln::test::vocabDir() + "/ggml-vocab-gpt-2.gguf";
  KILN_REQUIRE_TEST_FILE(path);
  VectorResult r = checkVectors("ggml-vocab-gpt-2.gguf");
  EXPECT_EQ(r.texts, 46u);
  EXPECT_EQ(r.encoded, r.texts);
}

TEST(TokenizerVectors, DeepSeekLlm) {
  std::string path = kiln::test::vocabDir() + "/ggml-vocab-deepseek-llm.gguf";
  KILN_REQUIRE_TEST_FILE(path);
  VectorResult r = checkVectors("ggml-vocab-deepseek-llm.gguf");
  EXPECT_EQ(r.texts, 46u);
  EXPECT_EQ(r.encoded, r.texts);
}

//===----------------------------------------------------------------------===//
// GGUF vocabularies
//===----------------------------------------------------------------------===//

TEST(TokenizerGGUF, SpecialIdsAndFlags) {
  std::string dir = kiln::test::vocabDir();
  KILN_REQUIRE_TEST_FILE(dir + "/ggml-vocab-llama-spm.gguf");
  KILN_REQUIRE_TEST_FILE(dir + "/ggml-vocab-gpt-2.gguf");
  KILN_REQUIRE_TEST_FILE(dir + "/ggml-vocab-deepseek-llm.gguf");

  TokenizerSpec spm =
      tokenizerFromGGUF(GGUFFile::open(dir + "/ggml-vocab-llama-spm.gguf"));
  EXPECT_EQ(spm.model, TokenizerSpec::Model::ScoreMerge);
  EXPECT_EQ(spm.tokens.size(), 32000u);
  EXPECT_EQ(spm.bosId, 1);
  EXPECT_EQ(spm.eosId, 2);
  EXPECT_EQ(spm.eotId, -1);
  EXPECT_TRUE(spm.addBos);
  EXPECT_TRUE(spm.addSpacePrefix);
  EXPECT_EQ(spm.spaceSymbol, "\xE2\x96\x81");
  EXPECT_EQ(spm.types[0], TokenType::Unknown);
  EXPECT_EQ(spm.types[3], TokenType::Byte);

  TokenizerSpec gpt2 =
      tokenizerFromGGUF(GGUFFile::open(dir + "/ggml-vocab-gpt-2.gguf"));
  EXPECT_EQ(gpt2.model, TokenizerSpec::Model::ByteLevelBPE);
  EXPECT_EQ(gpt2.preTokenizer, "gpt-2");
  EXPECT_EQ(gpt2.merges.size(), 50000u);
  EXPECT_EQ(gpt2.bosId, 50256);
  EXPECT_EQ(gpt2.eosId, 50256);
  EXPECT_EQ(gpt2.eotId, 50256); // found by its piece <|endoftext|>
  EXPECT_FALSE(gpt2.addBos);

  TokenizerSpec deepseek =
      tokenizerFromGGUF(GGUFFile::open(dir + "/ggml-vocab-deepseek-llm.gguf"));
  EXPECT_EQ(deepseek.preTokenizer, "deepseek-llm");
  EXPECT_EQ(deepseek.bosId, 100000);
  EXPECT_EQ(deepseek.eosId, 100001);
  EXPECT_TRUE(deepseek.addBos);
  Tokenizer tok(deepseek);
  EXPECT_EQ(tok.encode("Hello", true), (Ids{100000, 17464}));
  EXPECT_EQ(tok.decode({100000, 17464, 100001}), "Hello"); // control: ""
}

TEST(TokenizerGGUF, Tok512InsideAGGUFEncodesAsTok512Bin) {
  std::string gguf = kiln::test::modelsDir() + "/stories260K-f32.gguf";
  std::string bin = kiln::test::modelsDir() + "/tok512.bin";
  KILN_REQUIRE_TEST_FILE(gguf);
  KILN_REQUIRE_TEST_FILE(bin);
  // The same vocabulary spelled with "▁" (GGUF) and with " " (llama2.c).
  Tokenizer fromGGUF(tokenizerFromGGUF(GGUFFile::open(gguf)));
  Tokenizer fromBin(loadLlama2cTokenizer(bin, 512));
  for (const std::string text :
       {"Once upon a time, Lily saw a big dog.", "  Hi\n\tthere \xC3\xA9",
        "One day, she said: \"Let's play!\""}) {
    Ids ids = fromBin.encode(text, true);
    EXPECT_EQ(fromGGUF.encode(text, true), ids) << text;
    EXPECT_EQ(fromGGUF.decode(ids), text);
    std::string pieces;
    for (size_t i = 1; i < ids.size(); ++i)
      pieces += fromGGUF.decodePiece(ids[i - 1], ids[i]);
    EXPECT_EQ(pieces, text);
  }
}

/// A small gpt2-model GGUF vocabulary, with `edit` applied before writing.
template <typename Edit> std::string gpt2Gguf(Edit edit) {
  GGUFWriter w;
  w.addString("general.architecture", "gpt2");
  edit(w);
  return writeTemp("vocab.gguf", w.bytes());
}

std::string loaderError(const std::string &path) {
  return errorOf<FormatError>([&] { tokenizerFromGGUF(GGUFFile::open(path)); });
}

TEST(TokenizerGGUF, LoaderErrorsNameTheKey) {
  const std::vector<std::string> tokens = {"a", "b", "ab"};
  struct Case {
    const char *what;
    std::function<void(GGUFWriter &)> edit;
    const char *expected;
  };
  auto base = [&](GGUFWriter &w) {
    w.addString("tokenizer.ggml.model", "gpt2")
        .addStringArray("tokenizer.ggml.tokens", tokens);
  };
  const Case cases[] = {
      {"no vocabulary", [](GGUFWriter &) {}, "tokenizer.ggml.model"},
      {"unsupported model",
       [](GGUFWriter &w) {
         w.addString("tokenizer.ggml.model", "bert")
             .addStringArray("tokenizer.ggml.tokens", {"a"});
       },
       "'bert'"},
      {"scores length",
       [&](GGUFWriter &w) {
         base(w);
         w.addStringArray("tokenizer.ggml.merges", {"a b"})
             .addF32Array("tokenizer.ggml.scores", {0.0f, 1.0f});
       },
       "tokenizer.ggml.scores has 2 entries but tokenizer.ggml.tokens has 3"},
      {"token_type length",
       [&](GGUFWriter &w) {
         base(w);
         w.addStringArray("tokenizer.ggml.merges", {"a b"})
             .addI32Array("tokenizer.ggml.token_type", {1, 1, 1, 1});
       },
       "tokenizer.ggml.token_type has 4 entries"},
      {"token_type value",
       [&](GGUFWriter &w) {
         base(w);
         w.addStringArray("tokenizer.ggml.merges", {"a b"})
             .addI32Array("tokenizer.ggml.token_type", {1, 9, 1});
       },
       "tokenizer.ggml.token_type[1] is 9"},
      {"no merges", base, "tokenizer.ggml.merges is missing"},
      {"bos out of range",
       [&](GGUFWriter &w) {
         base(w);
         w.addStringArray("tokenizer.ggml.merges", {"a b"})
             .addU32("tokenizer.ggml.bos_token_id", 3);
       },
       "tokenizer.ggml.bos_token_id = 3 is outside the vocabulary"},
      {"llama without scores",
       [](GGUFWriter &w) {
         w.addString("tokenizer.ggml.model", "llama")
             .addStringArray("tokenizer.ggml.tokens", {"a"});
       },
       "tokenizer.ggml.scores is missing"},
  };
  for (const Case &c : cases) {
    std::string path = gpt2Gguf(c.edit);
    std::string message = loaderError(path);
    EXPECT_NE(message.find(c.expected), std::string::npos)
        << c.what << ": " << message;
    EXPECT_NE(message.find(path), std::string::npos) << c.what;
    std::remove(path.c_str());
  }
}

TEST(TokenizerGGUF, SmallByteLevelVocabulary) {
  // "Ġ" (U+0120) is GPT-2's character for the space byte.
  std::string path = gpt2Gguf([](GGUFWriter &w) {
    w.addString("tokenizer.ggml.model", "gpt2")
        .addString("tokenizer.ggml.pre", "gpt-2")
        .addStringArray("tokenizer.ggml.tokens", {"a", "b", "\xC4\xA0", "ab",
                                                  "\xC4\xA0"
                                                  "ab",
                                                  "<|im_end|>"})
        .addI32Array("tokenizer.ggml.token_type", {1, 1, 1, 1, 1, 3})
        .addStringArray("tokenizer.ggml.merges", {"a b", "\xC4\xA0 ab"});
  });
  TokenizerSpec spec = tokenizerFromGGUF(GGUFFile::open(path));
  std::remove(path.c_str());
  EXPECT_EQ(spec.bosId, -1);
  EXPECT_EQ(spec.eotId, 5); // <|im_end|> by its piece
  Tokenizer tok(spec);
  EXPECT_EQ(tok.encode("ab ab", true), (Ids{3, 4})); // no BOS to add
  EXPECT_EQ(tok.encode("aab b", false), (Ids{0, 3, 2, 1}));
  EXPECT_EQ(tok.decode({3, 4, 5}), "ab ab");
  // "c" has no token and the vocabulary no unknown token: it is dropped.
  EXPECT_EQ(tok.encode("acb", false), (Ids{0, 1}));
}

//===----------------------------------------------------------------------===//
// Spec validation and the algorithms on hand-made vocabularies
//===----------------------------------------------------------------------===//

TokenizerSpec tinyScoreMerge() {
  TokenizerSpec spec;
  spec.spaceSymbol = " ";
  spec.tokens = {"<unk>", "<s>", "</s>", " ", "a", "b", "ab", " a", " ab"};
  spec.scores = {0, 0, 0, -1, -1, -1, -2, -3, -1};
  spec.types = {TokenType::Unknown, TokenType::Control, TokenType::Control,
                TokenType::Normal,  TokenType::Normal,  TokenType::Normal,
                TokenType::Normal,  TokenType::Normal,  TokenType::Normal};
  spec.bosId = 1;
  spec.eosId = 2;
  return spec;
}

TEST(TokenizerSpecValidation, RejectsInconsistentSpecs) {
  struct Case {
    const char *what;
    std::function<void(TokenizerSpec &)> edit;
    const char *expected;
  };
  const Case cases[] = {
      {"empty", [](TokenizerSpec &s) { s.tokens.clear(); }, "empty"},
      {"scores size", [](TokenizerSpec &s) { s.scores.pop_back(); },
       "8 scores for 9 tokens"},
      {"types size", [](TokenizerSpec &s) { s.types.pop_back(); },
       "8 token types for 9 tokens"},
      {"bad type",
       [](TokenizerSpec &s) { s.types[4] = static_cast<TokenType>(42); },
       "token 4 has type 42"},
      {"NaN score", [](TokenizerSpec &s) { s.scores[5] = std::nanf(""); },
       "score of token 5"},
      {"bos out of range", [](TokenizerSpec &s) { s.bosId = 9; },
       "BOS id 9 is outside the vocabulary (9 tokens)"},
      {"eos negative", [](TokenizerSpec &s) { s.eosId = -2; }, "EOS id -2"},
      {"eot out of range", [](TokenizerSpec &s) { s.eotId = 100; },
       "EOT id 100"},
      {"merge of an unknown token",
       [](TokenizerSpec &s) {
         s.model = TokenizerSpec::Model::ByteLevelBPE;
         s.merges = {"a b", "ab zz"};
       },
       "merge 1 \"ab zz\" refers to \"zz\", which is not a token"},
      {"merge without a separator",
       [](TokenizerSpec &s) {
         s.model = TokenizerSpec::Model::ByteLevelBPE;
         s.merges = {"ab"};
       },
       "merge 0 \"ab\" is not two tokens"},
      {"merge whose result is not a token",
       [](TokenizerSpec &s) {
         s.model = TokenizerSpec::Model::ByteLevelBPE;
         s.merges = {"b a"};
       },
       "makes \"ba\", which is not a token"},
      {"unknown pre-tokenizer",
       [](TokenizerSpec &s) {
         s.model = TokenizerSpec::Model::ByteLevelBPE;
         s.preTokenizer = "no-such-pre";
       },
       "unknown pre-tokenizer 'no-such-pre'"},
  };
  for (const Case &c : cases) {
    TokenizerSpec spec = tinyScoreMerge();
    c.edit(spec);
    std::string message =
        errorOf<std::invalid_argument>([&] { Tokenizer tok(spec); });
    EXPECT_NE(message.find(c.expected), std::string::npos)
        << c.what << ": " << message;
  }
}

TEST(TokenizerScoreMerge, HighestScoreFirstLeftmostOnTies) {
  Tokenizer tok(tinyScoreMerge());
  // " ab": " a" (-3) vs "ab" (-2): "ab" first, then " " + "ab" -> " ab".
  EXPECT_EQ(tok.encode("ab", false), (Ids{8}));
  // "aa": " a" then "a"; no "aa" piece.
  EXPECT_EQ(tok.encode("aa", false), (Ids{7, 4}));
  // Equal scores: in "abab" both "ab" pairs score -2; whichever goes first
  // the leftmost rule gives " ab" + "ab".
  EXPECT_EQ(tok.encode("abab", true), (Ids{1, 8, 6}));
  // No byte tokens: an unknown character is <unk>.
  EXPECT_EQ(tok.encode("a\xC3\xA9", false), (Ids{7, 0}));
  // Malformed UTF-8 never crashes: each stray byte is a character.
  EXPECT_EQ(tok.encode("\xC3", false), (Ids{3, 0}));
  EXPECT_EQ(tok.encode("\xF0\x9F\x9A", false), (Ids{3, 0, 0, 0}));
  EXPECT_EQ(tok.decode({1, 8, 6}), "abab");
}

TEST(TokenizerScoreMerge, NoSpacePrefixWhenTheVocabularySaysSo) {
  TokenizerSpec spec = tinyScoreMerge();
  spec.addSpacePrefix = false;
  Tokenizer tok(spec);
  EXPECT_EQ(tok.encode("ab", false), (Ids{6}));
  EXPECT_EQ(tok.encode(" ab", false), (Ids{8}));
  EXPECT_EQ(tok.decode({8}), " ab");
}

TEST(TokenizerByteLevel, MalformedUtf8IsTokenizedByteByByte) {
  std::string dir = kiln::test::vocabDir();
  const std::vector<std::string> texts = {
      std::string("a\xC3"), std::string("\xE2\x82 x \xED\xA0\x80"),
      std::string("hi\0there", 8), std::string("\xC3\xA9\xA9")};
  for (const char *vocab :
       {"ggml-vocab-gpt-2.gguf", "ggml-vocab-deepseek-llm.gguf"}) {
    KILN_REQUIRE_TEST_FILE(dir + "/" + vocab);
    Tokenizer tok(tokenizerFromGGUF(GGUFFile::open(dir + "/" + vocab)));
    for (const std::string &text : texts) {
      Ids ids = tok.encode(text, false);
      EXPECT_FALSE(ids.empty()) << vocab;
      EXPECT_EQ(tok.decode(ids), text) << vocab;
    }
  }

  // GPT-2 has a token for every byte's character, so any bytes round-trip.
  KILN_REQUIRE_TEST_FILE(dir + "/ggml-vocab-gpt-2.gguf");
  Tokenizer gpt2(
      tokenizerFromGGUF(GGUFFile::open(dir + "/ggml-vocab-gpt-2.gguf")));
  EXPECT_EQ(gpt2.decode(gpt2.encode("\xFF\xFE", false)), "\xFF\xFE");
  // DeepSeek's vocabulary lacks the characters of the bytes that never
  // occur in UTF-8 (C0, C1, F5..FF) as ordinary tokens and has them as
  // user-defined tokens instead ("\xC3\xBF" = "ÿ" is 100005, "þ" 100013),
  // which decode as the text they spell -- as in Hugging Face's tokenizer.
  KILN_REQUIRE_TEST_FILE(dir + "/ggml-vocab-deepseek-llm.gguf");
  Tokenizer deepseek(
      tokenizerFromGGUF(GGUFFile::open(dir + "/ggml-vocab-deepseek-llm.gguf")));
  EXPECT_EQ(deepseek.encode("\xFF\xFE", false), (Ids{100005, 100013}));
  EXPECT_EQ(deepseek.decode({100005, 100013}), "\xC3\xBF\xC3\xBE");
}

TEST(TokenizerByteLevel, OtherPreTokenizersCompile) {
  // No vector tests them here, but a vocabulary naming them must load.
  for (const char *pre :
       {"gpt-2", "llama-bpe", "llama3", "qwen2", "deepseek-llm"}) {
    TokenizerSpec spec;
    spec.model = TokenizerSpec::Model::ByteLevelBPE;
    spec.preTokenizer = pre;
    spec.tokens = {"1", "2", "3", "12", "123", "a"};
    spec.merges = {"1 2", "12 3"};
    Tokenizer tok(spec);
    Ids ids = tok.encode("1231", false);
    EXPECT_EQ(tok.decode(ids), "1231") << pre;
    if (std::string(pre) == "qwen2" || std::string(pre) == "deepseek-llm")
      EXPECT_EQ(ids, (Ids{0, 1, 2, 0})) << pre; // one digit per piece
    else if (std::string(pre) == "gpt-2")
      EXPECT_EQ(ids, (Ids{4, 0})) << pre; // one number
    else
      EXPECT_EQ(ids, (Ids{4, 0})) << pre; // digits in threes
  }
}

} // namespace
