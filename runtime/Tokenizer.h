//===- Tokenizer.h - Text to token ids and back -----------------*- C++ -*-===//
//
// Part of Kiln. MLIR-free, so the runtime (server, CLI) can encode prompts.
// Frontends read vocabularies from files (tokenizer.bin, GGUF, tokenizer.json)
// into a TokenizerSpec; this file holds the algorithms:
//
//  - ScoreMerge: SentencePiece-style (Llama 1/2 vocabularies, llama2.c's
//    tokenizer.bin): spaces become the vocabulary's space symbol ("▁" for
//    SentencePiece, " " for llama2.c), a space is prepended, the text is
//    split into UTF-8 characters (byte fallback `<0xXX>` for characters not
//    in the vocabulary), and the adjacent pair whose merge is in the
//    vocabulary with the highest score is merged until none is left
//    (leftmost wins ties).
//  - ByteLevelBPE: GPT-2 style (GPT-2, Llama 3, Qwen2, DeepSeek): a
//    pre-tokenizer (regular expressions chosen by name) splits the text,
//    bytes map to printable characters, and ranked merges apply.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_TOKENIZER_H
#define KILN_RUNTIME_TOKENIZER_H

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace kiln::runtime {

/// Token types as GGUF stores them (tokenizer.ggml.token_type).
enum class TokenType : int32_t {
  Undefined = 0,
  Normal = 1,
  Unknown = 2,
  Control = 3,
  UserDefined = 4,
  Unused = 5,
  Byte = 6,
};

struct TokenizerSpec {
  enum class Model { ScoreMerge, ByteLevelBPE };
  Model model = Model::ScoreMerge;

  std::vector<std::string> tokens; ///< id -> piece
  std::vector<float> scores;       ///< ScoreMerge: merge priority per id
  std::vector<TokenType> types;    ///< per id; empty means all Normal
  std::vector<std::string> merges; ///< ByteLevelBPE: "a b", rank = index

  /// ScoreMerge: the vocabulary's space symbol ("▁" or " ") and whether a
  /// space is prepended to non-empty text.
  std::string spaceSymbol = "\xE2\x96\x81";
  bool addSpacePrefix = true;

  /// ByteLevelBPE: pre-tokenizer name as in GGUF's tokenizer.ggml.pre
  /// ("gpt-2", "llama-bpe", "qwen2", "deepseek-llm", ...).
  std::string preTokenizer = "gpt-2";
  /// ByteLevelBPE: when non-empty, these regular expressions (PCRE2 syntax,
  /// as a tokenizer.json's Split pre-tokenizers give them) split the text
  /// instead of the named pre-tokenizer's, each splitting the pieces the one
  /// before left, matches and the gaps between them all kept (Split with
  /// behaviour Isolated). The name then only says whether words found whole
  /// in the vocabulary skip the merges ("llama-bpe": ignore_merges).
  std::vector<std::string> preTokenizerPatterns;

  int32_t bosId = -1; ///< -1 when the vocabulary has none.
  int32_t eosId = -1;
  int32_t eotId = -1;
  bool addBos = true; ///< Whether encode() starts with BOS by default.

  /// The model's chat template (Jinja source) as its files give it: GGUF's
  /// tokenizer.chat_template, tokenizer_config.json's chat_template. Empty
  /// when the model has none (Chat.h's default then applies). The encoder
  /// does not use it; it travels with the vocabulary because the template
  /// is written for this vocabulary's control tokens. Its bos_token and
  /// eos_token are the pieces at bosId and eosId (chatBosToken()).
  std::string chatTemplate;
};

class Tokenizer {
public:
  /// Validates the spec (sizes agree, special ids in range, merges refer to
  /// tokens) and builds lookup tables; throws std::invalid_argument with a
  /// message naming the problem.
  explicit Tokenizer(TokenizerSpec spec);
  ~Tokenizer();
  Tokenizer(Tokenizer &&) noexcept;
  Tokenizer &operator=(Tokenizer &&) noexcept;

  const TokenizerSpec &spec() const { return tokenizerSpec; }
  int32_t vocabSize() const {
    return static_cast<int32_t>(tokenizerSpec.tokens.size());
  }

  /// Token ids of `text`, starting with BOS when `addBos` (and the vocabulary
  /// has one) unless the text already starts with it: a chat template
  /// writes BOS itself. Control and unknown tokens written in the text (such
  /// as "<|start_header_id|>") become their ids when parseSpecial() is on,
  /// as llama.cpp's parse_special does; user-defined tokens always do.
  std::vector<int32_t> encode(const std::string &text, bool addBos) const;

  /// A byte range [start, start + length) of a text.
  struct TextSpan {
    size_t start = 0, length = 0;
  };
  /// encode() with control-token text parsed outside `literal` (sorted,
  /// non-overlapping spans) and left as the characters it is inside them,
  /// whatever parseSpecial() says: a chat prompt's markup gives its control
  /// tokens while the messages' text cannot inject any. Text on both sides
  /// of a span's edge is tokenized as one run, as without the spans.
  std::vector<int32_t> encode(const std::string &text, bool addBos,
                              const std::vector<TextSpan> &literal) const;

  /// Whether encode() turns control-token text into control tokens (on by
  /// default, as in llama.cpp; off, text such as "<s>" in a user's message
  /// is tokenized as the characters it is).
  void setParseSpecial(bool on) { parseSpecial = on; }
  bool parsesSpecial() const { return parseSpecial; }

  /// The bytes token `id` stands for when printed after token `previous`,
  /// with llama2.c's rules for ScoreMerge vocabularies: after BOS a leading
  /// space is dropped, `<0xXX>` pieces are the raw byte. Control tokens
  /// print as nothing.
  std::string decodePiece(int32_t previous, int32_t id) const;

  /// The text of a whole sequence of ids (as a detokenizer would give it; a
  /// leading BOS is skipped). decode(encode(x, false)) == x for the test
  /// texts.
  std::string decode(const std::vector<int32_t> &ids) const;

private:
  struct Impl;
  TokenizerSpec tokenizerSpec;
  std::unique_ptr<Impl> impl;
  bool parseSpecial = true;
};

} // namespace kiln::runtime

#endif // KILN_RUNTIME_TOKENIZER_H
