//===- EvalTest.cpp - kiln eval's measures on hand-made logits ------------===//
//
// Part of Kiln's unit tests. Perplexity, KL divergence, top-1 agreement,
// percentiles and windows (tools/kiln/Eval.h) on logits whose answers are
// known in closed form.
//
//===----------------------------------------------------------------------===//

#include "tools/kiln/Eval.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

using namespace kiln::eval;

namespace {

TEST(EvalMeasures, LogSoftmaxIsNormalizedAndStable) {
  std::vector<double> out;
  float even[2] = {3.0f, 3.0f};
  logSoftmax(even, 2, out);
  EXPECT_NEAR(out[0], std::log(0.5), 1e-15);
  EXPECT_NEAR(out[1], std::log(0.5), 1e-15);
  // exp(1000) overflows; log_softmax must not.
  float large[3] = {1000.0f, 0.0f, -1000.0f};
  logSoftmax(large, 3, out);
  EXPECT_NEAR(out[0], 0.0, 1e-15);
  EXPECT_NEAR(out[1], -1000.0, 1e-9);
  EXPECT_TRUE(std::isfinite(out[2]));
}

TEST(EvalMeasures, UniformLogitsHaveTheVocabularyAsPerplexity) {
  Accumulator a(512);
  std::vector<float> logits(512, 0.25f);
  for (int32_t next : {0, 7, 511})
    a.add(logits.data(), next);
  Summary s = a.summary();
  EXPECT_EQ(s.positions, 3);
  EXPECT_NEAR(s.perplexity, 512.0, 1e-9);
  EXPECT_NEAR(s.nllStdError, 0.0, 1e-12);
  EXPECT_FALSE(s.hasReference);
}

TEST(EvalMeasures, KnownPerplexity) {
  // p(next) = 1/2 at one position and 1/8 at the other: mean NLL = (ln 2 +
  // ln 8) / 2 = 2 ln 2, perplexity 4.
  Accumulator a(2);
  float half[2] = {0.0f, 0.0f};
  float eighth[2] = {0.0f, static_cast<float>(std::log(7.0))}; // 1/8, 7/8
  a.add(half, 1);
  a.add(eighth, 0);
  Summary s = a.summary();
  EXPECT_NEAR(s.meanNll, 2 * std::log(2.0), 1e-7);
  EXPECT_NEAR(s.perplexity, 4.0, 1e-6);
  // Standard error of the mean of {ln 2, ln 8}: sample sd / sqrt(2) = ln 2.
  EXPECT_NEAR(s.nllStdError, std::log(2.0), 1e-7);
}

TEST(EvalMeasures, KnownKLDivergence) {
  // KL((1/2, 1/2) || (1/4, 3/4)) = 1/2 ln 2 + 1/2 ln(2/3) = 1/2 ln(4/3).
  std::vector<double> p = {std::log(0.5), std::log(0.5)};
  std::vector<double> q = {std::log(0.25), std::log(0.75)};
  EXPECT_NEAR(klDivergence(p, q), 0.5 * std::log(4.0 / 3.0), 1e-15);
  EXPECT_EQ(klDivergence(p, p), 0.0);
  // Asymmetric: KL(q || p) = 1/4 ln(1/2) + 3/4 ln(3/2).
  EXPECT_NEAR(klDivergence(q, p), 0.25 * std::log(0.5) + 0.75 * std::log(1.5),
              1e-15);

  // Through the accumulator, from logits: the reference is the first
  // argument of KL.
  Accumulator a(2);
  float reference[2] = {1.0f, 1.0f};
  float model[2] = {0.0f, static_cast<float>(std::log(3.0))};
  a.add(model, 0, reference);
  Summary s = a.summary();
  ASSERT_TRUE(s.hasReference);
  EXPECT_NEAR(s.meanKl, 0.5 * std::log(4.0 / 3.0), 1e-7);
  EXPECT_NEAR(s.referencePerplexity, 2.0, 1e-12);
  EXPECT_NEAR(s.perplexity, 4.0, 1e-6);
  EXPECT_EQ(s.maxKl, s.meanKl);
}

TEST(EvalMeasures, TopOneAgreement) {
  Accumulator a(3);
  float ref[3] = {0.0f, 2.0f, 1.0f};
  float same[3] = {0.5f, 3.0f, 1.0f};
  float other[3] = {4.0f, 3.0f, 1.0f};
  float tie[3] = {1.0f, 3.0f, 3.0f}; // argmax of equals: the lowest id
  a.add(same, 0, ref);
  a.add(other, 0, ref);
  a.add(tie, 0, ref);
  Summary s = a.summary();
  EXPECT_EQ(s.top1Agreements, 2);
  EXPECT_NEAR(s.top1Agreement, 2.0 / 3.0, 1e-15);
  EXPECT_EQ(argmax(tie, 3), 1);
}

TEST(EvalMeasures, LargestLogitDifference) {
  float ref[3] = {0.0f, 2.0f, 1.0f};
  Accumulator same(3);
  same.add(ref, 1, ref);
  EXPECT_EQ(same.summary().maxLogitDifference, 0.0);

  Accumulator a(3);
  float near[3] = {0.0f, std::nextafter(2.0f, 3.0f), 1.0f}; // one ulp
  float far[3] = {0.25f, 2.0f, -0.5f};
  a.add(near, 1, ref);
  a.add(far, 1, ref);
  a.add(ref, 1, ref);
  EXPECT_EQ(a.summary().maxLogitDifference, 1.5);

  Accumulator broken(3);
  float nan[3] = {0.0f, NAN, 1.0f};
  broken.add(nan, 0, ref);
  broken.add(far, 0, ref);
  EXPECT_EQ(broken.summary().maxLogitDifference, INFINITY);
}

TEST(EvalMeasures, PercentilesInterpolate) {
  std::vector<double> sorted = {1, 2, 3, 4};
  EXPECT_EQ(percentile(sorted, 0.0), 1.0);
  EXPECT_EQ(percentile(sorted, 0.5), 2.5);
  EXPECT_NEAR(percentile(sorted, 0.99), 3.97, 1e-12);
  EXPECT_EQ(percentile(sorted, 1.0), 4.0);
  EXPECT_EQ(percentile({7}, 0.99), 7.0);
}

TEST(EvalMeasures, RefusesMixedReferencesAndBadTokens) {
  Accumulator a(2);
  float logits[2] = {0, 0};
  a.add(logits, 0);
  EXPECT_THROW(a.add(logits, 0, logits), std::invalid_argument);
  EXPECT_THROW(a.add(logits, 2), std::invalid_argument);
}

TEST(EvalWindows, LlamaPerplexityChunks) {
  // 10 tokens, context 4: chunks [0,4) and [4,8) (the last 2 tokens are
  // not a whole chunk), each scoring positions 2..2 (first = 4/2).
  std::vector<Window> w = planWindows(10, 4, 4);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].start, 0);
  EXPECT_EQ(w[1].start, 4);
  EXPECT_EQ(w[1].length, 4);
  EXPECT_EQ(w[1].first, 2);
  // A stride of half the context: every window start, overlapping.
  EXPECT_EQ(planWindows(10, 4, 2).size(), 4u);
  EXPECT_THROW(planWindows(3, 4, 4), std::invalid_argument);
  EXPECT_THROW(planWindows(10, 1, 4), std::invalid_argument);
}

} // namespace
