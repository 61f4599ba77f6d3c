//===- ServeCommand.h - kiln serve ------------------------------*- C++ -*-===//
//
// Part of Kiln's command line. `kiln serve ARTIFACT|MODEL` answers
// OpenAI-style HTTP requests with the model (runtime/server,
// docs/server.md). A model file is compiled into the compile cache first,
// as `kiln run` does. Every setting is a flag (--port), an environment
// variable (KILN_PORT) and a key of the --config TOML file (port), in that
// order of precedence.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_SERVECOMMAND_H
#define KILN_TOOLS_KILN_SERVECOMMAND_H

#include "tools/kiln/ServeFlags.h"

namespace kiln {

/// Serves until SIGTERM or SIGINT has drained the requests in flight;
/// returns the exit status (0 after a drain).
int runServe(const ServeOptions &options);

} // namespace kiln

#endif // KILN_TOOLS_KILN_SERVECOMMAND_H
