//===- Sampler.cpp - Choosing the next token from logits ------------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "runtime/Sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace kiln::runtime {

Sampler::Sampler(SamplerOptions options)
    : options(options), state(options.seed ? options.seed : 1) {}

int32_t Sampler::argmax(const float *values, int32_t n) {
  int32_t best = 0;
  for (int32_t i = 1; i < n; ++i)
    if (values[i] > values[best])
      best = i;
  return best;
}

// xorshift* as in llama2.c: 24 random bits in [0, 1).
float Sampler::randomFloat() {
  state ^= state >> 12;
  state ^= state << 25;
  state ^= state >> 27;
  uint32_t bits = static_cast<uint32_t>((state * 0x2545F4914F6CDD1Dull) >> 32);
  return static_cast<float>(bits >> 8) / 16777216.0f;
}

int32_t Sampler::sample(const float *logits, int32_t n) {
  if (options.temperature == 0.0f)
    return argmax(logits, n);

  probs.assign(logits, logits + n);
  for (float &p : probs)
    p /= options.temperature;
  if (options.topK > 0 && options.topK < n) {
    // Everything below the k-th largest logit gets probability zero.
    std::vector<float> sorted(probs);
    std::nth_element(sorted.begin(), sorted.begin() + (options.topK - 1),
                     sorted.end(), std::greater<float>());
    float kth = sorted[options.topK - 1];
    for (float &p : probs)
      if (p < kth)
        p = -std::numeric_limits<float>::infinity();
  }
  float max = *std::max_element(probs.begin(), probs.end());
  float sum = 0;
  for (float &p : probs) {
    p = std::exp(p - max);
    sum += p;
  }
  for (float &p : probs)
    p /= sum;

  float coin = randomFloat();
  if (options.topP <= 0.0f || options.topP >= 1.0f) {
    float cdf = 0;
    for (int32_t i = 0; i < n; ++i) {
      cdf += probs[i];
      if (coin < cdf)
        return i;
    }
    return n - 1; // rounding
  }

  // Nucleus: the smallest set of most likely tokens whose mass exceeds top-p.
  // Tokens below (1 - p) / (n - 1) cannot be in it, so they are dropped
  // before sorting, as llama2.c does.
  const float cutoff = (1.0f - options.topP) / static_cast<float>(n - 1);
  order.clear();
  for (int32_t i = 0; i < n; ++i)
    if (probs[i] >= cutoff)
      order.push_back(i);
  // Most likely first; equal probabilities keep id order (a stable sort).
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return probs[a] != probs[b] ? probs[a] > probs[b] : a < b;
  });
  float mass = 0;
  size_t last = order.size() - 1;
  for (size_t i = 0; i < order.size(); ++i) {
    mass += probs[order[i]];
    if (mass > options.topP) {
      last = i;
      break;
    }
  }
  float r = coin * mass, cdf = 0;
  for (size_t i = 0; i <= last; ++i) {
    cdf += probs[order[i]];
    if (r < cdf)
      return order[i];
  }
  return order[last];
}

} // namespace kiln::runtime
