//===- Serve.cpp - kiln serve's process: settings, engine, signals --------===//
//
// Part of Kiln's server. See Serve.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/server/Serve.h"

#include "runtime/ChatTemplate.h"
#include "runtime/MemoryAmount.h"
#include "runtime/engine/CompiledModelExecutor.h"
#include "runtime/server/Server.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <pthread.h>
#include <stdexcept>
#include <thread>

namespace kiln::runtime::server {

sigset_t blockDrainSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

ServerConfig resolveServeSettings(std::string configPath,
                                  const Settings &flags) {
  if (configPath.empty())
    if (const char *env = std::getenv("KILN_CONFIG"))
      configPath = env;
  Settings file;
  if (!configPath.empty())
    file = settingsFromTomlFile(configPath);
  Settings env = settingsFromEnvironment(
      [](const char *name) -> const char * { return std::getenv(name); });
  ServerConfig config = resolveServerConfig(file, env, flags);
  if (config.model.empty())
    throw std::invalid_argument("kiln serve needs a model: an artifact or "
                                "model file, or `model` in --config");
  return config;
}

int serveArtifact(const ServerConfig &config, const std::string &artifact,
                  std::optional<Tokenizer> tokenizer, const sigset_t &signals) {
  CompiledModelOptions model;
  model.threads = config.threads;
  model.contextLength = config.context;
  model.maxSequences = config.concurrency;
  if (!config.kvMemory.empty())
    model.kvMemoryBytes = MemoryAmount::parse(config.kvMemory).resolve();
  EngineOptions engineOptions;
  engineOptions.maxQueued = config.resolvedMaxQueue();
  engineOptions.scheduler.maxRunning = config.concurrency;
  std::unique_ptr<Engine> engine =
      openArtifactEngine(artifact, model, engineOptions, std::move(tokenizer));

  std::string chatTemplate;
  if (!config.chatTemplate.empty())
    chatTemplate = readChatTemplateFile(config.chatTemplate);
  std::string name = config.modelName.empty()
                         ? std::filesystem::path(config.model).stem().string()
                         : config.modelName;
  if (name.empty())
    name = "model";

  {
    Server server(*engine, config, name, chatTemplate, config.chatTemplate);
    int port = server.bind();
    std::fprintf(stderr,
                 "kiln serve: listening on http://%s:%d (model %s, %d "
                 "sequences at once, %d waiting at most)\n",
                 config.host.c_str(), port, name.c_str(), config.concurrency,
                 config.resolvedMaxQueue());
    std::fflush(stderr);

    // The first signal drains, a second cancels what is left; the thread
    // leaves when run() has returned (woken by a signal of our own).
    std::atomic<bool> exiting{false};
    std::thread signalThread([&] {
      for (int received = 0;;) {
        int signal = 0;
        if (sigwait(&signals, &signal) != 0 || exiting)
          return;
        ++received;
        std::fprintf(
            stderr,
            received == 1 ? "kiln serve: %s: draining (up to %g s; again to "
                            "cancel at once)\n"
                          : "kiln serve: %s: cancelling what is left\n",
            signal == SIGINT ? "SIGINT" : "SIGTERM", config.drainSeconds);
        std::fflush(stderr);
        server.shutdown();
      }
    });
    server.run();
    exiting = true;
    pthread_kill(signalThread.native_handle(), SIGTERM);
    signalThread.join();
  }
  engine.reset();
  std::fprintf(stderr, "kiln serve: stopped\n");
  return 0;
}

} // namespace kiln::runtime::server
