//===- CompiledModelExecutor.h - A compiled artifact as executor -*- C++
//-*-===//
//
// Part of Kiln. Runs the engine's steps on a CompiledModel: its paged KV
// cache gives the room (KVBlockTables, prefix cache included), its step
// library runs the step.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_ENGINE_COMPILEDMODELEXECUTOR_H
#define KILN_RUNTIME_ENGINE_COMPILEDMODELEXECUTOR_H

#include "runtime/CompiledModel.h"
#include "runtime/engine/Engine.h"
#include "runtime/engine/StepExecutor.h"

#include <memory>
#include <optional>
#include <string>

namespace kiln::runtime {

class CompiledModelExecutor : public StepExecutor {
public:
  explicit CompiledModelExecutor(std::unique_ptr<CompiledModel> model);

  CompiledModel &model() { return *compiled; }

  StepLimits limits() const override;
  int32_t preferredStepTokens() const override;
  std::vector<float> step(const StepBatch &batch) override;
  bool reserve(int32_t seq, int64_t begin, int64_t end) override;
  void release(int32_t seq) override;
  int64_t attachCachedPrefix(int32_t seq,
                             const std::vector<int32_t> &tokens) override;
  void cachePrefix(int32_t seq, const std::vector<int32_t> &tokens) override;
  KVCacheUsage usage() const override;

private:
  std::unique_ptr<CompiledModel> compiled;
};

/// The tokens that end generation for a model: BOS (llama2.c stops at it)
/// and, when the model stops at them, its EOS and EOT.
std::vector<int32_t> modelStopTokens(const TokenizerSpec &spec,
                                     bool stopsAtEos);

/// An engine over the artifact at `path` (CompiledModel::load's errors),
/// with the artifact's own tokenizer unless `tokenizer` is given.
/// `model.maxSequences` is how many requests run at once.
std::unique_ptr<Engine>
openArtifactEngine(const std::string &path, const CompiledModelOptions &model,
                   const EngineOptions &engine = {},
                   std::optional<Tokenizer> tokenizer = std::nullopt);

} // namespace kiln::runtime

#endif // KILN_RUNTIME_ENGINE_COMPILEDMODELEXECUTOR_H
