//===- SyntheticModel.h - Llama models with random weights ------*- C++ -*-===//
//
// Part of Kiln. Kiln ships no third-party weights, so demos and benchmarks
// run synthetic Llama models: a named shape, weights drawn from N(0, 0.02)
// (RMSNorm weights 1.0) and a synthetic vocabulary, written as a llama2.c
// checkpoint or a GGUF file that the ordinary readers load (`kiln
// make-model`). The text such a model generates is noise; its cost is that
// of a trained model of the same shape.
//
// Everything follows from the spec: the same config and seed give the same
// bytes. Each tensor draws from its own generator, seeded from the model's
// seed and the tensor's name, so both formats hold the same weights and a
// tensor's values do not depend on the order a format stores tensors in.
// The normal deviates come from std::mt19937_64 and a Box-Muller transform
// written here, not std::normal_distribution, whose algorithm differs
// between standard libraries.
//
// Writers stream: weights are generated and written a slice at a time, so a
// 1B-parameter model (4+ GB in f32) never sits in memory.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_FRONTENDS_FORMATS_SYNTHETICMODEL_H
#define KILN_FRONTENDS_FORMATS_SYNTHETICMODEL_H

#include "frontends/formats/ElementType.h"
#include "frontends/formats/ModelConfig.h"
#include "runtime/Tokenizer.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace kiln::formats {

struct SyntheticModelSpec {
  ModelConfig config;
  uint64_t seed = 0;
};

/// The standard deviation of synthetic weight matrices.
constexpr double kSyntheticWeightStddev = 0.02;

/// The named shapes: "llama-110m" (Llama 2 110M: dim 768, 12 layers of 12
/// heads, tied classifier), "llama-1b" (TinyLlama 1.1B: dim 2048, 22
/// layers, 32 heads sharing 4 kv heads, untied) and "tiny" (stories260K:
/// dim 64, 5 layers, 8 heads, 4 kv heads, vocabulary 512).
const std::vector<std::string> &syntheticConfigNames();
/// The configuration called `name`; throws std::invalid_argument listing
/// the names when there is none.
ModelConfig syntheticConfig(const std::string &name);

/// One tensor of a synthetic model.
struct SyntheticTensor {
  std::string name;           ///< Kiln's canonical (GGUF) name.
  std::vector<int64_t> shape; ///< Outermost first.
  bool isNorm = false;        ///< An RMSNorm weight: all 1.0.

  int64_t numElements() const;
};

/// The tensors of a Llama model of `config` in GGUF order (token_embd, each
/// block, output_norm, output unless the classifier is tied). No biases:
/// synthetic models are Llamas.
std::vector<SyntheticTensor> syntheticTensors(const ModelConfig &config);

/// Parameters of the model (a tied classifier counts once).
uint64_t syntheticParameterCount(const ModelConfig &config);

/// The values of one tensor, produced in row-major order a slice at a time.
class SyntheticTensorValues {
public:
  SyntheticTensorValues(uint64_t seed, const SyntheticTensor &tensor);
  /// Writes the next `count` values to `out`.
  void next(float *out, int64_t count);

private:
  bool isNorm;
  std::mt19937_64 rng;
  bool hasSpare = false;
  double spare = 0.0;
};

/// All values of tensor `name` of the spec's model (for tests and small
/// models); throws std::invalid_argument for a name the model lacks.
std::vector<float> syntheticTensorData(const SyntheticModelSpec &spec,
                                       const std::string &name);

/// A SentencePiece-style vocabulary of `vocabSize` tokens (at least 259):
/// <unk>, <s>, </s>, the 256 byte tokens <0x00>..<0xFF>, then printable
/// pieces -- the space symbol, single characters, the space symbol before a
/// letter, then lowercase strings of growing length alone and after the
/// space symbol -- each reachable by merging two shorter ones. Scores
/// descend with the id (0 for the special and byte tokens). BOS 1, EOS 2.
/// `spaceSymbol` is "▁" for GGUF files and " " for llama2.c's tokenizer.bin.
runtime::TokenizerSpec
syntheticVocabulary(int64_t vocabSize,
                    const std::string &spaceSymbol = "\xE2\x96\x81");

/// Writes a llama2.c legacy (version 0) checkpoint: 7 int32 (a negative
/// vocabulary size for an untied classifier), the float32 tensors in
/// llama2.c's order and the RoPE tables older llama2.c builds read. Needs
/// head size dim / n_heads. Returns the bytes written; throws
/// std::runtime_error naming the path when it cannot write.
uint64_t writeSyntheticLlama2c(const SyntheticModelSpec &spec,
                               const std::string &path);

/// Writes a GGUF v3 file: general.architecture "llama", the llama.*
/// hyperparameters, the synthetic vocabulary (tokenizer.ggml.model "llama")
/// and the tensors as `type` (F32 or F16; RMSNorm weights stay F32, as
/// llama.cpp's converters keep them). Returns the bytes written.
uint64_t writeSyntheticGGUF(const SyntheticModelSpec &spec,
                            const std::string &path,
                            ElementType type = ElementType::F32);

/// Writes `vocab` as llama2.c's tokenizer.bin: int32 max_token_length, then
/// per token a float32 score, an int32 length and the bytes. Returns the
/// bytes written.
uint64_t writeLlama2cTokenizer(const runtime::TokenizerSpec &vocab,
                               const std::string &path);

} // namespace kiln::formats

#endif // KILN_FRONTENDS_FORMATS_SYNTHETICMODEL_H
