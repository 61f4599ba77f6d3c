//===- ServeArtifact.cpp - kiln serve without the compiler ----------------===//
//
// kiln-serve-artifact serve ARTIFACT [kiln serve's flags]: `kiln serve` on
// an artifact, built from the MLIR-free server library alone
// (runtime/server/Serve.h) with the same flags (tools/kiln/ServeFlags.h).
// scripts/tsan builds it with ThreadSanitizer and runs server_test.py
// against it: building all of `kiln` (MLIR included) instrumented would take
// far longer than the check. Model files and --tokenizer need the compiler:
// they are refused here with a message saying so.
//
//===----------------------------------------------------------------------===//

#include "runtime/Artifact.h"
#include "runtime/server/Serve.h"
#include "tools/kiln/ServeFlags.h"

#include <cstdio>
#include <stdexcept>

int main(int argc, char **argv) {
  using namespace kiln::runtime::server;
  CLI::App app{"kiln serve on an artifact, without the compiler (the live "
               "server's ThreadSanitizer check: scripts/tsan)"};
  kiln::ServeOptions options;
  kiln::addServeCommand(app, options);
  app.require_subcommand(1);
  CLI11_PARSE(app, argc, argv);
  try {
    sigset_t signals = blockDrainSignals();
    ServerConfig config = resolveServeSettings(
        options.configPath, kiln::serveFlagSettings(options));
    if (!kiln::runtime::hasArtifactMagic(config.model))
      throw std::invalid_argument(
          config.model + " is not a Kiln artifact: this test server opens "
                         "artifacts only (`kiln serve` compiles model files)");
    if (!config.tokenizer.empty())
      throw std::invalid_argument("--tokenizer needs the compiler's readers: "
                                  "use `kiln serve`");
    return serveArtifact(config, config.model, std::nullopt, signals);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "kiln-serve-artifact: error: %s\n", e.what());
    return 1;
  }
}
