//===- CompiledModelExecutor.cpp - A compiled artifact as executor --------===//
//
// Part of Kiln. See CompiledModelExecutor.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/engine/CompiledModelExecutor.h"

#include <algorithm>

namespace kiln::runtime {

CompiledModelExecutor::CompiledModelExecutor(
    std::unique_ptr<CompiledModel> model)
    : compiled(std::move(model)) {}

StepLimits CompiledModelExecutor::limits() const {
  StepLimits l;
  l.vocabSize = int32_t(compiled->manifest().vocabSize);
  l.maxSequences = compiled->kvCache().tables().maxSequences();
  l.contextLength = int32_t(compiled->manifest().contextLength);
  return l;
}

int32_t CompiledModelExecutor::preferredStepTokens() const {
  return int32_t(compiled->manifest().maxTokens);
}

std::vector<float> CompiledModelExecutor::step(const StepBatch &batch) {
  return compiled->step(batch);
}

bool CompiledModelExecutor::reserve(int32_t seq, int64_t begin, int64_t end) {
  return compiled->kvCache().reserve(seq, begin, end);
}

void CompiledModelExecutor::release(int32_t seq) {
  compiled->freeSequence(seq);
}

int64_t
CompiledModelExecutor::attachCachedPrefix(int32_t seq,
                                          const std::vector<int32_t> &tokens) {
  return compiled->kvCache().tables().attachCachedPrefix(seq, tokens);
}

void CompiledModelExecutor::cachePrefix(int32_t seq,
                                        const std::vector<int32_t> &tokens) {
  compiled->kvCache().tables().cachePrefix(seq, tokens);
}

KVCacheUsage CompiledModelExecutor::usage() const {
  const KVBlockTables &tables = compiled->kvCache().tables();
  KVCacheUsage u;
  u.usedBlocks = tables.usedBlocks();
  u.freeBlocks = tables.freeBlocks();
  u.totalBlocks = compiled->kvCache().numBlocks();
  u.blockPositions = tables.blockPositions();
  u.cachedBlocks = tables.cachedBlocks();
  return u;
}

std::vector<int32_t> modelStopTokens(const TokenizerSpec &spec,
                                     bool stopsAtEos) {
  std::vector<int32_t> stops;
  auto add = [&](int32_t id) {
    if (id >= 0 && std::find(stops.begin(), stops.end(), id) == stops.end())
      stops.push_back(id);
  };
  add(spec.bosId);
  if (stopsAtEos) {
    add(spec.eosId);
    add(spec.eotId);
  }
  return stops;
}

std::unique_ptr<Engine> openArtifactEngine(const std::string &path,
                                           const CompiledModelOptions &model,
                                           const EngineOptions &engine,
                                           std::optional<Tokenizer> tokenizer) {
  std::unique_ptr<CompiledModel> compiled = CompiledModel::load(path, model);
  Tokenizer vocab =
      tokenizer ? std::move(*tokenizer) : Tokenizer(compiled->tokenizerSpec());
  std::vector<int32_t> stops =
      modelStopTokens(vocab.spec(), compiled->manifest().stopsAtEos);
  return std::make_unique<Engine>(
      std::make_unique<CompiledModelExecutor>(std::move(compiled)),
      std::move(vocab), std::move(stops), engine);
}

} // namespace kiln::runtime
