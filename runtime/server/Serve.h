//===- Serve.h - kiln serve's process: settings, engine, signals -*- C++
//-*-===//
//
// Part of Kiln's server (docs/server.md). What `kiln serve` does once it
// has an artifact, MLIR-free so that it can be built alone: resolve the
// settings (TOML file, KILN_* variables, flags), open the artifact as an
// engine, serve it, and drain on SIGTERM or SIGINT. tools/kiln's serve
// command adds compiling a model file and reading a tokenizer file;
// scripts/tsan builds this with test/server's kiln-serve-artifact under
// ThreadSanitizer and runs the live server tests against it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SERVER_SERVE_H
#define KILN_RUNTIME_SERVER_SERVE_H

#include "runtime/Tokenizer.h"
#include "runtime/server/ServerConfig.h"

#include <csignal>
#include <optional>
#include <string>

namespace kiln::runtime::server {

/// Blocks SIGINT and SIGTERM in the calling thread, so that every thread
/// started after inherits the mask and only serveArtifact's own thread
/// takes them (with sigwait). Call it before any thread starts.
sigset_t blockDrainSignals();

/// The settings: the TOML file at `configPath` (or $KILN_CONFIG when it is
/// empty; none when both are), then KILN_* variables, then `flags`, each
/// winning over the one before. Throws std::invalid_argument naming the
/// setting or file at fault, or when no model is given.
ServerConfig resolveServeSettings(std::string configPath,
                                  const Settings &flags);

/// Serves the artifact at `artifact` as `config` says (its tokenizer, or
/// `tokenizer` when given) until one of `signals` (blockDrainSignals()'s)
/// has drained it; prints the listening address first, on stderr. Returns
/// the exit status: 0 after a drain.
int serveArtifact(const ServerConfig &config, const std::string &artifact,
                  std::optional<Tokenizer> tokenizer, const sigset_t &signals);

} // namespace kiln::runtime::server

#endif // KILN_RUNTIME_SERVER_SERVE_H
