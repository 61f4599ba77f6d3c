//===- Responses.cpp - OpenAI-style response bodies and SSE ---------------===//
//
// Part of Kiln's server. See Responses.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/server/Responses.h"

namespace kiln::runtime::server {

using json = nlohmann::json;

const char *const kSseDone = "data: [DONE]\n\n";

std::string dumpJson(const json &value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string errorBody(const ApiError &error) {
  json body = {{"error",
                {{"message", error.message},
                 {"type", error.type},
                 {"param", error.param.empty() ? json() : json(error.param)},
                 {"code", error.code.empty() ? json() : json(error.code)}}}};
  return dumpJson(body);
}

const char *openAiFinishReason(FinishReason reason) {
  switch (reason) {
  case FinishReason::StopToken:
  case FinishReason::StopString:
    return "stop";
  case FinishReason::Length:
    return "length";
  case FinishReason::Cancelled:
    return "cancelled";
  case FinishReason::Error:
    return "error";
  case FinishReason::None:
    break;
  }
  return "";
}

json finishReasonJson(FinishReason reason) {
  if (reason == FinishReason::None)
    return nullptr;
  return openAiFinishReason(reason);
}

json usageJson(int32_t promptTokens, int32_t completionTokens) {
  return {{"prompt_tokens", promptTokens},
          {"completion_tokens", completionTokens},
          {"total_tokens", promptTokens + completionTokens}};
}

namespace {

/// Chat's "bytes": the token's UTF-8 bytes as integers, so a client can
/// join tokens that split a character.
json bytesOf(const std::string &text) {
  json bytes = json::array();
  for (unsigned char c : text)
    bytes.push_back(int(c));
  return bytes;
}

} // namespace

json logprobsJson(const std::vector<LogprobEntry> &entries, bool chat,
                  size_t textOffset) {
  if (chat) {
    json content = json::array();
    for (const LogprobEntry &e : entries) {
      json top = json::array();
      for (const auto &[token, logprob] : e.top)
        top.push_back({{"token", token},
                       {"logprob", logprob},
                       {"bytes", bytesOf(token)}});
      content.push_back({{"token", e.token},
                         {"logprob", e.logprob},
                         {"bytes", bytesOf(e.token)},
                         {"top_logprobs", top}});
    }
    return {{"content", content}};
  }
  json tokens = json::array(), logprobs = json::array(), top = json::array(),
       offsets = json::array();
  size_t offset = textOffset;
  for (const LogprobEntry &e : entries) {
    tokens.push_back(e.token);
    logprobs.push_back(e.logprob);
    json alternatives = json::object();
    for (const auto &[token, logprob] : e.top)
      alternatives[token] = logprob;
    top.push_back(alternatives);
    offsets.push_back(offset);
    offset += e.token.size();
  }
  return {{"tokens", tokens},
          {"token_logprobs", logprobs},
          {"top_logprobs", top},
          {"text_offset", offsets}};
}

json completionBody(const ResponseMeta &meta, const std::string &text,
                    FinishReason finish, const json &usage,
                    const json &logprobs, const json &prompt) {
  json choice = {{"index", 0},
                 {"logprobs", logprobs},
                 {"finish_reason", finishReasonJson(finish)}};
  if (meta.chat)
    choice["message"] = {{"role", "assistant"}, {"content", text}};
  else
    choice["text"] = text;
  json body = {{"id", meta.id},
               {"object", meta.chat ? "chat.completion" : "text_completion"},
               {"created", meta.created},
               {"model", meta.model},
               {"choices", json::array({choice})},
               {"usage", usage}};
  if (!prompt.is_null())
    body["prompt"] = prompt;
  return body;
}

json chunkBody(const ResponseMeta &meta, const std::string &text,
               FinishReason finish, const json &logprobs, bool first) {
  json choice = {{"index", 0},
                 {"logprobs", logprobs},
                 {"finish_reason", finishReasonJson(finish)}};
  if (meta.chat) {
    json delta = json::object();
    if (first)
      delta["role"] = "assistant";
    if (!text.empty() || first)
      delta["content"] = text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
  }
  return {{"id", meta.id},
          {"object", meta.chat ? "chat.completion.chunk" : "text_completion"},
          {"created", meta.created},
          {"model", meta.model},
          {"choices", json::array({choice})}};
}

json usageChunkBody(const ResponseMeta &meta, const json &usage) {
  return {{"id", meta.id},
          {"object", meta.chat ? "chat.completion.chunk" : "text_completion"},
          {"created", meta.created},
          {"model", meta.model},
          {"choices", json::array()},
          {"usage", usage}};
}

std::string sseEvent(const json &value) {
  return "data: " + dumpJson(value) + "\n\n";
}

} // namespace kiln::runtime::server
