//===- Sampler.h - Choosing the next token from logits ----------*- C++ -*-===//
//
// Part of Kiln. llama2.c's sampler, so a seed gives the same text: greedy
// (temperature 0: the highest logit, the lowest id on ties), or sampling from
// softmax(logits / temperature), optionally restricted to the top-k tokens
// and to the nucleus of probability top-p, with xorshift* random numbers.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SAMPLER_H
#define KILN_RUNTIME_SAMPLER_H

#include <cstdint>
#include <vector>

namespace kiln::runtime {

struct SamplerOptions {
  float temperature = 1.0f; ///< 0: greedy.
  float topP = 0.9f;        ///< Outside (0, 1): no nucleus restriction.
  int32_t topK = 0;         ///< 0: no top-k restriction.
  uint64_t seed = 0;        ///< Must not be 0 (xorshift); the CLI picks one.
};

class Sampler {
public:
  explicit Sampler(SamplerOptions options);

  /// The next token for one row of logits.
  int32_t sample(const float *logits, int32_t vocabSize);

  /// Index of the largest value, lowest index on ties.
  static int32_t argmax(const float *values, int32_t n);

private:
  float randomFloat();

  SamplerOptions options;
  uint64_t state;
  std::vector<float> probs;
  std::vector<int32_t> order;
};

} // namespace kiln::runtime

#endif // KILN_RUNTIME_SAMPLER_H
