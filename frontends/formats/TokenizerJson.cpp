//===- TokenizerJson.cpp - Hugging Face tokenizer.json files --------------===//
//
// Part of Kiln. Reads the `tokenizers` library's serialization (the
// tokenizer.json of a Hugging Face checkpoint) into a TokenizerSpec. Two
// shapes of BPE model are understood, the ones decoder-only checkpoints ship:
//
//  - byte-level BPE (GPT-2, Llama 3, Qwen2, DeepSeek): a ByteLevel
//    pre-tokenizer, alone (GPT-2's expression) or after Split/Digits
//    pre-tokenizers whose expressions are passed on as they are;
//  - SentencePiece-converted BPE (Llama 2, Mistral): spaces replaced by "▁"
//    and one prepended (by normalizers or a Metaspace pre-tokenizer), byte
//    fallback. Kiln runs these with its ScoreMerge algorithm; see
//    scoresFromMerges for why that gives the same tokens.
//
// The JSON is parsed with nlohmann::json and every value is type-checked
// before use, so a malformed file is a FormatError naming the file and the
// JSON path at fault (`model.vocab["foo"]`, `model.merges[12]`), never an
// exception of the JSON library or an out-of-range access.
//
//===----------------------------------------------------------------------===//

#include "frontends/formats/FormatError.h"
#include "frontends/formats/MappedFile.h"
#include "frontends/formats/TokenizerLoaders.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

namespace kiln::formats {

using runtime::TokenizerSpec;
using runtime::TokenType;
using json = nlohmann::json;

namespace {

/// Larger files are refused before parsing: the biggest tokenizer.json
/// files published (Gemma's 256k vocabulary) are under 40 MiB, and the
/// parsed document takes several times the file's size in memory.
constexpr size_t kMaxJsonBytes = size_t(256) << 20;

/// Tokenizer files nest a few levels deep; a deeper document is not one,
/// and refusing it keeps any recursion over the document shallow.
constexpr int kMaxJsonDepth = 64;

/// SentencePiece's space symbol, U+2581.
const char *const kSpaceSymbol = "\xE2\x96\x81";

/// The expression of the ByteLevel pre-tokenizer with use_regex (GPT-2's),
/// which tokenizer.json files do not spell out.
const char *const kByteLevelExpression =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

/// Thrown by the parser callback; becomes a FormatError.
struct TooDeep {};

/// `text` as a JSON string for messages, cut after 64 bytes. Invalid UTF-8
/// (a cut inside a character) is replaced rather than thrown on.
std::string jsonQuoted(const std::string &text) {
  bool cut = text.size() > 64;
  std::string shown = json(cut ? text.substr(0, 64) : text)
                          .dump(-1, ' ', false, json::error_handler_t::replace);
  if (cut)
    shown.insert(shown.size() - 1, "...");
  return shown;
}

/// What a value is, for messages: its type, and a short scalar's value.
std::string describe(const json &value) {
  if (value.is_string())
    return "the string " + jsonQuoted(value.get_ref<const std::string &>());
  if (value.is_number() || value.is_boolean())
    return value.type_name() + std::string(" ") + value.dump();
  return value.type_name() +
         std::string(value.is_object() || value.is_array()
                         ? " of " + std::to_string(value.size())
                         : "");
}

/// Parses a whole file, naming it in every error.
json parseFile(const MappedFile &file) {
  const std::string &path = file.path();
  if (file.size() == 0)
    throw FormatError(path, "is empty, not JSON");
  if (file.size() > kMaxJsonBytes)
    throw FormatError(path, "is " + std::to_string(file.size()) +
                                " bytes; tokenizer files larger than " +
                                std::to_string(kMaxJsonBytes >> 20) +
                                " MiB are refused");
  const char *begin = reinterpret_cast<const char *>(file.data());
  try {
    return json::parse(begin, begin + file.size(),
                       [](int depth, json::parse_event_t, json &) {
                         if (depth > kMaxJsonDepth)
                           throw TooDeep{};
                         return true;
                       });
  } catch (const json::exception &e) {
    // parse_error, and out_of_range for a number too large for a double
    // ("1e999"): both are the file's fault.
    throw FormatError(path, std::string("is not valid JSON: ") + e.what());
  } catch (const TooDeep &) {
    throw FormatError(path, "nests JSON values more than " +
                                std::to_string(kMaxJsonDepth) +
                                " levels deep; not a tokenizer file");
  }
}

/// Type-checked access to one parsed document; errors name the file and
/// the JSON path of the value at fault.
class Document {
public:
  Document(std::string file, const json &root)
      : file(std::move(file)), root(root) {}

  [[noreturn]] void fail(const std::string &path,
                         const std::string &message) const {
    throw FormatError(file, (path.empty() ? "" : path + ": ") + message);
  }

  static std::string member(const std::string &path, const char *key) {
    return path.empty() ? key : path + "." + key;
  }
  static std::string element(const std::string &path, size_t index) {
    return path + "[" + std::to_string(index) + "]";
  }

  const json &object(const json &value, const std::string &path) const {
    if (!value.is_object())
      fail(path, "expected an object, found " + describe(value));
    return value;
  }
  const json &array(const json &value, const std::string &path) const {
    if (!value.is_array())
      fail(path, "expected an array, found " + describe(value));
    return value;
  }
  const std::string &string(const json &value, const std::string &path) const {
    if (!value.is_string())
      fail(path, "expected a string, found " + describe(value));
    return value.get_ref<const std::string &>();
  }
  bool boolean(const json &value, const std::string &path) const {
    if (!value.is_boolean())
      fail(path, "expected true or false, found " + describe(value));
    return value.get<bool>();
  }

  /// Member `key` of object `parent` (at `path`), or nullptr when absent or
  /// null (the library writes null for unset options).
  const json *find(const json &parent, const std::string &path,
                   const char *key) const {
    object(parent, path);
    auto it = parent.find(key);
    return it == parent.end() || it->is_null() ? nullptr : &*it;
  }
  const json &require(const json &parent, const std::string &path,
                      const char *key) const {
    const json *value = find(parent, path, key);
    if (!value)
      fail(member(path, key), "is missing");
    return *value;
  }
  std::optional<std::string> optionalString(const json &parent,
                                            const std::string &path,
                                            const char *key) const {
    const json *value = find(parent, path, key);
    if (!value)
      return std::nullopt;
    return string(*value, member(path, key));
  }
  std::optional<bool> optionalBool(const json &parent, const std::string &path,
                                   const char *key) const {
    const json *value = find(parent, path, key);
    if (!value)
      return std::nullopt;
    return boolean(*value, member(path, key));
  }

  /// A token id: an integer in [0, limit). `limit` is the number of entries
  /// the file has, so a larger id would leave a gap (and cannot make the
  /// loader allocate more than the file holds).
  int32_t tokenId(const json &value, const std::string &path,
                  size_t limit) const {
    if (!value.is_number_integer())
      fail(path, "expected an integer token id, found " + describe(value));
    if (!value.is_number_unsigned())
      fail(path, "token id " + value.dump() + " is negative");
    auto id = value.get<uint64_t>();
    if (id >= limit)
      fail(path, "token id " + std::to_string(id) +
                     " leaves ids unused: model.vocab and added_tokens have " +
                     std::to_string(limit) + " entries, so ids must be below " +
                     std::to_string(limit));
    return static_cast<int32_t>(id);
  }

  /// The "type" of a component (normalizer, pre-tokenizer, ...) at `path`.
  const std::string &type(const json &component,
                          const std::string &path) const {
    return string(require(component, path, "type"), member(path, "type"));
  }

  /// A component and the components of a "Sequence" of them (`listKey`:
  /// "normalizers", "pretokenizers", "processors"), flattened, with paths.
  std::vector<std::pair<const json *, std::string>>
  flatten(const json *component, const std::string &path,
          const char *listKey) const {
    std::vector<std::pair<const json *, std::string>> out;
    if (!component)
      return out;
    if (type(*component, path) != "Sequence") {
      out.emplace_back(component, path);
      return out;
    }
    std::string listPath = member(path, listKey);
    const json &list = array(require(*component, path, listKey), listPath);
    for (size_t i = 0; i < list.size(); ++i) {
      std::string itemPath = element(listPath, i);
      if (type(list[i], itemPath) == "Sequence")
        fail(itemPath, "a Sequence inside a Sequence is not supported");
      out.emplace_back(&list[i], itemPath);
    }
    return out;
  }

  const std::string file;
  const json &root;
};

/// A string pattern of a Split, as a PCRE2 expression matching it
/// literally: every ASCII punctuation character escaped (PCRE2 reads
/// "\\" before one as the character itself), everything else as it is.
std::string literalExpression(const std::string &text) {
  std::string out;
  for (char c : text) {
    bool alphanumeric = (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') ||
                        (c >= 'a' && c <= 'z');
    if (c > ' ' && c < 0x7F && !alphanumeric)
      out += '\\';
    out += c;
  }
  return out;
}

/// SentencePiece's byte-fallback spelling "<0xXX>".
bool isBytePiece(const std::string &piece) {
  auto hex = [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F');
  };
  return piece.size() == 6 && piece.compare(0, 3, "<0x") == 0 &&
         hex(piece[3]) && hex(piece[4]) && piece[5] == '>';
}

/// Characters in valid UTF-8 `text` (JSON strings are): bytes that do not
/// continue a character.
size_t characterCount(const std::string &text) {
  return static_cast<size_t>(
      std::count_if(text.begin(), text.end(), [](char c) {
        return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
      }));
}

/// The loader proper: one tokenizer.json and, optionally, the
/// tokenizer_config.json beside it.
class JsonLoader {
public:
  JsonLoader(const Document &doc, const Document *config)
      : doc(doc), config(config) {}

  TokenizerSpec load();

private:
  enum class Kind { ByteLevel, SentencePiece };

  void readNormalizer();
  void readPreTokenizer();
  void readVocabulary();
  void readMerges();
  void scoresFromMerges();
  void checkExpressions() const;
  void readSpecialTokens();
  void readChatTemplate();
  int32_t specialFromConfig(const char *key, bool &named) const;
  int32_t firstAdded(std::initializer_list<const char *> pieces) const;
  bool templateStartsWithBos() const;

  const Document &doc;
  const Document *config;
  TokenizerSpec spec;
  const json *model = nullptr;

  // From the normalizer and pre-tokenizer.
  std::optional<Kind> kind;
  bool byteLevelSeen = false;
  std::string byteLevelPath;
  std::optional<std::string> prepend;     ///< Prepend normalizer's text.
  std::optional<std::string> spaceTarget; ///< Replace(" ", target).
  std::optional<std::string> metaspace;   ///< Metaspace's replacement.
  bool metaspacePrefix = true;
  std::vector<std::string> expressionPaths; ///< JSON path per expression.

  // The vocabulary.
  std::unordered_map<std::string, int32_t> vocabIds; ///< model.vocab only.
  std::unordered_map<std::string, int32_t> pieceIds; ///< Every token.
  std::unordered_map<std::string, int32_t> addedIds; ///< added_tokens.
  /// Per SentencePiece-style merge: the id it produces, in rank order.
  std::vector<int32_t> mergeResults;
};

void JsonLoader::readNormalizer() {
  std::string path = "normalizer";
  for (auto [component, at] :
       doc.flatten(doc.find(doc.root, "", "normalizer"), path, "normalizers")) {
    const std::string &type = doc.type(*component, at);
    if (type == "NFC") {
      // Qwen2's files ask for NFC; Kiln does not normalize Unicode, so text
      // is taken to be NFC already (as llama.cpp does) -- true of nearly
      // all text, and what a chat frontend sends.
      continue;
    }
    if (type == "Prepend") {
      prepend = doc.string(doc.require(*component, at, "prepend"),
                           Document::member(at, "prepend"));
      continue;
    }
    if (type == "Replace") {
      std::string patternPath = Document::member(at, "pattern");
      const json &pattern = doc.require(*component, at, "pattern");
      std::optional<std::string> literal =
          doc.optionalString(pattern, patternPath, "String");
      if (!literal || *literal != " ")
        doc.fail(patternPath, "only Replace(\" \", ...) (SentencePiece's "
                              "spaces) is supported, found " +
                                  describe(pattern));
      spaceTarget = doc.string(doc.require(*component, at, "content"),
                               Document::member(at, "content"));
      if (spaceTarget->empty())
        doc.fail(Document::member(at, "content"), "replaces spaces by nothing");
      continue;
    }
    doc.fail(Document::member(at, "type"),
             "normalizer " + jsonQuoted(type) +
                 " is not supported (supported: NFC, and SentencePiece's "
                 "Prepend and Replace of spaces)");
  }
}

void JsonLoader::readPreTokenizer() {
  for (auto [component, at] :
       doc.flatten(doc.find(doc.root, "", "pre_tokenizer"), "pre_tokenizer",
                   "pretokenizers")) {
    const std::string &type = doc.type(*component, at);
    if (byteLevelSeen)
      // Kiln splits raw text and maps bytes afterwards; a split of the
      // mapped characters would need the expressions rewritten.
      doc.fail(Document::member(at, "type"),
               "pre-tokenizer " + jsonQuoted(type) + " after ByteLevel (" +
                   byteLevelPath + ") is not supported");
    if (type == "ByteLevel") {
      byteLevelSeen = true;
      byteLevelPath = at;
      // The library's defaults when a key is absent.
      if (doc.optionalBool(*component, at, "add_prefix_space").value_or(true))
        doc.fail(Document::member(at, "add_prefix_space"),
                 "ByteLevel with add_prefix_space (a space put before the "
                 "text) is not supported");
      if (doc.optionalBool(*component, at, "use_regex").value_or(true)) {
        spec.preTokenizerPatterns.push_back(kByteLevelExpression);
        expressionPaths.push_back(Document::member(at, "use_regex"));
      }
      continue;
    }
    if (type == "Split") {
      std::string patternPath = Document::member(at, "pattern");
      const json &pattern = doc.require(*component, at, "pattern");
      if (std::optional<std::string> regex =
              doc.optionalString(pattern, patternPath, "Regex")) {
        spec.preTokenizerPatterns.push_back(*regex);
        expressionPaths.push_back(Document::member(patternPath, "Regex"));
      } else if (std::optional<std::string> literal =
                     doc.optionalString(pattern, patternPath, "String")) {
        spec.preTokenizerPatterns.push_back(literalExpression(*literal));
        expressionPaths.push_back(Document::member(patternPath, "String"));
      } else {
        doc.fail(patternPath,
                 "expected {\"Regex\": ...} or {\"String\": ...}, found " +
                     describe(pattern));
      }
      const std::string &behavior =
          doc.string(doc.require(*component, at, "behavior"),
                     Document::member(at, "behavior"));
      if (behavior != "Isolated")
        doc.fail(Document::member(at, "behavior"),
                 "Split behaviour " + jsonQuoted(behavior) +
                     " is not supported (only \"Isolated\")");
      if (doc.optionalBool(*component, at, "invert").value_or(false))
        doc.fail(Document::member(at, "invert"),
                 "an inverted Split is not supported");
      continue;
    }
    if (type == "Digits") {
      // Every numeric character alone, or runs of them: the library's
      // char::is_numeric is Unicode's N categories, PCRE2's \p{N}.
      bool individual =
          doc.optionalBool(*component, at, "individual_digits").value_or(false);
      spec.preTokenizerPatterns.push_back(individual ? R"(\p{N})"
                                                     : R"(\p{N}+)");
      expressionPaths.push_back(at);
      continue;
    }
    if (type == "Metaspace") {
      metaspace = doc.optionalString(*component, at, "replacement")
                      .value_or(kSpaceSymbol);
      if (metaspace->empty())
        doc.fail(Document::member(at, "replacement"), "is empty");
      if (std::optional<std::string> scheme =
              doc.optionalString(*component, at, "prepend_scheme")) {
        if (*scheme != "always" && *scheme != "first" && *scheme != "never")
          doc.fail(Document::member(at, "prepend_scheme"),
                   "expected \"always\", \"first\" or \"never\", found " +
                       jsonQuoted(*scheme));
        metaspacePrefix = *scheme != "never";
      } else {
        metaspacePrefix =
            doc.optionalBool(*component, at, "add_prefix_space").value_or(true);
      }
      // Splitting at every "▁" would keep merges inside words; Kiln's
      // SentencePiece algorithm merges across them, as the normalizer
      // form of the same tokenizer does. (The library's default is true.)
      if (doc.optionalBool(*component, at, "split").value_or(true))
        doc.fail(Document::member(at, "split"),
                 "Metaspace with split (words merged separately) is not "
                 "supported");
      continue;
    }
    doc.fail(Document::member(at, "type"),
             "pre-tokenizer " + jsonQuoted(type) +
                 " is not supported (supported: ByteLevel, Split, Digits, "
                 "Metaspace)");
  }
}

void JsonLoader::readVocabulary() {
  const json &vocab =
      doc.object(doc.require(*model, "model", "vocab"), "model.vocab");
  const json *added = doc.find(doc.root, "", "added_tokens");
  if (added)
    doc.array(*added, "added_tokens");
  size_t entries = vocab.size() + (added ? added->size() : 0);
  if (entries == 0)
    doc.fail("model.vocab", "is empty");
  if (entries > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    doc.fail("model.vocab", "has more entries than int32 ids can number");

  // Every id from 0 to the largest must be some entry's; where each came
  // from (model.vocab, or 1 + its index in added_tokens) is kept to name
  // both sides of a clash. Paths are only spelled out for messages.
  constexpr size_t kUnused = std::numeric_limits<size_t>::max();
  constexpr size_t kFromVocab = 0;
  std::vector<size_t> origin(entries, kUnused);
  auto vocabPath = [](const std::string &piece) {
    return "model.vocab[" + jsonQuoted(piece) + "]";
  };
  auto originPath = [&](int32_t id) {
    return origin[id] == kFromVocab
               ? vocabPath(spec.tokens[id])
               : Document::element("added_tokens", origin[id] - 1);
  };
  spec.tokens.assign(entries, std::string());
  int32_t maxId = -1;
  vocabIds.reserve(vocab.size());
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    const json &value = it.value();
    // The path is needed only when the value is wrong.
    int32_t id = value.is_number_unsigned() && value.get<uint64_t>() < entries
                     ? static_cast<int32_t>(value.get<uint64_t>())
                     : doc.tokenId(value, vocabPath(it.key()), entries);
    if (origin[id] != kUnused)
      doc.fail(vocabPath(it.key()), "token id " + std::to_string(id) +
                                        " is also " + originPath(id) + "'s");
    origin[id] = kFromVocab;
    spec.tokens[id] = it.key();
    vocabIds.emplace(it.key(), id);
    maxId = std::max(maxId, id);
  }
  pieceIds = vocabIds;

  std::vector<std::pair<int32_t, bool>> addedTokens; // id, special
  for (size_t i = 0; added && i < added->size(); ++i) {
    std::string path = Document::element("added_tokens", i);
    const json &token = doc.object((*added)[i], path);
    int32_t id = doc.tokenId(doc.require(token, path, "id"),
                             Document::member(path, "id"), entries);
    const std::string &content = doc.string(doc.require(token, path, "content"),
                                            Document::member(path, "content"));
    if (content.empty())
      doc.fail(Document::member(path, "content"), "is empty");
    bool special = doc.optionalBool(token, path, "special").value_or(false);
    // An added token may repeat a vocabulary entry (Llama 2's <s>, GPT-2's
    // <|endoftext|>), but only as the same piece with the same id.
    if (origin[id] != kUnused && spec.tokens[id] != content)
      doc.fail(path, jsonQuoted(content) + " has token id " +
                         std::to_string(id) + ", which is " + originPath(id) +
                         "'s");
    auto [known, inserted] = pieceIds.emplace(content, id);
    if (!inserted && known->second != id)
      doc.fail(path, jsonQuoted(content) + " has token id " +
                         std::to_string(id) + " but is already token " +
                         std::to_string(known->second));
    if (origin[id] == kUnused)
      origin[id] = i + 1;
    spec.tokens[id] = content;
    addedIds.emplace(content, id);
    addedTokens.emplace_back(id, special);
    maxId = std::max(maxId, id);
  }

  for (int32_t id = 0; id <= maxId; ++id)
    if (origin[id] == kUnused)
      doc.fail("model.vocab",
               "no token has id " + std::to_string(id) + ", but ids run to " +
                   std::to_string(maxId) +
                   " (model.vocab and added_tokens must use every id)");
  spec.tokens.resize(static_cast<size_t>(maxId) + 1);

  spec.types.assign(spec.tokens.size(), TokenType::Normal);
  if (kind == Kind::SentencePiece &&
      doc.optionalBool(*model, "model", "byte_fallback").value_or(false))
    for (const auto &[piece, id] : vocabIds)
      if (isBytePiece(piece))
        spec.types[id] = TokenType::Byte;
  // Special added tokens are control tokens (never produced from text,
  // printed as nothing); the others are matched verbatim in the text.
  for (auto [id, special] : addedTokens)
    spec.types[id] = special ? TokenType::Control : TokenType::UserDefined;
  if (std::optional<std::string> unknown =
          doc.optionalString(*model, "model", "unk_token")) {
    auto it = pieceIds.find(*unknown);
    if (it == pieceIds.end())
      doc.fail("model.unk_token",
               jsonQuoted(*unknown) + " is not a token of the vocabulary");
    spec.types[it->second] = TokenType::Unknown;
  }
}

void JsonLoader::readMerges() {
  const json &merges =
      doc.array(doc.require(*model, "model", "merges"), "model.merges");
  if (kind == Kind::ByteLevel)
    spec.merges.reserve(merges.size());
  else
    mergeResults.reserve(merges.size());
  std::string concatenation;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    // Spelled out only for a message: building it for each of a few
    // hundred thousand merges would cost more than checking them.
    auto path = [rank] { return Document::element("model.merges", rank); };
    const json &merge = merges[rank];
    std::string_view left;
    std::string_view right;
    if (merge.is_string()) {
      // The older spelling "a b": exactly one space, as the library splits.
      const std::string &text = merge.get_ref<const std::string &>();
      size_t space = text.find(' ');
      if (space == std::string::npos || space == 0 ||
          space + 1 == text.size() ||
          text.find(' ', space + 1) != std::string::npos)
        doc.fail(path(), jsonQuoted(text) +
                             " is not two tokens separated by one space");
      left = std::string_view(text).substr(0, space);
      right = std::string_view(text).substr(space + 1);
    } else if (merge.is_array() && merge.size() == 2) {
      if (!merge[0].is_string() || !merge[1].is_string())
        for (size_t half = 0; half < 2; ++half)
          doc.string(merge[half], Document::element(path(), half));
      left = merge[0].get_ref<const std::string &>();
      right = merge[1].get_ref<const std::string &>();
    } else {
      doc.fail(path(),
               "expected \"a b\" or [\"a\", \"b\"], found " + describe(merge));
    }
    concatenation.assign(left);
    if (!vocabIds.count(concatenation))
      doc.fail(path(), jsonQuoted(concatenation) + " is not in model.vocab");
    concatenation.assign(right);
    if (!vocabIds.count(concatenation))
      doc.fail(path(), jsonQuoted(concatenation) + " is not in model.vocab");
    concatenation.assign(left).append(right);
    auto result = vocabIds.find(concatenation);
    if (result == vocabIds.end())
      doc.fail(path(), "makes " + jsonQuoted(concatenation) +
                           ", which is not in model.vocab");
    if (kind == Kind::SentencePiece) {
      mergeResults.push_back(result->second);
      continue;
    }
    // TokenizerSpec stores merges as "a b" and splits at the first space
    // after the first byte; byte-level pieces never hold a space (the byte
    // map spells it "Ġ"), so one there is a malformed file.
    if (left.find(' ') != std::string_view::npos ||
        right.find(' ') != std::string_view::npos)
      doc.fail(path(), "a byte-level merge of tokens containing a space");
    std::string &stored = spec.merges.emplace_back(left);
    stored.append(" ").append(right);
  }
}

/// SentencePiece-style BPE as ScoreMerge. The library merges, in a word,
/// the adjacent pair of lowest rank until none is left; ScoreMerge merges
/// the adjacent pair whose concatenation has the highest score. Scoring each
/// piece by the best rank of the merges that make it turns one into the
/// other wherever the merges are those the library's SentencePiece
/// converter writes: every split of a piece into two pieces is a merge, and
/// the merges of one piece are consecutive. Pieces no merge makes score
/// below all others; multi-character ones among them are marked Unused,
/// since the library never produces them and ScoreMerge only merges into
/// ordinary pieces.
void JsonLoader::scoresFromMerges() {
  size_t n = spec.tokens.size();
  // Ranks must stay distinct as floats: scores are dense ranks of pieces,
  // exact below 2^24.
  if (n >= (size_t(1) << 24))
    doc.fail("model.vocab", "has " + std::to_string(n) +
                                " tokens; a SentencePiece-style vocabulary "
                                "of 2^24 or more is not supported");
  constexpr size_t kNone = std::numeric_limits<size_t>::max();
  std::vector<size_t> firstRank(n, kNone);
  for (size_t rank = 0; rank < mergeResults.size(); ++rank) {
    size_t &first = firstRank[static_cast<size_t>(mergeResults[rank])];
    first = std::min(first, rank);
  }
  std::vector<int32_t> made;
  for (size_t id = 0; id < n; ++id)
    if (firstRank[id] != kNone)
      made.push_back(static_cast<int32_t>(id));
  std::sort(made.begin(), made.end(),
            [&](int32_t a, int32_t b) { return firstRank[a] < firstRank[b]; });
  spec.scores.assign(n, -static_cast<float>(made.size()));
  for (size_t order = 0; order < made.size(); ++order)
    spec.scores[made[order]] = -static_cast<float>(order);
  for (size_t id = 0; id < n; ++id)
    if (firstRank[id] == kNone && spec.types[id] == TokenType::Normal &&
        characterCount(spec.tokens[id]) > 1)
      spec.types[id] = TokenType::Unused;
}

void JsonLoader::checkExpressions() const {
  // The runtime compiles them (PCRE2); try each on its own now, so that one
  // it cannot use is reported with its place in the file.
  for (size_t i = 0; i < spec.preTokenizerPatterns.size(); ++i) {
    TokenizerSpec probe;
    probe.model = TokenizerSpec::Model::ByteLevelBPE;
    probe.tokens = {"a"};
    probe.preTokenizerPatterns = {spec.preTokenizerPatterns[i]};
    try {
      runtime::Tokenizer tokenizer(std::move(probe));
    } catch (const std::invalid_argument &e) {
      doc.fail(expressionPaths[i],
               std::string("is not an expression Kiln can use: ") + e.what());
    }
  }
}

/// The token a tokenizer_config.json names under `key` (a string or an
/// object with "content"): -1 when null; `named` says whether the key is
/// there at all.
int32_t JsonLoader::specialFromConfig(const char *key, bool &named) const {
  named = false;
  if (!config)
    return -1;
  auto it = config->root.find(key);
  if (it == config->root.end())
    return -1;
  named = true;
  if (it->is_null())
    return -1;
  const std::string &content =
      it->is_object() ? config->string(config->require(*it, key, "content"),
                                       Document::member(key, "content"))
                      : config->string(*it, key);
  auto id = pieceIds.find(content);
  if (id == pieceIds.end())
    config->fail(key, jsonQuoted(content) + " is not a token of " + doc.file);
  return id->second;
}

int32_t
JsonLoader::firstAdded(std::initializer_list<const char *> pieces) const {
  for (const char *piece : pieces) {
    auto it = addedIds.find(piece);
    if (it != addedIds.end())
      return it->second;
  }
  return -1;
}

/// Whether the post-processor's template for one sequence starts with the
/// BOS token (Llama 2's and Llama 3's "<s> $A" / "<|begin_of_text|> $A").
bool JsonLoader::templateStartsWithBos() const {
  for (auto [processor, at] :
       doc.flatten(doc.find(doc.root, "", "post_processor"), "post_processor",
                   "processors")) {
    if (doc.type(*processor, at) != "TemplateProcessing")
      continue;
    std::string singlePath = Document::member(at, "single");
    const json &single =
        doc.array(doc.require(*processor, at, "single"), singlePath);
    if (single.empty())
      return false;
    std::string firstPath = Document::element(singlePath, 0);
    const json *special = doc.find(single[0], firstPath, "SpecialToken");
    if (!special)
      return false;
    std::string specialPath = Document::member(firstPath, "SpecialToken");
    const std::string &piece =
        doc.string(doc.require(*special, specialPath, "id"),
                   Document::member(specialPath, "id"));
    return spec.bosId >= 0 && piece == spec.tokens[spec.bosId];
  }
  return false;
}

void JsonLoader::readSpecialTokens() {
  if (config)
    config->object(config->root, "");
  bool named = false;
  spec.bosId = specialFromConfig("bos_token", named);
  if (!named)
    spec.bosId = firstAdded({"<|begin_of_text|>", "<s>",
                             "<\xEF\xBD\x9C"
                             "begin\xE2\x96\x81of\xE2\x96\x81sentence"
                             "\xEF\xBD\x9C>",
                             "<|startoftext|>", "<|endoftext|>"});
  spec.eosId = specialFromConfig("eos_token", named);
  if (!named)
    spec.eosId = firstAdded({"<|end_of_text|>", "</s>",
                             "<\xEF\xBD\x9C"
                             "end\xE2\x96\x81of\xE2\x96\x81sentence"
                             "\xEF\xBD\x9C>",
                             "<|endoftext|>"});
  // Chat models end a turn with a token of their own.
  spec.eotId = firstAdded({"<|eot_id|>", "<|im_end|>"});

  // The configuration's flag is what the library's tokenizer classes apply
  // (they rewrite the template by it); without it, the template decides.
  std::optional<bool> addBos;
  if (config)
    addBos = config->optionalBool(config->root, "", "add_bos_token");
  spec.addBos = addBos ? *addBos : templateStartsWithBos();
}

/// tokenizer_config.json's chat_template: a string, or (transformers'
/// multi-template form) a list of {"name", "template"} objects, of which
/// the one named "default" is what apply_chat_template uses without a
/// name. A list without one leaves the model with no template here.
void JsonLoader::readChatTemplate() {
  if (!config)
    return;
  const json *value = config->find(config->root, "", "chat_template");
  if (!value)
    return;
  if (value->is_string()) {
    spec.chatTemplate = value->get<std::string>();
    return;
  }
  if (!value->is_array())
    config->fail("chat_template",
                 "expected a string or a list of {\"name\", \"template\"} "
                 "objects, found " +
                     describe(*value));
  const json &list = *value;
  for (size_t i = 0; i < list.size(); ++i) {
    std::string at = Document::element("chat_template", i);
    config->object(list[i], at);
    const std::string &name = config->string(
        config->require(list[i], at, "name"), Document::member(at, "name"));
    if (name == "default")
      spec.chatTemplate =
          config->string(config->require(list[i], at, "template"),
                         Document::member(at, "template"));
  }
}

TokenizerSpec JsonLoader::load() {
  doc.object(doc.root, "");
  model = doc.find(doc.root, "", "model");
  if (!model)
    doc.fail("", "has no \"model\": not a Hugging Face tokenizer.json");
  doc.object(*model, "model");
  std::optional<std::string> type = doc.optionalString(*model, "model", "type");
  // Files of early library versions leave out the type of a BPE model.
  if (!type && model->contains("merges"))
    type = "BPE";
  if (!type)
    doc.fail("model.type", "is missing");
  if (*type != "BPE")
    doc.fail("model.type", jsonQuoted(*type) +
                               " is not supported: Kiln reads BPE models "
                               "only (not Unigram, WordPiece or WordLevel)");
  for (const char *key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (std::optional<std::string> affix =
            doc.optionalString(*model, "model", key);
        affix && !affix->empty())
      doc.fail(Document::member("model", key),
               jsonQuoted(*affix) + ": subword affixes are not supported");
  if (const json *dropout = doc.find(*model, "model", "dropout");
      dropout && !(dropout->is_number() && dropout->get<double>() == 0.0))
    doc.fail("model.dropout",
             describe(*dropout) + ": BPE dropout is not supported");
  bool ignoreMerges =
      doc.optionalBool(*model, "model", "ignore_merges").value_or(false);

  readNormalizer();
  readPreTokenizer();
  bool sentencePiece = spaceTarget || metaspace;
  if (byteLevelSeen) {
    if (sentencePiece || prepend)
      doc.fail(spaceTarget || prepend ? "normalizer" : "pre_tokenizer",
               "SentencePiece's \"▁\" spaces together with a ByteLevel "
               "pre-tokenizer are not supported");
    kind = Kind::ByteLevel;
  } else if (sentencePiece) {
    if (!spec.preTokenizerPatterns.empty())
      doc.fail(expressionPaths.front(),
               "Split and Digits pre-tokenizers are supported with ByteLevel "
               "only");
    if (spaceTarget && metaspace)
      doc.fail("pre_tokenizer",
               "Metaspace after a normalizer that already replaced spaces");
    kind = Kind::SentencePiece;
  } else {
    doc.fail("pre_tokenizer",
             prepend ? "a Prepend normalizer without Replace(\" \", ...) is "
                       "not supported"
                     : "neither a ByteLevel pre-tokenizer (GPT-2 style) nor "
                       "SentencePiece's \"▁\" for spaces (a Replace "
                       "normalizer or Metaspace pre-tokenizer): not a kind "
                       "of BPE tokenizer Kiln supports");
  }

  if (kind == Kind::ByteLevel) {
    spec.model = TokenizerSpec::Model::ByteLevelBPE;
    // The name carries what the expressions cannot: ignore_merges.
    spec.preTokenizer = ignoreMerges ? "llama-bpe" : "gpt-2";
    checkExpressions();
  } else {
    if (ignoreMerges)
      doc.fail("model.ignore_merges",
               "is not supported for SentencePiece-style vocabularies");
    spec.model = TokenizerSpec::Model::ScoreMerge;
    if (spaceTarget) {
      spec.spaceSymbol = *spaceTarget;
      if (prepend && *prepend != *spaceTarget)
        doc.fail("normalizer", "prepends " + jsonQuoted(*prepend) +
                                   " but replaces spaces by " +
                                   jsonQuoted(*spaceTarget) +
                                   "; only the same symbol is supported");
      spec.addSpacePrefix = prepend.has_value();
    } else {
      spec.spaceSymbol = *metaspace;
      spec.addSpacePrefix = metaspacePrefix;
    }
  }

  readVocabulary();
  readMerges();
  if (kind == Kind::SentencePiece)
    scoresFromMerges();
  readSpecialTokens();
  readChatTemplate();
  return std::move(spec);
}

} // namespace

TokenizerSpec tokenizerFromJson(const std::string &path) {
  std::shared_ptr<const MappedFile> file = MappedFile::open(path);
  std::filesystem::path configPath =
      std::filesystem::path(path).parent_path() / "tokenizer_config.json";
  std::error_code error;
  std::shared_ptr<const MappedFile> config;
  if (std::filesystem::is_regular_file(configPath, error))
    config = MappedFile::open(configPath.string());
  return tokenizerFromJson(file, config);
}

TokenizerSpec tokenizerFromJson(std::shared_ptr<const MappedFile> file,
                                std::shared_ptr<const MappedFile> config) {
  json root = parseFile(*file);
  std::optional<json> configRoot;
  if (config)
    configRoot = parseFile(*config);
  Document doc(file->path(), root);
  std::optional<Document> configDoc;
  if (config)
    configDoc.emplace(config->path(), *configRoot);
  try {
    return JsonLoader(doc, configDoc ? &*configDoc : nullptr).load();
  } catch (const json::exception &e) {
    // Every access is checked first; this is the net under that.
    throw FormatError(file->path(),
                      std::string("unexpected JSON: ") + e.what());
  }
}

} // namespace kiln::formats
