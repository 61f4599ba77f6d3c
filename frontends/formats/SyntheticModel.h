//===- SyntheticModel.h - Llama models with random weights ------*- C++ -*-===//
//
// Part of Kiln. Kiln ships no third-party weights, so demos and benchmarks
// run synthetic Llama models: a named shape, weights drawn from N(0, 0.02)
// (RMSNorm weights 1.0) and a synthetic vocabulary, written by the model
// writers (ModelWriters.h) as a llama2.c checkpoint, a GGUF file or a
// Hugging Face directory that the ordinary readers load (`kiln
// make-model`). The text such a model generates is noise; its cost is that
// of a trained model of the same shape.
//
// Everything follows from the spec: the same config and seed give the same
// bytes. Each tensor draws from its own generator, seeded from the model's
// seed and the tensor's name, so every format holds the same weights and a
// tensor's values do not depend on the order a format stores tensors in.
// The normal deviates come from std::mt19937_64 and a Box-Muller transform
// written here, not std::normal_distribution, whose algorithm differs
// between standard libraries.
//
// Weights are generated as the writers stream them, a slice at a time, so
// a 1B-parameter model (4+ GB in f32) never sits in memory.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_FRONTENDS_FORMATS_SYNTHETICMODEL_H
#define KILN_FRONTENDS_FORMATS_SYNTHETICMODEL_H

#include "frontends/formats/ElementType.h"
#include "frontends/formats/ModelConfig.h"
#include "frontends/formats/TensorSource.h"
#include "runtime/Tokenizer.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace kiln::formats {

struct SyntheticModelSpec {
  ModelConfig config;
  uint64_t seed = 0;
  /// A chat template the GGUF and Hugging Face writers store with the
  /// vocabulary (llama2.c files have no place for one); empty for none.
  std::string chatTemplate = "";
};

/// The standard deviation of synthetic weight matrices.
constexpr double kSyntheticWeightStddev = 0.02;

/// The named shapes: "llama-110m" (Llama 2 110M: dim 768, 12 layers of 12
/// heads, tied classifier), "llama-1b" (TinyLlama 1.1B: dim 2048, 22
/// layers, 32 heads sharing 4 kv heads, untied), "tiny" (stories260K:
/// dim 64, 5 layers, 8 heads, 4 kv heads, vocabulary 512) and
/// "tiny-llama3" (tiny with Llama 3.1 rope scaling: factor 8, low and high
/// frequency factors 1 and 4, original context 64 of 512).
const std::vector<std::string> &syntheticConfigNames();
/// The configuration called `name`; throws std::invalid_argument listing
/// the names when there is none.
ModelConfig syntheticConfig(const std::string &name);

/// One tensor of a synthetic model: a model tensor that knows whether it is
/// an RMSNorm weight (all 1.0).
struct SyntheticTensor : ModelTensor {
  bool isNorm = false;
};

/// The tensors of a model of `config`: modelTensors(config), with the norms
/// marked. (The named configs are Llamas, without biases; a config with
/// qkvBias gets biases drawn like the matrices.)
std::vector<SyntheticTensor> syntheticTensors(const ModelConfig &config);

/// Parameters of the model (a tied classifier counts once).
uint64_t syntheticParameterCount(const ModelConfig &config);

/// The values of one tensor, produced in row-major order a slice at a time.
class SyntheticTensorValues : public TensorValueStream {
public:
  SyntheticTensorValues(uint64_t seed, const SyntheticTensor &tensor);
  /// Writes the next `count` values to `out`.
  void next(float *out, int64_t count) override;

private:
  bool isNorm;
  std::mt19937_64 rng;
  bool hasSpare = false;
  double spare = 0.0;
};

/// The spec's weights, generated as a writer reads them.
class SyntheticTensorSource : public TensorSource {
public:
  explicit SyntheticTensorSource(const SyntheticModelSpec &spec);
  const std::vector<ModelTensor> &tensors() const override { return list; }
  std::unique_ptr<TensorValueStream>
  values(const ModelTensor &tensor) const override;

private:
  uint64_t seed;
  std::vector<ModelTensor> list;
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

// The writers below check the config (std::invalid_argument naming the
// problem) and write the spec's model with the model writers, the
// synthetic vocabulary included where the format holds one. Each returns
// the bytes written and throws std::runtime_error naming the path when it
// cannot write.

/// A float32 llama2.c checkpoint (writeLlama2c): `version` 0, the legacy
/// layout with the RoPE tables older llama2.c builds read, or 1, export.py's.
/// Needs head size dim / n_heads.
uint64_t writeSyntheticLlama2c(const SyntheticModelSpec &spec,
                               const std::string &path, int version = 0);

/// A GGUF v3 file (writeGGUFModel): the hyperparameters, general.name, the
/// synthetic vocabulary (tokenizer.ggml.model "llama") and the tensors as
/// `type` (F32, F16 or BF16; RMSNorm weights stay F32).
uint64_t writeSyntheticGGUF(const SyntheticModelSpec &spec,
                            const std::string &path,
                            ElementType type = ElementType::F32);

/// A Hugging Face directory (writeHuggingFaceModel): config.json, the
/// weights as `type` in model.safetensors (or `shards` files and their
/// index), and the synthetic vocabulary as tokenizer.json.
uint64_t writeSyntheticHuggingFace(const SyntheticModelSpec &spec,
                                   const std::string &dir,
                                   ElementType type = ElementType::F32,
                                   int shards = 1);

/// Writes `vocab` as llama2.c's tokenizer.bin: int32 max_token_length, then
/// per token a float32 score, an int32 length and the bytes. Returns the
/// bytes written.
uint64_t writeLlama2cTokenizer(const runtime::TokenizerSpec &vocab,
                               const std::string &path);

} // namespace kiln::formats

#endif // KILN_FRONTENDS_FORMATS_SYNTHETICMODEL_H
