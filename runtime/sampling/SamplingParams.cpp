//===- SamplingParams.cpp - How one request chooses its tokens ------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "runtime/sampling/SamplingParams.h"

#include "runtime/sampling/Utf8Assembler.h"

#include <cmath>
#include <sstream>

namespace kiln::runtime {

namespace {

[[noreturn]] void fail(const std::string &name, double value,
                       const std::string &expected) {
  std::ostringstream message;
  message << "sampling: " << name << " is " << value << ", expected "
          << expected;
  throw std::invalid_argument(message.str());
}

void checkTokenId(const std::string &what, int32_t id, int32_t vocabSize) {
  if (id < 0 || id >= vocabSize)
    throw std::invalid_argument(
        "sampling: " + what + " names token " + std::to_string(id) +
        ", outside the vocabulary (" + std::to_string(vocabSize) + " tokens)");
}

} // namespace

void validate(const SamplingParams &params, int32_t vocabSize) {
  if (vocabSize <= 0)
    throw std::invalid_argument("sampling: the vocabulary size is " +
                                std::to_string(vocabSize) +
                                ", expected at least one token");
  // Written so that NaN fails every range check.
  if (!(params.temperature >= 0.0f) || std::isinf(params.temperature))
    fail("temperature", params.temperature, "a finite value >= 0 (0: greedy)");
  if (params.topK < 0)
    fail("top_k", params.topK, "a value >= 0 (0: all tokens)");
  if (!(params.topP > 0.0f && params.topP <= 1.0f))
    fail("top_p", params.topP, "a value in (0, 1] (1: all tokens)");
  if (!(params.minP >= 0.0f && params.minP <= 1.0f))
    fail("min_p", params.minP, "a value in [0, 1] (0: all tokens)");
  if (!(params.repetitionPenalty > 0.0f) ||
      std::isinf(params.repetitionPenalty))
    fail("repetition_penalty", params.repetitionPenalty,
         "a finite value > 0 (1: off)");
  if (params.repetitionWindow < -1)
    fail("repetition_window", params.repetitionWindow,
         "a token count >= 0, or -1 for the whole sequence");
  if (!std::isfinite(params.presencePenalty))
    fail("presence_penalty", params.presencePenalty, "a finite value");
  if (!std::isfinite(params.frequencyPenalty))
    fail("frequency_penalty", params.frequencyPenalty, "a finite value");
  for (const auto &[id, bias] : params.logitBias) {
    checkTokenId("logit_bias", id, vocabSize);
    // -infinity bans a token; +infinity would make the distribution NaN.
    if (std::isnan(bias) || bias == INFINITY)
      fail("logit_bias of token " + std::to_string(id), bias,
           "a finite value or -infinity (banned)");
  }
  for (int32_t id : params.stopTokenIds)
    checkTokenId("stop_token_ids", id, vocabSize);
  for (size_t i = 0; i < params.stopStrings.size(); ++i) {
    const std::string &stop = params.stopStrings[i];
    if (stop.empty())
      throw std::invalid_argument("sampling: stop string " + std::to_string(i) +
                                  " is empty; it would stop before the "
                                  "first token");
    // Generated text is matched as whole characters; half of one could
    // never match, or would cut a character in two.
    if (!isValidUtf8(stop))
      throw std::invalid_argument("sampling: stop string " + std::to_string(i) +
                                  " is not valid UTF-8");
  }
  if (params.maxTokens < 0)
    fail("max_tokens", params.maxTokens, "a value >= 0 (0: no limit)");
  if (params.topLogprobs < 0)
    fail("top_logprobs", params.topLogprobs, "a value >= 0");
}

} // namespace kiln::runtime
