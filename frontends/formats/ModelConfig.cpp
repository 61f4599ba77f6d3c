//===- ModelConfig.cpp - Hyperparameters of a Llama-family model ----------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "frontends/formats/ModelConfig.h"

#include <cmath>
#include <sstream>

namespace kiln::formats {

std::optional<std::string> ModelConfig::validate() const {
  std::ostringstream os;
  auto positive = [&](const char *name, int64_t value) {
    if (value > 0)
      return true;
    os << name << " must be positive, got " << value;
    return false;
  };
  if (!positive("dim", dim) || !positive("hidden_dim", hiddenDim) ||
      !positive("n_layers", numLayers) || !positive("n_heads", numHeads) ||
      !positive("n_kv_heads", numKvHeads) || !positive("head_dim", headDim) ||
      !positive("vocab_size", vocabSize) ||
      !positive("context_length", contextLength))
    return os.str();
  if (numHeads % numKvHeads != 0)
    return "n_heads (" + std::to_string(numHeads) +
           ") must be a multiple of n_kv_heads (" + std::to_string(numKvHeads) +
           ")";
  if (headDim % 2 != 0)
    return "head size " + std::to_string(headDim) +
           " must be even for rotary embedding";
  if (!(ropeTheta > 0.0))
    return "rope theta must be positive";
  if (!(normEpsilon >= 0.0))
    return "norm epsilon must be non-negative";
  if (slidingWindow < 0)
    return "sliding window must be non-negative";
  if (!ropeFreqFactors.empty()) {
    if (static_cast<int64_t>(ropeFreqFactors.size()) != headDim / 2)
      return "rope frequency factors: " +
             std::to_string(ropeFreqFactors.size()) +
             " given, a head of size " + std::to_string(headDim) + " rotates " +
             std::to_string(headDim / 2) + " pairs";
    for (size_t i = 0; i < ropeFreqFactors.size(); ++i)
      if (!(ropeFreqFactors[i] > 0.0f) || !std::isfinite(ropeFreqFactors[i])) {
        os << "rope frequency factor " << i
           << " must be positive and finite, got " << ropeFreqFactors[i];
        return os.str();
      }
    if (ropeScaling && ropeScaling->kind == RopeScalingConfig::Kind::Llama3)
      return "rope frequency factors and llama3 rope scaling both given; "
             "the factors are how GGUF stores llama3 scaling";
  }
  // Sizes beyond this are not a Llama we can run; they are a corrupt header.
  constexpr int64_t kLimit = int64_t(1) << 24;
  if (dim > kLimit || hiddenDim > kLimit || numLayers > 4096 ||
      numHeads > 4096 || vocabSize > kLimit || contextLength > kLimit)
    return "implausibly large hyperparameters (dim " + std::to_string(dim) +
           ", hidden " + std::to_string(hiddenDim) + ", layers " +
           std::to_string(numLayers) + ", vocab " + std::to_string(vocabSize) +
           ", context " + std::to_string(contextLength) + ")";
  return std::nullopt;
}

std::string layerTensorName(int64_t layer, const char *suffix) {
  return "blk." + std::to_string(layer) + "." + suffix;
}

} // namespace kiln::formats
