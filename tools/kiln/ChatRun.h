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

#include <functional>
#include <string>

namespace kiln {

struct ChatRunOptions {
  std::string prompt;       ///< The one user turn; empty: turns from stdin.
  std::string templatePath; ///< --chat-template; empty: the model's.
  bool printPrompt = false; ///< Each rendered prompt on stderr.
  runtime::ChatReplyOptions reply;
};

/// Runs the chat on `step`; `forget` clears the sequence's KV cache before
/// each reply (which prefills the whole conversation again).
int runChat(const ChatRunOptions &options, const runtime::Tokenizer &tokenizer,
            const runtime::StepFunction &step,
            const std::function<void()> &forget);

/// The line `kiln run` ends with on stderr: prefill and decode times.
void printGenerationTimes(const runtime::GenerationResult &result);

} // namespace kiln

#endif // KILN_TOOLS_KILN_CHATRUN_H
