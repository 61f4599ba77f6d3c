//===- SyntheticModel.h - Random Llama models for tests ---------*- C++ -*-===//
//
// Part of Kiln's unit tests. A small Llama-family model with random weights,
// held in memory and written in each format Kiln imports, so tests can check
// that every importer builds the same IR and the interpreter gives the same
// logits for the same weights.
//
// The tensors are those of `kiln make-model`'s models
// (formats::syntheticTensors, with Qwen2's QKV biases when the config has
// them) and the files are written by the production writers
// (frontends/formats/ModelWriters.h) from source(), so the tests read the
// files Kiln makes. The values are the tests' own: N(0, 0.1) matrices and
// norm weights near (not at) 1, so a norm applied in the wrong place
// changes the logits, where make-model's weights are N(0, 0.02) with norms
// of exactly 1.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TEST_UNIT_SYNTHETICMODEL_H
#define KILN_TEST_UNIT_SYNTHETICMODEL_H

#include "frontends/formats/ModelConfig.h"
#include "frontends/formats/SyntheticModel.h"
#include "frontends/formats/TensorInfo.h"
#include "frontends/formats/TensorSource.h"
#include "ir/WeightProvider.h"

#include <map>
#include <random>
#include <string>
#include <vector>

namespace kiln::test {

struct SyntheticModel {
  formats::ModelConfig config;
  /// Weights by Kiln's canonical names, row-major float32.
  std::map<std::string, std::vector<float>> weights;
  std::map<std::string, std::vector<int64_t>> shapes;

  /// A model of `config` with N(0, 0.1) matrices and norms near 1.
  static SyntheticModel random(formats::ModelConfig config, uint32_t seed) {
    SyntheticModel m;
    m.config = config;
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 0.1f);
    auto add = [&](const std::string &name, std::vector<int64_t> shape,
                   bool norm) {
      int64_t n = 1;
      for (int64_t d : shape)
        n *= d;
      std::vector<float> v(n);
      for (float &x : v)
        x = norm ? 1.0f + normal(rng) : normal(rng);
      m.weights[name] = std::move(v);
      m.shapes[name] = std::move(shape);
    };
    for (const formats::SyntheticTensor &t : formats::syntheticTensors(config))
      add(t.name, t.shape, t.isNorm);
    return m;
  }

  /// The tensor directory an importer of an f32 file would produce (offsets
  /// are irrelevant in memory).
  std::vector<formats::TensorInfo> tensorInfos() const {
    std::vector<formats::TensorInfo> infos;
    for (const auto &[name, shape] : shapes) {
      formats::TensorInfo t;
      t.name = name;
      t.shape = shape;
      t.bytes = static_cast<uint64_t>(t.numElements()) * 4;
      infos.push_back(t);
    }
    return infos;
  }

  /// The tensors in the writers' (GGUF) order, with the shapes held here.
  std::vector<formats::ModelTensor> tensorList() const {
    std::vector<formats::ModelTensor> list;
    for (const formats::ModelTensor &t : formats::modelTensors(config))
      if (shapes.count(t.name))
        list.push_back({t.name, shapes.at(t.name)});
    return list;
  }

  /// The weights for the production writers (formats/ModelWriters.h); the
  /// model must outlive it.
  formats::InMemoryTensorSource source() const {
    return formats::InMemoryTensorSource(tensorList(), weights);
  }
};

/// Serves a SyntheticModel's weights to the interpreter.
class InMemoryWeights : public WeightProvider {
public:
  explicit InMemoryWeights(const SyntheticModel &model) : model(model) {}
  const float *getWeight(llvm::StringRef name,
                         mlir::RankedTensorType) override {
    return model.weights.at(name.str()).data();
  }

private:
  const SyntheticModel &model;
};

} // namespace kiln::test

#endif // KILN_TEST_UNIT_SYNTHETICMODEL_H
