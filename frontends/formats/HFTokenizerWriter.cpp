//===- HFTokenizerWriter.cpp - Writing tokenizer.json ---------------------===//
//
// Part of Kiln. A score-merge (SentencePiece) vocabulary as the `tokenizers`
// library's converter writes one: a BPE model with byte fallback, spaces
// replaced by the space symbol (and one prepended), the special tokens
// added, and BOS put first by the post-processor. The merges carry the
// scores: TokenizerJson.cpp ranks each piece by its first merge, so listing
// every split of every piece, best-scored piece first, gives back the same
// order of merging. See ModelWriters.h.
//
//===----------------------------------------------------------------------===//

#include "frontends/formats/ModelFileOutput.h"
#include "frontends/formats/ModelWriters.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <stdexcept>
#include <unordered_map>

namespace kiln::formats {

namespace {

using ordered_json = nlohmann::ordered_json;
using runtime::TokenizerSpec;
using runtime::TokenType;

TokenType typeOf(const TokenizerSpec &vocab, size_t id) {
  return id < vocab.types.size() ? vocab.types[id] : TokenType::Normal;
}

/// Byte offsets where a character of valid UTF-8 `text` starts, after the
/// first.
std::vector<size_t> characterStarts(const std::string &text) {
  std::vector<size_t> starts;
  for (size_t i = 1; i < text.size(); ++i)
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80)
      starts.push_back(i);
  return starts;
}

/// Every split of each normal piece into two normal pieces, pieces in
/// order of descending score (ties: lower id first).
ordered_json merges(const TokenizerSpec &vocab) {
  std::unordered_map<std::string, size_t> normal;
  for (size_t id = 0; id < vocab.tokens.size(); ++id)
    if (typeOf(vocab, id) == TokenType::Normal)
      normal.emplace(vocab.tokens[id], id);
  std::vector<size_t> order(vocab.tokens.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (vocab.scores[a] != vocab.scores[b])
      return vocab.scores[a] > vocab.scores[b];
    return a < b;
  });
  ordered_json list = ordered_json::array();
  for (size_t id : order) {
    const std::string &piece = vocab.tokens[id];
    if (typeOf(vocab, id) != TokenType::Normal)
      continue;
    for (size_t at : characterStarts(piece)) {
      std::string left = piece.substr(0, at), right = piece.substr(at);
      if (normal.count(left) && normal.count(right))
        list.push_back({left, right});
    }
  }
  return list;
}

ordered_json tokenizerJson(const TokenizerSpec &vocab) {
  const std::string &space = vocab.spaceSymbol;
  ordered_json j;
  j["version"] = "1.0";
  j["truncation"] = nullptr;
  j["padding"] = nullptr;

  ordered_json added = ordered_json::array();
  std::string unknown;
  bool byteFallback = false;
  for (size_t id = 0; id < vocab.tokens.size(); ++id) {
    TokenType type = typeOf(vocab, id);
    byteFallback |= type == TokenType::Byte;
    if (type == TokenType::Unknown && unknown.empty())
      unknown = vocab.tokens[id];
    if (type != TokenType::Unknown && type != TokenType::Control &&
        type != TokenType::UserDefined)
      continue;
    added.push_back({{"id", id},
                     {"content", vocab.tokens[id]},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", type != TokenType::UserDefined}});
  }
  j["added_tokens"] = added;

  ordered_json replace = {
      {"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", space}};
  if (vocab.addSpacePrefix)
    j["normalizer"] = {
        {"type", "Sequence"},
        {"normalizers", {{{"type", "Prepend"}, {"prepend", space}}, replace}}};
  else
    j["normalizer"] = replace;
  j["pre_tokenizer"] = nullptr;

  bool bos = vocab.addBos && vocab.bosId >= 0;
  ordered_json single = ordered_json::array(), pair = ordered_json::array();
  ordered_json special = ordered_json::object();
  if (bos) {
    const std::string &piece = vocab.tokens[vocab.bosId];
    ordered_json token = {{"SpecialToken", {{"id", piece}, {"type_id", 0}}}};
    single.push_back(token);
    pair.push_back(token);
    special[piece] = {
        {"id", piece}, {"ids", {vocab.bosId}}, {"tokens", {piece}}};
  }
  single.push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
  pair.push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
  if (bos)
    pair.push_back(single.front());
  pair.push_back({{"Sequence", {{"id", "B"}, {"type_id", 1}}}});
  j["post_processor"] = {{"type", "TemplateProcessing"},
                         {"single", single},
                         {"pair", pair},
                         {"special_tokens", special}};

  ordered_json decoders = ordered_json::array();
  decoders.push_back({{"type", "Replace"},
                      {"pattern", {{"String", space}}},
                      {"content", " "}});
  decoders.push_back({{"type", "ByteFallback"}});
  decoders.push_back({{"type", "Fuse"}});
  if (vocab.addSpacePrefix)
    decoders.push_back(
        {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
  j["decoder"] = {{"type", "Sequence"}, {"decoders", decoders}};

  ordered_json pieces = ordered_json::object();
  for (size_t id = 0; id < vocab.tokens.size(); ++id)
    pieces[vocab.tokens[id]] = id;
  ordered_json model;
  model["type"] = "BPE";
  model["dropout"] = nullptr;
  model["unk_token"] =
      unknown.empty() ? ordered_json(nullptr) : ordered_json(unknown);
  model["continuing_subword_prefix"] = nullptr;
  model["end_of_word_suffix"] = nullptr;
  model["fuse_unk"] = true;
  model["byte_fallback"] = byteFallback;
  model["ignore_merges"] = false;
  model["vocab"] = pieces;
  model["merges"] = merges(vocab);
  j["model"] = model;
  return j;
}

ordered_json tokenizerConfigJson(const TokenizerSpec &vocab) {
  auto piece = [&](int32_t id) {
    return id >= 0 ? ordered_json(vocab.tokens[id]) : ordered_json(nullptr);
  };
  ordered_json j;
  j["add_bos_token"] = vocab.addBos;
  j["add_eos_token"] = false;
  j["bos_token"] = piece(vocab.bosId);
  j["eos_token"] = piece(vocab.eosId);
  j["tokenizer_class"] = "LlamaTokenizerFast";
  if (!vocab.chatTemplate.empty())
    j["chat_template"] = vocab.chatTemplate;
  return j;
}

} // namespace

uint64_t writeHFTokenizer(const TokenizerSpec &vocab, const std::string &dir) {
  namespace fs = std::filesystem;
  auto refuse = [&](const std::string &what) {
    throw std::invalid_argument(dir + ": cannot write tokenizer.json: " + what);
  };
  if (vocab.model != TokenizerSpec::Model::ScoreMerge)
    refuse("only score-merge (SentencePiece) vocabularies are written");
  size_t n = vocab.tokens.size();
  if (vocab.scores.size() != n)
    refuse("a score-merge vocabulary needs one score per token");
  if (vocab.spaceSymbol.empty())
    refuse("the space symbol is empty");
  for (int32_t id : {vocab.bosId, vocab.eosId})
    if (id >= static_cast<int32_t>(n))
      refuse("special token id " + std::to_string(id) + " is out of range");
  std::unordered_map<std::string, size_t> seen;
  for (size_t id = 0; id < n; ++id)
    if (!seen.emplace(vocab.tokens[id], id).second)
      refuse("token " + std::to_string(id) + " repeats token " +
             std::to_string(seen[vocab.tokens[id]]) + "'s piece");

  std::string tokenizer, config;
  try {
    tokenizer = tokenizerJson(vocab).dump(2) + "\n";
    config = tokenizerConfigJson(vocab).dump(2) + "\n";
  } catch (const nlohmann::json::exception &e) {
    refuse(std::string("a piece is not valid UTF-8 (") + e.what() + ")");
  }
  uint64_t written = 0;
  for (const auto &[name, text] :
       {std::pair{"tokenizer.json", &tokenizer},
        std::pair{"tokenizer_config.json", &config}}) {
    OutputFile out((fs::path(dir) / name).string());
    out.write(*text);
    written += out.finish();
  }
  return written;
}

} // namespace kiln::formats
