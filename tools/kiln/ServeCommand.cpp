//===- ServeCommand.cpp - kiln serve --------------------------------------===//
//
// Part of Kiln's command line. See ServeCommand.h. The glue between the
// command line and runtime/server: settings, compiling a model file, the
// engine, and the signals that drain the server.
//
//===----------------------------------------------------------------------===//

#include "tools/kiln/ServeCommand.h"

#include "tools/kiln/TerminalProgress.h"

#include "codegen/driver/Compiler.h"
#include "codegen/driver/LoadedModel.h"
#include "runtime/Artifact.h"
#include "runtime/ChatTemplate.h"
#include "runtime/MemoryAmount.h"
#include "runtime/engine/CompiledModelExecutor.h"
#include "runtime/server/Server.h"
#include "runtime/server/ServerConfig.h"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <pthread.h>
#include <thread>

namespace kiln {

using runtime::server::ServerConfig;
using runtime::server::Settings;

CLI::App *addServeCommand(CLI::App &app, ServeOptions &o) {
  CLI::App *cmd = app.add_subcommand(
      "serve", "Answer OpenAI-style HTTP requests (/v1/completions, "
               "/v1/chat/completions, ...) with a model (docs/server.md)");
  o.flags["model"] =
      cmd->add_option("model", o.values["model"],
                      "Artifact or model file (or `model` in --config)");
  cmd->add_option("--config", o.configPath,
                  "TOML file of settings (keys as the flags, with _: "
                  "api_key = \"...\"); flags and KILN_* variables win over "
                  "it (default: $KILN_CONFIG)");
  for (const runtime::server::ConfigKey &key : runtime::server::configKeys()) {
    std::string name = key.name;
    if (name == "model")
      continue;
    std::string flag = "--" + name;
    for (char &c : flag)
      if (c == '_')
        c = '-';
    std::string env = "KILN_";
    for (char c : name)
      env += char(std::toupper(static_cast<unsigned char>(c)));
    o.flags[name] = cmd->add_option(flag, o.values[name],
                                    std::string(key.help) + " [" + env + "]");
  }
  return cmd;
}

namespace {

/// The settings given on the command line.
Settings flagSettings(const ServeOptions &o) {
  Settings settings;
  for (const auto &[key, option] : o.flags)
    if (option->count() > 0)
      settings[key] = {o.values.at(key), option->get_name()};
  return settings;
}

/// The artifact to open: the file itself, or a model file compiled into
/// the cache (instant when unchanged).
std::string artifactFor(const ServerConfig &config) {
  if (runtime::hasArtifactMagic(config.model))
    return config.model;
  CompileOptions compile;
  compile.model = config.model;
  compile.tokenizer = config.tokenizer;
  compile.context = config.context;
  TerminalProgress progress(false);
  progress.attach(compile);
  return compiledArtifactFor(compile);
}

} // namespace

int runServe(const ServeOptions &o) {
  // The signals are taken by a thread of ours with sigwait(); blocked here,
  // before any thread starts, they stay blocked in every thread after.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  std::string configPath = o.configPath;
  if (configPath.empty())
    if (const char *env = std::getenv("KILN_CONFIG"))
      configPath = env;
  Settings file;
  if (!configPath.empty())
    file = runtime::server::settingsFromTomlFile(configPath);
  Settings env = runtime::server::settingsFromEnvironment(
      [](const char *name) -> const char * { return std::getenv(name); });
  ServerConfig config =
      runtime::server::resolveServerConfig(file, env, flagSettings(o));
  if (config.model.empty())
    throw std::invalid_argument("kiln serve needs a model: an artifact or "
                                "model file, or `model` in --config");

  std::string artifact = artifactFor(config);
  runtime::CompiledModelOptions model;
  model.threads = config.threads;
  model.contextLength = config.context;
  model.maxSequences = config.concurrency;
  if (!config.kvMemory.empty())
    model.kvMemoryBytes =
        runtime::MemoryAmount::parse(config.kvMemory).resolve();
  runtime::EngineOptions engineOptions;
  engineOptions.maxQueued = config.resolvedMaxQueue();
  engineOptions.scheduler.maxRunning = config.concurrency;
  std::optional<runtime::Tokenizer> tokenizer;
  if (!config.tokenizer.empty())
    tokenizer.emplace(readTokenizerFile(config.tokenizer));
  std::unique_ptr<runtime::Engine> engine = runtime::openArtifactEngine(
      artifact, model, engineOptions, std::move(tokenizer));

  std::string chatTemplate;
  if (!config.chatTemplate.empty())
    chatTemplate = runtime::readChatTemplateFile(config.chatTemplate);
  std::string name = config.modelName.empty()
                         ? std::filesystem::path(config.model).stem().string()
                         : config.modelName;
  if (name.empty())
    name = "model";

  int status = 0;
  {
    runtime::server::Server server(*engine, config, name, chatTemplate,
                                   config.chatTemplate);
    int port = server.bind();
    std::fprintf(stderr,
                 "kiln serve: listening on http://%s:%d (model %s, %d "
                 "sequences at once, %d waiting at most)\n",
                 config.host.c_str(), port, name.c_str(), config.concurrency,
                 config.resolvedMaxQueue());
    std::fflush(stderr);

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
  return status;
}

} // namespace kiln
