//===- ServerConfig.h - kiln serve's settings -------------------*- C++ -*-===//
//
// Part of Kiln's server (docs/server.md, "Configuration"). Every setting has
// one key (`port`, `api_key`, ...) that names it in all three places it can
// come from: a TOML file (`port = 8080`), the environment (`KILN_PORT`) and
// the command line (`--port`). Flags win over the environment, which wins
// over the file, which wins over the defaults. Settings arrive as text with
// the place they came from, and are checked once, here, so that an error
// names both ("KILN_PORT: 'port' is 70000, expected a port in [0, 65535]").
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SERVER_SERVERCONFIG_H
#define KILN_RUNTIME_SERVER_SERVERCONFIG_H

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace kiln::runtime::server {

struct ServerConfig {
  std::string model;        ///< artifact or model file
  std::string tokenizer;    ///< instead of the model's own
  std::string chatTemplate; ///< Jinja file instead of the model's template
  std::string modelName;    ///< the id /v1/models reports; "": the file stem
  std::string host = "127.0.0.1";
  int32_t port = 8080; ///< 0: any free port (printed when listening)
  /// Sequences generated at once (the engine's slots).
  int32_t concurrency = 32;
  /// Requests waiting for a slot before the server answers 503; 0: twice
  /// the concurrency.
  int32_t maxQueue = 0;
  /// A request's whole time, queue included, before it ends with an error.
  double requestTimeout = 600;
  int64_t maxBodyBytes = 1 << 20;
  std::string apiKey;     ///< "": no authentication
  std::string corsOrigin; ///< "": no CORS headers
  /// After SIGTERM/SIGINT, how long requests in flight may finish.
  double drainSeconds = 30;
  /// How long a client may take to send its request (a body shorter than
  /// its Content-Length waits this long, then gets 400) or to take a
  /// response's next bytes, before its connection is dropped.
  double ioTimeout = 10;
  int32_t threads = 0;  ///< the model's threads; 0: all cores
  int32_t context = 0;  ///< positions a sequence may reach; 0: the model's
  std::string kvMemory; ///< the KV cache's pool (kiln run --kv-memory)
  /// HTTP worker threads; 0: concurrency + max_queue + 16 (each streaming
  /// request holds one for its whole life).
  int32_t httpThreads = 0;
  bool logRequests = true; ///< a JSON line per request on stderr

  int32_t resolvedMaxQueue() const {
    return maxQueue > 0 ? maxQueue : 2 * concurrency;
  }
  int32_t resolvedHttpThreads() const {
    return httpThreads > 0 ? httpThreads
                           : concurrency + resolvedMaxQueue() + 16;
  }
};

/// One key: its name and what it means (for --help and the docs).
struct ConfigKey {
  const char *name;
  const char *help;
};
const std::vector<ConfigKey> &configKeys();

/// A setting's text and where it came from ("--port", "KILN_PORT",
/// "kiln.toml").
struct Setting {
  std::string value, source;
};
using Settings = std::map<std::string, Setting>;

/// The settings of a TOML document (top-level keys only); `name` names it
/// in errors. Throws std::invalid_argument on a syntax error, an unknown
/// key or a value that is not a string, number or boolean.
Settings settingsFromToml(const std::string &text, const std::string &name);
Settings settingsFromTomlFile(const std::string &path);
/// KILN_<KEY> for every key (KILN_PORT, KILN_API_KEY, ...). Other KILN_
/// variables (KILN_CACHE_DIR) are not settings and are left alone.
Settings settingsFromEnvironment(
    const std::function<const char *(const char *)> &getenv);

/// Defaults, overridden by `file`, then `env`, then `flags`. Throws
/// std::invalid_argument naming the source and key of a bad value.
ServerConfig resolveServerConfig(const Settings &file, const Settings &env,
                                 const Settings &flags);

} // namespace kiln::runtime::server

#endif // KILN_RUNTIME_SERVER_SERVERCONFIG_H
