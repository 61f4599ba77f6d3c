//===- RequestParser.h - HTTP request bodies into requests ------*- C++ -*-===//
//
// Part of Kiln's server (docs/server.md). Turns the JSON body of an
// OpenAI-style request (/v1/completions, /v1/chat/completions, /tokenize,
// /detokenize) into a typed request, or into an ApiError with the HTTP
// status, a message naming the field and what was expected, and the field's
// name as OpenAI's `param`. Nothing here throws: any bytes give a request or
// an error (test/fuzz/FuzzServerRequest.cpp holds it to that). No HTTP and
// no engine: the server checks what needs the tokenizer (the prompt's
// length) after parsing.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SERVER_REQUESTPARSER_H
#define KILN_RUNTIME_SERVER_REQUESTPARSER_H

#include "runtime/sampling/SamplingParams.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::runtime::server {

/// An error as the client sees it: the status and OpenAI's error object
/// {"error": {"message", "type", "param", "code"}} (an empty param or code
/// is null).
struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;
  std::string code;
};

/// What the parser needs to know of the model.
struct ParseLimits {
  int32_t vocabSize = 0;
  int32_t contextLength = 0;
  /// Nesting deeper than this is refused before parsing (a JSON request
  /// needs four levels; a hostile body should not cost a deep recursion).
  int32_t maxDepth = 32;
};

struct ChatMessage {
  std::string role, content;
};

/// A /v1/completions or /v1/chat/completions request.
struct CompletionRequest {
  bool chat = false;
  /// "" when the body names none (the served model is meant).
  std::string model;
  /// Completions: the prompt as text, or as token ids (promptIsIds).
  std::string prompt;
  std::vector<int32_t> promptIds;
  bool promptIsIds = false;
  /// Chat: the conversation, in order.
  std::vector<ChatMessage> messages;
  /// Everything about sampling and stopping, validated for the vocabulary.
  /// maxTokens 0 means "up to the context" (chat without max_tokens).
  SamplingParams sampling;
  bool ignoreEos = false;
  bool stream = false;
  /// stream_options.include_usage: a last chunk with the usage.
  bool includeUsage = false;
  /// Kiln's extension: the response carries the prompt as rendered (chat:
  /// the chat template's output) in "prompt".
  bool returnPrompt = false;
};

/// A /tokenize request: text, or a conversation to render with the chat
/// template first.
struct TokenizeRequest {
  std::string model;
  std::string prompt;
  std::vector<ChatMessage> messages;
  bool chat = false;
  /// Start with BOS as a completion's prompt does (default true).
  bool addSpecialTokens = true;
};

/// A /detokenize request.
struct DetokenizeRequest {
  std::string model;
  std::vector<int32_t> tokens;
};

/// A parsed request or the error that stopped it.
template <typename T> struct Parsed {
  bool ok = false;
  T request;
  ApiError error;
};

/// Completions' default max_tokens (OpenAI's); chat has none (the context).
constexpr int32_t kDefaultCompletionMaxTokens = 16;

Parsed<CompletionRequest> parseCompletionRequest(std::string_view body,
                                                 bool chat,
                                                 const ParseLimits &limits);
Parsed<TokenizeRequest> parseTokenizeRequest(std::string_view body,
                                             const ParseLimits &limits);
Parsed<DetokenizeRequest> parseDetokenizeRequest(std::string_view body,
                                                 const ParseLimits &limits);

} // namespace kiln::runtime::server

#endif // KILN_RUNTIME_SERVER_REQUESTPARSER_H
