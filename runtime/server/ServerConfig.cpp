//===- ServerConfig.cpp - kiln serve's settings ---------------------------===//
//
// Part of Kiln's server. See ServerConfig.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/server/ServerConfig.h"

#include "runtime/MemoryAmount.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace kiln::runtime::server {

const std::vector<ConfigKey> &configKeys() {
  static const std::vector<ConfigKey> keys = {
      {"model", "Artifact or model file to serve"},
      {"tokenizer", "Tokenizer file instead of the model's own"},
      {"chat_template", "Jinja chat template file instead of the model's"},
      {"model_name", "Model id clients use (default: the file's stem)"},
      {"host", "Address to listen on (default 127.0.0.1)"},
      {"port", "Port to listen on; 0: any free port (default 8080)"},
      {"concurrency", "Sequences generated at once (default 32)"},
      {"max_queue",
       "Requests waiting beyond the running ones before 503 (default: twice "
       "the concurrency)"},
      {"request_timeout",
       "Seconds a request may take, queue included (default 600)"},
      {"max_body_bytes", "Largest request body, e.g. 1MiB (default 1MiB)"},
      {"api_key", "Bearer key every endpoint but /health and / requires"},
      {"cors_origin", "Origin allowed cross-origin requests (default: none)"},
      {"io_timeout",
       "Seconds a client may take to send its request or to read a "
       "response before its connection is dropped (default 10)"},
      {"drain_seconds",
       "After SIGTERM/SIGINT, seconds requests in flight may finish "
       "(default 30)"},
      {"threads", "Threads of the model (default: all cores)"},
      {"context", "Positions a sequence may reach (default: the model's)"},
      {"kv_memory", "KV cache pool: bytes (2GiB) or a share of memory (40%)"},
      {"http_threads",
       "HTTP worker threads (default: concurrency + max_queue + 16)"},
      {"log_requests", "A JSON line per request on stderr (default true)"},
  };
  return keys;
}

namespace {

bool isKey(const std::string &name) {
  for (const ConfigKey &k : configKeys())
    if (name == k.name)
      return true;
  return false;
}

[[noreturn]] void bad(const std::string &key, const Setting &s,
                      const std::string &expected) {
  throw std::invalid_argument(s.source + ": '" + key + "' is \"" + s.value +
                              "\", expected " + expected);
}

int64_t toInteger(const std::string &key, const Setting &s, int64_t lo,
                  int64_t hi) {
  const std::string &t = s.value;
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(t, &used, 10);
  } catch (const std::exception &) {
    used = 0;
  }
  if (t.empty() || used != t.size() || v < lo || v > hi)
    bad(key, s,
        "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
            "]");
  return v;
}

double toSeconds(const std::string &key, const Setting &s) {
  const std::string &t = s.value;
  size_t used = 0;
  double v = -1;
  try {
    v = std::stod(t, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  if (t.empty() || used != t.size() || !std::isfinite(v) || v < 0)
    bad(key, s, "a number of seconds >= 0");
  return v;
}

bool toBool(const std::string &key, const Setting &s) {
  std::string t = s.value;
  std::transform(t.begin(), t.end(), t.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  if (t == "true" || t == "1" || t == "yes" || t == "on")
    return true;
  if (t == "false" || t == "0" || t == "no" || t == "off")
    return false;
  bad(key, s, "true or false");
}

void apply(ServerConfig &c, const std::string &key, const Setting &s) {
  const std::string &v = s.value;
  if (key == "model")
    c.model = v;
  else if (key == "tokenizer")
    c.tokenizer = v;
  else if (key == "chat_template")
    c.chatTemplate = v;
  else if (key == "model_name")
    c.modelName = v;
  else if (key == "host")
    c.host = v.empty() ? (bad(key, s, "an address"), v) : v;
  else if (key == "port")
    c.port = int32_t(toInteger(key, s, 0, 65535));
  else if (key == "concurrency")
    c.concurrency = int32_t(toInteger(key, s, 1, 4096));
  else if (key == "max_queue")
    c.maxQueue = int32_t(toInteger(key, s, 0, 1 << 20));
  else if (key == "request_timeout")
    c.requestTimeout = toSeconds(key, s);
  else if (key == "max_body_bytes") {
    try {
      c.maxBodyBytes = MemoryAmount::parse(v).resolve();
    } catch (const std::exception &) {
      bad(key, s, "a size in bytes (65536, 1MiB)");
    }
    if (c.maxBodyBytes <= 0)
      bad(key, s, "a size of at least 1 byte");
  } else if (key == "api_key")
    c.apiKey = v;
  else if (key == "cors_origin")
    c.corsOrigin = v;
  else if (key == "drain_seconds")
    c.drainSeconds = toSeconds(key, s);
  else if (key == "io_timeout") {
    c.ioTimeout = toSeconds(key, s);
    if (c.ioTimeout <= 0)
      bad(key, s, "a number of seconds > 0");
  } else if (key == "threads")
    c.threads = int32_t(toInteger(key, s, 0, 1024));
  else if (key == "context")
    c.context = int32_t(toInteger(key, s, 0, 1 << 24));
  else if (key == "kv_memory") {
    try {
      MemoryAmount::parse(v);
    } catch (const std::exception &) {
      bad(key, s, "bytes (512MiB, 2GiB) or a share of memory (40%)");
    }
    c.kvMemory = v;
  } else if (key == "http_threads")
    c.httpThreads = int32_t(toInteger(key, s, 0, 65536));
  else if (key == "log_requests")
    c.logRequests = toBool(key, s);
  else
    throw std::invalid_argument(s.source + ": unknown setting '" + key + "'");
}

} // namespace

Settings settingsFromToml(const std::string &text, const std::string &name) {
  toml::table table;
  try {
    table = toml::parse(text, name);
  } catch (const toml::parse_error &e) {
    std::ostringstream where;
    where << name << ":" << e.source().begin.line << ":"
          << e.source().begin.column << ": " << e.description();
    throw std::invalid_argument(where.str());
  }
  Settings settings;
  for (auto &&[k, node] : table) {
    std::string key(k.str());
    if (!isKey(key))
      throw std::invalid_argument(name + ": unknown key '" + key +
                                  "' (docs/server.md lists the keys)");
    Setting s{"", name};
    if (auto v = node.value_exact<std::string>())
      s.value = *v;
    else if (auto i = node.value_exact<int64_t>())
      s.value = std::to_string(*i);
    else if (auto d = node.value_exact<double>()) {
      std::ostringstream os;
      os << *d;
      s.value = os.str();
    } else if (auto b = node.value_exact<bool>())
      s.value = *b ? "true" : "false";
    else
      throw std::invalid_argument(name + ": '" + key +
                                  "' must be a string, number or boolean");
    settings[key] = s;
  }
  return settings;
}

Settings settingsFromTomlFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::invalid_argument(path + ": cannot read the configuration file");
  std::ostringstream text;
  text << in.rdbuf();
  return settingsFromToml(text.str(), path);
}

Settings settingsFromEnvironment(
    const std::function<const char *(const char *)> &getenv) {
  Settings settings;
  for (const ConfigKey &k : configKeys()) {
    std::string var = "KILN_";
    for (const char *c = k.name; *c; ++c)
      var += char(std::toupper(static_cast<unsigned char>(*c)));
    if (const char *value = getenv(var.c_str()))
      settings[k.name] = Setting{value, var};
  }
  return settings;
}

ServerConfig resolveServerConfig(const Settings &file, const Settings &env,
                                 const Settings &flags) {
  ServerConfig config;
  for (const Settings *layer : {&file, &env, &flags})
    for (const auto &[key, setting] : *layer)
      apply(config, key, setting);
  return config;
}

} // namespace kiln::runtime::server
