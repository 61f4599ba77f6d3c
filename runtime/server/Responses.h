//===- Responses.h - OpenAI-style response bodies and SSE -------*- C++ -*-===//
//
// Part of Kiln's server (docs/server.md). The JSON the server answers with:
// errors, completions and chat completions whole or as Server-Sent Events
// chunks, usage and log-probabilities, in the shapes OpenAI's API documents
// so that its client libraries read them unchanged. Pure functions: the
// server fills in what the engine produced.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SERVER_RESPONSES_H
#define KILN_RUNTIME_SERVER_RESPONSES_H

#include "runtime/sampling/TextStream.h"
#include "runtime/server/RequestParser.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kiln::runtime::server {

/// What every body of one response shares.
struct ResponseMeta {
  std::string id; ///< "cmpl-..." or "chatcmpl-..."
  int64_t created = 0;
  std::string model;
  bool chat = false;
};

/// One generated token's log-probability, its text and the most likely
/// alternatives' (top_logprobs).
struct LogprobEntry {
  std::string token;
  float logprob = 0;
  std::vector<std::pair<std::string, float>> top;
};

/// JSON text of `value`; bytes that are not UTF-8 (a token can be part of
/// a character) become U+FFFD instead of an exception.
std::string dumpJson(const nlohmann::json &value);

/// {"error": {"message", "type", "param", "code"}}.
std::string errorBody(const ApiError &error);

/// OpenAI's finish_reason: "stop" (a stop token or string), "length",
/// "cancelled" or "error"; "" while generating.
const char *openAiFinishReason(FinishReason reason);
/// The same as JSON: null while generating.
nlohmann::json finishReasonJson(FinishReason reason);

nlohmann::json usageJson(int32_t promptTokens, int32_t completionTokens);

/// The "logprobs" member: completions' {tokens, token_logprobs,
/// top_logprobs, text_offset} (offsets from `textOffset`), chat's
/// {content: [{token, logprob, bytes, top_logprobs}]}.
nlohmann::json logprobsJson(const std::vector<LogprobEntry> &entries, bool chat,
                            size_t textOffset = 0);

/// A whole (non-streaming) response. `logprobs` may be null; `prompt`,
/// when not null, is Kiln's return_prompt extension.
nlohmann::json completionBody(const ResponseMeta &meta, const std::string &text,
                              FinishReason finish, const nlohmann::json &usage,
                              const nlohmann::json &logprobs,
                              const nlohmann::json &prompt);

/// One streamed chunk: `text` as the choice's text (chat: delta.content,
/// with role "assistant" on the first chunk).
nlohmann::json chunkBody(const ResponseMeta &meta, const std::string &text,
                         FinishReason finish, const nlohmann::json &logprobs,
                         bool first);

/// The chunk stream_options.include_usage adds at the end: no choices.
nlohmann::json usageChunkBody(const ResponseMeta &meta,
                              const nlohmann::json &usage);

/// "data: <json>\n\n".
std::string sseEvent(const nlohmann::json &value);
/// The stream's end: "data: [DONE]\n\n".
extern const char *const kSseDone;

} // namespace kiln::runtime::server

#endif // KILN_RUNTIME_SERVER_RESPONSES_H
