//===- EvalCommand.h - kiln eval --------------------------------*- C++ -*-===//
//
// Part of Kiln's command line. `kiln eval ARTIFACT|MODEL --text FILE
// [--reference OTHER]`: perplexity of the model over a text and, against a
// reference model, the KL divergence and top-1 agreement of their
// next-token distributions (Eval.h; docs/quantization.md). A model file is
// compiled into the compile cache first, as `kiln run` does.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_EVALCOMMAND_H
#define KILN_TOOLS_KILN_EVALCOMMAND_H

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace kiln {

struct EvalOptions {
  std::string model, text, reference;
  int64_t context = 0; ///< tokens a window; 0: the model's context length
  int64_t stride = 0;  ///< between window starts; 0: the context
  int threads = 0;
  bool json = false;
};

/// Adds the `eval` subcommand and its flags to `app`.
CLI::App *addEvalCommand(CLI::App &app, EvalOptions &options);

/// Evaluates and prints the summary (or JSON); returns the exit status.
int runEval(const EvalOptions &options);

} // namespace kiln

#endif // KILN_TOOLS_KILN_EVALCOMMAND_H
