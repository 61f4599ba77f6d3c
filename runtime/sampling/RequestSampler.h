//===- RequestSampler.h - One request's next-token choice -------*- C++ -*-===//
//
// Part of Kiln. One RequestSampler per request. It turns the request's row
// of logits into a token through a fixed chain (llama.cpp's order for bias
// and penalties, then Hugging Face's and vLLM's order for the rest):
//
//   logit bias -> repetition penalty -> presence/frequency penalties
//     -> temperature -> top-k -> top-p -> min-p -> draw
//
// Temperature comes before the truncations, as in Hugging Face and vLLM;
// llama.cpp's default chain applies it last, so there top-p and min-p cut
// the untempered distribution (top-k does not care: scaling keeps the
// order). Temperature 0 is greedy: the argmax after bias and penalties.
//
// A sample depends only on the request's logits row, its own history
// (prompt and generated tokens) and its seed: the random stream is the
// request's own SplitMix64, advanced exactly once per sample() (greedy
// too), so what else a batch holds, or in which order requests are
// sampled, changes nothing.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SAMPLING_REQUESTSAMPLER_H
#define KILN_RUNTIME_SAMPLING_REQUESTSAMPLER_H

#include "runtime/sampling/SamplingParams.h"
#include "runtime/sampling/SplitMix64.h"

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace kiln::runtime {

struct TokenLogprob {
  int32_t token;
  float logprob;
};

struct SampledToken {
  int32_t token = -1;
  /// With SamplingParams::logprobs: log p(token) under distribution() (the
  /// distribution after penalties, bias, temperature and truncation).
  std::optional<float> logprob;
  /// The SamplingParams::topLogprobs most likely tokens under the same
  /// distribution, most likely first (lower id first on ties); fewer when
  /// truncation left fewer tokens with a non-zero probability.
  std::vector<TokenLogprob> topLogprobs;
};

class RequestSampler {
public:
  /// Validates `params` for a vocabulary of `vocabSize` tokens (throws
  /// std::invalid_argument). `promptIds` start the history the repetition
  /// penalty looks at.
  RequestSampler(SamplingParams params, int32_t vocabSize,
                 const std::vector<int32_t> &promptIds = {});

  /// The next token for one row of `n` logits (n must be the vocabulary
  /// size). Records it in the history and advances the random stream by one
  /// draw. Throws std::invalid_argument on a NaN or +infinity logit and
  /// std::runtime_error when bias and penalties leave no token possible.
  SampledToken sample(const float *logits, int32_t n);

  /// The distribution sample() would draw from now, one probability per
  /// token (0 for tokens the truncations removed). With temperature 0 it is
  /// the softmax of the logits after bias and penalties at temperature 1,
  /// whose argmax greedy picks. Changes nothing.
  std::vector<double> distribution(const float *logits, int32_t n) const;

  /// Adds a token the caller chose to the history, as if it was sampled
  /// (without a draw).
  void accept(int32_t token);

  const SamplingParams &params() const { return samplingParams; }
  /// The seed the random stream started from (drawn when params had none).
  uint64_t seed() const { return streamSeed; }
  /// Prompt and accepted tokens, oldest first.
  const std::vector<int32_t> &history() const { return tokens; }

private:
  /// The logits row after every step of the chain but the draw.
  struct Shaped {
    std::vector<float> logits;  ///< After bias, penalties and temperature.
    std::vector<int32_t> kept;  ///< Tokens left by truncation, by id.
    std::vector<float> weights; ///< exp(logit - max) of each kept token.
    double sum = 0;             ///< Of the weights.
    float max = 0;              ///< The largest kept logit.
  };

  void shape(const float *logits, int32_t n, Shaped &out,
             bool withWeights) const;
  void penalize(std::vector<float> &logits) const;
  void truncate(Shaped &out) const;
  void keepNucleus(Shaped &out) const;
  void weigh(Shaped &out) const;
  double logprobOf(const Shaped &shaped, int32_t token) const;
  void remember(int32_t token, bool generated);

  SamplingParams samplingParams;
  int32_t vocabSize;
  uint64_t streamSeed;
  SplitMix64 random;
  std::vector<int32_t> tokens;
  /// Occurrences in the repetition window, and among generated tokens.
  std::unordered_map<int32_t, int32_t> windowCounts;
  std::unordered_map<int32_t, int32_t> generatedCounts;
  /// Reused by sample(), so the vocabulary-sized rows are allocated once.
  Shaped scratch;
};

} // namespace kiln::runtime

#endif // KILN_RUNTIME_SAMPLING_REQUESTSAMPLER_H
