//===- TextStream.h - A request's generated text, piece by piece -*- C++
//-*-===//
//
// Part of Kiln. Turns one request's generated tokens into the text to show
// as they arrive, and says when and why generation ends:
//
//   token -> stop token?  -> Tokenizer::decodePiece -> Utf8Assembler
//         -> StopStringMatcher -> text to show (maybe empty)
//
// Shown text is always whole UTF-8 characters, never contains a stop
// string, and concatenated over the stream is the request's output.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SAMPLING_TEXTSTREAM_H
#define KILN_RUNTIME_SAMPLING_TEXTSTREAM_H

#include "runtime/Tokenizer.h"
#include "runtime/sampling/SamplingParams.h"
#include "runtime/sampling/StopStringMatcher.h"
#include "runtime/sampling/Utf8Assembler.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::runtime {

enum class FinishReason {
  None,       ///< Still generating.
  StopToken,  ///< A stop token id was sampled.
  StopString, ///< The text reached a stop string.
  Length,     ///< max_tokens, or the caller's limit (the context).
  Cancelled,  ///< The caller ended it.
  Error,      ///< It could not go on (the engine says why).
};

/// "stop_token", "stop_string", "length", "cancelled", "error" or "none".
const char *finishReasonName(FinishReason reason);

struct TextDelta {
  std::string text; ///< New text to show; often empty while text is held.
  FinishReason finish = FinishReason::None;
};

class TextStream {
public:
  /// Stop token ids, stop strings and max_tokens come from `params`
  /// (validated for the tokenizer's vocabulary). `previousToken` is the last
  /// prompt token (-1 if none): the first piece decodes as it would after it
  /// (a ScoreMerge vocabulary drops the leading space after BOS). The
  /// tokenizer must outlive the stream.
  TextStream(const Tokenizer &tokenizer, const SamplingParams &params,
             int32_t previousToken);

  /// Takes the next generated token. A stop token ends the stream without
  /// its text; so does a completed stop string, cut with all after it. On
  /// the max_tokens-th token the stream ends with Length. When the stream
  /// ends, the text held back (an unfinished character as U+FFFD, the start
  /// of a stop string that can no longer complete) is part of the delta.
  /// Throws std::logic_error once the stream has ended.
  TextDelta push(int32_t token);

  /// Ends the stream for a reason outside it (Length when the context is
  /// full, Cancelled), returning the text held back.
  TextDelta finish(FinishReason reason);

  bool finished() const { return reason != FinishReason::None; }
  FinishReason finishReason() const { return reason; }
  /// The stop token or the index of the stop string that ended the stream;
  /// -1 otherwise.
  int32_t stopToken() const { return stoppedBy; }
  int32_t stopStringIndex() const { return matchedStop; }
  /// Everything shown so far.
  const std::string &text() const { return shown; }
  /// Tokens pushed, the stop token included.
  int32_t tokenCount() const { return tokens; }

private:
  TextDelta end(FinishReason why, std::string text);
  void checkOpen() const;

  const Tokenizer &tokenizer;
  std::vector<int32_t> stopTokenIds;
  int32_t maxTokens;
  Utf8Assembler utf8;
  StopStringMatcher stops;
  int32_t previous;
  int32_t tokens = 0;
  FinishReason reason = FinishReason::None;
  int32_t stoppedBy = -1;
  int32_t matchedStop = -1;
  std::string shown;
};

} // namespace kiln::runtime

#endif // KILN_RUNTIME_SAMPLING_TEXTSTREAM_H
