//===- RequestParser.cpp - HTTP request bodies into requests --------------===//
//
// Part of Kiln's server. See RequestParser.h. Fields are read one by one
// with a type check each; a wrong one throws a FieldError inside this file,
// which the entry points turn into the ApiError they return. Unknown fields
// are ignored, as OpenAI's clients send some this server has no use for
// (user, metadata); fields that would change the answer in a way Kiln does
// not support (n > 1, echo, suffix, tools, response_format) are refused by
// name rather than silently ignored.
//
//===----------------------------------------------------------------------===//

#include "runtime/server/RequestParser.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>

namespace kiln::runtime::server {

namespace {

using json = nlohmann::json;

struct FieldError {
  ApiError error;
};

[[noreturn]] void fail(const std::string &param, const std::string &message,
                       int status = 400, const std::string &code = "") {
  ApiError e;
  e.status = status;
  e.param = param;
  e.message = message;
  e.code = code;
  throw FieldError{e};
}

const char *typeName(const json &v) {
  switch (v.type()) {
  case json::value_t::null:
    return "null";
  case json::value_t::boolean:
    return "a boolean";
  case json::value_t::string:
    return "a string";
  case json::value_t::array:
    return "an array";
  case json::value_t::object:
    return "an object";
  case json::value_t::number_integer:
  case json::value_t::number_unsigned:
    return "an integer";
  case json::value_t::number_float:
    return "a number";
  default:
    return "something else";
  }
}

[[noreturn]] void wrongType(const std::string &param, const json &v,
                            const char *expected) {
  fail(param, "'" + param + "' must be " + expected + ", got " + typeName(v));
}

/// Nesting depth of `body`'s arrays and objects, outside strings; stops
/// counting past `limit`. Checked before parsing so a body of a million
/// '[' costs one pass, not a deep tree.
int32_t nestingDepth(std::string_view body, int32_t limit) {
  int32_t depth = 0, deepest = 0;
  bool inString = false, escaped = false;
  for (char c : body) {
    if (inString) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        inString = false;
      continue;
    }
    if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit)
        return deepest;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

/// The body as a JSON object.
json parseObject(std::string_view body, const ParseLimits &limits) {
  if (body.empty())
    fail("", "the request body is empty; expected a JSON object");
  if (nestingDepth(body, limits.maxDepth) > limits.maxDepth)
    fail("", "the request body nests arrays and objects more than " +
                 std::to_string(limits.maxDepth) + " levels deep");
  json doc;
  try {
    doc = json::parse(body.begin(), body.end());
  } catch (const json::parse_error &e) {
    // "[json.exception.parse_error.101] parse error at line 1, ..." without
    // the library's tag.
    std::string what = e.what();
    size_t tag = what.find("] ");
    fail("", "the request body is not valid JSON: " +
                 (tag == std::string::npos ? what : what.substr(tag + 2)));
  }
  if (!doc.is_object())
    fail("", std::string("the request body must be a JSON object, got ") +
                 typeName(doc));
  return doc;
}

/// The member `name`, or null when absent (OpenAI treats null as absent).
const json &member(const json &object, const char *name) {
  static const json null;
  auto it = object.find(name);
  return it == object.end() ? null : *it;
}

std::string getString(const json &v, const std::string &param) {
  if (!v.is_string())
    wrongType(param, v, "a string");
  return v.get<std::string>();
}

bool getBool(const json &v, const std::string &param) {
  if (!v.is_boolean())
    wrongType(param, v, "a boolean");
  return v.get<bool>();
}

double getNumber(const json &v, const std::string &param) {
  if (!v.is_number())
    wrongType(param, v, "a number");
  double d = v.get<double>();
  if (!std::isfinite(d))
    fail(param, "'" + param + "' must be a finite number");
  return d;
}

/// An integer in [lo, hi]; an integral float (2.0) counts.
int64_t getInteger(const json &v, const std::string &param, int64_t lo,
                   int64_t hi) {
  int64_t n;
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > uint64_t(hi))
      fail(param, "'" + param + "' is " + std::to_string(u) +
                      ", expected at most " + std::to_string(hi));
    n = int64_t(u);
  } else if (v.is_number_integer()) {
    n = v.get<int64_t>();
  } else if (v.is_number_float()) {
    double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d) || d < -9.0e18 || d > 9.0e18)
      wrongType(param, v, "an integer");
    n = int64_t(d);
  } else {
    wrongType(param, v, "an integer");
  }
  if (n < lo || n > hi)
    fail(param, "'" + param + "' is " + std::to_string(n) + ", expected " +
                    (hi == std::numeric_limits<int64_t>::max()
                         ? "at least " + std::to_string(lo)
                         : "a value in [" + std::to_string(lo) + ", " +
                               std::to_string(hi) + "]"));
  return n;
}

float getRange(const json &v, const std::string &param, double lo, double hi,
               bool openLow = false) {
  double d = getNumber(v, param);
  if (d < lo || d > hi || (openLow && d == lo)) {
    char text[128];
    std::snprintf(text, sizeof text,
                  "'%s' is %g, expected a value in %c%g, %g]", param.c_str(), d,
                  openLow ? '(' : '[', lo, hi);
    fail(param, text);
  }
  return float(d);
}

int32_t getTokenId(const json &v, const std::string &param,
                   const ParseLimits &limits) {
  return int32_t(getInteger(v, param, 0, int64_t(limits.vocabSize) - 1));
}

/// A message's content: a string, null (""), or an array of text parts.
std::string messageContent(const json &v, const std::string &param) {
  if (v.is_null())
    return "";
  if (v.is_string())
    return v.get<std::string>();
  if (!v.is_array())
    wrongType(param, v, "a string or an array of text parts");
  std::string text;
  for (size_t i = 0; i < v.size(); ++i) {
    std::string part = param + "[" + std::to_string(i) + "]";
    const json &p = v[i];
    if (!p.is_object())
      wrongType(part, p, "an object {\"type\": \"text\", \"text\": ...}");
    std::string type = getString(member(p, "type"), part + ".type");
    if (type != "text")
      fail(part + ".type", "'" + part + ".type' is \"" + type +
                               "\"; only \"text\" parts are supported");
    text += getString(member(p, "text"), part + ".text");
  }
  return text;
}

std::vector<ChatMessage> parseMessages(const json &v) {
  if (v.is_null())
    fail("messages", "'messages' is required: an array of {\"role\", "
                     "\"content\"} objects");
  if (!v.is_array())
    wrongType("messages", v, "an array of {\"role\", \"content\"} objects");
  if (v.empty())
    fail("messages", "'messages' is empty; expected at least one message");
  std::vector<ChatMessage> messages;
  for (size_t i = 0; i < v.size(); ++i) {
    std::string param = "messages[" + std::to_string(i) + "]";
    const json &m = v[i];
    if (!m.is_object())
      wrongType(param, m, "an object with \"role\" and \"content\"");
    const json &role = member(m, "role");
    if (role.is_null())
      fail(param + ".role", "'" + param + ".role' is required");
    ChatMessage message;
    message.role = getString(role, param + ".role");
    if (message.role.empty())
      fail(param + ".role", "'" + param + ".role' is empty");
    if (!m.contains("content"))
      fail(param + ".content", "'" + param + ".content' is required");
    message.content = messageContent(member(m, "content"), param + ".content");
    messages.push_back(std::move(message));
  }
  return messages;
}

std::string parseModel(const json &body) {
  const json &model = member(body, "model");
  return model.is_null() ? "" : getString(model, "model");
}

/// Refuses the fields whose meaning Kiln does not implement.
void refuseUnsupported(const json &body, bool chat) {
  const json &n = member(body, "n");
  if (!n.is_null() && getInteger(n, "n", 1, 128) != 1)
    fail("n", "'n' must be 1: one choice per request is supported");
  const json &bestOf = member(body, "best_of");
  if (!bestOf.is_null() && getInteger(bestOf, "best_of", 1, 128) != 1)
    fail("best_of", "'best_of' must be 1");
  if (!chat) {
    const json &echo = member(body, "echo");
    if (!echo.is_null() && getBool(echo, "echo"))
      fail("echo", "'echo' is not supported (return_prompt gives the "
                   "prompt)");
    const json &suffix = member(body, "suffix");
    if (!suffix.is_null())
      fail("suffix", "'suffix' (insertion) is not supported");
  }
  for (const char *name : {"tools", "functions", "response_format"}) {
    const json &v = member(body, name);
    if (v.is_null())
      continue;
    // {"type": "text"} asks for nothing special.
    if (std::string(name) == "response_format" && v.is_object() &&
        member(v, "type") == "text")
      continue;
    if (std::string(name) == "tools" && v.is_array() && v.empty())
      continue;
    fail(name, std::string("'") + name +
                   "' is not supported yet (constrained output is later "
                   "work)");
  }
}

void parseStop(const json &v, SamplingParams &s) {
  if (v.is_null())
    return;
  if (v.is_string()) {
    if (!v.get_ref<const std::string &>().empty())
      s.stopStrings.push_back(v.get<std::string>());
    return;
  }
  if (!v.is_array())
    wrongType("stop", v, "a string or an array of strings");
  if (v.size() > 16)
    fail("stop", "'stop' has " + std::to_string(v.size()) +
                     " strings, expected at most 16");
  for (size_t i = 0; i < v.size(); ++i) {
    std::string text = getString(v[i], "stop[" + std::to_string(i) + "]");
    if (!text.empty())
      s.stopStrings.push_back(std::move(text));
  }
}

void parseLogitBias(const json &v, SamplingParams &s,
                    const ParseLimits &limits) {
  if (v.is_null())
    return;
  if (!v.is_object())
    wrongType("logit_bias", v, "an object of token id -> bias");
  for (auto it = v.begin(); it != v.end(); ++it) {
    const std::string &key = it.key();
    std::string param = "logit_bias." + key;
    int64_t id = -1;
    bool digits = !key.empty() && key.size() <= 10;
    for (char c : key)
      digits = digits && c >= '0' && c <= '9';
    if (digits)
      id = std::stoll(key);
    if (id < 0 || id >= limits.vocabSize)
      fail("logit_bias", "'logit_bias' key \"" + key +
                             "\" must be a token id in [0, " +
                             std::to_string(limits.vocabSize) + ")");
    s.logitBias[int32_t(id)] = getRange(it.value(), param, -100, 100);
  }
}

/// Everything about sampling, stopping and log-probabilities.
void parseSampling(const json &body, bool chat, const ParseLimits &limits,
                   CompletionRequest &r) {
  SamplingParams &s = r.sampling;
  if (const json &v = member(body, "temperature"); !v.is_null())
    s.temperature = getRange(v, "temperature", 0, 2);
  if (const json &v = member(body, "top_p"); !v.is_null())
    s.topP = getRange(v, "top_p", 0, 1, /*openLow=*/true);
  if (const json &v = member(body, "top_k"); !v.is_null()) {
    // -1 means "all" in vLLM's API, as 0 does here.
    int64_t k = getInteger(v, "top_k", -1, std::numeric_limits<int32_t>::max());
    s.topK = k < 0 ? 0 : int32_t(k);
  }
  if (const json &v = member(body, "min_p"); !v.is_null())
    s.minP = getRange(v, "min_p", 0, 1);
  if (const json &v = member(body, "repetition_penalty"); !v.is_null())
    s.repetitionPenalty = getRange(v, "repetition_penalty", 0, 100, true);
  if (const json &v = member(body, "presence_penalty"); !v.is_null())
    s.presencePenalty = getRange(v, "presence_penalty", -2, 2);
  if (const json &v = member(body, "frequency_penalty"); !v.is_null())
    s.frequencyPenalty = getRange(v, "frequency_penalty", -2, 2);
  if (const json &v = member(body, "seed"); !v.is_null())
    s.seed = uint64_t(getInteger(v, "seed", std::numeric_limits<int64_t>::min(),
                                 std::numeric_limits<int64_t>::max()));
  parseLogitBias(member(body, "logit_bias"), s, limits);
  parseStop(member(body, "stop"), s);
  if (const json &v = member(body, "stop_token_ids"); !v.is_null()) {
    if (!v.is_array())
      wrongType("stop_token_ids", v, "an array of token ids");
    for (size_t i = 0; i < v.size() && i < 1024; ++i)
      s.stopTokenIds.push_back(getTokenId(
          v[i], "stop_token_ids[" + std::to_string(i) + "]", limits));
  }
  if (const json &v = member(body, "ignore_eos"); !v.is_null())
    r.ignoreEos = getBool(v, "ignore_eos");

  // max_tokens: OpenAI's chat API renamed it max_completion_tokens.
  const char *maxName = "max_tokens";
  const json *maxTokens = &member(body, "max_tokens");
  if (chat && maxTokens->is_null()) {
    maxName = "max_completion_tokens";
    maxTokens = &member(body, maxName);
  }
  if (!maxTokens->is_null()) {
    int64_t n =
        getInteger(*maxTokens, maxName, 1, std::numeric_limits<int64_t>::max());
    if (n > limits.contextLength)
      fail(maxName, "'" + std::string(maxName) + "' is " + std::to_string(n) +
                        ", more than the model's context of " +
                        std::to_string(limits.contextLength) + " tokens");
    s.maxTokens = int32_t(n);
  } else if (!chat) {
    s.maxTokens = kDefaultCompletionMaxTokens;
  }

  // Log-probabilities: completions take logprobs = N (how many top
  // tokens); chat takes logprobs = true and top_logprobs = N.
  const json &logprobs = member(body, "logprobs");
  if (chat) {
    if (!logprobs.is_null())
      s.logprobs = getBool(logprobs, "logprobs");
    if (const json &v = member(body, "top_logprobs"); !v.is_null()) {
      s.topLogprobs = int32_t(getInteger(v, "top_logprobs", 0, 20));
      if (s.topLogprobs > 0 && !s.logprobs)
        fail("top_logprobs", "'top_logprobs' needs 'logprobs': true");
    }
  } else if (!logprobs.is_null()) {
    s.topLogprobs = int32_t(getInteger(logprobs, "logprobs", 0, 20));
    s.logprobs = true;
  }

  try {
    validate(s, limits.vocabSize);
  } catch (const std::invalid_argument &e) {
    fail("", e.what());
  }
}

/// Completions' prompt: a string, a one-string array, or token ids.
void parsePrompt(const json &v, const ParseLimits &limits,
                 CompletionRequest &r) {
  if (v.is_null())
    fail("prompt", "'prompt' is required: a string or an array of token ids");
  if (v.is_array() && v.size() == 1 && v[0].is_string()) {
    parsePrompt(v[0], limits, r);
    return;
  }
  if (v.is_string()) {
    r.prompt = v.get<std::string>();
    if (r.prompt.empty())
      fail("prompt", "'prompt' is empty; expected some text");
    return;
  }
  if (!v.is_array())
    wrongType("prompt", v, "a string or an array of token ids");
  if (v.empty())
    fail("prompt", "'prompt' is an empty array; expected token ids");
  if (!v.empty() && (v[0].is_string() || v[0].is_array()))
    fail("prompt", "'prompt' holds several prompts; send one a request");
  if (v.size() > size_t(limits.contextLength))
    fail("prompt",
         "'prompt' is " + std::to_string(v.size()) +
             " tokens, more than the model's context of " +
             std::to_string(limits.contextLength) + " tokens",
         400, "context_length_exceeded");
  r.promptIsIds = true;
  for (size_t i = 0; i < v.size(); ++i)
    r.promptIds.push_back(
        getTokenId(v[i], "prompt[" + std::to_string(i) + "]", limits));
}

/// Runs `parse`, turning a FieldError (or anything unexpected) into the
/// returned error.
template <typename T, typename Parse> Parsed<T> guarded(Parse parse) {
  Parsed<T> result;
  try {
    parse(result.request);
    result.ok = true;
  } catch (const FieldError &e) {
    result.error = e.error;
  } catch (const std::exception &e) {
    result.error.message = std::string("the request is malformed: ") + e.what();
  } catch (...) {
    result.error.message = "the request is malformed";
  }
  return result;
}

} // namespace

Parsed<CompletionRequest> parseCompletionRequest(std::string_view text,
                                                 bool chat,
                                                 const ParseLimits &limits) {
  return guarded<CompletionRequest>([&](CompletionRequest &r) {
    json body = parseObject(text, limits);
    r.chat = chat;
    r.model = parseModel(body);
    refuseUnsupported(body, chat);
    if (chat)
      r.messages = parseMessages(member(body, "messages"));
    else
      parsePrompt(member(body, "prompt"), limits, r);
    if (const json &v = member(body, "stream"); !v.is_null())
      r.stream = getBool(v, "stream");
    if (const json &v = member(body, "stream_options"); !v.is_null()) {
      if (!v.is_object())
        wrongType("stream_options", v, "an object");
      if (!r.stream)
        fail("stream_options", "'stream_options' needs 'stream': true");
      if (const json &u = member(v, "include_usage"); !u.is_null())
        r.includeUsage = getBool(u, "stream_options.include_usage");
    }
    if (const json &v = member(body, "return_prompt"); !v.is_null())
      r.returnPrompt = getBool(v, "return_prompt");
    parseSampling(body, chat, limits, r);
  });
}

Parsed<TokenizeRequest> parseTokenizeRequest(std::string_view text,
                                             const ParseLimits &limits) {
  return guarded<TokenizeRequest>([&](TokenizeRequest &r) {
    json body = parseObject(text, limits);
    r.model = parseModel(body);
    const json &prompt = member(body, "prompt");
    const json &messages = member(body, "messages");
    if (!prompt.is_null() && !messages.is_null())
      fail("messages", "give 'prompt' or 'messages', not both");
    if (!messages.is_null()) {
      r.chat = true;
      r.messages = parseMessages(messages);
    } else if (prompt.is_null()) {
      fail("prompt", "'prompt' (text) or 'messages' (a conversation) is "
                     "required");
    } else {
      r.prompt = getString(prompt, "prompt");
    }
    if (const json &v = member(body, "add_special_tokens"); !v.is_null())
      r.addSpecialTokens = getBool(v, "add_special_tokens");
  });
}

Parsed<DetokenizeRequest> parseDetokenizeRequest(std::string_view text,
                                                 const ParseLimits &limits) {
  return guarded<DetokenizeRequest>([&](DetokenizeRequest &r) {
    json body = parseObject(text, limits);
    r.model = parseModel(body);
    const json &tokens = member(body, "tokens");
    if (tokens.is_null())
      fail("tokens", "'tokens' is required: an array of token ids");
    if (!tokens.is_array())
      wrongType("tokens", tokens, "an array of token ids");
    for (size_t i = 0; i < tokens.size(); ++i)
      r.tokens.push_back(
          getTokenId(tokens[i], "tokens[" + std::to_string(i) + "]", limits));
  });
}

} // namespace kiln::runtime::server
