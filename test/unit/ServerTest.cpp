//===- ServerTest.cpp - kiln serve's pieces, without a socket -------------===//
//
// Part of Kiln. The server's request parser (every field, every kind of bad
// input naming its field), its settings' precedence (flags > environment >
// TOML file > defaults), its Prometheus text and its response bodies. The
// server itself is tested live by test/server/server_test.py.
//
//===----------------------------------------------------------------------===//

#include "runtime/server/PrometheusMetrics.h"
#include "runtime/server/RequestParser.h"
#include "runtime/server/Responses.h"
#include "runtime/server/ServerConfig.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <sstream>

using namespace kiln::runtime;
using namespace kiln::runtime::server;
using json = nlohmann::json;

namespace {

ParseLimits limits() {
  ParseLimits l;
  l.vocabSize = 512;
  l.contextLength = 1024;
  return l;
}

Parsed<CompletionRequest> completion(const std::string &body) {
  return parseCompletionRequest(body, false, limits());
}
Parsed<CompletionRequest> chat(const std::string &body) {
  return parseCompletionRequest(body, true, limits());
}

/// The request is refused with `status`, naming `param` (and the message
/// containing `words`).
void expectError(const Parsed<CompletionRequest> &p, const std::string &param,
                 const std::string &words = "", int status = 400) {
  ASSERT_FALSE(p.ok);
  EXPECT_EQ(p.error.status, status);
  EXPECT_EQ(p.error.param, param) << p.error.message;
  EXPECT_NE(p.error.message.find(words), std::string::npos) << p.error.message;
}

} // namespace

//===----------------------------------------------------------------------===//
// RequestParser
//===----------------------------------------------------------------------===//

TEST(RequestParser, ReadsEveryCompletionField) {
  auto p = completion(R"({"model": "m", "prompt": "Hi", "max_tokens": 7,
      "temperature": 0.5, "top_p": 0.9, "top_k": 40, "min_p": 0.05,
      "repetition_penalty": 1.1, "presence_penalty": 0.5,
      "frequency_penalty": -0.5, "seed": 42, "stop": ["a", "bc"],
      "logit_bias": {"5": -100, "7": 2.5}, "logprobs": 3, "ignore_eos": true,
      "stream": true, "stream_options": {"include_usage": true}, "n": 1,
      "user": "ignored", "return_prompt": true})");
  ASSERT_TRUE(p.ok) << p.error.message;
  const CompletionRequest &r = p.request;
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(r.prompt, "Hi");
  EXPECT_FALSE(r.promptIsIds);
  EXPECT_EQ(r.sampling.maxTokens, 7);
  EXPECT_FLOAT_EQ(r.sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(r.sampling.topP, 0.9f);
  EXPECT_EQ(r.sampling.topK, 40);
  EXPECT_FLOAT_EQ(r.sampling.minP, 0.05f);
  EXPECT_FLOAT_EQ(r.sampling.repetitionPenalty, 1.1f);
  EXPECT_FLOAT_EQ(r.sampling.presencePenalty, 0.5f);
  EXPECT_FLOAT_EQ(r.sampling.frequencyPenalty, -0.5f);
  EXPECT_EQ(r.sampling.seed, 42u);
  EXPECT_EQ(r.sampling.stopStrings, (std::vector<std::string>{"a", "bc"}));
  EXPECT_FLOAT_EQ(r.sampling.logitBias.at(5), -100.0f);
  EXPECT_FLOAT_EQ(r.sampling.logitBias.at(7), 2.5f);
  EXPECT_TRUE(r.sampling.logprobs);
  EXPECT_EQ(r.sampling.topLogprobs, 3);
  EXPECT_TRUE(r.ignoreEos);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.includeUsage);
  EXPECT_TRUE(r.returnPrompt);
}

TEST(RequestParser, DefaultsFollowOpenAI) {
  auto p = completion(R"({"prompt": "Hi"})");
  ASSERT_TRUE(p.ok);
  EXPECT_EQ(p.request.sampling.maxTokens, kDefaultCompletionMaxTokens);
  EXPECT_FLOAT_EQ(p.request.sampling.temperature, 1.0f);
  EXPECT_FALSE(p.request.sampling.seed.has_value());
  EXPECT_FALSE(p.request.stream);
  // Chat: no limit but the context; nulls are as absent.
  auto c = chat(R"({"messages": [{"role": "user", "content": "Hi"}],
                    "temperature": null, "stop": null})");
  ASSERT_TRUE(c.ok) << c.error.message;
  EXPECT_EQ(c.request.sampling.maxTokens, 0);
}

TEST(RequestParser, PromptAsTokenIdsOrOneString) {
  auto ids = completion(R"({"prompt": [1, 2, 3]})");
  ASSERT_TRUE(ids.ok);
  EXPECT_TRUE(ids.request.promptIsIds);
  EXPECT_EQ(ids.request.promptIds, (std::vector<int32_t>{1, 2, 3}));
  auto one = completion(R"({"prompt": ["text"]})");
  ASSERT_TRUE(one.ok);
  EXPECT_EQ(one.request.prompt, "text");
  expectError(completion(R"({"prompt": ["a", "b"]})"), "prompt", "several");
  expectError(completion(R"({"prompt": [1, 512]})"), "prompt[1]", "512");
  expectError(completion(R"({"prompt": [1, "x"]})"), "prompt[1]", "integer");
}

TEST(RequestParser, ChatMessagesAndContentParts) {
  auto c = chat(R"({"messages": [
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": [{"type": "text", "text": "Hel"},
                                   {"type": "text", "text": "lo"}]},
      {"role": "assistant", "content": null}],
      "max_completion_tokens": 9, "logprobs": true, "top_logprobs": 2})");
  ASSERT_TRUE(c.ok) << c.error.message;
  ASSERT_EQ(c.request.messages.size(), 3u);
  EXPECT_EQ(c.request.messages[1].content, "Hello");
  EXPECT_EQ(c.request.messages[2].content, "");
  EXPECT_EQ(c.request.sampling.maxTokens, 9);
  EXPECT_EQ(c.request.sampling.topLogprobs, 2);
  expectError(chat(R"({})"), "messages", "required");
  expectError(chat(R"({"messages": []})"), "messages", "empty");
  expectError(chat(R"({"messages": [{"content": "x"}]})"), "messages[0].role");
  expectError(chat(R"({"messages": [{"role": "user"}]})"),
              "messages[0].content");
  expectError(chat(R"({"messages": [{"role": "user", "content": 5}]})"),
              "messages[0].content", "got an integer");
  expectError(chat(R"({"messages": [{"role": "user", "content":
                   [{"type": "image_url"}]}]})"),
              "messages[0].content[0].type", "image_url");
  expectError(chat(R"({"messages": [{"role": "user", "content": "x"}],
                       "top_logprobs": 2})"),
              "top_logprobs", "logprobs");
}

TEST(RequestParser, BadBodiesNameTheProblem) {
  expectError(completion(""), "", "empty");
  expectError(completion("{"), "", "not valid JSON");
  expectError(completion("[1]"), "", "must be a JSON object");
  expectError(completion(std::string(100, '[')), "", "nests");
  expectError(completion(R"({})"), "prompt", "required");
  expectError(completion(R"({"prompt": 5})"), "prompt", "got an integer");
  expectError(completion(R"({"prompt": "x", "model": 3})"), "model");
  expectError(completion(R"({"prompt": "x", "max_tokens": -1})"), "max_tokens",
              "at least 1");
  expectError(completion(R"({"prompt": "x", "max_tokens": 0})"), "max_tokens");
  expectError(completion(R"({"prompt": "x", "max_tokens": 1e30})"),
              "max_tokens");
  expectError(completion(R"({"prompt": "x", "max_tokens": 99999999999})"),
              "max_tokens", "context of 1024");
  expectError(completion(R"({"prompt": "x", "max_tokens": 2.5})"), "max_tokens",
              "integer");
  expectError(completion(R"({"prompt": "x", "max_tokens": "9"})"), "max_tokens",
              "got a string");
  expectError(completion(R"({"prompt": "x", "temperature": 3})"), "temperature",
              "[0, 2]");
  expectError(completion(R"({"prompt": "x", "top_p": 0})"), "top_p", "(0, 1]");
  expectError(completion(R"({"prompt": "x", "stop": 3})"), "stop");
  expectError(completion(R"({"prompt": "x", "stop": ["a", 3]})"), "stop[1]");
  expectError(completion(R"({"prompt": "x", "logit_bias": {"abc": 1}})"),
              "logit_bias", "token id");
  expectError(completion(R"({"prompt": "x", "logit_bias": {"9999": 1}})"),
              "logit_bias");
  expectError(completion(R"({"prompt": "x", "logit_bias": {"3": 500}})"),
              "logit_bias.3");
  expectError(completion(R"({"prompt": "x", "n": 2})"), "n", "must be 1");
  expectError(completion(R"({"prompt": "x", "echo": true})"), "echo");
  expectError(completion(R"({"prompt": "x", "stream": "yes"})"), "stream");
  expectError(completion(R"({"prompt": "x", "stream_options": {}})"),
              "stream_options", "stream");
  expectError(completion(R"({"prompt": "x", "response_format":
                            {"type": "json_schema"}})"),
              "response_format", "later");
  expectError(completion(R"({"prompt": "x", "seed": "1"})"), "seed");
}

TEST(RequestParser, TokenizeAndDetokenize) {
  auto t = parseTokenizeRequest(R"({"prompt": "Hi",
                                    "add_special_tokens": false})",
                                limits());
  ASSERT_TRUE(t.ok);
  EXPECT_EQ(t.request.prompt, "Hi");
  EXPECT_FALSE(t.request.addSpecialTokens);
  auto m = parseTokenizeRequest(
      R"({"messages": [{"role": "user", "content": "Hi"}]})", limits());
  ASSERT_TRUE(m.ok);
  EXPECT_TRUE(m.request.chat);
  EXPECT_FALSE(parseTokenizeRequest(R"({})", limits()).ok);
  auto d = parseDetokenizeRequest(R"({"tokens": [1, 2]})", limits());
  ASSERT_TRUE(d.ok);
  EXPECT_EQ(d.request.tokens, (std::vector<int32_t>{1, 2}));
  auto bad = parseDetokenizeRequest(R"({"tokens": [1, -2]})", limits());
  ASSERT_FALSE(bad.ok);
  EXPECT_EQ(bad.error.param, "tokens[1]");
}

//===----------------------------------------------------------------------===//
// ServerConfig
//===----------------------------------------------------------------------===//

TEST(ServerConfig, FlagsWinOverEnvironmentOverFileOverDefaults) {
  Settings file = settingsFromToml(R"(
port = 9000
host = "0.0.0.0"
concurrency = 8
api_key = "from-file"
request_timeout = 2.5
log_requests = false
)",
                                   "kiln.toml");
  std::map<std::string, std::string> vars = {{"KILN_PORT", "9100"},
                                             {"KILN_API_KEY", "from-env"},
                                             {"KILN_CACHE_DIR", "/x"}};
  Settings env = settingsFromEnvironment([&](const char *name) -> const char * {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
  EXPECT_EQ(env.size(), 2u); // KILN_CACHE_DIR is not a setting
  Settings flags = {{"port", {"9200", "--port"}}};

  ServerConfig defaults = resolveServerConfig({}, {}, {});
  EXPECT_EQ(defaults.port, 8080);
  EXPECT_EQ(defaults.host, "127.0.0.1");
  EXPECT_EQ(defaults.concurrency, 32);
  EXPECT_EQ(defaults.resolvedMaxQueue(), 64);

  ServerConfig fileOnly = resolveServerConfig(file, {}, {});
  EXPECT_EQ(fileOnly.port, 9000);
  EXPECT_EQ(fileOnly.host, "0.0.0.0");
  EXPECT_EQ(fileOnly.concurrency, 8);
  EXPECT_EQ(fileOnly.apiKey, "from-file");
  EXPECT_DOUBLE_EQ(fileOnly.requestTimeout, 2.5);
  EXPECT_FALSE(fileOnly.logRequests);

  ServerConfig withEnv = resolveServerConfig(file, env, {});
  EXPECT_EQ(withEnv.port, 9100);
  EXPECT_EQ(withEnv.apiKey, "from-env");
  EXPECT_EQ(withEnv.host, "0.0.0.0"); // untouched by env

  ServerConfig all = resolveServerConfig(file, env, flags);
  EXPECT_EQ(all.port, 9200);
  EXPECT_EQ(all.apiKey, "from-env");
  EXPECT_EQ(all.concurrency, 8);
}

TEST(ServerConfig, BadValuesNameTheirSource) {
  auto message = [](const Settings &file, const Settings &env,
                    const Settings &flags) {
    try {
      resolveServerConfig(file, env, flags);
    } catch (const std::invalid_argument &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message({}, {{"port", {"70000", "KILN_PORT"}}}, {}),
            "KILN_PORT: 'port' is \"70000\", expected an integer in [0, "
            "65535]");
  EXPECT_NE(message({}, {}, {{"concurrency", {"x", "--concurrency"}}})
                .find("--concurrency"),
            std::string::npos);
  EXPECT_NE(message({}, {}, {{"max_body_bytes", {"lots", "--max-body-bytes"}}})
                .find("a size"),
            std::string::npos);
  EXPECT_EQ(resolveServerConfig({}, {}, {{"max_body_bytes", {"2KiB", "f"}}})
                .maxBodyBytes,
            2048);
  EXPECT_EQ(message({}, {}, {{"io_timeout", {"0", "--io-timeout"}}}),
            "--io-timeout: 'io_timeout' is \"0\", expected a number of "
            "seconds > 0");
  EXPECT_EQ(
      resolveServerConfig({}, {}, {{"io_timeout", {"0.25", "f"}}}).ioTimeout,
      0.25);
  EXPECT_THROW(settingsFromToml("prot = 1\n", "kiln.toml"),
               std::invalid_argument);
  EXPECT_THROW(settingsFromToml("port = [1]\n", "kiln.toml"),
               std::invalid_argument);
  try {
    settingsFromToml("port = \n", "kiln.toml");
    FAIL();
  } catch (const std::invalid_argument &e) {
    EXPECT_EQ(std::string(e.what()).rfind("kiln.toml:1:", 0), 0u) << e.what();
  }
}

//===----------------------------------------------------------------------===//
// Prometheus text and responses
//===----------------------------------------------------------------------===//

TEST(PrometheusMetrics, HistogramsCountersAndGauges) {
  EngineMetrics m;
  m.running = 3;
  m.peakRunning = 7;
  m.queued = 2;
  m.kv.usedBlocks = 5;
  m.kv.freeBlocks = 11;
  m.promptTokens = 100;
  m.generatedTokens = 250;
  m.timeToFirstToken.count = 4;
  m.timeToFirstToken.sumSeconds = 0.5;
  m.timeToFirstToken.buckets.assign(latencyBucketBounds().size() + 1, 4);
  m.timeToFirstToken.buckets[0] = 1;
  ServerStats s;
  s.responses[{"/v1/completions", 200}] = 9;
  s.responses[{"/v1/completions", 503}] = 2;
  s.residentBytes = 123456789;
  s.ready = true;
  std::string text = formatPrometheus(m, s);
  for (const char *line :
       {"# TYPE kiln_http_requests_total counter\n",
        "kiln_http_requests_total{endpoint=\"/v1/completions\","
        "status=\"503\"} 2\n",
        "# TYPE kiln_time_to_first_token_seconds histogram\n",
        "kiln_time_to_first_token_seconds_bucket{le=\"0.001\"} 1\n",
        "kiln_time_to_first_token_seconds_bucket{le=\"0.0025\"} 4\n",
        "kiln_time_to_first_token_seconds_bucket{le=\"+Inf\"} 4\n",
        "kiln_time_to_first_token_seconds_sum 0.5\n",
        "kiln_time_to_first_token_seconds_count 4\n",
        "kiln_inter_token_latency_seconds_count 0\n",
        "kiln_prompt_tokens_total 100\n", "kiln_generation_tokens_total 250\n",
        "kiln_requests_waiting 2\n", "kiln_requests_running 3\n",
        "kiln_requests_running_peak 7\n", "kiln_kv_blocks_used 5\n",
        "kiln_kv_blocks_free 11\n", "kiln_preemptions_total 0\n",
        "kiln_resident_memory_bytes 123456789\n", "kiln_ready 1\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  // Every sample line is "name{labels} value" with a kiln_ name.
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line[0] != '#')
      EXPECT_EQ(line.rfind("kiln_", 0), 0u) << line;
  EXPECT_GT(residentMemoryBytes(), 0);
}

TEST(Responses, ErrorBodiesAndChunks) {
  ApiError e;
  e.status = 400;
  e.message = "bad";
  e.param = "top_p";
  json error = json::parse(errorBody(e));
  EXPECT_EQ(error["error"]["message"], "bad");
  EXPECT_EQ(error["error"]["type"], "invalid_request_error");
  EXPECT_EQ(error["error"]["param"], "top_p");
  EXPECT_TRUE(error["error"]["code"].is_null());

  ResponseMeta meta{"chatcmpl-1", 7, "tiny", true};
  json first = chunkBody(meta, "", FinishReason::None, nullptr, true);
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  json last = chunkBody(meta, "x", FinishReason::StopString, nullptr, false);
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(sseEvent(json{{"a", 1}}), "data: {\"a\":1}\n\n");
  // A token that is part of a UTF-8 character still makes valid JSON.
  EXPECT_TRUE(json::accept(dumpJson(json{{"t", std::string("\xe2\x82")}})));
}
