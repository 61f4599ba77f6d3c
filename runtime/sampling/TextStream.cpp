//===- TextStream.cpp - A request's generated text, piece by piece --------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "runtime/sampling/TextStream.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace kiln::runtime {

const char *finishReasonName(FinishReason reason) {
  switch (reason) {
  case FinishReason::None:
    return "none";
  case FinishReason::StopToken:
    return "stop_token";
  case FinishReason::StopString:
    return "stop_string";
  case FinishReason::Length:
    return "length";
  case FinishReason::Cancelled:
    return "cancelled";
  case FinishReason::Error:
    return "error";
  }
  return "unknown";
}

namespace {
const SamplingParams &validated(const SamplingParams &params,
                                int32_t vocabSize) {
  validate(params, vocabSize);
  return params;
}
} // namespace

TextStream::TextStream(const Tokenizer &tokenizer, const SamplingParams &params,
                       int32_t previousToken)
    : tokenizer(tokenizer),
      stopTokenIds(validated(params, tokenizer.vocabSize()).stopTokenIds),
      maxTokens(params.maxTokens), stops(params.stopStrings),
      previous(previousToken) {
  if (previousToken < -1 || previousToken >= tokenizer.vocabSize())
    throw std::invalid_argument(
        "text stream: the previous token " + std::to_string(previousToken) +
        " is outside the vocabulary (" + std::to_string(tokenizer.vocabSize()) +
        " tokens; -1 for none)");
}

void TextStream::checkOpen() const {
  if (finished())
    throw std::logic_error(std::string("text stream: already finished (") +
                           finishReasonName(reason) + ")");
}

TextDelta TextStream::push(int32_t token) {
  checkOpen();
  if (token < 0 || token >= tokenizer.vocabSize())
    throw std::out_of_range("text stream: token " + std::to_string(token) +
                            " is outside the vocabulary (" +
                            std::to_string(tokenizer.vocabSize()) + " tokens)");
  ++tokens;
  if (std::find(stopTokenIds.begin(), stopTokenIds.end(), token) !=
      stopTokenIds.end()) {
    stoppedBy = token;
    return end(FinishReason::StopToken, "");
  }
  std::string bytes = tokenizer.decodePiece(previous, token);
  previous = token;
  StopStringMatcher::Result result = stops.push(utf8.push(bytes));
  if (result.matched >= 0) {
    matchedStop = result.matched;
    reason = FinishReason::StopString;
    shown += result.text;
    return {std::move(result.text), reason};
  }
  if (maxTokens > 0 && tokens >= maxTokens)
    return end(FinishReason::Length, std::move(result.text));
  shown += result.text;
  return {std::move(result.text), FinishReason::None};
}

TextDelta TextStream::finish(FinishReason why) {
  checkOpen();
  if (why != FinishReason::Length && why != FinishReason::Cancelled)
    throw std::invalid_argument(
        std::string("text stream: finish() takes length or cancelled, not ") +
        finishReasonName(why) + "; the stream finds the others itself");
  return end(why, "");
}

TextDelta TextStream::end(FinishReason why, std::string text) {
  // Nothing more will come: an unfinished character is cut (U+FFFD), and
  // the text held as a possible stop string is shown -- unless the cut
  // character completes one.
  StopStringMatcher::Result last = stops.push(utf8.finish());
  text += last.text;
  if (last.matched >= 0) {
    why = FinishReason::StopString;
    matchedStop = last.matched;
    stoppedBy = -1;
  } else {
    text += stops.finish();
  }
  reason = why;
  shown += text;
  return {std::move(text), why};
}

} // namespace kiln::runtime
