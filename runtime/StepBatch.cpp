//===- StepBatch.cpp - The runtime side of the step contract --------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "runtime/StepBatch.h"

#include <sstream>
#include <unordered_map>

namespace kiln::runtime {

void StepBatch::addToken(int32_t seq, int32_t token, int32_t position,
                         bool wantLogits) {
  if (wantLogits)
    logitRows.push_back(static_cast<int32_t>(tokens.size()));
  tokens.push_back(token);
  positions.push_back(position);
  seqIds.push_back(seq);
}

namespace {
template <typename... Parts> std::string concat(const Parts &...parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}
} // namespace

std::optional<std::string> validateStepBatch(const StepBatch &batch,
                                             const StepLimits &limits) {
  const size_t n = batch.tokens.size();
  if (n == 0)
    return "step batch has no tokens";
  if (batch.positions.size() != n || batch.seqIds.size() != n)
    return concat("step batch has ", n, " tokens but ", batch.positions.size(),
                  " positions and ", batch.seqIds.size(), " sequence ids");

  // Next expected position of each sequence seen so far in this step.
  std::unordered_map<int32_t, int32_t> nextPosition;
  for (size_t t = 0; t < n; ++t) {
    int32_t token = batch.tokens[t], pos = batch.positions[t],
            seq = batch.seqIds[t];
    if (token < 0 || token >= limits.vocabSize)
      return concat("token #", t, ": id ", token,
                    " is outside the vocabulary [0, ", limits.vocabSize, ")");
    if (seq < 0 || seq >= limits.maxSequences)
      return concat("token #", t, ": sequence id ", seq, " is outside [0, ",
                    limits.maxSequences, ")");
    if (pos < 0 || pos >= limits.contextLength)
      return concat("token #", t, ": position ", pos,
                    " is outside the context [0, ", limits.contextLength, ")");
    auto [it, first] = nextPosition.try_emplace(seq, pos + 1);
    if (!first) {
      if (pos != it->second)
        return concat("token #", t, ": sequence ", seq, " is at position ", pos,
                      " but its previous token in this step was at ",
                      it->second - 1,
                      "; a sequence's tokens must be at "
                      "consecutive positions");
      it->second = pos + 1;
    }
  }

  for (size_t r = 0; r < batch.logitRows.size(); ++r) {
    int32_t row = batch.logitRows[r];
    if (row < 0 || static_cast<size_t>(row) >= n)
      return concat("logit row #", r, ": token index ", row, " is outside [0, ",
                    n, ")");
    if (r > 0 && row <= batch.logitRows[r - 1])
      return concat("logit row #", r, ": token index ", row,
                    " does not follow ", batch.logitRows[r - 1],
                    "; logit rows must be strictly increasing");
  }
  return std::nullopt;
}

} // namespace kiln::runtime
