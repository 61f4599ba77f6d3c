//===- TokenizerLoaders.cpp - Reading vocabularies from files -------------===//
//
// Part of Kiln. Both loaders check everything they read against the file's
// size and the vocabulary's length before using it, so that a malformed file
// is a FormatError, never an out-of-bounds read.
//
//===----------------------------------------------------------------------===//

#include "frontends/formats/TokenizerLoaders.h"

#include "frontends/formats/FormatError.h"
#include "frontends/formats/MappedFile.h"

#include <cstring>
#include <limits>

namespace kiln::formats {

using runtime::TokenizerSpec;
using runtime::TokenType;

namespace {

/// Little-endian int32 at `p` (the file's byte order, whatever the host's).
int32_t readInt32(const uint8_t *p) {
  uint32_t value =
      static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
      static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
  int32_t result;
  std::memcpy(&result, &value, sizeof(result));
  return result;
}

float readFloat32(const uint8_t *p) {
  int32_t bits = readInt32(p);
  float result;
  std::memcpy(&result, &bits, sizeof(result));
  return result;
}

/// SentencePiece's byte-fallback spelling "<0xXX>".
bool isBytePiece(const std::string &piece) {
  auto hex = [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F');
  };
  return piece.size() == 6 && piece.compare(0, 3, "<0x") == 0 &&
         hex(piece[3]) && hex(piece[4]) && piece[5] == '>';
}

} // namespace

TokenizerSpec loadLlama2cTokenizer(const std::string &path, int64_t vocabSize) {
  return loadLlama2cTokenizer(MappedFile::open(path), vocabSize);
}

TokenizerSpec loadLlama2cTokenizer(std::shared_ptr<const MappedFile> file,
                                   int64_t vocabSize) {
  const std::string &path = file->path();
  if (vocabSize < -1 || vocabSize > std::numeric_limits<int32_t>::max())
    throw FormatError(
        path, "vocabulary size " + std::to_string(vocabSize) +
                  " is invalid (expected -1 or 0.." +
                  std::to_string(std::numeric_limits<int32_t>::max()) + ")");
  const uint8_t *data = file->data();
  size_t size = file->size();
  if (size < 4)
    throw FormatError(
        path, "too short for a llama2.c tokenizer: " + std::to_string(size) +
                  " bytes, the header alone is 4");
  int32_t maxTokenLength = readInt32(data);
  if (maxTokenLength < 0)
    throw FormatError(path, "max_token_length is " +
                                std::to_string(maxTokenLength) +
                                ", expected a non-negative length");

  TokenizerSpec spec;
  spec.model = TokenizerSpec::Model::ScoreMerge;
  spec.spaceSymbol = " ";
  spec.addSpacePrefix = true;
  spec.addBos = true;
  size_t offset = 4;
  for (int64_t index = 0; vocabSize < 0 || index < vocabSize; ++index) {
    if (vocabSize < 0 && offset == size)
      break;
    if (size - offset < 8)
      throw FormatError(path, "truncated: token " + std::to_string(index) +
                                  " needs an 8-byte score and length at "
                                  "offset " +
                                  std::to_string(offset) +
                                  " but the file ends at " +
                                  std::to_string(size));
    float score = readFloat32(data + offset);
    int32_t length = readInt32(data + offset + 4);
    offset += 8;
    if (length < 0)
      throw FormatError(path, "token " + std::to_string(index) +
                                  " has negative length " +
                                  std::to_string(length));
    if (static_cast<size_t>(length) > size - offset)
      throw FormatError(path, "truncated: token " + std::to_string(index) +
                                  " has " + std::to_string(length) +
                                  " bytes at offset " + std::to_string(offset) +
                                  " but the file ends at " +
                                  std::to_string(size));
    if (spec.tokens.size() >=
        static_cast<size_t>(std::numeric_limits<int32_t>::max()))
      throw FormatError(path, "more tokens than int32 ids can number");
    spec.tokens.emplace_back(reinterpret_cast<const char *>(data + offset),
                             static_cast<size_t>(length));
    spec.scores.push_back(score);
    offset += static_cast<size_t>(length);
  }
  if (spec.tokens.empty())
    throw FormatError(path, "holds no tokens");

  // The file stores no ids or types; llama2.c hard-codes them (its export
  // writes SentencePiece's <unk>, <s>, </s> and <0xXX> pieces at these
  // places). Typing them lets the tokenizer keep them out of merges and
  // print BOS/EOS ("\n<s>\n") as nothing.
  auto n = static_cast<int32_t>(spec.tokens.size());
  spec.bosId = n > 1 ? 1 : -1;
  spec.eosId = n > 2 ? 2 : -1;
  spec.types.assign(spec.tokens.size(), TokenType::Normal);
  for (int32_t id = 0; id < n; ++id) {
    const std::string &piece = spec.tokens[id];
    if (id == spec.bosId || id == spec.eosId)
      spec.types[id] = TokenType::Control;
    else if (piece == "<unk>")
      spec.types[id] = TokenType::Unknown;
    else if (isBytePiece(piece))
      spec.types[id] = TokenType::Byte;
  }
  return spec;
}

namespace {

/// Reads the vocabulary keys of one GGUF file, naming it in every error.
class GGUFVocabulary {
public:
  explicit GGUFVocabulary(const GGUFFile &gguf) : gguf(gguf) {}

  [[noreturn]] void fail(const std::string &message) const {
    throw FormatError(gguf.path(), message);
  }

  /// An array key that must have one entry per token when present.
  template <typename T>
  std::optional<std::vector<T>> perToken(const std::string &key,
                                         std::optional<std::vector<T>> values,
                                         size_t tokens) const {
    if (values && values->size() != tokens)
      fail(key + " has " + std::to_string(values->size()) +
           " entries but tokenizer.ggml.tokens has " + std::to_string(tokens));
    return values;
  }

  /// A token id key: -1 when absent (or stored as -1 / UINT32_MAX, which
  /// converters write for "none"); an error naming the key when it is
  /// outside the vocabulary.
  int32_t tokenId(const std::string &key, size_t tokens) const {
    std::optional<int64_t> value = gguf.getInt(key);
    if (!value || *value == -1 || *value == 0xFFFFFFFFll)
      return -1;
    if (*value < 0 || static_cast<uint64_t>(*value) >= tokens)
      fail(key + " = " + std::to_string(*value) +
           " is outside the vocabulary (" + std::to_string(tokens) +
           " tokens)");
    return static_cast<int32_t>(*value);
  }

  const GGUFFile &gguf;
};

} // namespace

TokenizerSpec tokenizerFromGGUF(const GGUFFile &gguf) {
  GGUFVocabulary vocab(gguf);
  std::optional<std::string> model = gguf.getString("tokenizer.ggml.model");
  if (!model)
    vocab.fail("holds no vocabulary (tokenizer.ggml.model is missing)");

  TokenizerSpec spec;
  bool llama = *model == "llama";
  if (llama)
    spec.model = TokenizerSpec::Model::ScoreMerge;
  else if (*model == "gpt2")
    spec.model = TokenizerSpec::Model::ByteLevelBPE;
  else
    vocab.fail("tokenizer.ggml.model is '" + *model +
               "'; supported are 'llama' (SentencePiece) and 'gpt2' "
               "(byte-level BPE)");

  std::optional<std::vector<std::string>> tokens =
      gguf.getStringArray("tokenizer.ggml.tokens");
  if (!tokens)
    vocab.fail("tokenizer.ggml.tokens is missing");
  if (tokens->empty())
    vocab.fail("tokenizer.ggml.tokens is empty");
  size_t n = tokens->size();
  if (n > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    vocab.fail("tokenizer.ggml.tokens has " + std::to_string(n) +
               " entries, more than int32 ids can number");

  std::optional<std::vector<float>> scores = vocab.perToken(
      "tokenizer.ggml.scores", gguf.getFloatArray("tokenizer.ggml.scores"), n);
  if (scores)
    spec.scores = std::move(*scores);
  else if (llama)
    vocab.fail("tokenizer.ggml.scores is missing (a SentencePiece "
               "vocabulary merges by score)");

  std::optional<std::vector<int64_t>> types =
      vocab.perToken("tokenizer.ggml.token_type",
                     gguf.getIntArray("tokenizer.ggml.token_type"), n);
  if (types) {
    spec.types.reserve(n);
    for (size_t id = 0; id < n; ++id) {
      int64_t type = (*types)[id];
      if (type < 0 || type > static_cast<int64_t>(TokenType::Byte))
        vocab.fail("tokenizer.ggml.token_type[" + std::to_string(id) + "] is " +
                   std::to_string(type) + ", not a token type (0..6)");
      spec.types.push_back(static_cast<TokenType>(type));
    }
  }

  if (!llama) {
    std::optional<std::vector<std::string>> merges =
        gguf.getStringArray("tokenizer.ggml.merges");
    if (!merges)
      vocab.fail("tokenizer.ggml.merges is missing (a byte-level BPE "
                 "vocabulary needs its merges)");
    spec.merges = std::move(*merges);
    // Files written before tokenizer.ggml.pre existed were GPT-2 style.
    spec.preTokenizer = gguf.getString("tokenizer.ggml.pre").value_or("gpt-2");
  }

  spec.bosId = vocab.tokenId("tokenizer.ggml.bos_token_id", n);
  spec.eosId = vocab.tokenId("tokenizer.ggml.eos_token_id", n);
  spec.eotId = vocab.tokenId("tokenizer.ggml.eot_token_id", n);
  if (spec.eotId < 0 && !llama) {
    // Chat models end a turn with a token of their own; older files do not
    // name it. The preference puts turn ends before end-of-text.
    for (const char *piece : {"<|eot_id|>", "<|im_end|>", "<|endoftext|>"}) {
      for (size_t id = 0; id < n && spec.eotId < 0; ++id)
        if ((*tokens)[id] == piece)
          spec.eotId = static_cast<int32_t>(id);
      if (spec.eotId >= 0)
        break;
    }
  }
  int32_t unknownId = vocab.tokenId("tokenizer.ggml.unknown_token_id", n);
  if (unknownId >= 0) {
    // TokenizerSpec has no unknown id of its own: the type carries it.
    if (spec.types.empty())
      spec.types.assign(n, TokenType::Normal);
    spec.types[unknownId] = TokenType::Unknown;
  }

  // The default template; llama.cpp's named alternatives
  // (tokenizer.chat_template.NAME) are not chosen from.
  spec.chatTemplate = gguf.getString("tokenizer.chat_template").value_or("");
  spec.addBos = gguf.getBool("tokenizer.ggml.add_bos_token").value_or(llama);
  spec.addSpacePrefix =
      gguf.getBool("tokenizer.ggml.add_space_prefix").value_or(llama);
  spec.tokens = std::move(*tokens);
  return spec;
}

} // namespace kiln::formats
