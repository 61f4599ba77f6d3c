//===- Eval.cpp - Perplexity and KL divergence of next-token logits -------===//
//
// Part of Kiln's command line. See Eval.h.
//
//===----------------------------------------------------------------------===//

#include "tools/kiln/Eval.h"

#include "runtime/CompiledModel.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <tuple>

namespace kiln::eval {

//===----------------------------------------------------------------------===//
// Per-position measures
//===----------------------------------------------------------------------===//

void logSoftmax(const float *logits, int64_t n, std::vector<double> &out) {
  out.resize(static_cast<size_t>(n));
  double max = -INFINITY;
  for (int64_t i = 0; i < n; ++i)
    max = std::max(max, static_cast<double>(logits[i]));
  double sum = 0;
  for (int64_t i = 0; i < n; ++i)
    sum += std::exp(static_cast<double>(logits[i]) - max);
  double logSum = max + std::log(sum);
  for (int64_t i = 0; i < n; ++i)
    out[i] = static_cast<double>(logits[i]) - logSum;
}

double klDivergence(const std::vector<double> &logP,
                    const std::vector<double> &logQ) {
  double kl = 0;
  for (size_t i = 0; i < logP.size(); ++i) {
    double p = std::exp(logP[i]);
    if (p > 0)
      kl += p * (logP[i] - logQ[i]);
  }
  // Exactly equal distributions can sum to a tiny negative by rounding.
  return std::max(kl, 0.0);
}

int64_t argmax(const float *values, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (values[i] > values[best])
      best = i;
  return best;
}

double percentile(const std::vector<double> &sorted, double fraction) {
  if (sorted.empty())
    return 0;
  if (fraction <= 0)
    return sorted.front();
  if (fraction >= 1)
    return sorted.back();
  double at = fraction * static_cast<double>(sorted.size() - 1);
  size_t below = static_cast<size_t>(at);
  double t = at - static_cast<double>(below);
  size_t above = std::min(below + 1, sorted.size() - 1);
  return (1 - t) * sorted[below] + t * sorted[above];
}

//===----------------------------------------------------------------------===//
// Accumulator
//===----------------------------------------------------------------------===//

namespace {

/// Mean and standard error of the mean.
std::pair<double, double> meanAndError(const std::vector<double> &v) {
  if (v.empty())
    return {0, 0};
  double sum = 0, sum2 = 0;
  for (double x : v) {
    sum += x;
    sum2 += x * x;
  }
  double n = static_cast<double>(v.size());
  double mean = sum / n;
  double variance = sum2 / n - mean * mean;
  double error =
      v.size() > 1 && variance > 0 ? std::sqrt(variance / (n - 1)) : 0;
  return {mean, error};
}

} // namespace

void Accumulator::add(const float *logits, int32_t next,
                      const float *reference) {
  if (next < 0 || next >= vocab)
    throw std::invalid_argument("token " + std::to_string(next) +
                                " is outside the vocabulary of " +
                                std::to_string(vocab));
  if (!nll.empty() && (reference != nullptr) != !referenceNll.empty())
    throw std::invalid_argument("every position is scored with a reference "
                                "or none is");
  logSoftmax(logits, vocab, logQ);
  nll.push_back(-logQ[next]);
  if (!reference)
    return;
  logSoftmax(reference, vocab, logP);
  referenceNll.push_back(-logP[next]);
  kl.push_back(klDivergence(logP, logQ));
  if (argmax(logits, vocab) == argmax(reference, vocab))
    ++agreements;
  for (int64_t i = 0; i < vocab; ++i) {
    double d = std::fabs(double(logits[i]) - double(reference[i]));
    // NaN on either side counts as the largest difference.
    maxLogitDifference =
        std::max(maxLogitDifference, std::isnan(d) ? INFINITY : d);
  }
}

Summary Accumulator::summary() const {
  Summary s;
  s.positions = static_cast<int64_t>(nll.size());
  std::tie(s.meanNll, s.nllStdError) = meanAndError(nll);
  s.perplexity = std::exp(s.meanNll);
  if (referenceNll.empty())
    return s;
  s.hasReference = true;
  std::tie(s.referenceMeanNll, s.referenceNllStdError) =
      meanAndError(referenceNll);
  s.referencePerplexity = std::exp(s.referenceMeanNll);
  std::tie(s.meanKl, s.klStdError) = meanAndError(kl);
  std::vector<double> sorted = kl;
  std::sort(sorted.begin(), sorted.end());
  s.medianKl = percentile(sorted, 0.5);
  s.p99Kl = percentile(sorted, 0.99);
  s.maxKl = sorted.back();
  s.top1Agreements = agreements;
  s.maxLogitDifference = maxLogitDifference;
  s.top1Agreement =
      static_cast<double>(agreements) / static_cast<double>(s.positions);
  return s;
}

//===----------------------------------------------------------------------===//
// Windows
//===----------------------------------------------------------------------===//

std::vector<Window> planWindows(int64_t numTokens, int64_t context,
                                int64_t stride) {
  if (context < 2 || stride < 1)
    throw std::invalid_argument("windows need a context of at least 2 and "
                                "a stride of at least 1 (context " +
                                std::to_string(context) + ", stride " +
                                std::to_string(stride) + ")");
  std::vector<Window> windows;
  for (int64_t start = 0; start + context <= numTokens; start += stride)
    windows.push_back({start, context, context / 2});
  if (windows.empty())
    throw std::invalid_argument("the text has " + std::to_string(numTokens) +
                                " tokens, fewer than one window of " +
                                std::to_string(context) +
                                " (use a longer text or a smaller --context)");
  return windows;
}

namespace {

/// The logits of `window`'s scored positions, [length - 1 - first, vocab].
std::vector<float> windowLogits(runtime::CompiledModel &model,
                                const std::vector<int32_t> &tokens,
                                const Window &window, int32_t bos) {
  runtime::StepBatch batch;
  for (int64_t j = 0; j < window.length; ++j) {
    int32_t token = j == 0 ? bos : tokens[window.start + j];
    batch.addToken(0, token, static_cast<int32_t>(j),
                   j >= window.first && j + 1 < window.length);
  }
  model.reset();
  std::vector<float> logits = model.step(batch);
  model.reset();
  return logits;
}

} // namespace

Summary evaluate(runtime::CompiledModel &model,
                 runtime::CompiledModel *reference,
                 const std::vector<int32_t> &tokens,
                 const std::vector<Window> &windows, int32_t bos,
                 void (*onWindow)(size_t done, size_t total)) {
  int64_t vocab = model.manifest().vocabSize;
  if (reference && reference->manifest().vocabSize != vocab)
    throw std::invalid_argument(
        "the reference's vocabulary has " +
        std::to_string(reference->manifest().vocabSize) +
        " tokens, the model's " + std::to_string(vocab));
  Accumulator accumulator(vocab);
  for (size_t w = 0; w < windows.size(); ++w) {
    const Window &window = windows[w];
    if (window.start + window.length > static_cast<int64_t>(tokens.size()))
      throw std::invalid_argument("a window runs past the tokens");
    std::vector<float> logits = windowLogits(model, tokens, window, bos);
    std::vector<float> referenceLogits;
    if (reference)
      referenceLogits = windowLogits(*reference, tokens, window, bos);
    int64_t rows = window.length - 1 - window.first;
    for (int64_t r = 0; r < rows; ++r) {
      int32_t next = tokens[window.start + window.first + r + 1];
      accumulator.add(logits.data() + r * vocab, next,
                      reference ? referenceLogits.data() + r * vocab : nullptr);
    }
    if (onWindow)
      onWindow(w + 1, windows.size());
  }
  return accumulator.summary();
}

} // namespace kiln::eval
