//===- Server.cpp - kiln serve: an OpenAI-compatible HTTP server ----------===//
//
// Part of Kiln's server. See Server.h and docs/server.md.
//
// Logging and status counting happen in one place, httplib's logger, which
// runs on the worker thread after the response (a streamed one included) is
// written. What the handlers know about a request (its id, token counts,
// time to first token, finish reason) reaches it through `current`, a
// thread-local record: handler, content provider and logger of one request
// run on the same worker, one after the other.
//
//===----------------------------------------------------------------------===//

#include "runtime/server/Server.h"

#include "runtime/Chat.h"
#include "runtime/server/ConnectionWatch.h"
#include "runtime/server/PrometheusMetrics.h"
#include "runtime/server/RequestParser.h"
#include "runtime/server/Responses.h"
#include "runtime/server/WebPage.h"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sys/socket.h>
#include <thread>

namespace kiln::runtime::server {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

/// What the log line says about the request being answered on this thread.
struct RequestRecord {
  Clock::time_point start = Clock::now();
  std::string id;
  int32_t promptTokens = -1, generatedTokens = -1;
  double ttft = -1;
  std::string finish;
  std::string error;    ///< the error's code or type, never client text
  bool counted = false; ///< in Impl::inFlight (passed pre-routing)
};
thread_local RequestRecord current;

/// Compares without an early exit, so the time taken does not tell how
/// much of a guessed key was right.
bool constantTimeEqual(const std::string &a, const std::string &b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= x ^ y;
  }
  return diff == 0;
}

void reply(httplib::Response &res, int status, const std::string &body) {
  res.status = status;
  res.set_content(body, "application/json");
}

void replyError(httplib::Response &res, const ApiError &error) {
  if (error.status == 503)
    res.set_header("Retry-After", "1");
  if (error.status == 401)
    res.set_header("WWW-Authenticate", "Bearer");
  current.error = error.code.empty() ? error.type : error.code;
  reply(res, error.status, errorBody(error));
}

ApiError apiError(int status, std::string message, std::string type,
                  std::string param = "", std::string code = "") {
  ApiError e;
  e.status = status;
  e.message = std::move(message);
  e.type = std::move(type);
  e.param = std::move(param);
  e.code = std::move(code);
  return e;
}

/// httplib's server with two things its API lacks (0.11.4): a listen
/// backlog longer than its 5 (64 clients connecting at once would be
/// reset), and a way to stop accepting while streamed responses go on
/// (stop() marks the server as shutting down, which ends every stream at
/// its next chunk).
class HttpServer : public httplib::Server {
public:
  void setBacklog(int connections) { ::listen(svr_sock_, connections); }
  /// accept() then fails; the accept loop closes the socket, leaves, and
  /// waits for the workers to finish what they are answering.
  void stopAccepting() { ::shutdown(svr_sock_, SHUT_RDWR); }
  /// After the accept loop has closed the socket: forget its number, so
  /// that nothing closes a descriptor reused since.
  void forgetSocket() { svr_sock_ = INVALID_SOCKET; }
};

const std::set<std::string> &knownEndpoints() {
  static const std::set<std::string> endpoints = {
      "/",         "/health",     "/metrics",        "/v1/models",
      "/tokenize", "/detokenize", "/v1/completions", "/v1/chat/completions"};
  return endpoints;
}

} // namespace

//===----------------------------------------------------------------------===//
// The server's state
//===----------------------------------------------------------------------===//

struct Server::Impl {
  Impl(Engine &engine, ServerConfig config, std::string modelName,
       std::string chatTemplate, std::string chatTemplateName);

  void routes();
  void logRequest(const httplib::Request &req, const httplib::Response &res);

  // Endpoints.
  void completion(const httplib::Request &req, httplib::Response &res,
                  bool chat);
  void tokenize(const httplib::Request &req, httplib::Response &res);
  void detokenize(const httplib::Request &req, httplib::Response &res);
  void models(httplib::Response &res);
  void metrics(httplib::Response &res);

  /// A chat over the served template.
  std::unique_ptr<Chat> makeChat() const;
  /// Renders `messages` with the served template into its text and token
  /// ids; a 400 naming `messages` when the template refuses them.
  std::optional<ApiError> renderChat(const std::vector<ChatMessage> &messages,
                                     std::string &rendered,
                                     std::vector<int32_t> &ids) const;
  /// False (and the 404 written) when `model` names another model.
  bool checkModel(const std::string &model, httplib::Response &res);
  std::string newId(bool chat);

  void track(RequestId id);
  void untrack(RequestId id);

  Engine &engine;
  const Tokenizer &tokenizer;
  ServerConfig config;
  std::string modelName, chatTemplate, chatTemplateName;
  ParseLimits limits;
  int64_t created = 0;
  uint64_t idPrefix = 0;
  std::atomic<uint64_t> idCounter{0};

  HttpServer http;
  std::atomic<bool> ready{false}, draining{false}, cancelAll{false};
  std::atomic<int32_t> inFlight{0};

  std::mutex statsMutex;
  std::map<std::pair<std::string, int>, int64_t> responses;
  std::mutex logMutex;

  std::mutex activeMutex;
  std::condition_variable activeChanged;
  std::set<RequestId> active; ///< engine requests being answered

  std::mutex drainMutex;
  std::thread drainer;
};

Server::Impl::Impl(Engine &engine, ServerConfig config, std::string modelName,
                   std::string chatTemplate, std::string chatTemplateName)
    : engine(engine), tokenizer(engine.tokenizer()), config(std::move(config)),
      modelName(std::move(modelName)), chatTemplate(std::move(chatTemplate)),
      chatTemplateName(std::move(chatTemplateName)) {
  limits.vocabSize = engine.limits().vocabSize;
  limits.contextLength = engine.limits().contextLength;
  created = std::chrono::duration_cast<std::chrono::seconds>(
                std::chrono::system_clock::now().time_since_epoch())
                .count();
  idPrefix = std::random_device{}();
  (void)makeChat(); // a template that does not parse fails here, not later
  routes();
}

std::unique_ptr<Chat> Server::Impl::makeChat() const {
  if (chatTemplate.empty())
    return std::make_unique<Chat>(tokenizer);
  return std::make_unique<Chat>(tokenizer, chatTemplate, chatTemplateName);
}

std::optional<ApiError>
Server::Impl::renderChat(const std::vector<ChatMessage> &messages,
                         std::string &rendered,
                         std::vector<int32_t> &ids) const {
  try {
    std::unique_ptr<Chat> conversation = makeChat();
    for (const ChatMessage &m : messages)
      conversation->addMessage(m.role, m.content);
    rendered = conversation->prompt();
    ids = conversation->encodePrompt();
  } catch (const std::exception &e) {
    return apiError(
        400, std::string("the chat template refused the messages: ") + e.what(),
        "invalid_request_error", "messages");
  }
  return std::nullopt;
}

bool Server::Impl::checkModel(const std::string &model,
                              httplib::Response &res) {
  if (model.empty() || model == modelName)
    return true;
  replyError(res,
             apiError(404,
                      "the model '" + model +
                          "' does not exist; this server serves '" + modelName +
                          "'",
                      "invalid_request_error", "model", "model_not_found"));
  return false;
}

std::string Server::Impl::newId(bool chat) {
  char text[64];
  std::snprintf(text, sizeof text, "%s-%08llx%06llx",
                chat ? "chatcmpl" : "cmpl",
                static_cast<unsigned long long>(idPrefix & 0xffffffffu),
                static_cast<unsigned long long>(++idCounter));
  return text;
}

void Server::Impl::track(RequestId id) {
  std::lock_guard<std::mutex> lock(activeMutex);
  active.insert(id);
}

void Server::Impl::untrack(RequestId id) {
  std::lock_guard<std::mutex> lock(activeMutex);
  active.erase(id);
  activeChanged.notify_all();
}

//===----------------------------------------------------------------------===//
// Routes, authentication, CORS, errors, the log
//===----------------------------------------------------------------------===//

void Server::Impl::routes() {
  http.new_task_queue = [threads = config.resolvedHttpThreads()] {
    return new httplib::ThreadPool(size_t(threads));
  };
  http.set_payload_max_length(size_t(config.maxBodyBytes));
  // Tokens are small writes that should leave at once.
  http.set_tcp_nodelay(true);
  // A client that stops reading or sending holds a worker for at most
  // this long.
  auto ioSeconds = time_t(config.ioTimeout);
  auto ioMicros = time_t((config.ioTimeout - double(ioSeconds)) * 1e6);
  http.set_write_timeout(ioSeconds, ioMicros);
  http.set_read_timeout(ioSeconds, ioMicros);
  // An idle keep-alive connection holds a worker; a drain waits for it.
  http.set_keep_alive_timeout(2);
  if (!config.corsOrigin.empty())
    http.set_default_headers(
        {{"Access-Control-Allow-Origin", config.corsOrigin},
         {"Vary", "Origin"}});

  http.set_pre_routing_handler([this](const httplib::Request &req,
                                      httplib::Response &res) {
    current = RequestRecord();
    current.counted = true;
    ++inFlight;
    if (config.apiKey.empty() || req.path == "/health" || req.path == "/" ||
        req.method == "OPTIONS")
      return httplib::Server::HandlerResponse::Unhandled;
    std::string auth = req.get_header_value("Authorization");
    const std::string bearer = "Bearer ";
    bool ok = auth.size() > bearer.size() &&
              auth.compare(0, bearer.size(), bearer) == 0 &&
              constantTimeEqual(auth.substr(bearer.size()), config.apiKey);
    if (ok)
      return httplib::Server::HandlerResponse::Unhandled;
    replyError(res, apiError(401,
                             "a valid API key is required: send "
                             "'Authorization: Bearer KEY'",
                             "authentication_error", "", "invalid_api_key"));
    return httplib::Server::HandlerResponse::Handled;
  });

  http.set_error_handler(httplib::Server::HandlerWithResponse(
      [this](const httplib::Request &req, httplib::Response &res) {
        if (!res.body.empty())
          return httplib::Server::HandlerResponse::Unhandled;
        ApiError e;
        e.status = res.status;
        if (res.status == 404) {
          e.message = "no endpoint " + req.method + " " + req.path +
                      " (docs/server.md lists them)";
          e.code = "not_found";
        } else if (res.status == 413) {
          e.message = "the request body is over the limit of " +
                      std::to_string(config.maxBodyBytes) +
                      " bytes (--max-body-bytes)";
          e.code = "body_too_large";
        } else if (res.status == 405) {
          e.message = "method " + req.method + " is not allowed on " + req.path;
        } else if (res.status >= 500) {
          e.type = "server_error";
          e.message = "internal error";
        } else {
          e.message = "malformed HTTP request";
        }
        replyError(res, e);
        return httplib::Server::HandlerResponse::Handled;
      }));

  http.set_exception_handler([](const httplib::Request &,
                                httplib::Response &res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      if (ep)
        std::rethrow_exception(ep);
    } catch (const std::exception &e) {
      what = std::string("internal error: ") + e.what();
    } catch (...) {
    }
    replyError(res, apiError(500, what, "server_error"));
  });

  http.set_logger(
      [this](const httplib::Request &req, const httplib::Response &res) {
        logRequest(req, res);
      });

  if (!config.corsOrigin.empty())
    http.Options(".*", [](const httplib::Request &, httplib::Response &res) {
      res.status = 204;
      res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
      res.set_header("Access-Control-Allow-Headers",
                     "Authorization, Content-Type");
      res.set_header("Access-Control-Max-Age", "600");
    });

  http.Get("/health", [this](const httplib::Request &, httplib::Response &res) {
    bool up = ready && !draining;
    reply(res, up ? 200 : 503,
          json{{"status", up         ? "ok"
                          : draining ? "draining"
                                     : "starting"}}
              .dump());
    if (!up)
      res.set_header("Retry-After", "1");
  });
  http.Get("/metrics", [this](const httplib::Request &,
                              httplib::Response &res) { metrics(res); });
  http.Get("/v1/models", [this](const httplib::Request &,
                                httplib::Response &res) { models(res); });
  http.Get("/", [](const httplib::Request &, httplib::Response &res) {
    res.set_content(kWebPage, "text/html; charset=utf-8");
  });
  http.Post("/v1/completions",
            [this](const httplib::Request &req, httplib::Response &res) {
              completion(req, res, false);
            });
  http.Post("/v1/chat/completions",
            [this](const httplib::Request &req, httplib::Response &res) {
              completion(req, res, true);
            });
  http.Post("/tokenize",
            [this](const httplib::Request &req, httplib::Response &res) {
              tokenize(req, res);
            });
  http.Post("/detokenize",
            [this](const httplib::Request &req, httplib::Response &res) {
              detokenize(req, res);
            });
}

void Server::Impl::logRequest(const httplib::Request &req,
                              const httplib::Response &res) {
  // The logger also runs for requests that failed before routing (a body
  // over the limit): those never passed the pre-routing handler.
  RequestRecord record = current;
  current = RequestRecord();
  if (record.counted)
    --inFlight;
  std::string endpoint =
      knownEndpoints().count(req.path) ? req.path : std::string("other");
  {
    std::lock_guard<std::mutex> lock(statsMutex);
    ++responses[{endpoint, res.status}];
  }
  if (!config.logRequests)
    return;
  // Never the prompt or the output: they are the users' data.
  json line = {{"time", std::chrono::duration<double>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count()},
               {"method", req.method},
               {"endpoint", endpoint},
               {"status", res.status},
               {"total_s", secondsSince(record.start)}};
  if (!record.id.empty())
    line["id"] = record.id;
  if (record.promptTokens >= 0)
    line["prompt_tokens"] = record.promptTokens;
  if (record.generatedTokens >= 0)
    line["generated_tokens"] = record.generatedTokens;
  if (record.ttft >= 0)
    line["ttft_s"] = record.ttft;
  if (!record.finish.empty())
    line["finish_reason"] = record.finish;
  if (!record.error.empty())
    line["error"] = record.error;
  std::string text = dumpJson(line) + "\n";
  std::lock_guard<std::mutex> lock(logMutex);
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
}

//===----------------------------------------------------------------------===//
// Completions and chat completions
//===----------------------------------------------------------------------===//

namespace {

/// A request's log-probabilities as the response reports them.
LogprobEntry logprobEntry(const Tokenizer &tokenizer, int32_t previous,
                          const TokenEvent &event) {
  LogprobEntry e;
  e.token = tokenizer.decodePiece(previous, event.token);
  e.logprob = event.logprob.value_or(0.0f);
  for (const TokenLogprob &t : event.topLogprobs)
    e.top.emplace_back(tokenizer.decodePiece(previous, t.token), t.logprob);
  return e;
}

/// The error a request's last event carries, if any.
std::optional<ApiError> finishError(const TokenEvent &last) {
  if (last.finish == FinishReason::Cancelled)
    return apiError(503,
                    "the request was cancelled: the server is shutting down",
                    "server_error", "", "shutting_down");
  if (last.finish == FinishReason::Error)
    return apiError(500, "generation failed: " + last.error, "server_error", "",
                    "generation_failed");
  return std::nullopt;
}

ApiError timeoutError(double seconds) {
  char text[160];
  std::snprintf(text, sizeof text,
                "the request took longer than the server's request timeout "
                "of %g s and was stopped",
                seconds);
  return apiError(504, text, "timeout_error", "", "request_timeout");
}

/// One streamed response's state, shared by its content provider and its
/// releaser (which httplib calls when the response ends, written or not).
struct StreamState {
  Engine *engine = nullptr;
  const Tokenizer *tokenizer = nullptr;
  double timeoutSeconds = 0;
  std::function<void(RequestId)> untrack;
  std::shared_ptr<RequestStream> stream;
  RequestId id = 0;
  ResponseMeta meta;
  bool includeUsage = false, logprobs = false;
  Clock::time_point start, deadline;
  int32_t promptTokens = 0, generated = 0, previous = -1;
  size_t textOffset = 0;
  bool first = true, finished = false;

  /// Writes what the next event makes; false when the client is gone.
  bool pump(httplib::DataSink &sink);
  bool write(httplib::DataSink &sink, const std::string &text) {
    if (sink.write(text.data(), text.size()))
      return true;
    current.finish = "disconnected"; // the releaser cancels the request
    return false;
  }
  void end(httplib::DataSink &sink) {
    finished = true;
    if (write(sink, kSseDone))
      sink.done();
  }
};

} // namespace

void Server::Impl::completion(const httplib::Request &req,
                              httplib::Response &res, bool chat) {
  Clock::time_point start = current.start;
  Parsed<CompletionRequest> parsed =
      parseCompletionRequest(req.body, chat, limits);
  if (!parsed.ok)
    return replyError(res, parsed.error);
  CompletionRequest &r = parsed.request;
  if (!checkModel(r.model, res))
    return;

  // The prompt's tokens: the chat template's rendering, the text encoded
  // as the engine would (BOS first), or the ids given.
  std::vector<int32_t> ids;
  std::string rendered;
  if (chat) {
    if (std::optional<ApiError> error = renderChat(r.messages, rendered, ids))
      return replyError(res, *error);
  } else if (r.promptIsIds) {
    ids = r.promptIds;
  } else {
    rendered = r.prompt;
    ids = tokenizer.encode(r.prompt, true);
  }
  const char *promptParam = chat ? "messages" : "prompt";
  if (ids.empty())
    return replyError(res, apiError(400, "the prompt is empty",
                                    "invalid_request_error", promptParam));
  if (int64_t(ids.size()) >= limits.contextLength)
    return replyError(
        res, apiError(400,
                      "the prompt is " + std::to_string(ids.size()) +
                          " tokens; the model's context is " +
                          std::to_string(limits.contextLength) +
                          " tokens, which must hold the prompt and at least "
                          "one generated token",
                      "invalid_request_error", promptParam,
                      "context_length_exceeded"));

  GenerationRequest g;
  g.promptIds = ids;
  g.sampling = r.sampling;
  g.ignoreEos = r.ignoreEos;
  if (chat && !r.ignoreEos)
    for (int32_t id : endOfTurnTokens(tokenizer.spec()))
      g.sampling.stopTokenIds.push_back(id);
  current.id = newId(chat);
  current.promptTokens = int32_t(ids.size());

  std::shared_ptr<RequestStream> stream;
  RequestId id = 0;
  try {
    if (draining)
      throw std::logic_error("draining");
    id = engine.submit(std::move(g), &stream);
  } catch (const EngineBusyError &) {
    return replyError(res,
                      apiError(503,
                               "the server is busy: " +
                                   std::to_string(config.resolvedMaxQueue()) +
                                   " requests are already waiting; retry later",
                               "server_error", "", "server_busy"));
  } catch (const std::invalid_argument &e) {
    return replyError(
        res, apiError(400, e.what(), "invalid_request_error", promptParam));
  } catch (const std::logic_error &) {
    return replyError(res, apiError(503, "the server is shutting down",
                                    "server_error", "", "shutting_down"));
  }
  track(id);

  ResponseMeta meta{current.id,
                    std::chrono::duration_cast<std::chrono::seconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count(),
                    modelName, chat};
  Clock::time_point deadline =
      start + std::chrono::duration_cast<Clock::duration>(
                  std::chrono::duration<double>(config.requestTimeout));

  if (r.stream) {
    auto state = std::make_shared<StreamState>();
    state->engine = &engine;
    state->tokenizer = &tokenizer;
    state->timeoutSeconds = config.requestTimeout;
    state->untrack = [this](RequestId done) { untrack(done); };
    state->stream = stream;
    state->id = id;
    state->meta = meta;
    state->includeUsage = r.includeUsage;
    state->logprobs = r.sampling.logprobs;
    state->start = start;
    state->deadline = deadline;
    state->promptTokens = int32_t(ids.size());
    state->previous = ids.back();
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    res.set_chunked_content_provider(
        "text/event-stream",
        [state](size_t, httplib::DataSink &sink) { return state->pump(sink); },
        [state](bool) {
          // Ended before its last event (the client left, or a write
          // failed): free its sequence and blocks before the next step.
          if (!state->finished)
            state->engine->cancel(state->id);
          state->untrack(state->id);
        });
    return;
  }

  // A whole response: wait for the last event or the deadline, and look at
  // the connection every 50 ms: nothing is written before the end, so a
  // client that leaves is noticed only by asking its socket.
  ConnectionWatch watch(
      {req.local_addr, req.local_port, req.remote_addr, req.remote_port});
  constexpr std::chrono::milliseconds kWatchPeriod(50);
  Clock::time_point nextWatch = Clock::now() + kWatchPeriod;
  std::string text;
  std::vector<LogprobEntry> logprobs;
  int32_t previous = ids.back();
  TokenEvent event, last;
  int32_t generated = 0;
  bool timedOut = false, clientGone = false;
  for (;;) {
    Clock::time_point now = Clock::now();
    if (now >= nextWatch) {
      nextWatch = now + kWatchPeriod;
      if (watch.peerClosed()) {
        clientGone = true;
        break;
      }
    }
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    if (left.count() <= 0) {
      timedOut = true;
      break;
    }
    if (!stream->next(event, std::min(left, kWatchPeriod))) {
      if (stream->timedOut())
        continue; // the deadline and the connection are checked above
      break;      // the stream ended without a last event: cannot happen
    }
    if (event.token >= 0 && ++generated == 1)
      current.ttft = secondsSince(start);
    text += event.text;
    if (r.sampling.logprobs && event.token >= 0 &&
        event.finish != FinishReason::StopToken) {
      logprobs.push_back(logprobEntry(tokenizer, previous, event));
      previous = event.token;
    }
    if (event.last()) {
      last = event;
      break;
    }
  }
  if (clientGone) {
    // Nobody reads the answer: free the sequence and its blocks before the
    // next step. The log line says "disconnected"; httplib's write of the
    // response fails quietly.
    engine.cancel(id);
    untrack(id);
    current.finish = "disconnected";
    current.generatedTokens = generated;
    return replyError(res, apiError(499, "the client closed the connection",
                                    "invalid_request_error", "",
                                    "client_closed_request"));
  }
  if (timedOut) {
    engine.cancel(id);
    untrack(id);
    current.finish = "timeout";
    return replyError(res, timeoutError(config.requestTimeout));
  }
  untrack(id);
  current.generatedTokens = last.generatedTokens;
  current.finish = openAiFinishReason(last.finish);
  if (std::optional<ApiError> error = finishError(last))
    return replyError(res, *error);
  json usage = usageJson(last.promptTokens, last.generatedTokens);
  json lp = r.sampling.logprobs ? logprobsJson(logprobs, chat) : json();
  json prompt = r.returnPrompt ? json(rendered) : json();
  reply(res, 200,
        dumpJson(completionBody(meta, text, last.finish, usage, lp, prompt)));
}

bool StreamState::pump(httplib::DataSink &sink) {
  if (first && meta.chat) {
    // OpenAI's first chat chunk gives the role.
    first = false;
    if (!write(sink,
               sseEvent(chunkBody(meta, "", FinishReason::None, json(), true))))
      return false;
  }
  first = false;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - Clock::now());
  if (left.count() <= 0) {
    engine->cancel(id);
    current.finish = "timeout";
    current.generatedTokens = generated;
    ApiError e = timeoutError(timeoutSeconds);
    current.error = e.code;
    if (!write(sink, "data: " + errorBody(e) + "\n\n"))
      return false;
    end(sink);
    return true;
  }
  TokenEvent event;
  if (!stream->next(event, std::min(left, std::chrono::milliseconds(1000)))) {
    if (stream->timedOut()) // nothing for a second: a comment line keeps
                            // proxies waiting and finds closed connections
      return write(sink, ": keep-alive\n\n");
    end(sink); // the stream ended without a last event: cannot happen
    return true;
  }
  if (event.token >= 0) {
    if (++generated == 1)
      current.ttft = secondsSince(start);
  }
  json lp;
  if (logprobs && event.token >= 0 && event.finish != FinishReason::StopToken) {
    LogprobEntry entry = logprobEntry(*tokenizer, previous, event);
    previous = event.token;
    lp = logprobsJson({entry}, meta.chat, textOffset);
  }
  textOffset += event.text.size();
  if (!event.last()) {
    // Text held back (part of a character or of a stop string) still
    // writes something: a write is how a closed connection is found.
    if (event.text.empty() && lp.is_null())
      return write(sink, ":\n\n");
    return write(sink, sseEvent(chunkBody(meta, event.text, FinishReason::None,
                                          lp, false)));
  }

  current.generatedTokens = event.generatedTokens;
  current.finish = openAiFinishReason(event.finish);
  if (std::optional<ApiError> error = finishError(event)) {
    current.error = error->code;
    if (!event.text.empty() &&
        !write(sink, sseEvent(chunkBody(meta, event.text, FinishReason::None,
                                        lp, false))))
      return false;
    if (!write(sink, "data: " + errorBody(*error) + "\n\n"))
      return false;
  } else {
    if (!write(sink,
               sseEvent(chunkBody(meta, event.text, event.finish, lp, false))))
      return false;
    if (includeUsage &&
        !write(sink, sseEvent(usageChunkBody(
                         meta, usageJson(event.promptTokens,
                                         event.generatedTokens)))))
      return false;
  }
  end(sink);
  return true;
}

//===----------------------------------------------------------------------===//
// Models, tokenize, detokenize, metrics
//===----------------------------------------------------------------------===//

void Server::Impl::models(httplib::Response &res) {
  json model = {{"id", modelName},
                {"object", "model"},
                {"created", created},
                {"owned_by", "kiln"},
                {"max_model_len", limits.contextLength}};
  reply(res, 200,
        dumpJson({{"object", "list"}, {"data", json::array({model})}}));
}

void Server::Impl::tokenize(const httplib::Request &req,
                            httplib::Response &res) {
  Parsed<TokenizeRequest> parsed = parseTokenizeRequest(req.body, limits);
  if (!parsed.ok)
    return replyError(res, parsed.error);
  const TokenizeRequest &r = parsed.request;
  if (!checkModel(r.model, res))
    return;
  std::vector<int32_t> ids;
  std::string prompt = r.prompt;
  if (r.chat) {
    if (std::optional<ApiError> error = renderChat(r.messages, prompt, ids))
      return replyError(res, *error);
  } else {
    ids = tokenizer.encode(r.prompt, r.addSpecialTokens);
  }
  json body = {{"tokens", ids},
               {"count", ids.size()},
               {"max_model_len", limits.contextLength}};
  if (r.chat)
    body["prompt"] = prompt;
  reply(res, 200, dumpJson(body));
}

void Server::Impl::detokenize(const httplib::Request &req,
                              httplib::Response &res) {
  Parsed<DetokenizeRequest> parsed = parseDetokenizeRequest(req.body, limits);
  if (!parsed.ok)
    return replyError(res, parsed.error);
  if (!checkModel(parsed.request.model, res))
    return;
  reply(res, 200,
        dumpJson({{"prompt", tokenizer.decode(parsed.request.tokens)}}));
}

void Server::Impl::metrics(httplib::Response &res) {
  ServerStats stats;
  {
    std::lock_guard<std::mutex> lock(statsMutex);
    stats.responses = responses;
  }
  stats.httpInFlight = inFlight;
  stats.ready = ready && !draining;
  stats.residentBytes = residentMemoryBytes();
  res.set_content(formatPrometheus(engine.metrics(), stats),
                  "text/plain; version=0.0.4; charset=utf-8");
}

//===----------------------------------------------------------------------===//
// Lifecycle
//===----------------------------------------------------------------------===//

Server::Server(Engine &engine, ServerConfig config, std::string modelName,
               std::string chatTemplate, std::string chatTemplateName)
    : impl(std::make_unique<Impl>(engine, std::move(config),
                                  std::move(modelName), std::move(chatTemplate),
                                  std::move(chatTemplateName))) {}

Server::~Server() {
  shutdown();
  if (impl->drainer.joinable())
    impl->drainer.join();
}

int Server::bind() {
  Impl &s = *impl;
  int port = s.config.port;
  bool bound = port == 0 ? (port = s.http.bind_to_any_port(s.config.host)) > 0
                         : s.http.bind_to_port(s.config.host, port);
  if (!bound)
    throw std::runtime_error("cannot listen on " + s.config.host + ":" +
                             std::to_string(s.config.port) +
                             " (in use, or not an address of this machine)");
  s.http.setBacklog(1024);
  return port;
}

void Server::run() {
  impl->ready = true;
  impl->http.listen_after_bind();
  // listen_after_bind() returns once the workers have finished what they
  // were answering.
  impl->http.forgetSocket();
  // shutdown() starts the drainer under drainMutex, on another thread.
  std::thread drainer;
  {
    std::lock_guard<std::mutex> lock(impl->drainMutex);
    drainer = std::move(impl->drainer);
  }
  if (drainer.joinable())
    drainer.join();
}

void Server::shutdown() {
  Impl &s = *impl;
  std::lock_guard<std::mutex> lock(s.drainMutex);
  if (s.draining.exchange(true)) {
    // Again: cancel what is left now.
    s.cancelAll = true;
    s.activeChanged.notify_all();
    return;
  }
  s.drainer = std::thread([&s] {
    // New connections are refused from here on; accepted ones are answered
    // (a new generation request gets 503: draining).
    s.http.stopAccepting();
    Clock::time_point until =
        Clock::now() +
        std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>(s.config.drainSeconds));
    std::unique_lock<std::mutex> lock(s.activeMutex);
    s.activeChanged.wait_until(
        lock, until, [&] { return s.active.empty() || s.cancelAll.load(); });
    for (RequestId id : s.active)
      s.engine.cancel(id);
  });
}

} // namespace kiln::runtime::server
