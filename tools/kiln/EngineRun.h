//===- EngineRun.h - kiln run on the engine ---------------------*- C++ -*-===//
//
// Part of Kiln's command line. `kiln run` generates through the engine
// (runtime/engine/Engine.h) whatever runs the steps (a compiled artifact or
// the reference interpreter):
//
//  - one prompt (-p): printed as llama2.c prints it, then the generated
//    text as it arrives, then timing on stderr;
//  - a file of prompts (--prompts FILE --concurrency N): one prompt a line,
//    N requests in flight at once, each prompt's output on its own line in
//    input order (the first unfinished one streams as it is generated,
//    later ones as soon as those before them are done), then a summary on
//    stderr.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_ENGINERUN_H
#define KILN_TOOLS_KILN_ENGINERUN_H

#include "runtime/engine/Engine.h"

#include <string>

namespace kiln {

struct EngineRunOptions {
  /// Positions per prompt, prompt included (llama2.c's -n): a prompt of n
  /// tokens generates steps - n + 1.
  int32_t steps = 256;
  /// Settings every request gets (max_tokens is set from steps).
  runtime::SamplingParams sampling;
};

/// Generates from one prompt, echoing it first.
int runOnePrompt(runtime::Engine &engine, const std::string &prompt,
                 const EngineRunOptions &options);

/// Runs the prompts of `path`, one a line (empty lines are prompts too: BOS
/// alone), `concurrency` at a time. An output's newlines are written as
/// "\n" (and backslashes as "\\") so that it stays on its line.
int runPromptFile(runtime::Engine &engine, const std::string &path,
                  int32_t concurrency, const EngineRunOptions &options);

/// The number of tokens a prompt of `promptTokens` generates under -n.
int32_t tokensToGenerate(int32_t steps, int32_t promptTokens);

} // namespace kiln

#endif // KILN_TOOLS_KILN_ENGINERUN_H
