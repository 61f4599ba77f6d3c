//===- PreTokenizer.h - Regex splitting before byte-level BPE ---*- C++ -*-===//
//
// Part of Kiln. Internal to the tokenizer: byte-level BPE vocabularies do not
// store how text is split into words before merging; each model's
// tokenizer.json names a sequence of regular expressions, and GGUF keys them
// by tokenizer.ggml.pre. This class holds those expressions (compiled with
// PCRE2 in UTF + UCP mode, since \p{L} and \p{N} need Unicode tables) and
// applies them the way Hugging Face's `Split` pre-tokenizer with behaviour
// `Isolated` does: every match and every gap between matches is a piece, and
// each further expression splits the pieces of the one before.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_PRETOKENIZER_H
#define KILN_RUNTIME_PRETOKENIZER_H

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::runtime::detail {

class PreTokenizer {
public:
  /// The expressions of pre-tokenizer `name` (GGUF's tokenizer.ggml.pre);
  /// throws std::invalid_argument naming it when it is not known. Non-empty
  /// `expressions` (a tokenizer.json's Split patterns) replace the name's
  /// expressions, the name still deciding ignoresMerges(); one that does not
  /// compile is an std::invalid_argument naming its index.
  explicit PreTokenizer(const std::string &name,
                        const std::vector<std::string> &expressions = {});
  ~PreTokenizer();
  PreTokenizer(const PreTokenizer &) = delete;
  PreTokenizer &operator=(const PreTokenizer &) = delete;

  /// Whether whole words found in the vocabulary skip the merges (Llama 3's
  /// tokenizer.json sets `ignore_merges`).
  bool ignoresMerges() const { return ignoreMerges; }

  /// The pieces of `text` as (offset, length) pairs, in order, covering it
  /// exactly. Bytes that are not valid UTF-8 never match an expression, so
  /// they end up in gap pieces; nothing is dropped.
  std::vector<std::pair<size_t, size_t>> split(std::string_view text) const;

  /// The expressions of pre-tokenizer `name`, as its tokenizer.json writes
  /// them; throws like the constructor for an unknown name.
  static std::vector<std::string> expressionsOf(const std::string &name);

  /// The names the constructor accepts, comma-separated (for messages).
  static std::string knownNames();

private:
  struct Regex;
  std::vector<std::unique_ptr<Regex>> regexes;
  std::string name;
  bool ignoreMerges = false;
};

/// Bytes in the UTF-8 character at `text[0]` (`size` > 0 bytes available):
/// 1 to 4, or 1 for a byte that does not start a valid shortest-form
/// sequence of a scalar value. So any byte string splits into characters
/// and stray bytes, and malformed text is handled byte by byte.
size_t utf8Length(const unsigned char *text, size_t size);

} // namespace kiln::runtime::detail

#endif // KILN_RUNTIME_PRETOKENIZER_H
