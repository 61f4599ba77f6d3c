//===- TokenizerSpecJson.h - A TokenizerSpec as JSON ------------*- C++ -*-===//
//
// Part of Kiln. An artifact carries its tokenizer (the "tokenizer" section)
// as the TokenizerSpec the frontend read, written as JSON, so the runtime
// encodes prompts without the model's original files. This is Kiln's own
// document, not Hugging Face's tokenizer.json:
//
//   {"format": "kiln-tokenizer", "version": 1,
//    "model": "score_merge" | "byte_level_bpe",
//    "tokens": [...], "scores": [...], "types": [1, 3, 6, ...],
//    "merges": [...], "space_symbol": "▁", "add_space_prefix": true,
//    "pre_tokenizer": "gpt-2", "pre_tokenizer_patterns": [...],
//    "bos_id": 1, "eos_id": 2, "eot_id": -1, "add_bos": true,
//    "chat_template": "{% for message in messages %}..."}
//
// "chat_template" is written only when the model has one, so the document
// of a model without one reads in a Kiln older than the field (which
// refuses unknown fields, this one included, by name).
//
// Every field round-trips exactly: a string that is not valid UTF-8 (a raw
// byte piece) is written as {"hex": "..."}; a score that is not finite as
// "inf", "-inf" or "nan"; other scores as the decimal of the float widened to
// double, which reads back to the same float.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_TOKENIZERSPECJSON_H
#define KILN_RUNTIME_TOKENIZERSPECJSON_H

#include "runtime/Tokenizer.h"

#include <string>
#include <string_view>

namespace kiln::runtime {

/// The JSON document of `spec` (compact, one line).
std::string tokenizerSpecToJson(const TokenizerSpec &spec);

/// Reads a document written by tokenizerSpecToJson. "format", "model" and
/// "tokens" are required; the other fields take TokenizerSpec's defaults when
/// absent. Throws std::invalid_argument naming the field at fault
/// ("tokenizer JSON: field 'types[3]': 9 is not a token type (0..6)"),
/// including unknown fields. The spec is not validated beyond its types;
/// Tokenizer's constructor does that.
TokenizerSpec tokenizerSpecFromJson(std::string_view json);

} // namespace kiln::runtime

#endif // KILN_RUNTIME_TOKENIZERSPECJSON_H
