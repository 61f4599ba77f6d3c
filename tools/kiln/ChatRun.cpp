//===- ChatRun.cpp - kiln run --chat --------------------------------------===//
//
// Part of Kiln's command line. See ChatRun.h.
//
//===----------------------------------------------------------------------===//

#include "tools/kiln/ChatRun.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <unistd.h>

namespace kiln {

namespace {

using Clock = std::chrono::steady_clock;

/// One turn: the user's text in, the reply out on stdout.
struct Turn {
  runtime::GenerationResult generation;
  bool endedTurn = false;
  bool failed = false; ///< an error, or the context is full
  bool error = false;
};

Turn takeTurn(runtime::Chat &chat, const std::string &user,
              const ChatRunOptions &o, runtime::Engine &engine) {
  const runtime::Tokenizer &tokenizer = engine.tokenizer();
  chat.addMessage("user", user);
  std::vector<int32_t> ids = chat.encodePrompt();
  if (o.printPrompt)
    std::fprintf(stderr, "kiln: chat prompt (%zu tokens):\n%s\n", ids.size(),
                 chat.prompt().c_str());
  if (ids.empty())
    throw std::invalid_argument(
        "the chat template rendered an empty prompt for the conversation");

  runtime::GenerationRequest request;
  request.promptIds = ids;
  request.sampling = o.sampling;
  request.sampling.maxTokens = std::max(o.maxTokens, 1);
  for (int32_t id : runtime::endOfTurnTokens(tokenizer.spec()))
    request.sampling.stopTokenIds.push_back(id);
  Turn turn;
  runtime::GenerationResult &g = turn.generation;
  g.promptTokens = int32_t(ids.size());
  std::vector<int32_t> reply;
  runtime::TokenEvent event, last;
  Clock::time_point submitted = Clock::now(), first = submitted;
  auto stream = engine.submit(std::move(request));
  while (stream->next(event)) {
    if (event.token >= 0 && ++g.decodedTokens == 1) {
      first = event.time;
      g.prefillSeconds =
          std::chrono::duration<double>(first - submitted).count();
    }
    if (event.token >= 0 && event.finish != runtime::FinishReason::StopToken)
      reply.push_back(event.token);
    std::fwrite(event.text.data(), 1, event.text.size(), stdout);
    std::fflush(stdout);
    if (event.last())
      last = event;
  }
  g.decodeSeconds = std::chrono::duration<double>(last.time - first).count();
  std::printf("\n");
  std::fflush(stdout);
  // The reply as the conversation keeps it: its tokens decoded.
  chat.addMessage("assistant", tokenizer.decode(reply));
  turn.endedTurn = last.finish == runtime::FinishReason::StopToken;
  int64_t context = engine.limits().contextLength;
  if (last.finish == runtime::FinishReason::Error) {
    std::fprintf(stderr, "kiln: %s\n", last.error.c_str());
    turn.failed = turn.error = true;
  } else if (last.promptTokens + last.generatedTokens > context) {
    std::fprintf(stderr,
                 "kiln: the conversation reached the model's context length "
                 "of %lld positions; --context N raises it\n",
                 static_cast<long long>(context));
    turn.failed = true;
  } else if (!turn.endedTurn) {
    std::fprintf(stderr,
                 "kiln: the reply reached -n %d tokens before an end-of-turn "
                 "token\n",
                 o.maxTokens);
  }
  return turn;
}

} // namespace

void printGenerationTimes(const runtime::GenerationResult &result) {
  // The prefill's time ends with the first token sampled; the decode's
  // runs from it to the last, so its rate counts the tokens after the first.
  double rate = result.decodeSeconds > 0 && result.decodedTokens > 1
                    ? (result.decodedTokens - 1) / result.decodeSeconds
                    : 0.0;
  std::fprintf(stderr,
               "kiln: prefill %d tokens in %.3f s, decode %d tokens in %.3f s "
               "(%.1f tokens/s)\n",
               result.promptTokens, result.prefillSeconds, result.decodedTokens,
               result.decodeSeconds, rate);
}

int runChat(const ChatRunOptions &o, runtime::Engine &engine) {
  const runtime::Tokenizer &tokenizer = engine.tokenizer();
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
    Turn turn = takeTurn(*chat, o.prompt, o, engine);
    printGenerationTimes(turn.generation);
    return turn.error ? 1 : 0;
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
    if (takeTurn(*chat, line, o, engine).failed)
      return 1;
  }
  if (terminal)
    std::printf("\n");
  return 0;
}

} // namespace kiln
