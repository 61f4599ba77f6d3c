//===- RequestSamplerTest.cpp - Per-request sampling ----------------------===//
//
// Part of Kiln's unit tests. The sampler's distributions against ones
// computed here independently in double precision, its samples against
// those distributions (chi-square), and its seeds against batch order.
//
//===----------------------------------------------------------------------===//

#include "runtime/sampling/RequestSampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

using kiln::runtime::RequestSampler;
using kiln::runtime::SampledToken;
using kiln::runtime::SamplingParams;
using kiln::runtime::SplitMix64;

namespace {

/// Distinct values, not in order, no two within 0.1 of each other near the
/// truncation boundaries the tests use.
const std::vector<float> kLogits = {1.0f, 2.5f, -0.5f, 2.0f, 0.3f,  -1.2f,
                                    1.7f, 0.0f, -2.5f, 0.9f, -0.1f, 1.3f};
const int32_t kVocab = static_cast<int32_t>(kLogits.size());

SamplingParams seeded(uint64_t seed) {
  SamplingParams params;
  params.seed = seed;
  return params;
}

//===----------------------------------------------------------------------===//
// The exact distributions, written as their definitions read
//===----------------------------------------------------------------------===//

/// softmax over `kept` of `logits`, zero elsewhere.
std::vector<double> softmaxOver(const std::vector<double> &logits,
                                const std::vector<int32_t> &kept) {
  double max = -INFINITY;
  for (int32_t id : kept)
    max = std::max(max, logits[id]);
  std::vector<double> p(logits.size(), 0.0);
  double sum = 0;
  for (int32_t id : kept)
    sum += p[id] = std::exp(logits[id] - max);
  for (int32_t id : kept)
    p[id] /= sum;
  return p;
}

/// temperature -> top-k -> top-p -> min-p, each on what the one before left.
std::vector<double> exactDistribution(const std::vector<double> &logits,
                                      double temperature, int32_t topK,
                                      double topP, double minP) {
  std::vector<double> z(logits);
  for (double &v : z)
    v /= temperature;
  std::vector<int32_t> order(z.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return z[a] > z[b] || (z[a] == z[b] && a < b);
  });
  std::vector<int32_t> kept(order);
  if (topK > 0 && static_cast<size_t>(topK) < kept.size())
    kept.resize(topK);
  std::vector<double> p = softmaxOver(z, kept);
  double cumulative = 0;
  size_t size = 0;
  while (size < kept.size() && cumulative < topP)
    cumulative += p[kept[size++]];
  kept.resize(size);
  p = softmaxOver(z, kept);
  double pMax = p[kept[0]];
  kept.erase(std::remove_if(kept.begin(), kept.end(),
                            [&](int32_t id) { return p[id] < minP * pMax; }),
             kept.end());
  return softmaxOver(z, kept);
}

std::vector<double> toDouble(const std::vector<float> &values) {
  return std::vector<double>(values.begin(), values.end());
}

void expectDistributionsNear(const std::vector<double> &actual,
                             const std::vector<double> &expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    EXPECT_NEAR(actual[i], expected[i], 1e-6) << "token " << i;
}

//===----------------------------------------------------------------------===//
// Samples against the exact distribution
//===----------------------------------------------------------------------===//

/// Chi-square critical values at p = 0.001 by degrees of freedom (1..11):
/// a correct sampler exceeds them once in a thousand seeds.
double chiSquareCritical001(size_t degreesOfFreedom) {
  static const double kTable[] = {10.828, 13.816, 16.266, 18.467,
                                  20.515, 22.458, 24.322, 26.124,
                                  27.877, 29.588, 31.264};
  return kTable[degreesOfFreedom - 1];
}

/// How often each token comes in `samples` draws.
std::vector<int> countSamples(RequestSampler &sampler, int samples) {
  std::vector<int> counts(kVocab, 0);
  for (int i = 0; i < samples; ++i)
    ++counts[sampler.sample(kLogits.data(), kVocab).token];
  return counts;
}

/// Pearson's statistic of `counts` against `expected` over the tokens of
/// non-zero probability, and how many those are.
std::pair<double, size_t> chiSquareOf(const std::vector<int> &counts,
                                      const std::vector<double> &expected,
                                      int samples) {
  double chiSquare = 0;
  size_t categories = 0;
  for (size_t id = 0; id < counts.size(); ++id) {
    if (expected[id] == 0)
      continue;
    double e = expected[id] * samples;
    chiSquare += (counts[id] - e) * (counts[id] - e) / e;
    ++categories;
  }
  return {chiSquare, categories};
}

struct ChainCase {
  const char *name;
  uint64_t seed;
  float temperature;
  int32_t topK;
  float topP;
  float minP;
  int32_t kept; ///< Tokens of non-zero probability.
};

const ChainCase kChainCases[] = {
    {"temperature", 1, 0.7f, 0, 1.0f, 0.0f, 12},
    {"top_k", 2, 1.0f, 5, 1.0f, 0.0f, 5},
    // 0.657 of the mass in the top three, 0.753 in the top four.
    {"top_p", 3, 1.0f, 0, 0.7f, 0.0f, 4},
    // Logits within ln(1 / 0.15) = 1.90 of the largest, 2.5.
    {"min_p", 4, 1.0f, 0, 1.0f, 0.15f, 6},
    {"whole_chain", 5, 1.3f, 8, 0.9f, 0.05f, 6},
};

class RequestSamplerChiSquare : public ::testing::TestWithParam<ChainCase> {};

/// 100k samples against the exact distribution: tokens of probability 0
/// never come, and Pearson's statistic over the k others (k - 1 degrees of
/// freedom; every expected count here is above 30) stays under the
/// p = 0.001 critical value.
TEST_P(RequestSamplerChiSquare, SamplesFollowTheExactDistribution) {
  constexpr int kSamples = 100000;
  const ChainCase &c = GetParam();
  SamplingParams params = seeded(c.seed);
  params.temperature = c.temperature;
  params.topK = c.topK;
  params.topP = c.topP;
  params.minP = c.minP;
  std::vector<double> expected = exactDistribution(
      toDouble(kLogits), c.temperature, c.topK, c.topP, c.minP);
  ASSERT_EQ(std::count(expected.begin(), expected.end(), 0.0), kVocab - c.kept);
  RequestSampler sampler(params, kVocab);
  expectDistributionsNear(sampler.distribution(kLogits.data(), kVocab),
                          expected);
  std::vector<int> counts = countSamples(sampler, kSamples);
  for (int32_t id = 0; id < kVocab; ++id) {
    if (expected[id] == 0)
      EXPECT_EQ(counts[id], 0) << "token " << id << " has probability 0";
    else
      ASSERT_GT(expected[id] * kSamples, 30.0) << "token " << id;
  }
  auto [chiSquare, categories] = chiSquareOf(counts, expected, kSamples);
  EXPECT_LT(chiSquare, chiSquareCritical001(categories - 1))
      << categories - 1 << " degrees of freedom";
}

INSTANTIATE_TEST_SUITE_P(Chains, RequestSamplerChiSquare,
                         ::testing::ValuesIn(kChainCases),
                         [](const ::testing::TestParamInfo<ChainCase> &info) {
                           return std::string(info.param.name);
                         });

TEST(RequestSamplerChiSquareCheck, RejectsTheWrongDistribution) {
  // The check can fail: the temperature-1 samples against the 0.7 exact
  // distribution give a statistic far past the bound.
  RequestSampler sampler(seeded(6), kVocab);
  std::vector<double> wrong =
      exactDistribution(toDouble(kLogits), 0.7, 0, 1.0, 0.0);
  EXPECT_GT(chiSquareOf(countSamples(sampler, 100000), wrong, 100000).first,
            1000.0);
}

TEST(RequestSamplerTruncation, TopPOverManyTokensMatchesTheDefinition) {
  // Nearly flat over 1000 tokens: nuclei from a handful of tokens to nearly
  // all of them, each boundary found by the sampler's weighted quickselect.
  SplitMix64 random(11);
  std::vector<float> logits(1000);
  for (float &z : logits)
    z = static_cast<float>(random.nextDouble());
  for (float topP : {0.01f, 0.3f, 0.9f, 0.999f}) {
    SamplingParams params = seeded(0);
    params.topP = topP;
    RequestSampler sampler(params, 1000);
    expectDistributionsNear(
        sampler.distribution(logits.data(), 1000),
        exactDistribution(toDouble(logits), 1.0, 0, topP, 0.0));
  }
}

TEST(RequestSamplerTruncation, TopPAlwaysKeepsTheMostLikelyToken) {
  // 0.55 of the mass is past top_p = 0.1 alone: the nucleus is that token.
  SamplingParams params = seeded(0);
  params.topP = 0.1f;
  std::vector<float> logits = {0.0f, 0.2f};
  RequestSampler sampler(params, 2);
  EXPECT_EQ(sampler.distribution(logits.data(), 2),
            (std::vector<double>{0.0, 1.0}));
}

//===----------------------------------------------------------------------===//
// Penalties and bias
//===----------------------------------------------------------------------===//

TEST(RequestSamplerPenalties, RepetitionDividesPositiveMultipliesNegative) {
  SamplingParams params = seeded(0);
  params.repetitionPenalty = 2.0f;
  // Token 1 (2.5) and token 2 (-0.5) were seen, token 1 twice: once each.
  RequestSampler sampler(params, kVocab, {1, 2, 1});
  std::vector<double> z = toDouble(kLogits);
  z[1] /= 2.0;
  z[2] *= 2.0;
  std::vector<int32_t> all(kVocab);
  std::iota(all.begin(), all.end(), 0);
  expectDistributionsNear(sampler.distribution(kLogits.data(), kVocab),
                          softmaxOver(z, all));
}

TEST(RequestSamplerPenalties, RepetitionWindowSeesTheLatestTokens) {
  SamplingParams params = seeded(0);
  params.repetitionPenalty = 1.5f;
  params.repetitionWindow = 2;
  // Prompt {3, 6}, then 9 generated: the window holds 6 and 9, not 3.
  RequestSampler sampler(params, kVocab, {3, 6});
  sampler.accept(9);
  std::vector<double> z = toDouble(kLogits);
  z[6] /= 1.5;
  z[9] /= 1.5;
  std::vector<int32_t> all(kVocab);
  std::iota(all.begin(), all.end(), 0);
  expectDistributionsNear(sampler.distribution(kLogits.data(), kVocab),
                          softmaxOver(z, all));
}

TEST(RequestSamplerPenalties, PresenceAndFrequencyCountGeneratedTokens) {
  SamplingParams params = seeded(0);
  params.presencePenalty = 0.4f;
  params.frequencyPenalty = 0.3f;
  // Token 4 is in the prompt only: OpenAI's penalties leave it alone.
  RequestSampler sampler(params, kVocab, {4});
  sampler.accept(1);
  sampler.accept(7);
  sampler.accept(1);
  std::vector<double> z = toDouble(kLogits);
  z[1] -= 0.4 + 0.3 * 2;
  z[7] -= 0.4 + 0.3 * 1;
  std::vector<int32_t> all(kVocab);
  std::iota(all.begin(), all.end(), 0);
  expectDistributionsNear(sampler.distribution(kLogits.data(), kVocab),
                          softmaxOver(z, all));
}

TEST(RequestSamplerPenalties, BiasAddsAndMinusInfinityBans) {
  SamplingParams params = seeded(7);
  params.logitBias = {{8, 3.0f}, {1, -INFINITY}};
  RequestSampler sampler(params, kVocab);
  std::vector<double> z = toDouble(kLogits);
  z[8] += 3.0;
  std::vector<int32_t> allBut1;
  for (int32_t id = 0; id < kVocab; ++id)
    if (id != 1)
      allBut1.push_back(id);
  expectDistributionsNear(sampler.distribution(kLogits.data(), kVocab),
                          softmaxOver(z, allBut1));
  for (int i = 0; i < 2000; ++i)
    ASSERT_NE(sampler.sample(kLogits.data(), kVocab).token, 1);
}

TEST(RequestSamplerPenalties, BiasComesBeforeTheRepetitionPenalty) {
  // Token 2's logit -0.5 plus bias 1 is 0.5, then divided by 2: 0.25. The
  // other order would give -0.5 * 2 + 1 = 0.
  SamplingParams params = seeded(0);
  params.logitBias = {{2, 1.0f}};
  params.repetitionPenalty = 2.0f;
  params.temperature = 0.0f;
  std::vector<float> logits(4, -10.0f);
  logits[0] = 0.1f;
  logits[2] = -0.5f;
  RequestSampler sampler(params, 4, {2});
  EXPECT_EQ(sampler.sample(logits.data(), 4).token, 2);
}

TEST(RequestSamplerPenalties, EveryTokenBannedIsAnError) {
  SamplingParams params = seeded(0);
  for (int32_t id = 0; id < kVocab; ++id)
    params.logitBias[id] = -INFINITY;
  RequestSampler sampler(params, kVocab);
  EXPECT_THROW(sampler.sample(kLogits.data(), kVocab), std::runtime_error);
}

//===----------------------------------------------------------------------===//
// Greedy, seeds and logprobs
//===----------------------------------------------------------------------===//

TEST(RequestSamplerGreedy, ArgmaxWithLowestIdOnTies) {
  SamplingParams params = seeded(0);
  params.temperature = 0.0f;
  RequestSampler sampler(params, 6);
  std::vector<float> logits = {0.5f, 3.0f, -1.0f, 3.0f, 2.9f, 3.0f};
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(sampler.sample(logits.data(), 6).token, 1);
  // Penalties apply first: with token 1 repeated, 3 is the first of the max.
  params.repetitionPenalty = 1.1f;
  RequestSampler penalized(params, 6, {1});
  EXPECT_EQ(penalized.sample(logits.data(), 6).token, 3);
}

/// Logits for request `request` at step `step`: random but fixed, as a
/// model's would be for a given sequence.
std::vector<float> stepLogits(int request, int step) {
  SplitMix64 random(static_cast<uint64_t>(request) * 1000003u + step);
  std::vector<float> logits(kVocab);
  for (float &z : logits)
    z = static_cast<float>(random.nextDouble() * 6.0 - 3.0);
  return logits;
}

/// Four requests with different settings, all of which use their history.
std::vector<SamplingParams> fourRequests() {
  std::vector<SamplingParams> requests(4);
  for (size_t r = 0; r < requests.size(); ++r) {
    requests[r].seed = 100 + r;
    requests[r].repetitionPenalty = 1.3f;
    requests[r].frequencyPenalty = 0.2f;
  }
  requests[1].topK = 4;
  requests[2].topP = 0.8f;
  requests[3].minP = 0.1f;
  requests[3].temperature = 1.5f;
  return requests;
}

TEST(RequestSamplerSeed, SamplesDoNotDependOnTheBatch) {
  constexpr int kSteps = 64;
  std::vector<SamplingParams> requests = fourRequests();
  std::vector<std::vector<int32_t>> alone(requests.size());
  for (size_t r = 0; r < requests.size(); ++r) {
    RequestSampler sampler(requests[r], kVocab, {0, 5});
    for (int step = 0; step < kSteps; ++step)
      alone[r].push_back(
          sampler.sample(stepLogits(r, step).data(), kVocab).token);
  }
  // Interleaved, in an order that changes every step, with requests
  // joining late (request 3 starts when the others are at step 10).
  std::vector<RequestSampler> samplers;
  for (const SamplingParams &params : requests)
    samplers.emplace_back(params, kVocab, std::vector<int32_t>{0, 5});
  std::vector<std::vector<int32_t>> batched(requests.size());
  SplitMix64 shuffle(42);
  for (int round = 0; round < kSteps + 10; ++round) {
    std::vector<size_t> order = {0, 1, 2, 3};
    for (size_t i = order.size() - 1; i > 0; --i)
      std::swap(order[i], order[shuffle.next() % (i + 1)]);
    for (size_t r : order) {
      int step = static_cast<int>(batched[r].size());
      if (step == kSteps || (r == 3 && round < 10))
        continue;
      batched[r].push_back(
          samplers[r].sample(stepLogits(r, step).data(), kVocab).token);
    }
  }
  for (size_t r = 0; r < requests.size(); ++r)
    EXPECT_EQ(batched[r], alone[r]) << "request " << r;
  // And the seed matters: the streams of requests 0 and 1 differ.
  EXPECT_NE(alone[0], alone[1]);
}

TEST(RequestSamplerSeed, SplitMix64MatchesTheReference) {
  // Vigna's splitmix64.c from state 0.
  SplitMix64 random(0);
  EXPECT_EQ(random.next(), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(random.next(), 0x6E789E6AA1B965F4ull);
  EXPECT_EQ(random.next(), 0x06C45D188009454Full);
}

TEST(RequestSamplerSeed, WithoutASeedOneIsDrawnAndReported) {
  RequestSampler first(SamplingParams{}, kVocab);
  RequestSampler again(seeded(first.seed()), kVocab);
  for (int i = 0; i < 20; ++i)
    EXPECT_EQ(first.sample(kLogits.data(), kVocab).token,
              again.sample(kLogits.data(), kVocab).token);
}

TEST(RequestSamplerLogprobs, ChosenAndTopNAreTheFinalLogSoftmax) {
  SamplingParams params = seeded(9);
  params.temperature = 0.8f;
  params.topK = 6;
  params.logprobs = true;
  params.topLogprobs = 3;
  params.repetitionWindow = 0;
  RequestSampler sampler(params, kVocab);
  std::vector<double> p =
      exactDistribution(toDouble(kLogits), 0.8, 6, 1.0, 0.0);
  for (int i = 0; i < 50; ++i) {
    SampledToken sampled = sampler.sample(kLogits.data(), kVocab);
    ASSERT_TRUE(sampled.logprob.has_value());
    EXPECT_NEAR(*sampled.logprob, std::log(p[sampled.token]), 1e-5);
    // Logits 2.5, 2.0, 1.7 are tokens 1, 3, 6.
    ASSERT_EQ(sampled.topLogprobs.size(), 3u);
    const int32_t top[] = {1, 3, 6};
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(sampled.topLogprobs[k].token, top[k]);
      EXPECT_NEAR(sampled.topLogprobs[k].logprob, std::log(p[top[k]]), 1e-5);
    }
  }
}

TEST(RequestSamplerLogprobs, TopNStopsAtTheTruncation) {
  SamplingParams params = seeded(9);
  params.topK = 2;
  params.topLogprobs = 5;
  RequestSampler sampler(params, kVocab);
  SampledToken sampled = sampler.sample(kLogits.data(), kVocab);
  EXPECT_FALSE(sampled.logprob.has_value());
  ASSERT_EQ(sampled.topLogprobs.size(), 2u);
  EXPECT_EQ(sampled.topLogprobs[0].token, 1);
  EXPECT_EQ(sampled.topLogprobs[1].token, 3);
}

TEST(RequestSamplerLogprobs, GreedyReportsTheTemperatureOneSoftmax) {
  SamplingParams params = seeded(0);
  params.temperature = 0.0f;
  params.logprobs = true;
  params.topK = 2; // Greedy ignores truncation.
  RequestSampler sampler(params, kVocab);
  SampledToken sampled = sampler.sample(kLogits.data(), kVocab);
  EXPECT_EQ(sampled.token, 1);
  std::vector<double> p =
      exactDistribution(toDouble(kLogits), 1.0, 0, 1.0, 0.0);
  EXPECT_NEAR(*sampled.logprob, std::log(p[1]), 1e-5);
}

//===----------------------------------------------------------------------===//
// Validation
//===----------------------------------------------------------------------===//

/// The message validating `params` throws (empty when it throws nothing).
std::string problemWith(const SamplingParams &params) {
  try {
    RequestSampler sampler(params, kVocab);
  } catch (const std::invalid_argument &e) {
    return e.what();
  }
  return "";
}

TEST(SamplingParamsValidate, NamesTheSettingAndTheRange) {
  struct Case {
    void (*change)(SamplingParams &);
    const char *message;
  };
  const Case cases[] = {
      {[](SamplingParams &p) { p.temperature = -0.5f; },
       "temperature is -0.5, expected a finite value >= 0"},
      {[](SamplingParams &p) { p.temperature = NAN; }, "temperature is nan"},
      {[](SamplingParams &p) { p.topK = -1; }, "top_k is -1"},
      {[](SamplingParams &p) { p.topP = 0.0f; },
       "top_p is 0, expected a value in (0, 1]"},
      {[](SamplingParams &p) { p.topP = 1.5f; }, "top_p is 1.5"},
      {[](SamplingParams &p) { p.minP = 2.0f; }, "min_p is 2"},
      {[](SamplingParams &p) { p.repetitionPenalty = 0.0f; },
       "repetition_penalty is 0, expected a finite value > 0"},
      {[](SamplingParams &p) { p.repetitionWindow = -2; },
       "repetition_window is -2"},
      {[](SamplingParams &p) { p.presencePenalty = INFINITY; },
       "presence_penalty is inf"},
      {[](SamplingParams &p) { p.frequencyPenalty = NAN; },
       "frequency_penalty is nan"},
      {[](SamplingParams &p) { p.logitBias[kVocab] = 1.0f; },
       "logit_bias names token 12, outside the vocabulary (12 tokens)"},
      {[](SamplingParams &p) { p.logitBias[3] = INFINITY; },
       "logit_bias of token 3 is inf"},
      {[](SamplingParams &p) { p.stopTokenIds = {-1}; },
       "stop_token_ids names token -1"},
      {[](SamplingParams &p) { p.stopStrings = {"ok", ""}; },
       "stop string 1 is empty"},
      {[](SamplingParams &p) { p.stopStrings = {"\xE2\x9C"}; },
       "stop string 0 is not valid UTF-8"},
      {[](SamplingParams &p) { p.maxTokens = -3; }, "max_tokens is -3"},
      {[](SamplingParams &p) { p.topLogprobs = -1; }, "top_logprobs is -1"},
  };
  for (const Case &c : cases) {
    SamplingParams params;
    c.change(params);
    std::string message = problemWith(params);
    EXPECT_NE(message.find(c.message), std::string::npos)
        << "expected \"" << c.message << "\" in \"" << message << "\"";
  }
  EXPECT_EQ(problemWith(SamplingParams{}), "");
}

TEST(SamplingParamsValidate, RowsAndTokensMustFitTheVocabulary) {
  RequestSampler sampler(seeded(0), kVocab);
  std::vector<float> shorter(kVocab - 1, 0.0f);
  EXPECT_THROW(sampler.sample(shorter.data(), kVocab - 1),
               std::invalid_argument);
  std::vector<float> nan(kLogits);
  nan[4] = NAN;
  try {
    sampler.sample(nan.data(), kVocab);
    ADD_FAILURE() << "a NaN logit was sampled from";
  } catch (const std::invalid_argument &e) {
    EXPECT_NE(std::string(e.what()).find("token 4"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(sampler.accept(kVocab), std::invalid_argument);
  EXPECT_THROW(RequestSampler(seeded(0), kVocab, {kVocab}),
               std::invalid_argument);
}

} // namespace
