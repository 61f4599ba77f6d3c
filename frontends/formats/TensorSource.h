//===- TensorSource.h - Where a model writer's values come from -*- C++ -*-===//
//
// Part of Kiln. The model writers (ModelWriters.h) write weights from any
// source: `kiln make-model`'s synthetic generator (SyntheticModel.h), the
// tests' random models held in memory, a program's own arrays. A source
// lists the model's tensors and streams each one's values a slice at a
// time, so a writer never holds a whole model: a 1B-parameter one is 4+ GB
// in f32.
//
// Values are float32, row-major, in the pair layout for rotary embedding
// the model's ModelConfig::ropePairs says; each writer reorders Q and K
// rows into the layout its format stores.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_FRONTENDS_FORMATS_TENSORSOURCE_H
#define KILN_FRONTENDS_FORMATS_TENSORSOURCE_H

#include "frontends/formats/ModelConfig.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kiln::formats {

/// A tensor of a model as the writers see it.
struct ModelTensor {
  std::string name;           ///< Kiln's canonical (GGUF) name.
  std::vector<int64_t> shape; ///< Outermost first.

  int64_t numElements() const;
};

/// The tensors of a Llama-family model of `config` in GGUF order:
/// token_embd, each block (attn_norm, attn_q, attn_k, attn_v, with
/// config.qkvBias Qwen2's attn_q/k/v biases, attn_output, ffn_norm,
/// ffn_gate, ffn_down, ffn_up), output_norm, and output unless the
/// classifier is tied.
std::vector<ModelTensor> modelTensors(const ModelConfig &config);

/// Whether `name` is an RMSNorm weight ("...norm.weight").
bool isNormTensor(const std::string &name);

/// The values of one tensor, produced in row-major order a slice at a time.
class TensorValueStream {
public:
  virtual ~TensorValueStream();
  /// Writes the next `count` values to `out`.
  virtual void next(float *out, int64_t count) = 0;
};

class TensorSource {
public:
  virtual ~TensorSource();
  /// The tensors in the order GGUF stores them.
  virtual const std::vector<ModelTensor> &tensors() const = 0;
  /// A fresh stream of the values of `tensor`, one of tensors().
  virtual std::unique_ptr<TensorValueStream>
  values(const ModelTensor &tensor) const = 0;

  /// The tensor named `name`, or null.
  const ModelTensor *find(const std::string &name) const;
};

/// Values held in memory: a map from canonical names to row-major float32
/// values, which must outlive the source.
class InMemoryTensorSource : public TensorSource {
public:
  using Values = std::map<std::string, std::vector<float>>;

  /// The tensors of `tensors`, in that order. Throws std::invalid_argument
  /// naming the first tensor `values` lacks or holds the wrong number of
  /// values for.
  InMemoryTensorSource(std::vector<ModelTensor> tensors, const Values &values);
  /// The tensors modelTensors(config) lists.
  InMemoryTensorSource(const ModelConfig &config, const Values &values);
  // The values are not copied: a temporary map would dangle.
  InMemoryTensorSource(std::vector<ModelTensor>, Values &&) = delete;
  InMemoryTensorSource(const ModelConfig &, Values &&) = delete;

  const std::vector<ModelTensor> &tensors() const override { return list; }
  std::unique_ptr<TensorValueStream>
  values(const ModelTensor &tensor) const override;

private:
  std::vector<ModelTensor> list;
  const Values &held;
};

} // namespace kiln::formats

#endif // KILN_FRONTENDS_FORMATS_TENSORSOURCE_H
