//===- SamplingParams.h - How one request chooses its tokens ----*- C++ -*-===//
//
// Part of Kiln. The sampling settings a request carries into the engine:
// what shapes the distribution (penalties, bias, temperature, truncation),
// the seed, when generation stops, and what log-probabilities to report.
// docs/sampling.md gives the order they apply in and what each one means.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SAMPLING_SAMPLINGPARAMS_H
#define KILN_RUNTIME_SAMPLING_SAMPLINGPARAMS_H

#include <cstdint>
#include <optional>
#include <stdexcept> // The exception validate() throws.
#include <string>
#include <unordered_map>
#include <vector>

namespace kiln::runtime {

/// Per-request sampling settings. Defaults leave the model's distribution
/// as it is (temperature 1, no truncation, no penalties). Error messages
/// name fields by their OpenAI-style names (in brackets below), which is
/// what a server's users write.
struct SamplingParams {
  /// [temperature] 0 = greedy: the highest logit after penalties and bias,
  /// the lowest id on ties.
  float temperature = 1.0f;
  /// [top_k] Keep the k most likely tokens; 0 = all.
  int32_t topK = 0;
  /// [top_p] Keep the smallest set of most likely tokens whose probability
  /// reaches top_p; in (0, 1], 1 = all.
  float topP = 1.0f;
  /// [min_p] Keep tokens at least min_p times as likely as the most likely
  /// one; in [0, 1], 0 = all.
  float minP = 0.0f;

  /// [repetition_penalty] llama.cpp / Hugging Face style: over the distinct
  /// tokens of the penalty window, a positive logit is divided by it and a
  /// negative one multiplied. > 0; 1 = off.
  float repetitionPenalty = 1.0f;
  /// [repetition_window] How many of the latest prompt and generated tokens
  /// repetition_penalty looks at: -1 = all of them, 0 = none.
  int32_t repetitionWindow = -1;
  /// [presence_penalty], [frequency_penalty] OpenAI's definitions over the
  /// generated tokens: logit -= presence * [count > 0] + frequency * count.
  float presencePenalty = 0.0f;
  float frequencyPenalty = 0.0f;
  /// [logit_bias] token id -> added to its logit; -infinity bans the token.
  std::unordered_map<int32_t, float> logitBias;

  /// [seed] The random stream's seed; without one the sampler draws a seed
  /// from std::random_device (and reports it, so a run can be repeated).
  std::optional<uint64_t> seed;

  /// [stop_token_ids] Generation ends when one of these is sampled; its text
  /// is not emitted.
  std::vector<int32_t> stopTokenIds;
  /// [stop] Generation ends when the text contains one of these (non-empty);
  /// the stop string and anything after it is not emitted.
  std::vector<std::string> stopStrings;
  /// [max_tokens] Generation ends after this many tokens; 0 = no limit here
  /// (the context length still applies).
  int32_t maxTokens = 0;

  /// [logprobs] Report the chosen token's log-probability.
  bool logprobs = false;
  /// [top_logprobs] Report this many most likely tokens with theirs.
  int32_t topLogprobs = 0;
};

/// Throws std::invalid_argument naming the first setting that is out of
/// range and what was expected ("sampling: top_p is 1.5, expected a value
/// in (0, 1]"). Token ids (logit_bias, stop_token_ids) must lie in
/// [0, vocabSize).
void validate(const SamplingParams &params, int32_t vocabSize);

} // namespace kiln::runtime

#endif // KILN_RUNTIME_SAMPLING_SAMPLINGPARAMS_H
