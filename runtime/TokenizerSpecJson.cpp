//===- TokenizerSpecJson.cpp - A TokenizerSpec as JSON --------------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "runtime/TokenizerSpecJson.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>

namespace kiln::runtime {

namespace {

using Json = nlohmann::ordered_json;

constexpr const char *kFormat = "kiln-tokenizer";
constexpr int kVersion = 1;

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

/// Whether `s` is well-formed UTF-8 (no overlong forms, surrogates or code
/// points past U+10FFFF): exactly what a JSON string may hold.
bool isValidUtf8(const std::string &s) {
  size_t i = 0, n = s.size();
  while (i < n) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t length;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      length = 2;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      length = 3;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      length = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (n - i < length)
      return false;
    for (size_t k = 1; k < length; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80)
        return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((length == 3 && cp < 0x800) || (length == 4 && cp < 0x10000) ||
        (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
      return false;
    i += length;
  }
  return true;
}

Json encodeString(const std::string &s) {
  if (isValidUtf8(s))
    return s;
  static const char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * s.size());
  for (unsigned char c : s) {
    hex += kDigits[c >> 4];
    hex += kDigits[c & 15];
  }
  return Json{{"hex", hex}};
}

Json encodeStrings(const std::vector<std::string> &strings) {
  Json array = Json::array();
  for (const std::string &s : strings)
    array.push_back(encodeString(s));
  return array;
}

Json encodeScore(float score) {
  if (std::isnan(score))
    return "nan";
  if (std::isinf(score))
    return score > 0 ? "inf" : "-inf";
  return static_cast<double>(score);
}

const char *modelName(TokenizerSpec::Model model) {
  return model == TokenizerSpec::Model::ByteLevelBPE ? "byte_level_bpe"
                                                     : "score_merge";
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

[[noreturn]] void fail(const std::string &field, const std::string &message) {
  throw std::invalid_argument("tokenizer JSON: field '" + field +
                              "': " + message);
}

std::string typeOf(const Json &value) { return value.type_name(); }

int hexDigit(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

std::string decodeString(const Json &value, const std::string &field) {
  if (value.is_string())
    return value.get<std::string>();
  if (value.is_object() && value.size() == 1 && value.contains("hex") &&
      value["hex"].is_string()) {
    const std::string &hex = value["hex"].get_ref<const std::string &>();
    if (hex.size() % 2 != 0)
      fail(field, "\"hex\" has an odd number of digits");
    std::string bytes;
    for (size_t i = 0; i < hex.size(); i += 2) {
      int hi = hexDigit(hex[i]), lo = hexDigit(hex[i + 1]);
      if (hi < 0 || lo < 0)
        fail(field, "\"hex\" has a character that is not a hex digit");
      bytes += static_cast<char>(hi * 16 + lo);
    }
    return bytes;
  }
  fail(field, "expected a string or {\"hex\": \"...\"}, got " + typeOf(value));
}

const Json &arrayField(const Json &value, const std::string &field) {
  if (!value.is_array())
    fail(field, "expected an array, got " + typeOf(value));
  return value;
}

std::vector<std::string> decodeStrings(const Json &value,
                                       const std::string &field) {
  std::vector<std::string> strings;
  const Json &array = arrayField(value, field);
  strings.reserve(array.size());
  for (size_t i = 0; i < array.size(); ++i)
    strings.push_back(
        decodeString(array[i], field + "[" + std::to_string(i) + "]"));
  return strings;
}

bool decodeBool(const Json &value, const std::string &field) {
  if (!value.is_boolean())
    fail(field, "expected true or false, got " + typeOf(value));
  return value.get<bool>();
}

int64_t decodeInteger(const Json &value, const std::string &field, int64_t min,
                      int64_t max) {
  if (!value.is_number_integer())
    fail(field, "expected an integer, got " + typeOf(value));
  if (value.is_number_unsigned() &&
      value.get<uint64_t>() > static_cast<uint64_t>(max))
    fail(field, std::to_string(value.get<uint64_t>()) + " is out of range [" +
                    std::to_string(min) + ", " + std::to_string(max) + "]");
  int64_t n = value.get<int64_t>();
  if (n < min || n > max)
    fail(field, std::to_string(n) + " is out of range [" + std::to_string(min) +
                    ", " + std::to_string(max) + "]");
  return n;
}

float decodeScore(const Json &value, const std::string &field) {
  if (value.is_string()) {
    const std::string &s = value.get_ref<const std::string &>();
    if (s == "nan")
      return std::numeric_limits<float>::quiet_NaN();
    if (s == "inf")
      return std::numeric_limits<float>::infinity();
    if (s == "-inf")
      return -std::numeric_limits<float>::infinity();
    fail(field,
         "expected a number, \"inf\", \"-inf\" or \"nan\", got \"" + s + "\"");
  }
  if (!value.is_number())
    fail(field, "expected a number, got " + typeOf(value));
  double d = value.get<double>();
  // Converting a double outside float's range is undefined behaviour.
  if (!(std::fabs(d) <= FLT_MAX))
    fail(field, std::to_string(d) + " is outside the range of a float");
  return static_cast<float>(d);
}

} // namespace

std::string tokenizerSpecToJson(const TokenizerSpec &spec) {
  Json doc;
  doc["format"] = kFormat;
  doc["version"] = kVersion;
  doc["model"] = modelName(spec.model);
  doc["tokens"] = encodeStrings(spec.tokens);
  Json scores = Json::array();
  for (float score : spec.scores)
    scores.push_back(encodeScore(score));
  doc["scores"] = std::move(scores);
  Json types = Json::array();
  for (TokenType type : spec.types)
    types.push_back(static_cast<int32_t>(type));
  doc["types"] = std::move(types);
  doc["merges"] = encodeStrings(spec.merges);
  doc["space_symbol"] = encodeString(spec.spaceSymbol);
  doc["add_space_prefix"] = spec.addSpacePrefix;
  doc["pre_tokenizer"] = encodeString(spec.preTokenizer);
  doc["pre_tokenizer_patterns"] = encodeStrings(spec.preTokenizerPatterns);
  doc["bos_id"] = spec.bosId;
  doc["eos_id"] = spec.eosId;
  doc["eot_id"] = spec.eotId;
  doc["add_bos"] = spec.addBos;
  if (!spec.chatTemplate.empty())
    doc["chat_template"] = encodeString(spec.chatTemplate);
  return doc.dump();
}

TokenizerSpec tokenizerSpecFromJson(std::string_view json) {
  Json doc;
  try {
    doc = Json::parse(json.begin(), json.end());
  } catch (const Json::exception &e) {
    throw std::invalid_argument(std::string("tokenizer JSON is malformed: ") +
                                e.what());
  }
  if (!doc.is_object())
    throw std::invalid_argument(
        "tokenizer JSON: expected an object at the top level, got " +
        typeOf(doc));

  static const char *const kFields[] = {"format",
                                        "version",
                                        "model",
                                        "tokens",
                                        "scores",
                                        "types",
                                        "merges",
                                        "space_symbol",
                                        "add_space_prefix",
                                        "pre_tokenizer",
                                        "pre_tokenizer_patterns",
                                        "bos_id",
                                        "eos_id",
                                        "eot_id",
                                        "add_bos",
                                        "chat_template"};
  for (const auto &item : doc.items()) {
    bool known = false;
    for (const char *field : kFields)
      known = known || item.key() == field;
    if (!known)
      fail(item.key(), "unknown field");
  }
  for (const char *required : {"format", "model", "tokens"})
    if (!doc.contains(required))
      fail(required, "missing (a Kiln tokenizer document has format, model "
                     "and tokens)");

  if (doc["format"] != kFormat)
    fail("format", "expected \"" + std::string(kFormat) + "\", got " +
                       doc["format"].dump());
  if (doc.contains("version") &&
      decodeInteger(doc["version"], "version", 0, INT32_MAX) != kVersion)
    fail("version", doc["version"].dump() +
                        " is not supported; this Kiln "
                        "reads version " +
                        std::to_string(kVersion));

  TokenizerSpec spec;
  std::string model = decodeString(doc["model"], "model");
  if (model == "score_merge")
    spec.model = TokenizerSpec::Model::ScoreMerge;
  else if (model == "byte_level_bpe")
    spec.model = TokenizerSpec::Model::ByteLevelBPE;
  else
    fail("model", "expected \"score_merge\" or \"byte_level_bpe\", got \"" +
                      model + "\"");

  spec.tokens = decodeStrings(doc["tokens"], "tokens");
  if (doc.contains("scores")) {
    const Json &scores = arrayField(doc["scores"], "scores");
    for (size_t i = 0; i < scores.size(); ++i)
      spec.scores.push_back(
          decodeScore(scores[i], "scores[" + std::to_string(i) + "]"));
  }
  if (doc.contains("types")) {
    const Json &types = arrayField(doc["types"], "types");
    for (size_t i = 0; i < types.size(); ++i) {
      std::string field = "types[" + std::to_string(i) + "]";
      if (!types[i].is_number_integer())
        fail(field, "expected an integer, got " + typeOf(types[i]));
      int64_t type = types[i].is_number_unsigned()
                         ? static_cast<int64_t>(std::min<uint64_t>(
                               types[i].get<uint64_t>(), INT64_MAX))
                         : types[i].get<int64_t>();
      if (type < 0 || type > static_cast<int64_t>(TokenType::Byte))
        fail(field, std::to_string(type) + " is not a token type (0..6)");
      spec.types.push_back(static_cast<TokenType>(type));
    }
  }
  if (doc.contains("merges"))
    spec.merges = decodeStrings(doc["merges"], "merges");
  if (doc.contains("space_symbol"))
    spec.spaceSymbol = decodeString(doc["space_symbol"], "space_symbol");
  if (doc.contains("add_space_prefix"))
    spec.addSpacePrefix =
        decodeBool(doc["add_space_prefix"], "add_space_prefix");
  if (doc.contains("pre_tokenizer"))
    spec.preTokenizer = decodeString(doc["pre_tokenizer"], "pre_tokenizer");
  if (doc.contains("pre_tokenizer_patterns"))
    spec.preTokenizerPatterns =
        decodeStrings(doc["pre_tokenizer_patterns"], "pre_tokenizer_patterns");
  auto id = [&](const char *field, int32_t &out) {
    if (doc.contains(field))
      out =
          static_cast<int32_t>(decodeInteger(doc[field], field, -1, INT32_MAX));
  };
  id("bos_id", spec.bosId);
  id("eos_id", spec.eosId);
  id("eot_id", spec.eotId);
  if (doc.contains("add_bos"))
    spec.addBos = decodeBool(doc["add_bos"], "add_bos");
  if (doc.contains("chat_template"))
    spec.chatTemplate = decodeString(doc["chat_template"], "chat_template");
  return spec;
}

} // namespace kiln::runtime
