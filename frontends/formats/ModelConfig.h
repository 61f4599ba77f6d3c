//===- ModelConfig.h - Hyperparameters of a Llama-family model --*- C++ -*-===//
//
// Part of Kiln. What every importer extracts from its file before building
// IR: the shape of the network and the conventions it follows. MLIR-free.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_FRONTENDS_FORMATS_MODELCONFIG_H
#define KILN_FRONTENDS_FORMATS_MODELCONFIG_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln::formats {

/// Which elements of a head rotary embedding pairs (see kiln.rope).
enum class RopePairs { Adjacent, Halves };

struct RopeScalingConfig {
  enum class Kind { Linear, Llama3 } kind = Kind::Linear;
  double factor = 1.0;
  double lowFreqFactor = 0.0;  ///< llama3 only.
  double highFreqFactor = 0.0; ///< llama3 only.
  int64_t originalContext = 0; ///< llama3 only.
};

struct ModelConfig {
  std::string architecture = "llama"; ///< "llama" or "qwen2".
  int64_t dim = 0;                    ///< Model width D.
  int64_t hiddenDim = 0;              ///< Feed-forward width F.
  int64_t numLayers = 0;
  int64_t numHeads = 0;
  int64_t numKvHeads = 0;
  int64_t headDim = 0; ///< Usually dim / numHeads.
  int64_t vocabSize = 0;
  int64_t contextLength = 0; ///< The context length the model declares.
  double ropeTheta = 10000.0;
  RopePairs ropePairs = RopePairs::Adjacent;
  std::optional<RopeScalingConfig> ropeScaling;
  /// Per-pair divisors of the rotary frequencies, headDim / 2 of them, or
  /// empty: GGUF's rope_freqs tensor, how llama.cpp's converter stores Llama
  /// 3 scaling (computed from a llama3 RopeScalingConfig, which a config
  /// with factors does not also have). Applied before linear scaling.
  std::vector<float> ropeFreqFactors;
  double normEpsilon = 1e-5;
  int64_t slidingWindow = 0;  ///< 0: full causal attention.
  bool tiedClassifier = true; ///< Classifier shares token_embd.weight.
  bool qkvBias = false;       ///< Qwen2: biases on the Q, K, V projections.

  /// Checks the numbers agree with each other (positive sizes, heads divide
  /// the width, kv heads divide heads, even head size, one positive finite
  /// rope frequency factor per pair); returns a message naming the first
  /// problem, or nothing.
  std::optional<std::string> validate() const;
};

/// Kiln's canonical tensor names (GGUF's): "token_embd.weight",
/// "blk.<l>.attn_q.weight", ... (docs/step-contract.md).
std::string layerTensorName(int64_t layer, const char *suffix);

} // namespace kiln::formats

#endif // KILN_FRONTENDS_FORMATS_MODELCONFIG_H
