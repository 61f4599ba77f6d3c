//===- Tokenizer.cpp - Text to token ids and back -------------------------===//
//
// Part of Kiln. The two algorithms of Tokenizer.h. Both merge adjacent
// symbols with a priority queue (O(n log n) in the text length) rather than
// rescanning all pairs after every merge as llama2.c does; the result is the
// same: the queue's top is always the best pair among the current
// neighbours, and ties go to the leftmost pair.
//
//===----------------------------------------------------------------------===//

#include "runtime/Tokenizer.h"

#include "runtime/PreTokenizer.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <queue>
#include <stdexcept>
#include <string_view>

namespace kiln::runtime {

using detail::utf8Length;

namespace {

/// `text` quoted for an error message, bytes outside printable ASCII escaped.
std::string quote(const std::string &text) {
  std::string out = "\"";
  for (unsigned char c : text.substr(0, 64)) {
    if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buffer[8];
      std::snprintf(buffer, sizeof(buffer), "\\x%02X", c);
      out += buffer;
    }
  }
  return out + (text.size() > 64 ? "...\"" : "\"");
}

/// The byte a piece "<0xXX>" stands for (SentencePiece's byte-fallback
/// spelling, two upper-case hex digits), or -1.
int parseBytePiece(const std::string &piece) {
  if (piece.size() != 6 || piece.compare(0, 3, "<0x") != 0 || piece[5] != '>')
    return -1;
  int value = 0;
  for (int i = 3; i < 5; ++i) {
    char c = piece[i];
    int digit;
    if (c >= '0' && c <= '9')
      digit = c - '0';
    else if (c >= 'A' && c <= 'F')
      digit = c - 'A' + 10;
    else
      return -1;
    value = value * 16 + digit;
  }
  return value;
}

/// UTF-8 encoding of a code point below U+0800 (all GPT-2's byte map needs).
std::string encodeUtf8(uint32_t codePoint) {
  std::string out;
  if (codePoint < 0x80) {
    out += static_cast<char>(codePoint);
  } else {
    out += static_cast<char>(0xC0 | (codePoint >> 6));
    out += static_cast<char>(0x80 | (codePoint & 0x3F));
  }
  return out;
}

/// Replaces every occurrence of `from` (non-empty) in `text` by `to`.
std::string replaceAll(const std::string &text, const std::string &from,
                       const std::string &to) {
  std::string out;
  size_t start = 0;
  for (size_t hit; (hit = text.find(from, start)) != std::string::npos;
       start = hit + from.size())
    out.append(text, start, hit - start).append(to);
  return out.append(text, start, std::string::npos);
}

/// A run of text or a token found verbatim in it.
struct Fragment {
  size_t start;
  size_t length;
  int32_t token; ///< -1 for text to tokenize.
};

/// Tokens matched verbatim in text before anything else (user-defined
/// tokens, as SentencePiece and Hugging Face match them, and control tokens
/// when encode() parses them): by first byte, the distinct lengths of their
/// pieces, longest first, so the longest piece at a position wins.
class VerbatimTokens {
public:
  void add(const std::string &piece, int32_t id) {
    if (piece.empty() || !ids.emplace(piece, id).second)
      return;
    auto &l = lengths[static_cast<uint8_t>(piece[0])];
    if (std::find(l.begin(), l.end(), piece.size()) == l.end()) {
      l.push_back(piece.size());
      std::sort(l.rbegin(), l.rend());
    }
  }

  bool empty() const { return ids.empty(); }

  /// `text` cut into runs and the tokens found in it, left to right.
  std::vector<Fragment> partition(const std::string &text) const {
    std::vector<Fragment> fragments;
    size_t runStart = 0;
    size_t i = 0;
    while (i < text.size()) {
      int32_t found = -1;
      size_t foundLength = 0;
      for (size_t length : lengths[static_cast<uint8_t>(text[i])]) {
        if (length > text.size() - i)
          continue;
        auto it = ids.find(text.substr(i, length));
        if (it != ids.end()) {
          found = it->second;
          foundLength = length;
          break;
        }
      }
      if (found < 0) {
        ++i;
        continue;
      }
      if (i > runStart)
        fragments.push_back({runStart, i - runStart, -1});
      fragments.push_back({i, foundLength, found});
      i += foundLength;
      runStart = i;
    }
    if (runStart < text.size())
      fragments.push_back({runStart, text.size() - runStart, -1});
    return fragments;
  }

private:
  std::array<std::vector<size_t>, 256> lengths;
  std::unordered_map<std::string, int32_t> ids;
};

/// A symbol of the merge loops: a byte range of the text, linked to its
/// neighbours; merged-away symbols have length 0.
struct Symbol {
  size_t start;
  size_t length;
  int32_t prev;
  int32_t next;
  int32_t id; ///< ByteLevelBPE: the symbol's token, -1 if none.
};

/// A candidate merge of symbols `left` and `left.next`. It is stale once
/// either side has changed, which shows as a different total length.
template <typename Priority> struct Candidate {
  Priority priority;
  size_t start; ///< Of the left symbol: smaller wins ties.
  int32_t left;
  int32_t right;
  size_t length;
  int32_t result;
};

bool isStale(const std::vector<Symbol> &symbols, int32_t left, int32_t right,
             size_t length) {
  const Symbol &l = symbols[left];
  const Symbol &r = symbols[right];
  return l.length == 0 || r.length == 0 || l.next != right ||
         l.length + r.length != length;
}

void mergeInto(std::vector<Symbol> &symbols, int32_t left, int32_t right) {
  Symbol &l = symbols[left];
  Symbol &r = symbols[right];
  l.length += r.length;
  r.length = 0;
  l.next = r.next;
  if (r.next >= 0)
    symbols[r.next].prev = left;
}

/// Merges adjacent symbols, best candidate first, until no adjacent pair
/// merges: the loop both tokenizers share. `pairOf(left, right)` is the
/// candidate for two adjacent symbols, if they merge; `worse(a, b)` says a
/// loses to b. A merged symbol takes the candidate's result as its id.
template <typename Priority, typename PairOf, typename Worse>
void mergeBestPairs(std::vector<Symbol> &symbols, PairOf pairOf, Worse worse) {
  using Entry = Candidate<Priority>;
  std::priority_queue<Entry, std::vector<Entry>, Worse> queue(worse);
  auto consider = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0)
      return;
    if (std::optional<Entry> entry = pairOf(left, right))
      queue.push(*entry);
  };
  for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i)
    consider(i - 1, i);
  while (!queue.empty()) {
    Entry best = queue.top();
    queue.pop();
    if (isStale(symbols, best.left, best.right, best.length))
      continue;
    mergeInto(symbols, best.left, best.right);
    symbols[best.left].id = best.result;
    consider(symbols[best.left].prev, best.left);
    consider(best.left, symbols[best.left].next);
  }
}

} // namespace

struct Tokenizer::Impl {
  /// Piece -> id for every token (the first wins if a piece repeats).
  std::unordered_map<std::string, int32_t> pieceToId;
  /// Per id: the byte a byte-fallback token stands for, or -1.
  std::vector<int16_t> byteValue;
  /// ScoreMerge: byte -> its "<0xXX>" token, or -1.
  std::array<int32_t, 256> byteToken;
  int32_t unknownId = -1;

  /// User-defined tokens are cut out of the text before anything else;
  /// control (and unknown) tokens too when encode() parses special text.
  VerbatimTokens userDefined;
  VerbatimTokens control;

  // ByteLevelBPE.
  std::unique_ptr<detail::PreTokenizer> preTokenizer;
  /// GPT-2's reversible byte -> printable character map, and back.
  std::array<std::string, 256> byteToUnicode;
  std::unordered_map<uint32_t, uint8_t> unicodeToByte;
  /// The token of each byte's character, or -1.
  std::array<int32_t, 256> byteSymbol;
  /// (left id << 32 | right id) -> (rank, merged id).
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges;

  const TokenizerSpec *spec = nullptr;

  TokenType type(int32_t id) const {
    return spec->types.empty() ? TokenType::Normal : spec->types[id];
  }

  /// SentencePiece only merges into (and starts from) ordinary pieces:
  /// control, unknown, byte and unused tokens are never produced from text.
  bool isTextPiece(int32_t id) const {
    TokenType t = type(id);
    return t == TokenType::Normal || t == TokenType::UserDefined ||
           t == TokenType::Undefined;
  }

  int32_t lookupTextPiece(const std::string &piece) const {
    auto it = pieceToId.find(piece);
    return it != pieceToId.end() && isTextPiece(it->second) ? it->second : -1;
  }

  void encodeScoreMerge(const std::string &text, bool spacePrefix,
                        std::vector<int32_t> &ids) const;
  void scoreMergeRun(const std::string &text, size_t start, size_t length,
                     std::vector<int32_t> &ids) const;
  void encodeByteLevel(const std::string &text,
                       std::vector<int32_t> &ids) const;
  void byteLevelWord(std::string_view word, std::vector<int32_t> &ids) const;
  std::string pieceText(int32_t id) const;
};

//===----------------------------------------------------------------------===//
// Construction and validation
//===----------------------------------------------------------------------===//

namespace {

void validate(const TokenizerSpec &spec) {
  auto fail = [](const std::string &message) {
    throw std::invalid_argument("tokenizer: " + message);
  };
  size_t n = spec.tokens.size();
  if (n == 0)
    fail("the vocabulary is empty");
  if (n > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    fail("the vocabulary has " + std::to_string(n) +
         " tokens, more than int32 ids can number");
  bool scoreMerge = spec.model == TokenizerSpec::Model::ScoreMerge;
  if (scoreMerge ? spec.scores.size() != n
                 : !spec.scores.empty() && spec.scores.size() != n)
    fail(std::to_string(spec.scores.size()) + " scores for " +
         std::to_string(n) + " tokens");
  for (size_t id = 0; id < spec.scores.size(); ++id)
    if (std::isnan(spec.scores[id]))
      fail("the score of token " + std::to_string(id) + " " +
           quote(spec.tokens[id]) + " is NaN");
  if (!spec.types.empty() && spec.types.size() != n)
    fail(std::to_string(spec.types.size()) + " token types for " +
         std::to_string(n) + " tokens");
  for (size_t id = 0; id < spec.types.size(); ++id) {
    auto value = static_cast<int32_t>(spec.types[id]);
    if (value < 0 || value > static_cast<int32_t>(TokenType::Byte))
      fail("token " + std::to_string(id) + " has type " +
           std::to_string(value) + ", not a GGUF token type (0..6)");
  }
  auto checkId = [&](const char *what, int32_t id) {
    if (id < -1 || id >= static_cast<int64_t>(n))
      fail(std::string(what) + " id " + std::to_string(id) +
           " is outside the vocabulary (" + std::to_string(n) + " tokens)");
  };
  checkId("BOS", spec.bosId);
  checkId("EOS", spec.eosId);
  checkId("EOT", spec.eotId);
  if (scoreMerge && spec.spaceSymbol.empty())
    fail("the space symbol is empty");
}

} // namespace

Tokenizer::Tokenizer(TokenizerSpec spec)
    : tokenizerSpec(std::move(spec)), impl(std::make_unique<Impl>()) {
  const TokenizerSpec &s = tokenizerSpec;
  validate(s);
  Impl &m = *impl;
  m.spec = &tokenizerSpec;
  auto n = static_cast<int32_t>(s.tokens.size());

  m.pieceToId.reserve(s.tokens.size());
  m.byteValue.assign(s.tokens.size(), -1);
  m.byteToken.fill(-1);
  for (int32_t id = 0; id < n; ++id) {
    const std::string &piece = s.tokens[id];
    m.pieceToId.emplace(piece, id);
    TokenType type = m.type(id);
    int byte = parseBytePiece(piece);
    // Without types (a hand-made spec) the spelling alone marks byte tokens.
    if (byte >= 0 && (s.types.empty() || type == TokenType::Byte)) {
      m.byteValue[id] = static_cast<int16_t>(byte);
      if (m.byteToken[byte] < 0)
        m.byteToken[byte] = id;
    }
    if (type == TokenType::Unknown && m.unknownId < 0)
      m.unknownId = id;
    if (type == TokenType::UserDefined)
      m.userDefined.add(piece, id);
    // llama.cpp's parse_special matches control and unknown tokens.
    if (type == TokenType::Control || type == TokenType::Unknown)
      m.control.add(piece, id);
  }
  if (m.unknownId < 0 && s.types.empty()) {
    auto it = m.pieceToId.find("<unk>");
    if (it != m.pieceToId.end())
      m.unknownId = it->second;
  }

  if (s.model == TokenizerSpec::Model::ScoreMerge)
    return;

  m.preTokenizer = std::make_unique<detail::PreTokenizer>(
      s.preTokenizer, s.preTokenizerPatterns);

  // GPT-2's bytes_to_unicode(): printable Latin-1 bytes stand for
  // themselves, the others for U+0100 upwards in byte order, so every byte
  // has a visible character and the vocabulary is valid UTF-8.
  uint32_t next = 256;
  for (uint32_t byte = 0; byte < 256; ++byte) {
    bool printable = (byte >= '!' && byte <= '~') ||
                     (byte >= 0xA1 && byte <= 0xAC) || byte >= 0xAE;
    uint32_t codePoint = printable ? byte : next++;
    m.byteToUnicode[byte] = encodeUtf8(codePoint);
    m.unicodeToByte.emplace(codePoint, static_cast<uint8_t>(byte));
    auto it = m.pieceToId.find(m.byteToUnicode[byte]);
    m.byteSymbol[byte] = it == m.pieceToId.end() ? -1 : it->second;
  }

  m.merges.reserve(s.merges.size());
  for (size_t rank = 0; rank < s.merges.size(); ++rank) {
    const std::string &merge = s.merges[rank];
    auto fail = [&](const std::string &why) {
      throw std::invalid_argument("tokenizer: merge " + std::to_string(rank) +
                                  " " + quote(merge) + " " + why);
    };
    if (rank > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
      fail("is past the largest rank an int32 can hold");
    // Search from 1: the separator follows a non-empty left part.
    size_t space = merge.size() > 1 ? merge.find(' ', 1) : std::string::npos;
    if (space == std::string::npos || space + 1 == merge.size())
      fail("is not two tokens separated by a space");
    std::string left = merge.substr(0, space);
    std::string right = merge.substr(space + 1);
    auto l = m.pieceToId.find(left);
    if (l == m.pieceToId.end())
      fail("refers to " + quote(left) + ", which is not a token");
    auto r = m.pieceToId.find(right);
    if (r == m.pieceToId.end())
      fail("refers to " + quote(right) + ", which is not a token");
    auto result = m.pieceToId.find(left + right);
    if (result == m.pieceToId.end())
      fail("makes " + quote(left + right) + ", which is not a token");
    uint64_t key = static_cast<uint64_t>(l->second) << 32 |
                   static_cast<uint32_t>(r->second);
    // A repeated pair keeps its first (best) rank, as a rank table would.
    m.merges.emplace(
        key, std::make_pair(static_cast<int32_t>(rank), result->second));
  }
}

Tokenizer::~Tokenizer() = default;

// The Impl points at tokenizerSpec; after a move the vector buffers it
// reads have moved with it, but the pointer itself must follow the object.
Tokenizer::Tokenizer(Tokenizer &&other) noexcept
    : tokenizerSpec(std::move(other.tokenizerSpec)),
      impl(std::move(other.impl)), parseSpecial(other.parseSpecial) {
  if (impl)
    impl->spec = &tokenizerSpec;
}

Tokenizer &Tokenizer::operator=(Tokenizer &&other) noexcept {
  tokenizerSpec = std::move(other.tokenizerSpec);
  impl = std::move(other.impl);
  parseSpecial = other.parseSpecial;
  if (impl)
    impl->spec = &tokenizerSpec;
  return *this;
}

//===----------------------------------------------------------------------===//
// Encoding
//===----------------------------------------------------------------------===//

void Tokenizer::Impl::encodeScoreMerge(const std::string &text,
                                       bool spacePrefix,
                                       std::vector<int32_t> &ids) const {
  // SentencePiece normalization as Llama uses it: spaces become the space
  // symbol and one is prepended (the "dummy prefix"), so that a word at the
  // start of the text tokenizes as it does after a space.
  std::string normalized =
      spec->addSpacePrefix && spacePrefix ? spec->spaceSymbol : "";
  normalized += spec->spaceSymbol == " "
                    ? text
                    : replaceAll(text, " ", spec->spaceSymbol);
  for (const Fragment &fragment : userDefined.partition(normalized)) {
    if (fragment.token >= 0)
      ids.push_back(fragment.token);
    else
      scoreMergeRun(normalized, fragment.start, fragment.length, ids);
  }
}

void Tokenizer::Impl::scoreMergeRun(const std::string &text, size_t start,
                                    size_t length,
                                    std::vector<int32_t> &ids) const {
  // One symbol per UTF-8 character (a stray byte is a character of its own).
  std::vector<Symbol> symbols;
  const auto *bytes = reinterpret_cast<const unsigned char *>(text.data());
  for (size_t at = start, end = start + length; at < end;) {
    size_t size = utf8Length(bytes + at, end - at);
    auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back({at, size, index - 1, -1, -1});
    if (index > 0)
      symbols[index - 1].next = index;
    at += size;
  }

  // Highest score first, then leftmost.
  using Entry = Candidate<float>;
  mergeBestPairs<float>(
      symbols,
      [&](int32_t left, int32_t right) -> std::optional<Entry> {
        size_t merged = symbols[left].length + symbols[right].length;
        int32_t id = lookupTextPiece(text.substr(symbols[left].start, merged));
        if (id < 0)
          return std::nullopt;
        return Entry{
            spec->scores[id], symbols[left].start, left, right, merged, id};
      },
      [](const Entry &a, const Entry &b) {
        return a.priority < b.priority ||
               (a.priority == b.priority && a.start > b.start);
      });

  for (int32_t i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[i].next) {
    const Symbol &symbol = symbols[i];
    // Merged symbols are always pieces; a single character may not be.
    int32_t id = lookupTextPiece(text.substr(symbol.start, symbol.length));
    if (id >= 0) {
      ids.push_back(id);
      continue;
    }
    // Byte fallback: the character's UTF-8 bytes as <0xXX> tokens; without
    // them, the whole character is the unknown token.
    bool haveBytes = true;
    for (size_t k = 0; k < symbol.length; ++k)
      haveBytes &= byteToken[static_cast<uint8_t>(text[symbol.start + k])] >= 0;
    if (haveBytes) {
      for (size_t k = 0; k < symbol.length; ++k)
        ids.push_back(byteToken[static_cast<uint8_t>(text[symbol.start + k])]);
    } else if (unknownId >= 0) {
      ids.push_back(unknownId);
    }
  }
}

void Tokenizer::Impl::encodeByteLevel(const std::string &text,
                                      std::vector<int32_t> &ids) const {
  for (const Fragment &fragment : userDefined.partition(text)) {
    if (fragment.token >= 0) {
      ids.push_back(fragment.token);
      continue;
    }
    std::string_view run(text.data() + fragment.start, fragment.length);
    for (auto [offset, length] : preTokenizer->split(run))
      byteLevelWord(run.substr(offset, length), ids);
  }
}

void Tokenizer::Impl::byteLevelWord(std::string_view word,
                                    std::vector<int32_t> &ids) const {
  if (preTokenizer->ignoresMerges()) {
    std::string mapped;
    for (char c : word)
      mapped += byteToUnicode[static_cast<uint8_t>(c)];
    auto it = pieceToId.find(mapped);
    if (it != pieceToId.end()) {
      ids.push_back(it->second);
      return;
    }
  }

  // One symbol per byte, standing for the byte's printable character.
  std::vector<Symbol> symbols(word.size());
  for (size_t i = 0; i < word.size(); ++i)
    symbols[i] = {i, 1, static_cast<int32_t>(i) - 1,
                  i + 1 < word.size() ? static_cast<int32_t>(i + 1) : -1,
                  byteSymbol[static_cast<uint8_t>(word[i])]};

  // Lowest rank first, then leftmost.
  using Entry = Candidate<int32_t>;
  mergeBestPairs<int32_t>(
      symbols,
      [&](int32_t left, int32_t right) -> std::optional<Entry> {
        if (symbols[left].id < 0 || symbols[right].id < 0)
          return std::nullopt;
        uint64_t key = static_cast<uint64_t>(symbols[left].id) << 32 |
                       static_cast<uint32_t>(symbols[right].id);
        auto it = merges.find(key);
        if (it == merges.end())
          return std::nullopt;
        return Entry{it->second.first,
                     symbols[left].start,
                     left,
                     right,
                     symbols[left].length + symbols[right].length,
                     it->second.second};
      },
      [](const Entry &a, const Entry &b) {
        return a.priority > b.priority ||
               (a.priority == b.priority && a.start > b.start);
      });

  for (int32_t i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[i].next) {
    // A byte whose character is not in the vocabulary (a vocabulary that
    // lacks some of the 256) is the unknown token, or nothing.
    if (symbols[i].id >= 0)
      ids.push_back(symbols[i].id);
    else if (unknownId >= 0)
      ids.push_back(unknownId);
  }
}

std::vector<int32_t> Tokenizer::encode(const std::string &text,
                                       bool addBos) const {
  if (!parseSpecial)
    return encode(text, addBos, {{0, text.size()}});
  return encode(text, addBos, {});
}

std::vector<int32_t>
Tokenizer::encode(const std::string &text, bool addBos,
                  const std::vector<TextSpan> &literal) const {
  // Control tokens are matched outside the literal spans only; the text
  // fragments that meet at a span's edge are joined again into one run.
  std::vector<Fragment> fragments;
  auto addText = [&](size_t start, size_t length) {
    if (!fragments.empty() && fragments.back().token < 0 &&
        fragments.back().start + fragments.back().length == start)
      fragments.back().length += length;
    else
      fragments.push_back({start, length, -1});
  };
  auto addParsed = [&](size_t start, size_t end) {
    if (start >= end)
      return;
    for (Fragment f :
         impl->control.partition(text.substr(start, end - start))) {
      f.start += start;
      if (f.token >= 0)
        fragments.push_back(f);
      else
        addText(f.start, f.length);
    }
  };
  size_t at = 0;
  for (const TextSpan &span : literal) {
    size_t start = std::min(std::max(span.start, at), text.size());
    size_t end = std::min(span.start + span.length, text.size());
    addParsed(at, start);
    if (end > start)
      addText(start, end - start);
    at = std::max(at, end);
  }
  addParsed(at, text.size());

  std::vector<int32_t> ids;
  // As llama.cpp: the text after a control token starts afresh, with the
  // dummy prefix of a ScoreMerge vocabulary.
  bool afterSpecial = true;
  for (const Fragment &fragment : fragments) {
    if (fragment.token >= 0) {
      ids.push_back(fragment.token);
      afterSpecial = true;
      continue;
    }
    if (fragment.length == 0)
      continue;
    std::string run = text.substr(fragment.start, fragment.length);
    if (tokenizerSpec.model == TokenizerSpec::Model::ScoreMerge)
      impl->encodeScoreMerge(run, afterSpecial, ids);
    else
      impl->encodeByteLevel(run, ids);
    afterSpecial = false;
  }
  // A chat template writes BOS itself; a second one would change the prompt.
  int32_t bos = tokenizerSpec.bosId;
  if (addBos && bos >= 0 && (ids.empty() || ids[0] != bos))
    ids.insert(ids.begin(), bos);
  return ids;
}

//===----------------------------------------------------------------------===//
// Decoding
//===----------------------------------------------------------------------===//

/// The bytes of token `id` with no context: control tokens are empty, byte
/// tokens their byte, ScoreMerge pieces have the space symbol turned back
/// into spaces, byte-level pieces their characters turned back into bytes.
std::string Tokenizer::Impl::pieceText(int32_t id) const {
  TokenType t = type(id);
  if (t == TokenType::Control)
    return "";
  if (byteValue[id] >= 0)
    return std::string(1, static_cast<char>(byteValue[id]));
  const std::string &piece = spec->tokens[id];
  if (spec->model == TokenizerSpec::Model::ScoreMerge)
    return spec->spaceSymbol == " " ? piece
                                    : replaceAll(piece, spec->spaceSymbol, " ");
  // User-defined tokens were matched in the raw text, so they are raw text.
  if (t == TokenType::UserDefined)
    return piece;
  std::string out;
  const auto *bytes = reinterpret_cast<const unsigned char *>(piece.data());
  for (size_t at = 0; at < piece.size();) {
    size_t size = utf8Length(bytes + at, piece.size() - at);
    uint32_t codePoint = 0x110000; // Not a character: no byte maps to it.
    if (size == 1 && bytes[at] < 0x80)
      codePoint = bytes[at];
    else if (size == 2)
      codePoint = (bytes[at] & 0x1Fu) << 6 | (bytes[at + 1] & 0x3Fu);
    auto it = unicodeToByte.find(codePoint);
    // Characters outside the byte map are kept as they are.
    if (it != unicodeToByte.end())
      out += static_cast<char>(it->second);
    else
      out.append(piece, at, size);
    at += size;
  }
  return out;
}

namespace {
void checkTokenId(int32_t id, int32_t vocabSize) {
  if (id < 0 || id >= vocabSize)
    throw std::out_of_range("tokenizer: token id " + std::to_string(id) +
                            " is outside the vocabulary (" +
                            std::to_string(vocabSize) + " tokens)");
}
} // namespace

std::string Tokenizer::decodePiece(int32_t previous, int32_t id) const {
  checkTokenId(id, vocabSize());
  std::string text = impl->pieceText(id);
  // llama2.c: the first piece after BOS loses the space that the dummy
  // prefix put in front of the first word.
  if (tokenizerSpec.model == TokenizerSpec::Model::ScoreMerge &&
      previous == tokenizerSpec.bosId && previous >= 0 &&
      impl->byteValue[id] < 0 && !text.empty() && text[0] == ' ')
    text.erase(0, 1);
  return text;
}

std::string Tokenizer::decode(const std::vector<int32_t> &ids) const {
  std::string text;
  size_t i = 0;
  if (!ids.empty() && ids[0] == tokenizerSpec.bosId && ids[0] >= 0)
    i = 1;
  bool first = true;
  for (; i < ids.size(); ++i) {
    checkTokenId(ids[i], vocabSize());
    std::string piece = impl->pieceText(ids[i]);
    if (piece.empty())
      continue;
    // Undo the dummy prefix: the first piece's leading space came from it.
    if (first && tokenizerSpec.model == TokenizerSpec::Model::ScoreMerge &&
        tokenizerSpec.addSpacePrefix && impl->byteValue[ids[i]] < 0 &&
        piece[0] == ' ')
      piece.erase(0, 1);
    first = false;
    text += piece;
  }
  return text;
}

} // namespace kiln::runtime
