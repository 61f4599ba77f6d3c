//===- StepBatch.h - The runtime side of the step contract ------*- C++ -*-===//
//
// Part of Kiln. A StepBatch holds the inputs of one model step (see
// docs/step-contract.md): every token of every sequence the step advances,
// with its position and sequence, and which tokens need logits. The scheduler
// builds one per step; executors (the reference interpreter, compiled
// artifacts) consume it. No MLIR here: the runtime ships without it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_STEPBATCH_H
#define KILN_RUNTIME_STEPBATCH_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln::runtime {

struct StepBatch {
  std::vector<int32_t> tokens;    ///< [T] token ids.
  std::vector<int32_t> positions; ///< [T] position within its sequence.
  std::vector<int32_t> seqIds;    ///< [T] sequence (cache slot) of each token.
  std::vector<int32_t> logitRows; ///< [R] token indices that need logits.

  /// Appends one token of sequence `seq` at `position`; `wantLogits` asks for
  /// its logits (typically the last token of each sequence in the step).
  void addToken(int32_t seq, int32_t token, int32_t position, bool wantLogits);

  size_t numTokens() const { return tokens.size(); }
};

/// Limits a batch is checked against.
struct StepLimits {
  int32_t vocabSize = 0;     ///< Token ids lie in [0, vocabSize).
  int32_t maxSequences = 0;  ///< Sequence ids lie in [0, maxSequences).
  int32_t contextLength = 0; ///< Positions lie in [0, contextLength).
};

/// Checks a batch against the step contract: equal lengths, ids and positions
/// in range, logit rows valid, strictly increasing and unique, and the tokens
/// of each sequence at consecutive positions in order. Returns a message
/// naming the first offending entry, or nothing when the batch is valid.
std::optional<std::string> validateStepBatch(const StepBatch &batch,
                                             const StepLimits &limits);

} // namespace kiln::runtime

#endif // KILN_RUNTIME_STEPBATCH_H
