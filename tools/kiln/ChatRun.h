//===- ChatRun.h - kiln run --chat ------------------------------*- C++ -*-===//
//
// Part of Kiln's command line. `kiln run MODEL --chat` talks to the model
// through its chat template (runtime/Chat.h): one user turn from -p, or,
// without -p, a turn per line read from stdin until its end (with a "> "
// prompt when stdin is a terminal), the conversation kept across turns.
// Each reply is printed as it is generated, followed by a newline, and
// ends at an end-of-turn token or after -n tokens.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_CHATRUN_H
#define KILN_TOOLS_KILN_CHATRUN_H

#include "runtime/Chat.h"
#include "runtime/engine/Engine.h"

#include <functional>
#include <string>

namespace kiln {

struct ChatRunOptions {
  std::string prompt;       ///< The one user turn; empty: turns from stdin.
  std::string templatePath; ///< --chat-template; empty: the model's.
  bool printPrompt = false; ///< Each rendered prompt on stderr.
  int32_t maxTokens = 256;  ///< Of each reply.
  runtime::SamplingParams sampling;
};

/// Runs the chat on `engine`: each reply is one request over the whole
/// conversation so far, whose whole KV cache blocks the engine's prefix
/// cache keeps from the previous turn's prompt.
int runChat(const ChatRunOptions &options, runtime::Engine &engine);

/// The line `kiln run` ends with on stderr: prefill and decode times
/// (prefillSeconds: until the first token; decodeSeconds: from the first
/// token to the last).
void printGenerationTimes(const runtime::GenerationResult &result);

} // namespace kiln

#endif // KILN_TOOLS_KILN_CHATRUN_H
