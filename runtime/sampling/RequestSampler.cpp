//===- RequestSampler.cpp - One request's next-token choice ---------------===//
//
// Part of Kiln. Tokens removed by a step of the chain are dropped from a
// list of kept ids rather than set to -infinity, so the steps after top-k
// or top-p touch a few tokens, not the whole vocabulary. The kept list is
// put back in id order after each truncation: the draw walks the
// cumulative distribution in that order, which must not depend on how a
// standard library's nth_element happens to arrange its output.
//
//===----------------------------------------------------------------------===//

#include "runtime/sampling/RequestSampler.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>

namespace kiln::runtime {

namespace {

uint64_t freshSeed() {
  std::random_device device;
  return static_cast<uint64_t>(device()) << 32 | device();
}

/// Orders ids by logit, highest first, then by id: a total order, so ties
/// at a top-k or top-p boundary go to the lower id on every platform.
struct MoreLikely {
  const std::vector<float> &logits;
  bool operator()(int32_t a, int32_t b) const {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  }
};

} // namespace

RequestSampler::RequestSampler(SamplingParams params, int32_t vocabSize,
                               const std::vector<int32_t> &promptIds)
    : samplingParams(std::move(params)), vocabSize(vocabSize), streamSeed(0),
      random(0) {
  validate(samplingParams, vocabSize);
  streamSeed = samplingParams.seed ? *samplingParams.seed : freshSeed();
  random = SplitMix64(streamSeed);
  for (size_t i = 0; i < promptIds.size(); ++i) {
    if (promptIds[i] < 0 || promptIds[i] >= vocabSize)
      throw std::invalid_argument(
          "sampling: prompt token " + std::to_string(i) + " is " +
          std::to_string(promptIds[i]) + ", outside the vocabulary (" +
          std::to_string(vocabSize) + " tokens)");
    remember(promptIds[i], /*generated=*/false);
  }
}

void RequestSampler::accept(int32_t token) {
  if (token < 0 || token >= vocabSize)
    throw std::invalid_argument("sampling: accepted token " +
                                std::to_string(token) +
                                " is outside the vocabulary (" +
                                std::to_string(vocabSize) + " tokens)");
  remember(token, /*generated=*/true);
}

void RequestSampler::remember(int32_t token, bool generated) {
  tokens.push_back(token);
  if (generated)
    ++generatedCounts[token];
  int32_t window = samplingParams.repetitionWindow;
  if (window == 0)
    return;
  ++windowCounts[token];
  if (window > 0 && tokens.size() > static_cast<size_t>(window)) {
    int32_t leaving = tokens[tokens.size() - window - 1];
    if (--windowCounts[leaving] == 0)
      windowCounts.erase(leaving);
  }
}

//===----------------------------------------------------------------------===//
// The chain
//===----------------------------------------------------------------------===//

void RequestSampler::penalize(std::vector<float> &logits) const {
  const SamplingParams &p = samplingParams;
  for (const auto &[id, bias] : p.logitBias)
    logits[id] += bias;
  // Each distinct token once, however often it repeats (llama.cpp, HF).
  if (p.repetitionPenalty != 1.0f)
    for (const auto &entry : windowCounts) {
      float &z = logits[entry.first];
      z = z > 0 ? z / p.repetitionPenalty : z * p.repetitionPenalty;
    }
  if (p.presencePenalty != 0.0f || p.frequencyPenalty != 0.0f)
    for (const auto &[id, count] : generatedCounts)
      logits[id] -=
          p.presencePenalty + p.frequencyPenalty * static_cast<float>(count);
}

void RequestSampler::weigh(Shaped &out) const {
  out.max = -INFINITY;
  for (int32_t id : out.kept)
    out.max = std::max(out.max, out.logits[id]);
  out.weights.resize(out.kept.size());
  out.sum = 0;
  for (size_t i = 0; i < out.kept.size(); ++i) {
    out.weights[i] = std::exp(out.logits[out.kept[i]] - out.max);
    out.sum += out.weights[i];
  }
}

/// Top-p: keeps the smallest set of most likely tokens holding at least
/// topP of the probability left by top-k. The set needs no sorting, only
/// its least likely member (the boundary): a quickselect weighted by
/// probability finds it in expected linear time. Sorting instead costs
/// milliseconds per token on a 128k vocabulary when the distribution is
/// flat and the set holds thousands of tokens.
void RequestSampler::keepNucleus(Shaped &out) const {
  weigh(out);
  struct Entry {
    int32_t id;
    float weight;
  };
  std::vector<Entry> entries(out.kept.size());
  for (size_t i = 0; i < entries.size(); ++i)
    entries[i] = {out.kept[i], out.weights[i]};
  MoreLikely moreLikely{out.logits};
  auto before = [&](size_t i, size_t j) {
    return moreLikely(entries[i].id, entries[j].id);
  };
  double target = static_cast<double>(samplingParams.topP) * out.sum;

  // entries[0, lo) are the most likely tokens and hold `above` < target;
  // the boundary is in [lo, hi), everything from hi on is less likely.
  size_t lo = 0;
  size_t hi = entries.size();
  double above = 0;
  while (hi - lo > 1) {
    // The median of the first, middle and last as the pivot, moved last.
    size_t a = lo, b = lo + (hi - lo) / 2, c = hi - 1;
    size_t median = before(a, b) ? (before(b, c)   ? b
                                    : before(a, c) ? c
                                                   : a)
                                 : (before(a, c)   ? a
                                    : before(b, c) ? c
                                                   : b);
    std::swap(entries[median], entries[c]);
    const Entry pivot = entries[c];
    auto split = static_cast<size_t>(
        std::partition(
            entries.begin() + lo, entries.begin() + c,
            [&](const Entry &e) { return moreLikely(e.id, pivot.id); }) -
        entries.begin());
    std::swap(entries[split], entries[c]);
    double upper = 0;
    for (size_t i = lo; i < split; ++i)
      upper += entries[i].weight;
    if (above + upper >= target) {
      hi = split;
      continue;
    }
    above += upper + pivot.weight;
    if (above >= target) {
      lo = split;
      hi = split + 1;
      break;
    }
    lo = split + 1;
  }
  // lo == hi only when rounding left the whole list short of the target:
  // then the last token counted is the boundary.
  const Entry boundary = entries[lo < hi ? lo : lo - 1];
  out.kept.erase(
      std::remove_if(out.kept.begin(), out.kept.end(),
                     [&](int32_t id) { return moreLikely(boundary.id, id); }),
      out.kept.end());
}

void RequestSampler::truncate(Shaped &out) const {
  const SamplingParams &p = samplingParams;
  std::vector<int32_t> &kept = out.kept;
  MoreLikely moreLikely{out.logits};

  if (p.topK > 0 && static_cast<size_t>(p.topK) < kept.size()) {
    std::nth_element(kept.begin(), kept.begin() + (p.topK - 1), kept.end(),
                     moreLikely);
    kept.resize(p.topK);
    std::sort(kept.begin(), kept.end());
  }

  if (p.topP < 1.0f && kept.size() > 1)
    keepNucleus(out);

  // Min-p: p >= minP * p_max, that is logit - max >= log(minP).
  if (p.minP > 0.0f) {
    float max = -INFINITY;
    for (int32_t id : kept)
      max = std::max(max, out.logits[id]);
    double floor = std::log(static_cast<double>(p.minP));
    kept.erase(std::remove_if(kept.begin(), kept.end(),
                              [&](int32_t id) {
                                return static_cast<double>(out.logits[id]) -
                                           max <
                                       floor;
                              }),
               kept.end());
  }
}

void RequestSampler::shape(const float *logits, int32_t n, Shaped &out,
                           bool withWeights) const {
  if (n != vocabSize)
    throw std::invalid_argument(
        "sampling: the logits row has " + std::to_string(n) +
        " values, expected one per token of the vocabulary (" +
        std::to_string(vocabSize) + ")");
  out.logits.assign(logits, logits + n);
  for (int32_t id = 0; id < n; ++id)
    // -infinity is a masked token; NaN or +infinity is a broken model.
    if (std::isnan(out.logits[id]) || out.logits[id] == INFINITY)
      throw std::invalid_argument(
          "sampling: the logit of token " + std::to_string(id) + " is " +
          std::to_string(out.logits[id]) + ", expected a number or -infinity");
  penalize(out.logits);
  float temperature = samplingParams.temperature;
  if (temperature > 0.0f)
    for (float &z : out.logits)
      z /= temperature;
  out.kept.clear();
  for (int32_t id = 0; id < n; ++id)
    if (out.logits[id] != -INFINITY)
      out.kept.push_back(id);
  if (out.kept.empty())
    throw std::runtime_error("sampling: no token is possible: every logit is "
                             "-infinity after logit_bias and penalties");
  // Greedy takes the argmax of all tokens; truncation would change nothing.
  if (temperature > 0.0f)
    truncate(out);
  if (withWeights)
    weigh(out);
}

double RequestSampler::logprobOf(const Shaped &shaped, int32_t token) const {
  if (!std::binary_search(shaped.kept.begin(), shaped.kept.end(), token))
    return -INFINITY;
  // In log space, so a token whose weight underflowed keeps its value.
  return static_cast<double>(shaped.logits[token]) - shaped.max -
         std::log(shaped.sum);
}

//===----------------------------------------------------------------------===//
// Sampling
//===----------------------------------------------------------------------===//

SampledToken RequestSampler::sample(const float *logits, int32_t n) {
  const SamplingParams &p = samplingParams;
  bool greedy = p.temperature == 0.0f;
  // Greedy needs no probabilities unless it reports them.
  shape(logits, n, scratch, !greedy || p.logprobs || p.topLogprobs > 0);
  // Drawn for greedy too: the i-th generated token always uses the i-th
  // number of the stream.
  double uniform = random.nextDouble();
  const std::vector<int32_t> &kept = scratch.kept;

  SampledToken result;
  if (greedy) {
    result.token = kept[0];
    for (int32_t id : kept)
      if (scratch.logits[id] > scratch.logits[result.token])
        result.token = id;
  } else {
    // Inverse CDF in id order; rounding can leave target at the very top,
    // where the last token of non-zero weight is the answer.
    double target = uniform * scratch.sum;
    double cumulative = 0;
    for (size_t i = 0; i < kept.size(); ++i) {
      if (scratch.weights[i] == 0.0f)
        continue;
      result.token = kept[i];
      cumulative += scratch.weights[i];
      if (target < cumulative)
        break;
    }
  }

  if (p.logprobs)
    result.logprob = static_cast<float>(logprobOf(scratch, result.token));
  if (p.topLogprobs > 0) {
    std::vector<int32_t> best(kept);
    size_t count = std::min(best.size(), static_cast<size_t>(p.topLogprobs));
    std::partial_sort(best.begin(), best.begin() + count, best.end(),
                      MoreLikely{scratch.logits});
    for (size_t i = 0; i < count; ++i)
      result.topLogprobs.push_back(
          {best[i], static_cast<float>(logprobOf(scratch, best[i]))});
  }
  remember(result.token, /*generated=*/true);
  return result;
}

std::vector<double> RequestSampler::distribution(const float *logits,
                                                 int32_t n) const {
  Shaped shaped;
  shape(logits, n, shaped, /*withWeights=*/true);
  std::vector<double> probabilities(n, 0.0);
  for (size_t i = 0; i < shaped.kept.size(); ++i)
    probabilities[shaped.kept[i]] = shaped.weights[i] / shaped.sum;
  return probabilities;
}

} // namespace kiln::runtime
