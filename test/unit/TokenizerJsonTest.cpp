//===- TokenizerJsonTest.cpp - Hugging Face tokenizer.json files ----------===//
//
// Part of Kiln's unit tests. There are no tokenizer.json fixtures in
// ../shared, so the tests write them: each GGUF vocabulary of ../shared/vocab
// is spelled out as the Hugging Face file of the same tokenizer would have
// it (GPT-2's ByteLevel, DeepSeek's Split sequence, Llama 2's SentencePiece
// conversion with merges generated as the library's converter does), read
// back with tokenizerFromJson, and checked against llama.cpp's test vectors
// -- the ids the original Hugging Face tokenizers give -- id for id.
//
//===----------------------------------------------------------------------===//

#include "runtime/PreTokenizer.h"
#include "runtime/Tokenizer.h"

#include "TestData.h"
#include "VocabVectors.h"
#include "frontends/formats/FormatError.h"
#include "frontends/formats/GGUF.h"
#include "frontends/formats/TokenizerLoaders.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <unordered_map>
#include <vector>

using kiln::formats::FormatError;
using kiln::formats::GGUFFile;
using kiln::formats::tokenizerFromGGUF;
using kiln::formats::tokenizerFromJson;
using kiln::runtime::Tokenizer;
using kiln::runtime::TokenizerSpec;
using kiln::runtime::TokenType;

namespace {

using kiln::test::checkVectors;
using kiln::test::Ids;
using kiln::test::readFile;
using kiln::test::VectorResult;

namespace fs = std::filesystem;

/// A fresh directory under the test temp dir, removed when it goes out of
/// scope (tokenizer_config.json is looked up beside tokenizer.json, so each
/// case needs a directory of its own).
class TempDir {
public:
  TempDir() {
    static int counter = 0;
    path = ::testing::TempDir() + "kiln-tokenizer-json-" +
           std::to_string(getpid()) + "-" + std::to_string(counter++);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code error;
    fs::remove_all(path, error);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;

  std::string write(const std::string &name, const std::string &bytes) const {
    std::string file = path + "/" + name;
    std::ofstream(file, std::ios::binary) << bytes;
    return file;
  }

  std::string path;
};

/// Message of the FormatError `body` throws (fails the test when it throws
/// nothing or something else).
template <typename Body> std::string formatErrorOf(Body body) {
  try {
    body();
  } catch (const FormatError &e) {
    return e.what();
  } catch (const std::exception &e) {
    ADD_FAILURE() << "threw the wrong exception type: " << e.what();
    return "";
  }
  ADD_FAILURE() << "did not throw";
  return "";
}

//===----------------------------------------------------------------------===//
// Writing tokenizer.json files
//===----------------------------------------------------------------------===//

/// `text` (valid UTF-8) as a JSON string.
std::string jsonString(const std::string &text) {
  std::string out = "\"";
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof(buffer), "\\u%04X", byte);
      out += buffer;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

/// UTF-8 of a code point.
std::string utf8(uint32_t codePoint) {
  std::string out;
  if (codePoint < 0x80) {
    out += static_cast<char>(codePoint);
  } else if (codePoint < 0x800) {
    out += static_cast<char>(0xC0 | (codePoint >> 6));
    out += static_cast<char>(0x80 | (codePoint & 0x3F));
  } else if (codePoint < 0x10000) {
    out += static_cast<char>(0xE0 | (codePoint >> 12));
    out += static_cast<char>(0x80 | ((codePoint >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (codePoint & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (codePoint >> 18));
    out += static_cast<char>(0x80 | ((codePoint >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((codePoint >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (codePoint & 0x3F));
  }
  return out;
}

/// `expression` with every "\x{HHHH}" written as the character itself, as
/// tokenizer.json files spell their character classes.
std::string withLiteralCharacters(const std::string &expression) {
  std::string out;
  for (size_t i = 0; i < expression.size();) {
    if (expression.compare(i, 3, "\\x{") == 0) {
      size_t close = expression.find('}', i);
      out += utf8(static_cast<uint32_t>(
          std::stoul(expression.substr(i + 3, close - i - 3), nullptr, 16)));
      i = close + 1;
    } else {
      out += expression[i++];
    }
  }
  return out;
}

/// The parts of a tokenizer.json that differ between tokenizers; the
/// writer puts them in the library's layout.
struct JsonParts {
  std::string normalizer = "null";
  std::string preTokenizer = "null";
  std::string postProcessor = "null";
  std::string decoder = "null";
  std::string modelOptions; ///< Keys before "vocab", each ending in ','.
  bool mergesAsPairs = false;
};

/// A tokenizer.json holding `spec`'s vocabulary: ids of `inVocab` tokens in
/// model.vocab (written in descending id order: the loader must not rely on
/// the order), Control and UserDefined tokens in added_tokens, and `merges`.
std::string
tokenizerJson(const TokenizerSpec &spec, const std::vector<bool> &inVocab,
              const std::vector<std::pair<int32_t, int32_t>> &merges,
              const JsonParts &parts) {
  std::string out = "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n"
                    "  \"padding\": null,\n  \"added_tokens\": [";
  bool first = true;
  for (size_t id = 0; id < spec.tokens.size(); ++id) {
    TokenType type = spec.types[id];
    if (type != TokenType::Control && type != TokenType::UserDefined &&
        type != TokenType::Unknown)
      continue;
    out += std::string(first ? "" : ",") +
           "\n    {\"id\": " + std::to_string(id) +
           ", \"content\": " + jsonString(spec.tokens[id]) +
           ", \"single_word\": false, \"lstrip\": false, \"rstrip\": false, "
           "\"normalized\": false, \"special\": " +
           (type == TokenType::UserDefined ? "false" : "true") + "}";
    first = false;
  }
  out += "\n  ],\n  \"normalizer\": " + parts.normalizer +
         ",\n  \"pre_tokenizer\": " + parts.preTokenizer +
         ",\n  \"post_processor\": " + parts.postProcessor +
         ",\n  \"decoder\": " + parts.decoder +
         ",\n  \"model\": {\n    \"type\": \"BPE\",\n    \"dropout\": null,\n" +
         parts.modelOptions + "\n    \"vocab\": {";
  first = true;
  for (size_t id = spec.tokens.size(); id-- > 0;) {
    if (!inVocab[id])
      continue;
    out += std::string(first ? "" : ",") + "\n      " +
           jsonString(spec.tokens[id]) + ": " + std::to_string(id);
    first = false;
  }
  out += "\n    },\n    \"merges\": [";
  first = true;
  for (auto [left, right] : merges) {
    out += std::string(first ? "" : ",") + "\n      ";
    if (parts.mergesAsPairs)
      out += "[" + jsonString(spec.tokens[left]) + ", " +
             jsonString(spec.tokens[right]) + "]";
    else
      out += jsonString(spec.tokens[left] + " " + spec.tokens[right]);
    first = false;
  }
  return out + "\n    ]\n  }\n}\n";
}

/// Ids of the halves of each "a b" merge of a byte-level spec.
std::vector<std::pair<int32_t, int32_t>> mergeIds(const TokenizerSpec &spec) {
  std::unordered_map<std::string, int32_t> ids;
  for (size_t id = 0; id < spec.tokens.size(); ++id)
    ids.emplace(spec.tokens[id], static_cast<int32_t>(id));
  std::vector<std::pair<int32_t, int32_t>> out;
  for (const std::string &merge : spec.merges) {
    size_t space = merge.find(' ', 1);
    out.emplace_back(ids.at(merge.substr(0, space)),
                     ids.at(merge.substr(space + 1)));
  }
  return out;
}

const char *const kByteLevelComponent =
    R"({"type": "ByteLevel", "add_prefix_space": false, )"
    R"("trim_offsets": true, "use_regex": true})";

/// GPT-2's tokenizer.json: everything in model.vocab, "a b" merges,
/// <|endoftext|> also an added token.
std::string gpt2Json(const TokenizerSpec &gguf) {
  JsonParts parts;
  parts.preTokenizer = kByteLevelComponent;
  parts.postProcessor = R"({"type": "ByteLevel", "add_prefix_space": true, )"
                        R"("trim_offsets": false, "use_regex": true})";
  parts.decoder = kByteLevelComponent;
  parts.modelOptions =
      R"(    "unk_token": null, "continuing_subword_prefix": "", )"
      R"("end_of_word_suffix": "", "fuse_unk": false, "byte_fallback": false,)";
  return tokenizerJson(gguf, std::vector<bool>(gguf.tokens.size(), true),
                       mergeIds(gguf), parts);
}

/// DeepSeek LLM's Split expressions: the runtime's own for "deepseek-llm",
/// but its last (single digits), which the file spells as a Digits
/// pre-tokenizer.
std::vector<std::string> deepSeekSplits() {
  std::vector<std::string> expressions =
      kiln::runtime::detail::PreTokenizer::expressionsOf("deepseek-llm");
  EXPECT_EQ(expressions.back(), R"(\p{N})");
  expressions.pop_back();
  return expressions;
}

/// DeepSeek LLM's tokenizer.json: Split sequence, Digits, ByteLevel without
/// its own expression; special tokens only in added_tokens; merges as pairs.
std::string deepSeekJson(const TokenizerSpec &gguf) {
  JsonParts parts;
  parts.preTokenizer = "{\"type\": \"Sequence\", \"pretokenizers\": [";
  for (const std::string &expression : deepSeekSplits())
    parts.preTokenizer +=
        "\n    {\"type\": \"Split\", \"pattern\": {\"Regex\": " +
        jsonString(withLiteralCharacters(expression)) +
        "}, \"behavior\": \"Isolated\", \"invert\": false},";
  parts.preTokenizer +=
      "\n    {\"type\": \"Digits\", \"individual_digits\": true},"
      "\n    {\"type\": \"ByteLevel\", \"add_prefix_space\": false, "
      "\"trim_offsets\": true, \"use_regex\": false}]}";
  std::string bos = jsonString(gguf.tokens[gguf.bosId]);
  parts.postProcessor =
      "{\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": "
      "{\"id\": " +
      bos +
      ", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}], "
      "\"pair\": [], \"special_tokens\": {" +
      bos + ": {\"id\": " + bos + ", \"ids\": [" + std::to_string(gguf.bosId) +
      "], \"tokens\": [" + bos + "]}}}";
  parts.decoder = kByteLevelComponent;
  parts.modelOptions =
      R"(    "unk_token": null, "continuing_subword_prefix": null, )"
      R"("end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false,)";
  parts.mergesAsPairs = true;
  std::vector<bool> inVocab(gguf.tokens.size());
  for (size_t id = 0; id < gguf.tokens.size(); ++id)
    inVocab[id] = gguf.types[id] == TokenType::Normal;
  return tokenizerJson(gguf, inVocab, mergeIds(gguf), parts);
}

/// The merges the library's SentencePiece converter (SentencePieceExtractor)
/// writes for a vocabulary: every split of a piece at a character boundary
/// into two pieces, those of one piece ordered by the halves' ids, all
/// ordered (stably) by the piece's score, highest first.
std::vector<std::pair<int32_t, int32_t>>
sentencePieceMerges(const TokenizerSpec &spec) {
  std::unordered_map<std::string, int32_t> ids;
  for (size_t id = 0; id < spec.tokens.size(); ++id)
    ids.emplace(spec.tokens[id], static_cast<int32_t>(id));
  struct Merge {
    int32_t left;
    int32_t right;
    float score;
    size_t order; ///< Position before sorting by score: keeps it stable.
  };
  std::vector<Merge> merges;
  for (size_t id = 0; id < spec.tokens.size(); ++id) {
    const std::string &piece = spec.tokens[id];
    std::vector<Merge> local;
    for (size_t at = 1; at < piece.size(); ++at) {
      if ((static_cast<unsigned char>(piece[at]) & 0xC0) == 0x80)
        continue; // inside a character
      auto left = ids.find(piece.substr(0, at));
      auto right = ids.find(piece.substr(at));
      if (left != ids.end() && right != ids.end())
        local.push_back({left->second, right->second, spec.scores[id], 0});
    }
    std::sort(local.begin(), local.end(), [](const Merge &a, const Merge &b) {
      return a.left != b.left ? a.left < b.left : a.right < b.right;
    });
    for (Merge &merge : local) {
      merge.order = merges.size();
      merges.push_back(merge);
    }
  }
  std::sort(merges.begin(), merges.end(), [](const Merge &a, const Merge &b) {
    return a.score != b.score ? a.score > b.score : a.order < b.order;
  });
  std::vector<std::pair<int32_t, int32_t>> out;
  for (const Merge &merge : merges)
    out.emplace_back(merge.left, merge.right);
  return out;
}

const char *const kSpace = "\xE2\x96\x81";

/// Llama 2's tokenizer.json (legacy SentencePiece conversion): Prepend and
/// Replace normalizers, byte fallback, <unk>/<s>/</s> also added tokens.
/// `metaspace`: the newer form, a Metaspace pre-tokenizer instead.
std::string llamaSpmJson(const TokenizerSpec &gguf, bool metaspace) {
  JsonParts parts;
  std::string space = jsonString(kSpace);
  if (metaspace) {
    parts.preTokenizer = "{\"type\": \"Metaspace\", \"replacement\": " + space +
                         ", \"prepend_scheme\": \"first\", \"split\": false}";
  } else {
    parts.normalizer =
        "{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Prepend\", "
        "\"prepend\": " +
        space +
        "}, {\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, "
        "\"content\": " +
        space + "}]}";
  }
  parts.postProcessor =
      R"({"type": "TemplateProcessing", "single": [{"SpecialToken": )"
      R"({"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", )"
      R"("type_id": 0}}], "pair": [], "special_tokens": {"<s>": )"
      R"({"id": "<s>", "ids": [1], "tokens": ["<s>"]}}})";
  parts.decoder =
      "{\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Replace\", "
      "\"pattern\": {\"String\": " +
      space +
      "}, \"content\": \" \"}, {\"type\": \"ByteFallback\"}, {\"type\": "
      "\"Fuse\"}, {\"type\": \"Strip\", \"content\": \" \", \"start\": 1, "
      "\"stop\": 0}]}";
  parts.modelOptions =
      R"(    "unk_token": "<unk>", "continuing_subword_prefix": null, )"
      R"("end_of_word_suffix": null, "fuse_unk": true, "byte_fallback": true, )"
      R"("ignore_merges": false,)";
  return tokenizerJson(gguf, std::vector<bool>(gguf.tokens.size(), true),
                       sentencePieceMerges(gguf), parts);
}

//===----------------------------------------------------------------------===//
// llama.cpp's vocabulary test vectors through tokenizer.json
//===----------------------------------------------------------------------===//

TokenizerSpec ggufSpec(const std::string &vocab) {
  return tokenizerFromGGUF(
      GGUFFile::open(kiln::test::vocabDir() + "/" + vocab));
}

TEST(TokenizerJsonVectors, Gpt2) {
  const std::string vocab = "ggml-vocab-gpt-2.gguf";
  KILN_REQUIRE_TEST_FILE(kiln::test::vocabDir() + "/" + vocab);
  TokenizerSpec gguf = ggufSpec(vocab);
  TempDir dir;
  TokenizerSpec spec =
      tokenizerFromJson(dir.write("tokenizer.json", gpt2Json(gguf)));
  EXPECT_EQ(spec.model, TokenizerSpec::Model::ByteLevelBPE);
  EXPECT_EQ(spec.tokens, gguf.tokens);
  EXPECT_EQ(spec.types, gguf.types);
  EXPECT_EQ(spec.merges, gguf.merges);
  EXPECT_EQ(spec.preTokenizer, "gpt-2");
  ASSERT_EQ(spec.preTokenizerPatterns.size(), 1u); // ByteLevel's own
  EXPECT_EQ(spec.bosId, 50256);
  EXPECT_EQ(spec.eosId, 50256);
  EXPECT_EQ(spec.eotId, -1);
  EXPECT_FALSE(spec.addBos);
  VectorResult r =
      checkVectors(Tokenizer(spec), vocab, "gpt-2 via tokenizer.json");
  EXPECT_EQ(r.texts, 46u);
  EXPECT_EQ(r.encoded, r.texts);
  EXPECT_EQ(r.roundTripped, r.texts);
}

TEST(TokenizerJsonVectors, DeepSeekLlm) {
  const std::string vocab = "ggml-vocab-deepseek-llm.gguf";
  KILN_REQUIRE_TEST_FILE(kiln::test::vocabDir() + "/" + vocab);
  TokenizerSpec gguf = ggufSpec(vocab);
  TempDir dir;
  TokenizerSpec spec =
      tokenizerFromJson(dir.write("tokenizer.json", deepSeekJson(gguf)));
  EXPECT_EQ(spec.model, TokenizerSpec::Model::ByteLevelBPE);
  EXPECT_EQ(spec.tokens, gguf.tokens);
  EXPECT_EQ(spec.types, gguf.types);
  EXPECT_EQ(spec.merges, gguf.merges);
  // Five Split expressions and the Digits one, as in PreTokenizer.cpp.
  ASSERT_EQ(spec.preTokenizerPatterns.size(), 6u);
  EXPECT_EQ(spec.preTokenizerPatterns[5], R"(\p{N})");
  EXPECT_EQ(spec.bosId, gguf.bosId);
  EXPECT_EQ(spec.eosId, gguf.eosId);
  EXPECT_TRUE(spec.addBos); // the template starts with BOS
  Tokenizer tok(spec);
  EXPECT_EQ(tok.encode("Hello", true), (Ids{100000, 17464}));
  VectorResult r = checkVectors(tok, vocab, "deepseek-llm via tokenizer.json");
  EXPECT_EQ(r.texts, 46u);
  EXPECT_EQ(r.encoded, r.texts);
  EXPECT_EQ(r.roundTripped, r.texts);
}

void checkLlamaSpm(bool metaspace) {
  const std::string vocab = "ggml-vocab-llama-spm.gguf";
  TokenizerSpec gguf = ggufSpec(vocab);
  TempDir dir;
  std::string path = dir.write("tokenizer.json", llamaSpmJson(gguf, metaspace));
  // As Llama 2's: BOS as an object, EOS as a string.
  dir.write("tokenizer_config.json",
            R"({"add_bos_token": true, "add_eos_token": false, )"
            R"("bos_token": {"__type": "AddedToken", "content": "<s>", )"
            R"("lstrip": false, "normalized": false, "rstrip": false, )"
            R"("single_word": false}, "eos_token": "</s>", )"
            R"("unk_token": "<unk>", "legacy": false})");
  TokenizerSpec spec = tokenizerFromJson(path);
  EXPECT_EQ(spec.model, TokenizerSpec::Model::ScoreMerge);
  EXPECT_EQ(spec.tokens, gguf.tokens);
  EXPECT_EQ(spec.spaceSymbol, kSpace);
  EXPECT_TRUE(spec.addSpacePrefix);
  EXPECT_EQ(spec.bosId, 1);
  EXPECT_EQ(spec.eosId, 2);
  EXPECT_TRUE(spec.addBos);
  ASSERT_EQ(spec.types.size(), gguf.types.size());
  size_t unused = 0;
  for (size_t id = 0; id < spec.types.size(); ++id) {
    if (spec.types[id] == TokenType::Unused &&
        gguf.types[id] == TokenType::Normal)
      ++unused; // pieces no merge makes
    else
      EXPECT_EQ(spec.types[id], gguf.types[id]) << "token " << id;
  }
  std::string label = std::string("llama-spm via tokenizer.json (") +
                      (metaspace ? "Metaspace" : "normalizers") + ")";
  std::cout << "[ vectors  ] " << label << ": " << unused
            << " pieces no merge makes\n";
  Tokenizer tok(spec);
  EXPECT_EQ(tok.encode("Hello world", true), (Ids{1, 15043, 3186}));
  VectorResult r = checkVectors(tok, vocab, label);
  EXPECT_EQ(r.texts, 46u);
  EXPECT_EQ(r.encoded, r.texts);
  EXPECT_EQ(r.roundTripped, r.texts);
}

TEST(TokenizerJsonVectors, LlamaSpm) {
  KILN_REQUIRE_TEST_FILE(kiln::test::vocabDir() + "/ggml-vocab-llama-spm.gguf");
  checkLlamaSpm(/*metaspace=*/false);
}

TEST(TokenizerJsonVectors, LlamaSpmMetaspace) {
  KILN_REQUIRE_TEST_FILE(kiln::test::vocabDir() + "/ggml-vocab-llama-spm.gguf");
  checkLlamaSpm(/*metaspace=*/true);
}

//===----------------------------------------------------------------------===//
// Small hand-written files
//===----------------------------------------------------------------------===//

/// A byte-level tokenizer.json around `model` (the inside of "model": {}),
/// with the given pre-tokenizer and post-processor.
std::string
byteLevelFile(const std::string &model, const std::string &extra = "",
              const std::string &preTokenizer = kByteLevelComponent) {
  return "{\"added_tokens\": [], \"normalizer\": null, \"pre_tokenizer\": " +
         preTokenizer + ", " + extra + "\"model\": {" + model + "}}";
}

const char *const kSmallModel =
    R"("type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"])";

TEST(TokenizerJson, Llama3StyleFile) {
  // Sparse-looking ids in any order, both spellings of merges, special and
  // user-defined added tokens, ignore_merges, a Split with a literal
  // pattern, and Llama 3's post-processor.
  TempDir dir;
  std::string path = dir.write("tokenizer.json",
                               R"({"added_tokens": [
           {"id": 5, "content": "<|begin_of_text|>", "special": true},
           {"id": 6, "content": "<|eot_id|>", "special": true},
           {"id": 7, "content": "<|end_of_text|>", "special": true},
           {"id": 8, "content": "xyz", "special": false}],
         "normalizer": {"type": "NFC"},
         "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
           {"type": "Split", "pattern": {"String": "."},
            "behavior": "Isolated", "invert": false},
           {"type": "ByteLevel", "add_prefix_space": false,
            "use_regex": false}]},
         "post_processor": {"type": "Sequence", "processors": [
           {"type": "ByteLevel"},
           {"type": "TemplateProcessing", "single": [
             {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
             {"Sequence": {"id": "A", "type_id": 0}}]}]},
         "model": {"type": "BPE", "ignore_merges": true,
           "vocab": {"ab": 3, "b": 1, ".": 4, "a": 0, "c": 2},
           "merges": [["a", "b"], "ab c"]}})");
  // "abc" is no token: the second merge's result is missing.
  std::string message = formatErrorOf([&] { tokenizerFromJson(path); });
  EXPECT_NE(message.find("model.merges[1]: makes \"abc\", which is not in "
                         "model.vocab"),
            std::string::npos)
      << message;

  std::string fixed = readFile(path);
  fixed.replace(fixed.find("\"ab c\""), 6, "\"b c\"");
  fixed.replace(fixed.find("\"c\": 2"), 6, "\"c\": 2, \"bc\": 9");
  dir.write("tokenizer.json", fixed);
  TokenizerSpec spec = tokenizerFromJson(path);
  EXPECT_EQ(spec.tokens, (std::vector<std::string>{
                             "a", "b", "c", "ab", ".", "<|begin_of_text|>",
                             "<|eot_id|>", "<|end_of_text|>", "xyz", "bc"}));
  EXPECT_EQ(spec.merges, (std::vector<std::string>{"a b", "b c"}));
  EXPECT_EQ(spec.types[5], TokenType::Control);
  EXPECT_EQ(spec.types[8], TokenType::UserDefined);
  EXPECT_EQ(spec.preTokenizer, "llama-bpe"); // ignore_merges
  EXPECT_EQ(spec.preTokenizerPatterns, (std::vector<std::string>{"\\."}));
  EXPECT_EQ(spec.bosId, 5);
  EXPECT_EQ(spec.eosId, 7);
  EXPECT_EQ(spec.eotId, 6);
  EXPECT_TRUE(spec.addBos);
  Tokenizer tok(spec);
  // "." only splits: "ab.abc" -> "ab" "." "abc"; "abc" merges "a b" first.
  EXPECT_EQ(tok.encode("ab.abc", true), (Ids{5, 3, 4, 3, 2}));
  EXPECT_EQ(tok.encode("xyzab", false), (Ids{8, 3}));
  EXPECT_EQ(tok.decode({5, 3, 4, 8, 6}), "ab.xyz");

  // The configuration's add_bos_token wins over the template, and names
  // the special tokens.
  dir.write("tokenizer_config.json",
            R"({"add_bos_token": false, "bos_token": null,
                "eos_token": {"content": "<|eot_id|>"}})");
  spec = tokenizerFromJson(path);
  EXPECT_EQ(spec.bosId, -1);
  EXPECT_EQ(spec.eosId, 6);
  EXPECT_FALSE(spec.addBos);
}

TEST(TokenizerJson, MappedBytesAndDefaults) {
  std::string text = byteLevelFile(kSmallModel);
  auto file = kiln::formats::MappedFile::borrow(
      "mem.json", reinterpret_cast<const uint8_t *>(text.data()), text.size());
  TokenizerSpec spec = tokenizerFromJson(file);
  EXPECT_EQ(spec.tokens, (std::vector<std::string>{"a", "b", "ab"}));
  EXPECT_EQ(spec.bosId, -1);
  EXPECT_EQ(spec.eosId, -1);
  EXPECT_FALSE(spec.addBos);
  EXPECT_EQ(Tokenizer(spec).encode("ab b", false), (Ids{2, 1}));
}

TEST(TokenizerJson, ErrorsNameTheFileAndTheJsonPath) {
  struct Case {
    const char *what;
    std::string json;
    const char *expected;
  };
  auto deep = std::string(200, '[') + std::string(200, ']');
  const Case cases[] = {
      {"not JSON", "{\"model\": ", "is not valid JSON"},
      {"a number too large for a double", "{\"model\": 1e999}",
       "is not valid JSON"},
      {"not an object", "[1, 2]", "expected an object, found array"},
      {"no model", R"({"version": "1.0", "added_tokens": []})",
       "has no \"model\""},
      {"model not an object", R"({"model": "BPE"})",
       "model: expected an object, found the string \"BPE\""},
      {"unsupported model type",
       R"({"model": {"type": "Unigram", "vocab": [["a", 0.0]]}})",
       "model.type: \"Unigram\" is not supported"},
      {"WordPiece", R"({"model": {"type": "WordPiece", "vocab": {}}})",
       "\"WordPiece\" is not supported"},
      {"vocab not an object",
       byteLevelFile(R"("type": "BPE", "vocab": [], "merges": [])"),
       "model.vocab: expected an object, found array"},
      {"id not an integer",
       byteLevelFile(R"("type": "BPE", "vocab": {"a": "zero"}, "merges": [])"),
       "model.vocab[\"a\"]: expected an integer token id, found the string "
       "\"zero\""},
      {"fractional id",
       byteLevelFile(R"("type": "BPE", "vocab": {"a": 0.5}, "merges": [])"),
       "model.vocab[\"a\"]: expected an integer token id, found number 0.5"},
      {"negative id",
       byteLevelFile(R"("type": "BPE", "vocab": {"a": -1}, "merges": [])"),
       "model.vocab[\"a\"]: token id -1 is negative"},
      {"id out of range",
       byteLevelFile(R"("type": "BPE", "vocab": {"a": 0, "foo": 70000},)"
                     R"( "merges": [])"),
       "model.vocab[\"foo\"]: token id 70000 leaves ids unused"},
      {"huge id",
       byteLevelFile(R"("type": "BPE", "vocab": {"a": 18446744073709551615},)"
                     R"( "merges": [])"),
       "token id 18446744073709551615 leaves ids unused"},
      {"vocab id gap",
       R"({"added_tokens": [{"id": 0, "content": "a", "special": true}], )"
       R"("pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false},)"
       R"( "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 3}, )"
       R"("merges": []}})",
       "model.vocab: no token has id 2, but ids run to 3"},
      {"two pieces, one id",
       byteLevelFile(R"("type": "BPE", "vocab": {"a": 0, "b": 0}, )"
                     R"("merges": [])"),
       "model.vocab[\"b\"]: token id 0 is also model.vocab[\"a\"]'s"},
      {"added token clashing with the vocabulary",
       R"({"added_tokens": [{"id": 1, "content": "<s>", "special": true}], )"
       R"("pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false},)"
       R"( "model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, )"
       R"("merges": []}})",
       "added_tokens[0]: \"<s>\" has token id 1, which is "
       "model.vocab[\"b\"]'s"},
      {"added token without content",
       R"({"added_tokens": [{"id": 1, "special": true}], )"
       R"("pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false},)"
       R"( "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}})",
       "added_tokens[0].content: is missing"},
      {"merges naming unknown tokens",
       byteLevelFile(R"("type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, )"
                     R"("merges": ["a b", "a zz"])"),
       "model.merges[1]: \"zz\" is not in model.vocab"},
      {"pair merge naming unknown tokens",
       byteLevelFile(R"("type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, )"
                     R"("merges": [["q", "b"]])"),
       "model.merges[0]: \"q\" is not in model.vocab"},
      {"merge of a wrong shape",
       byteLevelFile(R"("type": "BPE", "vocab": {"a": 0}, "merges": [["a"]])"),
       "model.merges[0]: expected \"a b\" or [\"a\", \"b\"], found array of 1"},
      {"merge without a space",
       byteLevelFile(R"("type": "BPE", "vocab": {"a": 0}, "merges": ["ab"])"),
       "model.merges[0]: \"ab\" is not two tokens"},
      {"merge half not a string",
       byteLevelFile(
           R"("type": "BPE", "vocab": {"a": 0}, "merges": [["a", 1]])"),
       "model.merges[0][1]: expected a string, found number 1"},
      {"no merges", byteLevelFile(R"("type": "BPE", "vocab": {"a": 0})"),
       "model.merges: is missing"},
      {"unsupported pre-tokenizer",
       byteLevelFile(kSmallModel, "", R"({"type": "Whitespace"})"),
       "pre_tokenizer.type: pre-tokenizer \"Whitespace\" is not supported"},
      {"pre-tokenizer after ByteLevel",
       byteLevelFile(kSmallModel, "",
                     R"({"type": "Sequence", "pretokenizers": [)"
                     R"({"type": "ByteLevel", "add_prefix_space": false},)"
                     R"({"type": "Digits"}]})"),
       "pre_tokenizer.pretokenizers[1].type: pre-tokenizer \"Digits\" after "
       "ByteLevel"},
      {"add_prefix_space",
       byteLevelFile(kSmallModel, "", R"({"type": "ByteLevel"})"),
       "pre_tokenizer.add_prefix_space: ByteLevel with add_prefix_space"},
      {"Split behaviour",
       byteLevelFile(kSmallModel, "",
                     R"({"type": "Sequence", "pretokenizers": [)"
                     R"({"type": "Split", "pattern": {"Regex": "a"}, )"
                     R"("behavior": "Removed"}, )"
                     R"({"type": "ByteLevel", "add_prefix_space": false}]})"),
       "pre_tokenizer.pretokenizers[0].behavior: Split behaviour "
       "\"Removed\" is not supported"},
      {"bad regular expression",
       byteLevelFile(kSmallModel, "",
                     R"({"type": "Sequence", "pretokenizers": [)"
                     R"({"type": "Split", "pattern": {"Regex": "(a"}, )"
                     R"("behavior": "Isolated"}, )"
                     R"({"type": "ByteLevel", "add_prefix_space": false}]})"),
       "pre_tokenizer.pretokenizers[0].pattern.Regex: is not an expression "
       "Kiln can use"},
      {"unsupported normalizer",
       byteLevelFile(kSmallModel, R"("normalizer": {"type": "Lowercase"}, )"),
       "normalizer.type: normalizer \"Lowercase\" is not supported"},
      {"neither byte-level nor SentencePiece",
       byteLevelFile(kSmallModel, "", "null"),
       "pre_tokenizer: neither a ByteLevel pre-tokenizer"},
      {"Metaspace splitting words",
       byteLevelFile(kSmallModel, "",
                     R"({"type": "Metaspace", "replacement": "_"})"),
       "pre_tokenizer.split: Metaspace with split"},
      {"subword prefix",
       byteLevelFile(R"("type": "BPE", "continuing_subword_prefix": "##", )"
                     R"("vocab": {"a": 0}, "merges": [])"),
       "model.continuing_subword_prefix: \"##\": subword affixes"},
      {"dropout",
       byteLevelFile(R"("type": "BPE", "dropout": 0.1, "vocab": {"a": 0}, )"
                     R"("merges": [])"),
       "model.dropout: number 0.1: BPE dropout"},
      {"unknown unk_token",
       byteLevelFile(R"("type": "BPE", "unk_token": "<unk>", )"
                     R"("vocab": {"a": 0}, "merges": [])"),
       "model.unk_token: \"<unk>\" is not a token"},
      {"deeply nested", "{\"model\": " + deep + "}", "nests JSON values"},
      {"empty file", "", "is empty, not JSON"},
  };
  for (const Case &c : cases) {
    TempDir dir;
    std::string path = dir.write("tokenizer.json", c.json);
    std::string message = formatErrorOf([&] { tokenizerFromJson(path); });
    EXPECT_NE(message.find(c.expected), std::string::npos)
        << c.what << ": " << message;
    EXPECT_NE(message.find(path), std::string::npos)
        << c.what << ": " << message;
  }
}

TEST(TokenizerJson, ConfigErrorsNameTheConfig) {
  struct Case {
    const char *what;
    const char *config;
    const char *expected;
  };
  const Case cases[] = {
      {"not JSON", "{", "is not valid JSON"},
      {"not an object", "\"x\"", "expected an object"},
      {"unknown BOS", R"({"bos_token": "<nope>"})",
       "bos_token: \"<nope>\" is not a token of"},
      {"BOS of a wrong type", R"({"bos_token": 1})",
       "bos_token: expected a string, found number 1"},
      {"BOS object without content", R"({"bos_token": {"special": true}})",
       "bos_token.content: is missing"},
      {"add_bos_token not a boolean", R"({"add_bos_token": "yes"})",
       "add_bos_token: expected true or false"},
      {"chat_template of a wrong type", R"({"chat_template": 3})",
       "chat_template: expected a string or a list of {\"name\", "
       "\"template\"} objects, found number 3"},
      {"named template without its text",
       R"({"chat_template": [{"name": "default"}]})",
       "chat_template[0].template: is missing"},
      {"named template without a name",
       R"({"chat_template": [{"template": "x"}]})",
       "chat_template[0].name: is missing"},
  };
  for (const Case &c : cases) {
    TempDir dir;
    std::string path = dir.write("tokenizer.json", byteLevelFile(kSmallModel));
    std::string config = dir.write("tokenizer_config.json", c.config);
    std::string message = formatErrorOf([&] { tokenizerFromJson(path); });
    EXPECT_NE(message.find(c.expected), std::string::npos)
        << c.what << ": " << message;
    EXPECT_NE(message.find(config), std::string::npos)
        << c.what << ": " << message;
  }
}

TEST(TokenizerJson, ChatTemplateFromTheConfig) {
  TempDir dir;
  std::string path = dir.write("tokenizer.json", byteLevelFile(kSmallModel));
  EXPECT_EQ(tokenizerFromJson(path).chatTemplate, "");

  // A string is the template.
  dir.write("tokenizer_config.json",
            R"({"chat_template": "{{ messages[0].content }}\n"})");
  EXPECT_EQ(tokenizerFromJson(path).chatTemplate,
            "{{ messages[0].content }}\n");

  // A list of named templates: the one named "default", wherever it is.
  dir.write("tokenizer_config.json", R"({"chat_template": [
      {"name": "tool_use", "template": "tools"},
      {"name": "default", "template": "plain"}]})");
  EXPECT_EQ(tokenizerFromJson(path).chatTemplate, "plain");

  // Without one, none is chosen (transformers asks for a name then).
  dir.write("tokenizer_config.json", R"({"chat_template": [
      {"name": "tool_use", "template": "tools"}]})");
  EXPECT_EQ(tokenizerFromJson(path).chatTemplate, "");

  // null is no template.
  dir.write("tokenizer_config.json", R"({"chat_template": null})");
  EXPECT_EQ(tokenizerFromJson(path).chatTemplate, "");
}

TEST(TokenizerJson, HugeFileIsRefusedUnread) {
  TempDir dir;
  std::string path = dir.write("tokenizer.json", "{");
  // Sparse: no disk or memory is used for the 300 MiB.
  fs::resize_file(path, uintmax_t(300) << 20);
  std::string message = formatErrorOf([&] { tokenizerFromJson(path); });
  EXPECT_NE(message.find("are refused"), std::string::npos) << message;
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(formatErrorOf([&] {
              tokenizerFromJson(dir.path + "/no-such/tokenizer.json");
            }).find("no-such/tokenizer.json"),
            std::string::npos);
}

} // namespace
