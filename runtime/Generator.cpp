//===- Generator.cpp - Text generation over any step executor -------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "runtime/Generator.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <stdexcept>

namespace kiln::runtime {

namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

} // namespace

bool isPrintablePiece(const std::string &piece) {
  if (piece.empty())
    return false;
  if (piece.size() == 1) {
    unsigned char c = static_cast<unsigned char>(piece[0]);
    return std::isprint(c) || std::isspace(c);
  }
  return true;
}

GenerationResult
generate(const Tokenizer &tokenizer, const StepFunction &step,
         const std::string &prompt, const GenerationOptions &options,
         const std::function<void(const std::string &)> &emit) {
  std::vector<int32_t> promptIds = tokenizer.encode(prompt, /*addBos=*/true);
  if (promptIds.empty())
    throw std::invalid_argument("the prompt encodes to no tokens and the "
                                "vocabulary has no BOS");
  return generateFromIds(tokenizer, step, promptIds, options, emit);
}

GenerationResult
generateFromIds(const Tokenizer &tokenizer, const StepFunction &step,
                const std::vector<int32_t> &promptIds,
                const GenerationOptions &options,
                const std::function<void(const std::string &)> &emit) {
  if (promptIds.empty())
    throw std::invalid_argument("generation needs at least one prompt token");
  GenerationResult result;
  const int32_t n = static_cast<int32_t>(promptIds.size());
  const int32_t steps = options.steps;
  const int32_t bos = tokenizer.spec().bosId;
  auto say = [&](int32_t previous, int32_t next) {
    std::string piece = tokenizer.decodePiece(previous, next);
    if (isPrintablePiece(piece))
      emit(piece);
  };

  // The prompt is echoed as llama2.c feeds it, one piece per position.
  int32_t echoed = std::min(n - 1, steps);
  for (int32_t i = 0; options.echoPrompt && i < echoed; ++i)
    say(promptIds[i], promptIds[i + 1]);
  result.tokens.assign(promptIds.begin(), promptIds.begin() + echoed + 1);
  result.promptTokens = n;
  if (steps < n)
    return result;
  if (n > options.contextLength) {
    result.hitContextLimit = true;
    return result;
  }

  Sampler sampler(options.sampler);
  auto start = std::chrono::steady_clock::now();
  StepBatch batch;
  for (int32_t i = 0; i < n; ++i)
    batch.addToken(/*seq=*/0, promptIds[i], i, /*wantLogits=*/i == n - 1);
  std::vector<float> logits = step(batch);
  result.prefillSeconds = secondsSince(start);
  const int32_t vocab = static_cast<int32_t>(logits.size());

  start = std::chrono::steady_clock::now();
  int32_t token = promptIds[n - 1];
  for (int32_t pos = n;; ++pos) {
    int32_t next = sampler.sample(logits.data(), vocab);
    ++result.decodedTokens;
    bool stop = next == bos ||
                std::find(options.stopTokens.begin(), options.stopTokens.end(),
                          next) != options.stopTokens.end();
    if (stop) {
      result.stopToken = next;
      break;
    }
    say(token, next);
    result.tokens.push_back(next);
    token = next;
    if (pos >= steps)
      break;
    if (pos >= options.contextLength) {
      result.hitContextLimit = true;
      break;
    }
    StepBatch decode;
    decode.addToken(0, token, pos, true);
    logits = step(decode);
  }
  result.decodeSeconds = secondsSince(start);
  return result;
}

} // namespace kiln::runtime
