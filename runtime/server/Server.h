//===- Server.h - kiln serve: an OpenAI-compatible HTTP server --*- C++ -*-===//
//
// Part of Kiln's server (docs/server.md). Routes HTTP requests to one
// Engine: completions and chat completions (whole or streamed as
// Server-Sent Events), models, tokenize/detokenize, health, Prometheus
// metrics and a small web page. Around them: API-key authentication, CORS,
// backpressure (a full wait queue is a 503 with Retry-After), per-request
// deadlines, cancellation of requests whose client went away, a JSON log
// line per request, and a draining shutdown.
//
// Threads: cpp-httplib answers each connection on a worker of its pool
// (ServerConfig::resolvedHttpThreads); a streamed response holds its worker
// while it streams, pulling the request's events from the engine. The
// engine's own thread never waits on a client.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SERVER_SERVER_H
#define KILN_RUNTIME_SERVER_SERVER_H

#include "runtime/engine/Engine.h"
#include "runtime/server/ServerConfig.h"

#include <memory>
#include <string>

namespace kiln::runtime::server {

class Server {
public:
  /// Serves `engine` (which must outlive the server) as the model
  /// `modelName`. `chatTemplate` is Jinja source ("" for the model's own
  /// template, or Kiln's default when it has none); a template that does
  /// not parse throws here.
  Server(Engine &engine, ServerConfig config, std::string modelName,
         std::string chatTemplate = "", std::string chatTemplateName = "");
  ~Server();
  Server(const Server &) = delete;
  Server &operator=(const Server &) = delete;

  /// Binds config.host:config.port and returns the port (the one chosen
  /// when config.port is 0). Throws std::runtime_error when it cannot.
  int bind();
  /// Answers requests until shutdown() has finished draining.
  void run();
  /// Safe from any thread (a signal handler's thread), once or more: stops
  /// accepting connections and makes /health 503 at once; requests in
  /// flight may finish for config.drainSeconds, then the rest are
  /// cancelled, and run() returns when their responses are written. A
  /// second call cancels what is left at once.
  void shutdown();

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace kiln::runtime::server

#endif // KILN_RUNTIME_SERVER_SERVER_H
