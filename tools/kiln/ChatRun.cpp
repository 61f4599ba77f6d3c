//===- ChatRun.cpp - kiln run --chat --------------------------------------===//
//
// Part of Kiln's command line. See ChatRun.h.
//
//===----------------------------------------------------------------------===//

#include "tools/kiln/ChatRun.h"

#include <cstdio>
#include <iostream>
#include <memory>
#include <unistd.h>

namespace kiln {

namespace {

/// One turn: the user's text in, the reply out on stdout.
runtime::ChatReply takeTurn(runtime::Chat &chat, const std::string &user,
                            const ChatRunOptions &o,
                            const runtime::StepFunction &step,
                            const std::function<void()> &forget) {
  chat.addMessage("user", user);
  if (o.printPrompt) {
    std::vector<int32_t> ids = chat.encodePrompt();
    std::fprintf(stderr, "kiln: chat prompt (%zu tokens):\n%s\n", ids.size(),
                 chat.prompt().c_str());
  }
  forget();
  runtime::ChatReply reply =
      chat.respond(step, o.reply, [](const std::string &piece) {
        std::fwrite(piece.data(), 1, piece.size(), stdout);
        std::fflush(stdout);
      });
  std::printf("\n");
  std::fflush(stdout);
  const runtime::GenerationResult &g = reply.generation;
  if (g.hitContextLimit)
    std::fprintf(stderr,
                 "kiln: the conversation reached the model's context length "
                 "of %d positions; --context N raises it\n",
                 o.reply.contextLength);
  else if (!reply.endedTurn)
    std::fprintf(stderr,
                 "kiln: the reply reached -n %d tokens before an end-of-turn "
                 "token\n",
                 o.reply.maxTokens);
  return reply;
}

} // namespace

void printGenerationTimes(const runtime::GenerationResult &result) {
  std::fprintf(stderr,
               "kiln: prefill %d tokens in %.3f s, decode %d tokens in %.3f s "
               "(%.1f tokens/s)\n",
               result.promptTokens, result.prefillSeconds, result.decodedTokens,
               result.decodeSeconds,
               result.decodeSeconds > 0
                   ? result.decodedTokens / result.decodeSeconds
                   : 0.0);
}

int runChat(const ChatRunOptions &o, const runtime::Tokenizer &tokenizer,
            const runtime::StepFunction &step,
            const std::function<void()> &forget) {
  std::unique_ptr<runtime::Chat> chat =
      o.templatePath.empty()
          ? std::make_unique<runtime::Chat>(tokenizer)
          : std::make_unique<runtime::Chat>(
                tokenizer, runtime::readChatTemplateFile(o.templatePath),
                o.templatePath);
  if (chat->usesDefaultTemplate())
    std::fprintf(stderr, "kiln: the model has no chat template; using Kiln's "
                         "default (Llama 2's [INST] format; --chat-template "
                         "FILE gives another)\n");

  if (!o.prompt.empty()) {
    printGenerationTimes(takeTurn(*chat, o.prompt, o, step, forget).generation);
    return 0;
  }

  // A turn a line; a terminal gets a prompt to type after.
  bool terminal = isatty(STDIN_FILENO);
  std::string line;
  for (;;) {
    if (terminal) {
      std::printf("> ");
      std::fflush(stdout);
    }
    if (!std::getline(std::cin, line))
      break;
    if (line.empty())
      continue;
    runtime::ChatReply reply = takeTurn(*chat, line, o, step, forget);
    if (reply.generation.hitContextLimit)
      return 1;
  }
  if (terminal)
    std::printf("\n");
  return 0;
}

} // namespace kiln
