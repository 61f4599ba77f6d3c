//===- TensorSource.cpp - Where a model writer's values come from ---------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "frontends/formats/TensorSource.h"

#include <algorithm>
#include <stdexcept>

namespace kiln::formats {

int64_t ModelTensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::vector<ModelTensor> modelTensors(const ModelConfig &c) {
  std::vector<ModelTensor> tensors;
  auto add = [&](std::string name, std::vector<int64_t> shape) {
    tensors.push_back({std::move(name), std::move(shape)});
  };
  int64_t q = c.numHeads * c.headDim, kv = c.numKvHeads * c.headDim;
  add("token_embd.weight", {c.vocabSize, c.dim});
  for (int64_t l = 0; l < c.numLayers; ++l) {
    auto name = [&](const char *suffix) { return layerTensorName(l, suffix); };
    add(name("attn_norm.weight"), {c.dim});
    add(name("attn_q.weight"), {q, c.dim});
    add(name("attn_k.weight"), {kv, c.dim});
    add(name("attn_v.weight"), {kv, c.dim});
    if (c.qkvBias) {
      add(name("attn_q.bias"), {q});
      add(name("attn_k.bias"), {kv});
      add(name("attn_v.bias"), {kv});
    }
    add(name("attn_output.weight"), {c.dim, q});
    add(name("ffn_norm.weight"), {c.dim});
    add(name("ffn_gate.weight"), {c.hiddenDim, c.dim});
    add(name("ffn_down.weight"), {c.dim, c.hiddenDim});
    add(name("ffn_up.weight"), {c.hiddenDim, c.dim});
  }
  add("output_norm.weight", {c.dim});
  if (!c.tiedClassifier)
    add("output.weight", {c.vocabSize, c.dim});
  return tensors;
}

bool isNormTensor(const std::string &name) {
  const std::string suffix = "norm.weight";
  return name.size() >= suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

TensorValueStream::~TensorValueStream() = default;
TensorSource::~TensorSource() = default;

const ModelTensor *TensorSource::find(const std::string &name) const {
  const std::vector<ModelTensor> &all = tensors();
  auto it = std::find_if(all.begin(), all.end(),
                         [&](const ModelTensor &t) { return t.name == name; });
  return it == all.end() ? nullptr : &*it;
}

//===----------------------------------------------------------------------===//
// In memory
//===----------------------------------------------------------------------===//

namespace {

class VectorStream : public TensorValueStream {
public:
  explicit VectorStream(const std::vector<float> &values) : values(values) {}
  void next(float *out, int64_t count) override {
    if (count < 0 || static_cast<size_t>(count) > values.size() - position)
      throw std::out_of_range("tensor values read past their end");
    std::copy_n(values.begin() + static_cast<std::ptrdiff_t>(position), count,
                out);
    position += static_cast<size_t>(count);
  }

private:
  const std::vector<float> &values;
  size_t position = 0;
};

} // namespace

InMemoryTensorSource::InMemoryTensorSource(std::vector<ModelTensor> tensors,
                                           const Values &values)
    : list(std::move(tensors)), held(values) {
  for (const ModelTensor &t : list) {
    auto it = held.find(t.name);
    if (it == held.end())
      throw std::invalid_argument("in-memory weights: no values for tensor '" +
                                  t.name + "'");
    if (static_cast<int64_t>(it->second.size()) != t.numElements())
      throw std::invalid_argument("in-memory weights: tensor '" + t.name +
                                  "' has " + std::to_string(it->second.size()) +
                                  " values, its shape needs " +
                                  std::to_string(t.numElements()));
  }
}

InMemoryTensorSource::InMemoryTensorSource(const ModelConfig &config,
                                           const Values &values)
    : InMemoryTensorSource(modelTensors(config), values) {}

std::unique_ptr<TensorValueStream>
InMemoryTensorSource::values(const ModelTensor &tensor) const {
  return std::make_unique<VectorStream>(held.at(tensor.name));
}

} // namespace kiln::formats
