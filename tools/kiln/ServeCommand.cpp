//===- ServeCommand.cpp - kiln serve --------------------------------------===//
//
// Part of Kiln's command line. See ServeCommand.h. What the server library
// (runtime/server/Serve.h) cannot do without the compiler: compile a model
// file into the cache, and read a tokenizer file.
//
//===----------------------------------------------------------------------===//

#include "tools/kiln/ServeCommand.h"

#include "tools/kiln/TerminalProgress.h"

#include "codegen/driver/Compiler.h"
#include "codegen/driver/LoadedModel.h"
#include "runtime/Artifact.h"
#include "runtime/server/Serve.h"

namespace kiln {

using runtime::server::ServerConfig;

namespace {

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
  // Before any thread starts (the compiler's included).
  sigset_t signals = runtime::server::blockDrainSignals();
  ServerConfig config =
      runtime::server::resolveServeSettings(o.configPath, serveFlagSettings(o));
  std::string artifact = artifactFor(config);
  std::optional<runtime::Tokenizer> tokenizer;
  if (!config.tokenizer.empty())
    tokenizer.emplace(readTokenizerFile(config.tokenizer));
  return runtime::server::serveArtifact(config, artifact, std::move(tokenizer),
                                        signals);
}

} // namespace kiln
