//===- TextStreamTest.cpp - Incremental detokenization and stops ----------===//
//
// Part of Kiln's unit tests. A hand-made SentencePiece-style vocabulary
// (byte fallback <0xXX>, "▁" for spaces) pins down each rule; tok512.bin
// and GPT-2's vocabulary check real tokenizations against a whole decode.
//
//===----------------------------------------------------------------------===//

#include "runtime/sampling/TextStream.h"

#include "runtime/sampling/SplitMix64.h"

#include "TestData.h"
#include "frontends/formats/GGUF.h"
#include "frontends/formats/TokenizerLoaders.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

using kiln::runtime::FinishReason;
using kiln::runtime::isValidUtf8;
using kiln::runtime::SamplingParams;
using kiln::runtime::SplitMix64;
using kiln::runtime::StopStringMatcher;
using kiln::runtime::TextDelta;
using kiln::runtime::TextStream;
using kiln::runtime::Tokenizer;
using kiln::runtime::TokenizerSpec;
using kiln::runtime::TokenType;
using kiln::runtime::Utf8Assembler;

namespace {

const std::string kReplacement = "\xEF\xBF\xBD";

//===----------------------------------------------------------------------===//
// A small vocabulary
//===----------------------------------------------------------------------===//

constexpr int32_t kBos = 1;
constexpr int32_t kEos = 2;

/// <unk>, <s>, </s>, the 256 byte tokens (id 3 + byte), then pieces.
Tokenizer smallTokenizer() {
  TokenizerSpec spec;
  spec.tokens = {"<unk>", "<s>", "</s>"};
  spec.types = {TokenType::Unknown, TokenType::Control, TokenType::Control};
  for (int byte = 0; byte < 256; ++byte) {
    char piece[8];
    std::snprintf(piece, sizeof(piece), "<0x%02X>", byte);
    spec.tokens.push_back(piece);
    spec.types.push_back(TokenType::Byte);
  }
  for (const char *piece : {"\xE2\x96\x81Hello", "\xE2\x96\x81world",
                            "\xE2\x96\x81"
                            "E",
                            "ND", "!", "#", "\xE2\x96\x81ok", "END"}) {
    spec.tokens.push_back(piece);
    spec.types.push_back(TokenType::Normal);
  }
  spec.scores.assign(spec.tokens.size(), 0.0f);
  spec.bosId = kBos;
  spec.eosId = kEos;
  return Tokenizer(spec);
}

int32_t byteToken(uint8_t byte) { return 3 + byte; }

/// The id of a piece, written with " " for the space symbol.
int32_t id(const Tokenizer &tokenizer, std::string piece) {
  if (!piece.empty() && piece[0] == ' ')
    piece.replace(0, 1, "\xE2\x96\x81");
  const std::vector<std::string> &tokens = tokenizer.spec().tokens;
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] == piece)
      return static_cast<int32_t>(i);
  ADD_FAILURE() << "no token " << piece;
  return 0;
}

SamplingParams stoppingAt(std::vector<std::string> stopStrings) {
  SamplingParams params;
  params.stopStrings = std::move(stopStrings);
  return params;
}

/// The deltas of pushing `ids` (after BOS) until the stream ends.
std::vector<TextDelta> deltasOf(TextStream &stream,
                                const std::vector<int32_t> &ids) {
  std::vector<TextDelta> deltas;
  for (int32_t token : ids) {
    deltas.push_back(stream.push(token));
    if (stream.finished())
      break;
  }
  return deltas;
}

std::vector<std::string> textsOf(const std::vector<TextDelta> &deltas) {
  std::vector<std::string> texts;
  for (const TextDelta &delta : deltas)
    texts.push_back(delta.text);
  return texts;
}

using Texts = std::vector<std::string>;

//===----------------------------------------------------------------------===//
// UTF-8
//===----------------------------------------------------------------------===//

TEST(TextStreamUtf8, ByteTokensMakeWholeCharacters) {
  Tokenizer tok = smallTokenizer();
  TextStream stream(tok, SamplingParams{}, kBos);
  // é (C3 A9), ✓ (E2 9C 93), 😀 (F0 9F 98 80), one byte token each.
  std::vector<int32_t> ids;
  for (uint8_t byte : {0xC3, 0xA9, 0xE2, 0x9C, 0x93, 0xF0, 0x9F, 0x98, 0x80})
    ids.push_back(byteToken(byte));
  EXPECT_EQ(textsOf(deltasOf(stream, ids)),
            (Texts{"", "\xC3\xA9", "", "", "\xE2\x9C\x93", "", "", "",
                   "\xF0\x9F\x98\x80"}));
  EXPECT_FALSE(stream.finished());
}

TEST(TextStreamUtf8, AnUnfinishedCharacterAtTheEndIsReplaced) {
  Tokenizer tok = smallTokenizer();
  TextStream stream(tok, SamplingParams{}, kBos);
  EXPECT_EQ(stream.push(byteToken(0xE2)).text, "");
  EXPECT_EQ(stream.push(byteToken(0x9C)).text, "");
  TextDelta last = stream.finish(FinishReason::Length);
  EXPECT_EQ(last.text, kReplacement);
  EXPECT_EQ(last.finish, FinishReason::Length);
}

TEST(Utf8Assembler, IllFormedBytesBecomeReplacementCharacters) {
  struct Case {
    std::string bytes;
    std::string text; // As Python's bytes.decode("utf-8", "replace").
  };
  const Case cases[] = {
      {"a\xC3(", "a" + kReplacement + "("},
      // A surrogate: ED's second byte must be below A0; three subparts.
      {"\xED\xA0\x80", kReplacement + kReplacement + kReplacement},
      // Overlong "/" and a lone continuation byte.
      {"\xC0\xAF\x80", kReplacement + kReplacement + kReplacement},
      // Past U+10FFFF.
      {"\xF4\x90\x80\x80",
       kReplacement + kReplacement + kReplacement + kReplacement},
      // An unfinished 4-byte character cut by ASCII: one replacement.
      {"\xF0\x9F\x98z", kReplacement + "z"},
  };
  for (const Case &c : cases) {
    Utf8Assembler assembler;
    std::string out;
    for (char byte : c.bytes)
      out += assembler.push(std::string(1, byte));
    out += assembler.finish();
    EXPECT_EQ(out, c.text);
    EXPECT_EQ(isValidUtf8(c.bytes), false);
  }
  EXPECT_TRUE(isValidUtf8("plain \xC3\xA9 \xF0\x9F\x98\x80"));
}

//===----------------------------------------------------------------------===//
// Stop strings
//===----------------------------------------------------------------------===//

TEST(TextStreamStop, SplitStopStringIsHeldThenCut) {
  Tokenizer tok = smallTokenizer();
  TextStream stream(tok, stoppingAt({"END"}), kBos);
  std::vector<TextDelta> deltas =
      deltasOf(stream, {id(tok, " Hello"), id(tok, " E"), id(tok, "ND"),
                        id(tok, " world")});
  // "E" waits: it may start "END". With "ND" it does; nothing more shows.
  EXPECT_EQ(textsOf(deltas), (Texts{"Hello", " ", ""}));
  EXPECT_EQ(deltas.back().finish, FinishReason::StopString);
  EXPECT_EQ(stream.finishReason(), FinishReason::StopString);
  EXPECT_EQ(stream.stopStringIndex(), 0);
  EXPECT_EQ(stream.text(), "Hello ");
}

TEST(TextStreamStop, HeldTextThatDivergesIsShown) {
  Tokenizer tok = smallTokenizer();
  TextStream stream(tok, stoppingAt({"END"}), kBos);
  EXPECT_EQ(textsOf(deltasOf(
                stream, {id(tok, " Hello"), id(tok, " E"), id(tok, " world")})),
            (Texts{"Hello", " ", "E world"}));
  EXPECT_FALSE(stream.finished());
  // Held text at the end is shown too: "E" might have become "END".
  EXPECT_EQ(stream.push(id(tok, " E")).text, " ");
  TextDelta last = stream.finish(FinishReason::Cancelled);
  EXPECT_EQ(last.text, "E");
  EXPECT_EQ(stream.text(), "Hello E world E");
}

TEST(TextStreamStop, StopStringOverThreeTokens) {
  Tokenizer tok = smallTokenizer();
  TextStream stream(tok, stoppingAt({"E!#"}), kBos);
  std::vector<TextDelta> deltas = deltasOf(
      stream, {id(tok, " ok"), id(tok, " E"), id(tok, "!"), id(tok, "#")});
  EXPECT_EQ(textsOf(deltas), (Texts{"ok", " ", "", ""}));
  EXPECT_EQ(stream.finishReason(), FinishReason::StopString);
  EXPECT_EQ(stream.text(), "ok ");
}

TEST(TextStreamStop, TextAfterTheStopStringInTheSameTokenIsDropped) {
  Tokenizer tok = smallTokenizer();
  TextStream stream(tok, stoppingAt({"ll"}), kBos);
  TextDelta delta = stream.push(id(tok, " Hello"));
  EXPECT_EQ(delta.text, "He");
  EXPECT_EQ(delta.finish, FinishReason::StopString);
}

TEST(TextStreamStop, EarliestStopStringWins) {
  Tokenizer tok = smallTokenizer();
  TextStream stream(tok, stoppingAt({"world", "o w"}), kBos);
  std::vector<TextDelta> deltas =
      deltasOf(stream, {id(tok, " Hello"), id(tok, " world")});
  // "o" of Hello is held (it may start "o w"), then "o w" completes first.
  EXPECT_EQ(textsOf(deltas), (Texts{"Hell", ""}));
  EXPECT_EQ(stream.stopStringIndex(), 1);
}

TEST(TextStreamStop, StopStringOfAByteSplitCharacter) {
  Tokenizer tok = smallTokenizer();
  TextStream stream(tok, stoppingAt({"\xE2\x9C\x93"}), kBos);
  std::vector<TextDelta> deltas =
      deltasOf(stream, {id(tok, " ok"), byteToken(0xE2), byteToken(0x9C),
                        byteToken(0x93), id(tok, "!")});
  EXPECT_EQ(textsOf(deltas), (Texts{"ok", "", "", ""}));
  EXPECT_EQ(stream.finishReason(), FinishReason::StopString);
}

TEST(StopStringMatcher, HoldsTheLongestPossibleStart) {
  StopStringMatcher matcher({"abcd", "cx"});
  // "abc" may start "abcd"; "c" alone may start "cx": the longer is held.
  StopStringMatcher::Result r = matcher.push("zzabc");
  EXPECT_EQ(r.text, "zz");
  EXPECT_EQ(r.matched, -1);
  r = matcher.push("x");
  EXPECT_EQ(r.text, "ab");
  EXPECT_EQ(r.matched, 1);
  EXPECT_THROW(StopStringMatcher({""}), std::invalid_argument);
}

//===----------------------------------------------------------------------===//
// Stop tokens, length, misuse
//===----------------------------------------------------------------------===//

TEST(TextStreamEnd, StopTokenEndsWithoutItsText) {
  Tokenizer tok = smallTokenizer();
  SamplingParams params = stoppingAt({"END"});
  params.stopTokenIds = {kEos, id(tok, "!")};
  TextStream stream(tok, params, kBos);
  std::vector<TextDelta> deltas = deltasOf(
      stream, {id(tok, " Hello"), id(tok, " E"), id(tok, "!"), id(tok, "#")});
  // "!" is not shown; the held "E" can no longer become "END", so it is.
  EXPECT_EQ(textsOf(deltas), (Texts{"Hello", " ", "E"}));
  EXPECT_EQ(deltas.back().finish, FinishReason::StopToken);
  EXPECT_EQ(stream.stopToken(), id(tok, "!"));
  EXPECT_EQ(stream.tokenCount(), 3);
}

TEST(TextStreamEnd, StopTokenCutsAnUnfinishedCharacter) {
  Tokenizer tok = smallTokenizer();
  SamplingParams params;
  params.stopTokenIds = {kEos};
  TextStream stream(tok, params, kBos);
  EXPECT_EQ(textsOf(deltasOf(stream, {byteToken(0xE2), byteToken(0x9C), kEos})),
            (Texts{"", "", kReplacement}));
  EXPECT_EQ(stream.finishReason(), FinishReason::StopToken);
}

TEST(TextStreamEnd, MaxTokensEndsWithLengthAndShowsHeldText) {
  Tokenizer tok = smallTokenizer();
  SamplingParams params = stoppingAt({"END"});
  params.maxTokens = 2;
  TextStream stream(tok, params, kBos);
  std::vector<TextDelta> deltas =
      deltasOf(stream, {id(tok, " Hello"), id(tok, " E"), id(tok, "ND")});
  EXPECT_EQ(textsOf(deltas), (Texts{"Hello", " E"}));
  EXPECT_EQ(deltas.back().finish, FinishReason::Length);
}

TEST(TextStreamEnd, FirstPieceAfterAPromptKeepsItsSpace) {
  Tokenizer tok = smallTokenizer();
  // After BOS the leading space goes (llama2.c's rule); after a word it
  // stays.
  TextStream afterBos(tok, SamplingParams{}, kBos);
  EXPECT_EQ(afterBos.push(id(tok, " ok")).text, "ok");
  TextStream afterWord(tok, SamplingParams{}, id(tok, " Hello"));
  EXPECT_EQ(afterWord.push(id(tok, " ok")).text, " ok");
}

TEST(TextStreamEnd, MisuseIsAnError) {
  Tokenizer tok = smallTokenizer();
  TextStream stream(tok, SamplingParams{}, kBos);
  EXPECT_THROW(stream.finish(FinishReason::StopToken), std::invalid_argument);
  EXPECT_THROW(stream.push(tok.vocabSize()), std::out_of_range);
  stream.finish(FinishReason::Cancelled);
  EXPECT_THROW(stream.push(id(tok, "!")), std::logic_error);
  EXPECT_THROW(stream.finish(FinishReason::Length), std::logic_error);
  SamplingParams bad;
  bad.stopTokenIds = {tok.vocabSize()};
  EXPECT_THROW(TextStream(tok, bad, kBos), std::invalid_argument);
}

//===----------------------------------------------------------------------===//
// Against a whole decode
//===----------------------------------------------------------------------===//

/// What a stream over `ids` must show in all: the whole text decoded at
/// once (ill-formed bytes replaced), up to the earliest stop string.
std::string wholeDecode(const Tokenizer &tok, int32_t previous,
                        const std::vector<int32_t> &ids,
                        const std::vector<std::string> &stopStrings) {
  std::string bytes;
  for (int32_t token : ids) {
    bytes += tok.decodePiece(previous, token);
    previous = token;
  }
  Utf8Assembler assembler;
  std::string text = assembler.push(bytes) + assembler.finish();
  size_t cut = std::string::npos;
  for (const std::string &stop : stopStrings)
    cut = std::min(cut, text.find(stop));
  return text.substr(0, cut);
}

/// Streams `ids` and checks every delta is whole characters and all of
/// them together are the whole decode.
void expectStreamMatchesWholeDecode(const Tokenizer &tok, int32_t previous,
                                    const std::vector<int32_t> &ids,
                                    const std::vector<std::string> &stops) {
  TextStream stream(tok, stoppingAt(stops), previous);
  std::string all;
  for (const TextDelta &delta : deltasOf(stream, ids)) {
    EXPECT_TRUE(isValidUtf8(delta.text)) << "delta \"" << delta.text << "\"";
    all += delta.text;
  }
  if (!stream.finished())
    all += stream.finish(FinishReason::Length).text;
  EXPECT_EQ(all, wholeDecode(tok, previous, ids, stops));
  EXPECT_EQ(all, stream.text());
}

TEST(TextStreamWhole, RandomTokenSequences) {
  Tokenizer tok = smallTokenizer();
  const std::vector<int32_t> alphabet = {
      id(tok, " E"),   id(tok, "ND"),   id(tok, "!"),    id(tok, "#"),
      id(tok, "END"),  id(tok, " ok"),  byteToken(0xC3), byteToken(0xA9),
      byteToken(0xE2), byteToken(0x9C), byteToken(0x93), byteToken(0xF0),
      byteToken(0x9F), byteToken(0x98), byteToken(0x80), byteToken('x')};
  SplitMix64 random(7);
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<int32_t> ids(1 + random.next() % 12);
    for (int32_t &token : ids)
      token = alphabet[random.next() % alphabet.size()];
    expectStreamMatchesWholeDecode(tok, kBos, ids,
                                   {"END", "\xC3\xA9!", "#\xE2\x9C\x93"});
  }
}

TEST(TextStreamWhole, Tok512ByteFallback) {
  std::string path = kiln::test::modelsDir() + "/tok512.bin";
  KILN_REQUIRE_TEST_FILE(path);
  Tokenizer tok(kiln::formats::loadLlama2cTokenizer(path, 512));
  std::vector<int32_t> ids =
      tok.encode("Zo\xC3\xAB saw a \xE2\x9C\x93 and \xF0\x9F\x98\x80. The END "
                 "came",
                 /*addBos=*/false);
  // The test means something only if characters went through byte tokens.
  int byteTokens = 0;
  for (int32_t token : ids)
    byteTokens += tok.spec().types[token] == TokenType::Byte;
  ASSERT_GE(byteTokens, 9);
  expectStreamMatchesWholeDecode(tok, tok.spec().bosId, ids, {"END"});
  expectStreamMatchesWholeDecode(tok, tok.spec().bosId, ids, {});
  EXPECT_EQ(wholeDecode(tok, tok.spec().bosId, ids, {"END"}),
            "Zo\xC3\xAB saw a \xE2\x9C\x93 and \xF0\x9F\x98\x80. The ");
}

TEST(TextStreamWhole, Gpt2ByteLevelPieces) {
  std::string path = kiln::test::vocabDir() + "/ggml-vocab-gpt-2.gguf";
  KILN_REQUIRE_TEST_FILE(path);
  Tokenizer tok(
      kiln::formats::tokenizerFromGGUF(kiln::formats::GGUFFile::open(path)));
  std::string text = "Caf\xC3\xA9 \xF0\x9F\x98\x80\xF0\x9F\x8E\x89 ok";
  std::vector<int32_t> ids = tok.encode(text, /*addBos=*/false);
  // Byte-level pieces split the emoji: some piece alone is not UTF-8.
  bool split = false;
  for (int32_t token : ids)
    split |= !isValidUtf8(tok.decodePiece(-1, token));
  ASSERT_TRUE(split);
  expectStreamMatchesWholeDecode(tok, -1, ids, {});
  expectStreamMatchesWholeDecode(tok, -1, ids, {"\xF0\x9F\x8E\x89"});
  EXPECT_EQ(wholeDecode(tok, -1, ids, {}), text);
}

} // namespace
