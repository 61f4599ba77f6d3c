//===- Eval.h - Perplexity and KL divergence of logits ----------*- C++ -*-===//
//
// Part of Kiln's command line; `kiln eval` is its glue (EvalCommand.h). The
// measures llama.cpp's `llama-perplexity` reports, defined here once so that
// they can be tested on hand-made logits (docs/quantization.md, "kiln eval"):
//
//   log-probabilities  log_softmax(z)_i = z_i - max z - log sum_j exp(z_j -
//                      max z), in double from the float logits;
//   perplexity         exp(mean over scored positions of -log p(next token));
//   KL divergence      KL(ref || model) = sum_i p_ref,i (log p_ref,i - log
//                      p_i) at each scored position, in double;
//   top-1 agreement    the share of scored positions where both argmaxes
//                      (the lowest id of equals) are the same token;
//   percentiles        of the sorted per-position KLs, interpolated
//                      linearly between neighbours (as llama-perplexity's).
//
// And the windows the text is cut into (planWindows): llama-perplexity's.
// MLIR-free: it links only kiln_runtime.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_EVAL_H
#define KILN_TOOLS_KILN_EVAL_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln::runtime {
class CompiledModel;
}

namespace kiln::eval {

//===----------------------------------------------------------------------===//
// Per-position measures
//===----------------------------------------------------------------------===//

/// log_softmax of `n` logits, in double, into `out` (resized to n).
void logSoftmax(const float *logits, int64_t n, std::vector<double> &out);

/// KL(p || q) = sum_i p_i (log p_i - log q_i) of two log-probability rows
/// (terms with p_i = 0 count 0).
double klDivergence(const std::vector<double> &logP,
                    const std::vector<double> &logQ);

/// The index of the largest of `n` values, the lowest of equals.
int64_t argmax(const float *values, int64_t n);

/// `fraction` (0..1) of `sorted` (ascending, not empty), interpolated
/// linearly between the neighbouring order statistics.
double percentile(const std::vector<double> &sorted, double fraction);

//===----------------------------------------------------------------------===//
// Accumulating scored positions
//===----------------------------------------------------------------------===//

struct Summary {
  int64_t positions = 0;
  /// Mean negative log-likelihood of the next token, its standard error,
  /// and exp(meanNll), whose standard error is perplexity * nllStdError.
  double meanNll = 0, nllStdError = 0, perplexity = 0;

  // Against a reference (hasReference): the same for its logits, and the
  // comparison.
  bool hasReference = false;
  double referenceMeanNll = 0, referenceNllStdError = 0,
         referencePerplexity = 0;
  /// KL(reference || model) per position: mean (and its standard error),
  /// median, 99th percentile, max.
  double meanKl = 0, klStdError = 0, medianKl = 0, p99Kl = 0, maxKl = 0;
  int64_t top1Agreements = 0;
  double top1Agreement = 0; ///< top1Agreements / positions
  /// The largest |logit - reference logit| over every position and token:
  /// 0 exactly when the two compute the same values (NaN counts as
  /// infinitely far).
  double maxLogitDifference = 0;
};

class Accumulator {
public:
  explicit Accumulator(int64_t vocabSize) : vocab(vocabSize) {}

  /// Scores one position: `logits` [vocab] predicted `next`; with
  /// `reference` (its logits at the same position), the comparison too.
  /// Positions must all have a reference or none.
  void add(const float *logits, int32_t next, const float *reference = nullptr);

  Summary summary() const;

private:
  int64_t vocab;
  std::vector<double> nll, referenceNll, kl;
  int64_t agreements = 0;
  double maxLogitDifference = 0;
  std::vector<double> logP, logQ; // scratch
};

//===----------------------------------------------------------------------===//
// Windows
//===----------------------------------------------------------------------===//

/// A window of the token stream: tokens [start, start + length) fed at
/// positions 0..length-1, the first replaced by BOS; the logits at window
/// positions first..length-2 are scored against the token after them.
struct Window {
  int64_t start = 0, length = 0, first = 0;
};

/// llama-perplexity's windows over `numTokens` tokens: windows of `context`
/// tokens starting every `stride` tokens (stride == context: its
/// non-overlapping chunks) while a whole window fits, each scoring the
/// second half (first = context / 2). Throws std::invalid_argument when
/// not even one window fits or context < 2, stride < 1.
std::vector<Window> planWindows(int64_t numTokens, int64_t context,
                                int64_t stride);

/// Feeds each window of `tokens` to `model` (and `reference`, when not
/// null, on the same windows) as one batch of sequence 0 starting at
/// position 0, with BOS `bos` in place of its first token, asking logits
/// only for the scored positions; the KV cache is reset between windows.
/// `onWindow(done, total)` reports progress when set.
Summary
evaluate(runtime::CompiledModel &model, runtime::CompiledModel *reference,
         const std::vector<int32_t> &tokens, const std::vector<Window> &windows,
         int32_t bos,
         void (*onWindow)(std::size_t done, std::size_t total) = nullptr);

} // namespace kiln::eval

#endif // KILN_TOOLS_KILN_EVAL_H
