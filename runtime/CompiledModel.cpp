//===- CompiledModel.cpp - Run a compiled artifact ------------------------===//
//
// Part of Kiln. See CompiledModel.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/CompiledModel.h"

#include "runtime/CpuFeatures.h"
#include "runtime/TokenizerSpecJson.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <cstring>

namespace kiln::runtime {

namespace {

[[noreturn]] void fail(const std::string &path, const std::string &what) {
  throw ArtifactError(path + ": " + what);
}

template <typename T>
T field(const std::string &path, const nlohmann::json &object,
        const char *section, const char *name) {
  auto group = object.find(section);
  if (group == object.end() || !group->is_object())
    fail(path, std::string("manifest has no '") + section + "' object");
  auto it = group->find(name);
  if (it == group->end())
    fail(path, std::string("manifest field '") + section + "." + name +
                   "' is missing");
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception &) {
    fail(path, std::string("manifest field '") + section + "." + name +
                   "' has the wrong type");
  }
}

} // namespace

ArtifactManifest parseManifest(const std::string &path, std::string_view text) {
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception &e) {
    fail(path, std::string("manifest is not valid JSON: ") + e.what());
  }
  ArtifactManifest m;
  m.kilnVersion = field<std::string>(path, json, "kiln", "version");
  m.target = field<std::string>(path, json, "target", "spec");
  m.cpuFeatures =
      field<std::vector<std::string>>(path, json, "target", "cpu_features");
  m.weightType = field<std::string>(path, json, "weights", "type");
  m.vocabSize = field<int64_t>(path, json, "model", "vocab_size");
  m.contextLength = field<int64_t>(path, json, "model", "context_length");
  m.layers = field<int64_t>(path, json, "cache", "layers");
  m.kvHeads = field<int64_t>(path, json, "cache", "kv_heads");
  m.headDim = field<int64_t>(path, json, "cache", "head_dim");
  m.maxTokens = field<int64_t>(path, json, "step", "max_tokens");
  m.arenaBytes = field<int64_t>(path, json, "step", "arena_bytes");
  m.stopsAtEos = field<bool>(path, json, "model", "stops_at_eos");
  m.kernels = field<std::vector<std::string>>(path, json, "step", "kernels");
  if (m.vocabSize <= 0 || m.contextLength <= 0 || m.layers <= 0 ||
      m.kvHeads <= 0 || m.headDim <= 0 || m.maxTokens <= 0 || m.arenaBytes < 0)
    fail(path, "manifest sizes must be positive");
  return m;
}

std::unique_ptr<CompiledModel>
CompiledModel::load(const std::string &path,
                    const CompiledModelOptions &options) {
  Artifact file = Artifact::open(path, options.verifyHashes);
  for (const char *name : {section::kManifest, section::kCode,
                           section::kWeights, section::kTokenizer})
    if (!file.hasSection(name))
      fail(path, std::string("has no '") + name + "' section");
  ArtifactManifest info = parseManifest(path, file.section(section::kManifest));
  std::vector<std::string> missing = missingCpuFeatures(info.cpuFeatures);
  if (!missing.empty()) {
    std::string list;
    for (const std::string &f : missing)
      list += (list.empty() ? "" : ", ") + f;
    fail(path, "was compiled for " + info.target + ", but this CPU lacks " +
                   list + " (recompile with --target native)");
  }
  StepLibrary library = StepLibrary::load(file);
  return std::unique_ptr<CompiledModel>(new CompiledModel(
      std::move(file), std::move(library), std::move(info), options));
}

CompiledModel::CompiledModel(Artifact file, StepLibrary library,
                             ArtifactManifest info,
                             const CompiledModelOptions &options)
    : file(std::move(file)), library(std::move(library)),
      info(std::move(info)) {
  pool = std::make_unique<ThreadPool>(options.threads);
  parallel = pool->abi();
  size_t arenaBytes = size_t(this->info.arenaBytes + 64) / 64 * 64;
  arena.reset(std::aligned_alloc(64, arenaBytes ? arenaBytes : 64));
  if (!arena)
    throw std::bad_alloc();
  if (options.contextLength > 0)
    this->info.contextLength = options.contextLength;
  int64_t row = this->info.kvHeads * this->info.headDim;
  int64_t seqs = std::max(options.maxSequences, 1);
  cache.position_stride = row;
  cache.seq_stride = row * this->info.contextLength;
  cache.layer_stride = cache.seq_stride * seqs;
  cache.max_seqs = int32_t(seqs);
  cache.max_positions = int32_t(this->info.contextLength);
  keys.assign(size_t(cache.layer_stride * this->info.layers), 0.0f);
  values.assign(keys.size(), 0.0f);
  cache.keys = keys.data();
  cache.values = values.data();
}

CompiledModel::~CompiledModel() = default;

void CompiledModel::FreeDeleter::operator()(void *p) const { std::free(p); }

TokenizerSpec CompiledModel::tokenizerSpec() const {
  return tokenizerSpecFromJson(file.section(section::kTokenizer));
}

void CompiledModel::reset() {
  std::fill(keys.begin(), keys.end(), 0.0f);
  std::fill(values.begin(), values.end(), 0.0f);
}

void CompiledModel::setProfiling(bool enabled) {
  profiling = enabled;
  if (enabled && callSeconds.empty())
    callSeconds.assign(library.callNames().size(), 0.0);
}

std::vector<CompiledModel::ProfileEntry> CompiledModel::profile() const {
  std::vector<std::string> names = library.callNames();
  std::vector<ProfileEntry> entries;
  for (size_t i = 0; i < names.size() && i < callSeconds.size(); ++i)
    entries.push_back({names[i], callSeconds[i]});
  return entries;
}

std::vector<float> CompiledModel::step(const StepBatch &batch) {
  StepLimits limits;
  limits.vocabSize = int32_t(info.vocabSize);
  limits.maxSequences = cache.max_seqs;
  limits.contextLength = cache.max_positions;
  if (std::optional<std::string> error = validateStepBatch(batch, limits))
    throw std::invalid_argument("invalid step: " + *error);
  std::vector<float> logits;
  logits.reserve(batch.logitRows.size() * size_t(info.vocabSize));
  size_t n = batch.numTokens(), chunk = size_t(info.maxTokens);
  for (size_t begin = 0; begin < n; begin += chunk)
    runChunk(batch, begin, std::min(n, begin + chunk), logits);
  return logits;
}

void CompiledModel::runChunk(const StepBatch &batch, size_t begin, size_t end,
                             std::vector<float> &logits) {
  std::vector<int32_t> rows;
  for (int32_t row : batch.logitRows)
    if (size_t(row) >= begin && size_t(row) < end)
      rows.push_back(int32_t(row - begin));
  size_t first = logits.size();
  logits.resize(first + rows.size() * size_t(info.vocabSize));
  kiln_step_args args;
  args.tokens = int64_t(end - begin);
  args.token_ids = batch.tokens.data() + begin;
  args.positions = batch.positions.data() + begin;
  args.seq_ids = batch.seqIds.data() + begin;
  args.rows = int64_t(rows.size());
  args.logit_rows = rows.data();
  args.logits = logits.data() + first;
  args.weights =
      reinterpret_cast<const uint8_t *>(file.section(section::kWeights).data());
  args.arena = static_cast<uint8_t *>(arena.get());
  args.cache = &cache;
  args.parallel = &parallel;
  args.call_seconds = profiling ? callSeconds.data() : nullptr;
  if (int32_t status = library.step(args); status != 0)
    throw std::runtime_error(file.path() + ": the step failed with status " +
                             std::to_string(status));
}

} // namespace kiln::runtime
