//===- ServeFlags.h - kiln serve's command line -----------------*- C++ -*-===//
//
// Part of Kiln's command line. The `serve` subcommand's flags: one per
// setting of runtime/server/ServerConfig (--port for `port`), each also
// named by its KILN_* variable in --help. MLIR-free (CLI11 and the server's
// settings only), so that test/server's kiln-serve-artifact, which scripts/
// tsan builds with ThreadSanitizer, takes exactly `kiln serve`'s flags.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_SERVEFLAGS_H
#define KILN_TOOLS_KILN_SERVEFLAGS_H

#include "runtime/server/ServerConfig.h"

#include <CLI/CLI.hpp>

#include <map>
#include <string>

namespace kiln {

struct ServeOptions {
  std::string configPath; ///< --config FILE (or KILN_CONFIG)
  /// Each setting's flag and its text, by key (runtime/server/ServerConfig).
  std::map<std::string, std::string> values;
  std::map<std::string, CLI::Option *> flags;
};

/// Adds the `serve` subcommand and its flags to `app`.
CLI::App *addServeCommand(CLI::App &app, ServeOptions &options);

/// The settings given on the command line, each with its flag's name.
runtime::server::Settings serveFlagSettings(const ServeOptions &options);

} // namespace kiln

#endif // KILN_TOOLS_KILN_SERVEFLAGS_H
