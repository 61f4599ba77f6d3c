//===- PreTokenizer.cpp - Regex splitting before byte-level BPE -----------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "runtime/PreTokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cstdint>
#include <stdexcept>

namespace kiln::runtime::detail {

namespace {

/// GPT-2's expression (also the ByteLevel pre-tokenizer's default).
const char *const kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

/// Llama 3 (tokenizer.ggml.pre "llama-bpe"): digits in groups of up to three.
const char *const kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

/// Qwen2: as Llama 3 but every digit on its own.
const char *const kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// DeepSeek LLM's tokenizer.json: a sequence of splits. The character classes
// are written as code points, not literal characters: several of them
// (U+1FBE, U+1FD3, U+1FDB, U+1F7D, U+2126, U+212A) are singletons that
// Unicode normalization rewrites into other characters -- an editor or a
// copy that normalizes would silently turn "\x{212A}-\x{212D}" (Kelvin sign
// to black-letter C) into "K-\x{212D}", a range spanning most of the BMP.
const char *const kDeepSeekNewline = R"([\r\n])";
const char *const kDeepSeekLetters =
    R"(\s?[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF})"
    R"(\x{1C4}-\x{293}\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D})"
    R"(\x{37F}\x{386}\x{388}-\x{38A}\x{38C}\x{38E}-\x{3A1}\x{3A3}-\x{3F5})"
    R"(\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556}\x{10A0}-\x{10C5})"
    R"(\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF})"
    R"(\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15})"
    R"(\x{1F18}-\x{1F1D}\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57})"
    R"(\x{1F59}\x{1F5B}\x{1F5D}\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4})"
    R"(\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC})"
    R"(\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4})"
    R"(\x{1FF6}-\x{1FFC}\x{2102}\x{2107}\x{210A}-\x{2113}\x{2115})"
    R"(\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D})"
    R"(\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E})"
    R"(\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4}\x{2CEB}-\x{2CEE})"
    R"(\x{2CF2}\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F})"
    R"(\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06})"
    R"(\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x{10400}-\x{1044F})"
    R"(\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2})"
    R"(\x{10CC0}-\x{10CF2}\x{118A0}-\x{118DF}\x{1E900}-\x{1E943}]+)";
const char *const kDeepSeekPunctuation =
    R"(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F})"
    R"(\x{3000}-\x{3002}]+)";
const char *const kDeepSeekTrailingSpace = R"(\s+$)";
const char *const kDeepSeekCjk =
    R"([\x{4E00}-\x{9FA5}\x{800}-\x{4E00}\x{AC00}-\x{D7FF}]+)";
// DeepSeek's tokenizer.json ends the sequence with a `Digits` pre-tokenizer
// with individual_digits: every numeric character is its own piece.
const char *const kDeepSeekDigits = R"(\p{N})";

struct Recipe {
  const char *name;
  std::vector<const char *> expressions;
  bool ignoreMerges;
};

const std::vector<Recipe> &recipes() {
  static const std::vector<Recipe> all = {
      {"gpt-2", {kGpt2}, false},
      {"llama-bpe", {kLlama3}, true},
      {"llama3", {kLlama3}, true},
      {"qwen2", {kQwen2}, false},
      {"deepseek-llm",
       {kDeepSeekNewline, kDeepSeekLetters, kDeepSeekPunctuation,
        kDeepSeekTrailingSpace, kDeepSeekCjk, kDeepSeekDigits},
       false},
  };
  return all;
}

std::string pcre2Message(int code) {
  PCRE2_UCHAR buffer[256];
  if (pcre2_get_error_message(code, buffer, sizeof(buffer)) < 0)
    return "PCRE2 error " + std::to_string(code);
  return reinterpret_cast<const char *>(buffer);
}

} // namespace

struct PreTokenizer::Regex {
  pcre2_code *code = nullptr;
  ~Regex() { pcre2_code_free(code); }
};

namespace {

/// `expression` compiled for PreTokenizer::split, or nullptr with `error`
/// and `errorOffset` set. The length is passed, not a terminator: an
/// expression from a file may contain NUL.
pcre2_code *compileExpression(const std::string &expression, int &error,
                              PCRE2_SIZE &errorOffset) {
  // MATCH_INVALID_UTF: text from users may hold any bytes; invalid
  // sequences then simply never match instead of failing the call.
  pcre2_code *code = pcre2_compile(
      reinterpret_cast<PCRE2_SPTR>(expression.data()), expression.size(),
      PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error, &errorOffset,
      nullptr);
  // JIT is an optimization only: without it (no JIT support on this
  // platform) pcre2_match interprets the same pattern.
  if (code)
    (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  return code;
}

} // namespace

/// The recipe named `name`; throws std::invalid_argument naming it when it
/// is not known.
static const Recipe &findRecipe(const std::string &name) {
  for (const Recipe &candidate : recipes())
    if (name == candidate.name)
      return candidate;
  throw std::invalid_argument("tokenizer: unknown pre-tokenizer '" + name +
                              "' (known: " + PreTokenizer::knownNames() + ")");
}

std::vector<std::string> PreTokenizer::expressionsOf(const std::string &name) {
  const Recipe &recipe = findRecipe(name);
  return {recipe.expressions.begin(), recipe.expressions.end()};
}

PreTokenizer::PreTokenizer(const std::string &name,
                           const std::vector<std::string> &expressions)
    : name(name) {
  const Recipe &recipe = findRecipe(name);
  ignoreMerges = recipe.ignoreMerges;
  // Expressions from a file replace the recipe's; not compiling is then the
  // file's fault (invalid_argument), for a recipe a bug (logic_error).
  bool fromFile = !expressions.empty();
  std::vector<std::string> list = fromFile ? expressions : expressionsOf(name);
  for (size_t index = 0; index < list.size(); ++index) {
    auto regex = std::make_unique<Regex>();
    int error = 0;
    PCRE2_SIZE errorOffset = 0;
    regex->code = compileExpression(list[index], error, errorOffset);
    if (!regex->code) {
      std::string where = " does not compile at offset " +
                          std::to_string(errorOffset) + ": " +
                          pcre2Message(error);
      if (fromFile)
        throw std::invalid_argument("tokenizer: pre-tokenizer expression " +
                                    std::to_string(index) + where);
      throw std::logic_error("tokenizer: pre-tokenizer '" + name +
                             "': expression" + where);
    }
    regexes.push_back(std::move(regex));
  }
}

PreTokenizer::~PreTokenizer() = default;

size_t utf8Length(const unsigned char *text, size_t size) {
  unsigned char lead = text[0];
  size_t length;
  uint32_t codePoint;
  uint32_t minimum;
  if (lead < 0x80)
    return 1;
  if ((lead & 0xE0) == 0xC0) {
    length = 2;
    codePoint = lead & 0x1F;
    minimum = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3;
    codePoint = lead & 0x0F;
    minimum = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4;
    codePoint = lead & 0x07;
    minimum = 0x10000;
  } else {
    return 1;
  }
  if (length > size)
    return 1;
  for (size_t i = 1; i < length; ++i) {
    if ((text[i] & 0xC0) != 0x80)
      return 1;
    codePoint = (codePoint << 6) | (text[i] & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not characters.
  if (codePoint < minimum || codePoint > 0x10FFFF ||
      (codePoint >= 0xD800 && codePoint <= 0xDFFF))
    return 1;
  return length;
}

std::string PreTokenizer::knownNames() {
  std::string names;
  for (const Recipe &recipe : recipes())
    names += (names.empty() ? "" : ", ") + std::string(recipe.name);
  return names;
}

std::vector<std::pair<size_t, size_t>>
PreTokenizer::split(std::string_view text) const {
  std::vector<std::pair<size_t, size_t>> pieces;
  if (text.empty())
    return pieces;
  pieces.emplace_back(0, text.size());
  for (const auto &regex : regexes) {
    std::unique_ptr<pcre2_match_data, void (*)(pcre2_match_data *)> match(
        pcre2_match_data_create_from_pattern(regex->code, nullptr),
        pcre2_match_data_free);
    if (!match)
      throw std::bad_alloc();
    std::vector<std::pair<size_t, size_t>> next;
    next.reserve(pieces.size());
    for (auto [pieceStart, pieceLength] : pieces) {
      // Each piece is its own subject, as in Hugging Face's Split: anchors
      // and lookarounds see the piece's ends, not the whole text's.
      auto subject = reinterpret_cast<PCRE2_SPTR>(text.data() + pieceStart);
      size_t gapStart = 0;
      size_t offset = 0;
      while (offset < pieceLength) {
        int rc = pcre2_match(regex->code, subject, pieceLength, offset, 0,
                             match.get(), nullptr);
        if (rc == PCRE2_ERROR_NOMATCH)
          break;
        if (rc < 0)
          throw std::runtime_error("tokenizer: pre-tokenizer '" + name +
                                   "' failed on the text: " + pcre2Message(rc));
        const PCRE2_SIZE *ovector = pcre2_get_ovector_pointer(match.get());
        size_t matchStart = ovector[0];
        size_t matchEnd = ovector[1];
        if (matchEnd <= matchStart) {
          // An empty match splits nothing; step over one character.
          offset = matchStart +
                   utf8Length(subject + matchStart, pieceLength - matchStart);
          continue;
        }
        if (matchStart > gapStart)
          next.emplace_back(pieceStart + gapStart, matchStart - gapStart);
        next.emplace_back(pieceStart + matchStart, matchEnd - matchStart);
        gapStart = offset = matchEnd;
      }
      if (gapStart < pieceLength)
        next.emplace_back(pieceStart + gapStart, pieceLength - gapStart);
    }
    pieces = std::move(next);
  }
  return pieces;
}

} // namespace kiln::runtime::detail
