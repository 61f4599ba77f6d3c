//===- CompiledModel.cpp - Run a compiled artifact ------------------------===//
//
// Part of Kiln. See CompiledModel.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/CompiledModel.h"

#include "runtime/CpuFeatures.h"
#include "runtime/TokenizerSpecJson.h"
#include "runtime/WeightPrefetch.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <cstring>
#include <set>
#include <stdexcept>

#include <sys/mman.h>
#include <unistd.h>

namespace kiln::runtime {

namespace {

[[noreturn]] void fail(const std::string &path, const std::string &what) {
  throw ArtifactError(path + ": " + what);
}

template <typename T>
T field(const std::string &path, const nlohmann::json &object,
        const char *section, const char *name, const std::string &prefix = "") {
  auto group = object.find(section);
  if (group == object.end() || !group->is_object())
    fail(path, "manifest has no '" + prefix + section + "' object");
  auto it = group->find(name);
  if (it == group->end())
    fail(path,
         "manifest field '" + prefix + section + "." + name + "' is missing");
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception &) {
    fail(path, "manifest field '" + prefix + section + "." + name +
                   "' has the wrong type");
  }
}

/// The fields of one step library, from `object` (the manifest itself for
/// the first library, or an entry of "libraries"); `prefix` names it in
/// errors ("libraries[1].").
StepLibraryManifest parseLibrary(const std::string &path,
                                 const nlohmann::json &object,
                                 const std::string &prefix) {
  StepLibraryManifest lib;
  lib.target = field<std::string>(path, object, "target", "spec", prefix);
  lib.cpuFeatures = field<std::vector<std::string>>(path, object, "target",
                                                    "cpu_features", prefix);
  lib.weightType = field<std::string>(path, object, "weights", "type", prefix);
  lib.maxTokens = field<int64_t>(path, object, "step", "max_tokens", prefix);
  lib.arenaBytes = field<int64_t>(path, object, "step", "arena_bytes", prefix);
  lib.kernels =
      field<std::vector<std::string>>(path, object, "step", "kernels", prefix);
  if (auto device = object.find("device");
      device != object.end() && device->is_string())
    lib.device = device->get<std::string>();
  if (lib.device == "cuda") {
    lib.cudaArch = field<std::string>(path, object, "cuda", "arch", prefix);
    lib.ptxSection = field<std::string>(path, object, "cuda", "ptx", prefix);
    lib.cubinSection =
        field<std::string>(path, object, "cuda", "cubin", prefix);
  } else if (lib.device != "cpu") {
    fail(path, "manifest field '" + prefix + "device' is '" + lib.device +
                   "'; this runtime runs cpu and cuda step libraries");
  }
  // Optional: the entries describe the layout for tools (kiln bench).
  // Artifacts before structured entries held one line of text each: those
  // are skipped.
  if (auto weights = object.find("weights");
      weights != object.end() && weights->contains("entries")) {
    const nlohmann::json &entries = (*weights)["entries"];
    if (!entries.is_array())
      fail(path, "manifest field '" + prefix +
                     "weights.entries' must be an "
                     "array");
    for (const nlohmann::json &entry : entries) {
      if (!entry.is_object())
        continue;
      try {
        PackedWeight w;
        w.name = entry.at("name").get<std::string>();
        w.layout = entry.at("layout").get<std::string>();
        auto shape = entry.at("shape").get<std::vector<int64_t>>();
        if (shape.size() != 2)
          throw std::invalid_argument("shape must be [rows, cols]");
        w.rows = shape[0];
        w.cols = shape[1];
        w.type = entry.at("type").get<std::string>();
        w.offset = entry.at("offset").get<int64_t>();
        w.bytes = entry.at("bytes").get<int64_t>();
        if (w.layout == "panels") {
          w.panelRows = entry.at("panel_rows").get<int64_t>();
          w.pairs = entry.value("pairs", std::string());
        }
        lib.weightEntries.push_back(std::move(w));
      } catch (const std::exception &e) {
        fail(path, "manifest field '" + prefix +
                       "weights.entries' has a malformed entry " +
                       entry.dump() + ": " + e.what());
      }
    }
  }
  if (lib.maxTokens <= 0 || lib.arenaBytes < 0)
    fail(path, "manifest sizes must be positive");
  return lib;
}

/// "avx2" from "avx2,cores=8,...".
std::string targetName(const std::string &spec) {
  return spec.substr(0, spec.find(','));
}

std::string joined(const std::vector<std::string> &items,
                   const char *separator = ", ") {
  std::string text;
  for (const std::string &item : items)
    text += (text.empty() ? "" : separator) + item;
  return text;
}

/// Picks the library to run on this CPU; throws naming what each lacks when
/// none fits. Returns its index and the phrase CompiledModel reports.
std::pair<size_t, std::string> pickLibrary(const std::string &path,
                                           const ArtifactManifest &info) {
  const std::vector<StepLibraryManifest> &libs = info.libraries;
  std::vector<std::vector<std::string>> required;
  for (const StepLibraryManifest &lib : libs)
    required.push_back(lib.cpuFeatures);
  StepLibraryChoice choice = chooseStepLibrary(required, hostCpuFeatures());
  if (!choice.index && libs.size() == 1)
    fail(path, "was compiled for " + libs[0].target + ", but this CPU lacks " +
                   joined(choice.missing[0]) +
                   " (recompile with --target native)");
  std::string lacks;
  for (size_t i = 0; i < libs.size(); ++i)
    if (!choice.missing[i].empty())
      lacks += std::string(lacks.empty() ? "" : "; ") +
               joined(choice.missing[i]) + " for " + libs[i].name;
  if (!choice.index) {
    std::vector<std::string> names;
    for (const StepLibraryManifest &lib : libs)
      names.push_back(lib.name);
    fail(path, "has step libraries for " + joined(names) +
                   ", but this CPU can run none of them: it lacks " + lacks +
                   " (recompile with --target native)");
  }
  size_t index = *choice.index;
  std::string phrase = "the " + libs[index].name + " step library";
  if (libs.size() == 1)
    phrase += ", the artifact's only one";
  else if (lacks.empty())
    phrase += ", the most capable of its " + std::to_string(libs.size());
  else
    phrase += " (this CPU lacks " + lacks + ")";
  return {index, phrase};
}

} // namespace

StepLibraryChoice
chooseStepLibrary(const std::vector<std::vector<std::string>> &required,
                  const std::vector<std::string> &available) {
  StepLibraryChoice choice;
  size_t bestCount = 0;
  for (size_t i = 0; i < required.size(); ++i) {
    choice.missing.push_back(missingCpuFeatures(required[i], available));
    if (!choice.missing.back().empty())
      continue;
    // Required features grow with capability (avx512 needs avx2's and more),
    // so the library that needs the most is the most capable that fits.
    size_t count =
        std::set<std::string>(required[i].begin(), required[i].end()).size();
    if (!choice.index || count > bestCount) {
      choice.index = i;
      bestCount = count;
    }
  }
  return choice;
}

void ArtifactManifest::describeLibrary(size_t index) {
  const StepLibraryManifest &lib = libraries.at(index);
  library = index;
  target = lib.target;
  cpuFeatures = lib.cpuFeatures;
  weightType = lib.weightType;
  maxTokens = lib.maxTokens;
  arenaBytes = lib.arenaBytes;
  kernels = lib.kernels;
}

ArtifactManifest parseManifest(const std::string &path, std::string_view text) {
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception &e) {
    fail(path, std::string("manifest is not valid JSON: ") + e.what());
  }
  ArtifactManifest m;
  m.kilnVersion = field<std::string>(path, json, "kiln", "version");
  m.vocabSize = field<int64_t>(path, json, "model", "vocab_size");
  m.contextLength = field<int64_t>(path, json, "model", "context_length");
  m.layers = field<int64_t>(path, json, "cache", "layers");
  m.kvHeads = field<int64_t>(path, json, "cache", "kv_heads");
  m.headDim = field<int64_t>(path, json, "cache", "head_dim");
  if (auto model = json.find("model"); model != json.end() &&
                                       model->contains("heads") &&
                                       (*model)["heads"].is_number_integer())
    m.heads = (*model)["heads"].get<int64_t>();
  m.stopsAtEos = field<bool>(path, json, "model", "stops_at_eos");
  if (auto cache = json.find("cache"); cache != json.end()) {
    if (auto w = cache->find("sliding_window");
        w != cache->end() && w->is_number_integer())
      m.slidingWindow = w->get<int64_t>();
    if (auto type = cache->find("element_type");
        type != cache->end() && type->is_string())
      m.cacheElementType = type->get<std::string>();
  }
  if (m.cacheElementType != "f32" && m.cacheElementType != "f16" &&
      m.cacheElementType != "bf16")
    fail(path, "KV cache element type '" + m.cacheElementType +
                   "' is not one this runtime reads (f32, f16, bf16)");
  if (m.vocabSize <= 0 || m.contextLength <= 0 || m.layers <= 0 ||
      m.kvHeads <= 0 || m.headDim <= 0)
    fail(path, "manifest sizes must be positive");

  // The top-level target, weights and step describe the library in the
  // "code" and "weights" sections; "libraries", when present, lists every
  // library, that one first.
  auto list = json.find("libraries");
  if (list == json.end()) {
    StepLibraryManifest lib = parseLibrary(path, json, "");
    lib.name = targetName(lib.target);
    lib.codeSection = section::kCode;
    lib.weightsSection = section::kWeights;
    m.libraries.push_back(std::move(lib));
  } else {
    if (!list->is_array() || list->empty())
      fail(path, "manifest field 'libraries' must be a non-empty array");
    for (size_t i = 0; i < list->size(); ++i) {
      const nlohmann::json &entry = (*list)[i];
      std::string prefix = "libraries[" + std::to_string(i) + "].";
      if (!entry.is_object())
        fail(path, "manifest field 'libraries[" + std::to_string(i) +
                       "]' must be an object");
      StepLibraryManifest lib = parseLibrary(path, entry, prefix);
      auto name = entry.find("name");
      if (name == entry.end() || !name->is_string())
        fail(path, "manifest field '" + prefix + "name' must be a string");
      lib.name = name->get<std::string>();
      lib.codeSection =
          field<std::string>(path, entry, "sections", "code", prefix);
      lib.weightsSection =
          field<std::string>(path, entry, "sections", "weights", prefix);
      m.libraries.push_back(std::move(lib));
    }
  }
  m.describeLibrary(0);
  return m;
}

std::unique_ptr<CompiledModel>
CompiledModel::load(const std::string &path,
                    const CompiledModelOptions &options) {
  Artifact file = Artifact::open(path, options.verifyHashes);
  for (const char *name : {section::kManifest, section::kTokenizer})
    if (!file.hasSection(name))
      fail(path, std::string("has no '") + name + "' section");
  ArtifactManifest info = parseManifest(path, file.section(section::kManifest));
  for (const StepLibraryManifest &lib : info.libraries)
    for (const std::string &name : {lib.codeSection, lib.weightsSection})
      if (!file.hasSection(name))
        fail(path, "has no '" + name + "' section (the " + lib.name +
                       " step library's)");
  auto [index, choice] = pickLibrary(path, info);
  const StepLibraryManifest &lib = info.libraries[index];
  StepLibrary library = StepLibrary::load(file.section(lib.codeSection), path);
  info.describeLibrary(index);
  return std::unique_ptr<CompiledModel>(
      new CompiledModel(std::move(file), std::move(library), std::move(info),
                        std::move(choice), options));
}

CompiledModel::CompiledModel(Artifact file, StepLibrary library,
                             ArtifactManifest info, std::string choice,
                             const CompiledModelOptions &options)
    : file(std::move(file)), library(std::move(library)), info(std::move(info)),
      choice(std::move(choice)) {
  weightBytes = this->file.section(stepLibrary().weightsSection);
  if (options.weightsInHugePages && stepLibrary().device != "cuda" &&
      !weightBytes.empty() && transparentHugePagesOnAdvice()) {
    weightCopy = std::make_unique<HugePageBuffer>(int64_t(weightBytes.size()));
    std::memcpy(weightCopy->data(), weightBytes.data(), weightBytes.size());
    // The mapping's pages of the section are no longer read: drop them from
    // this process (the page cache keeps them, reclaimable), so resident
    // memory counts the weights once.
    uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
    uintptr_t from = reinterpret_cast<uintptr_t>(weightBytes.data());
    uintptr_t begin = (from + page - 1) / page * page,
              end = (from + weightBytes.size()) / page * page;
    if (end > begin)
      ::madvise(reinterpret_cast<void *>(begin), end - begin, MADV_DONTNEED);
    weightBytes = std::string_view(
        reinterpret_cast<const char *>(weightCopy->data()), weightBytes.size());
  }
  weightPrefetch = hostWeightPrefetch();
  pool = std::make_unique<ThreadPool>(options.threads);
  parallel = pool->abi();
  size_t arenaBytes = size_t(this->info.arenaBytes + 64) / 64 * 64;
  arena.reset(std::aligned_alloc(64, arenaBytes ? arenaBytes : 64));
  if (!arena)
    throw std::bad_alloc();
  if (options.contextLength > 0)
    this->info.contextLength = options.contextLength;
  PagedKVCacheOptions kv;
  kv.layers = this->info.layers;
  kv.kvHeads = this->info.kvHeads;
  kv.headDim = this->info.headDim;
  kv.elementBytes = this->info.cacheElementType == "f32" ? 4 : 2;
  kv.maxSequences = std::max(options.maxSequences, 1);
  kv.maxPositions = this->info.contextLength;
  if (options.kvBlockPositions < kMinKvBlockPositions)
    throw std::invalid_argument(
        "KV cache: blocks of " + std::to_string(options.kvBlockPositions) +
        " positions are too small; compiled attention reads key positions " +
        "in vectors and needs at least " +
        std::to_string(kMinKvBlockPositions));
  kv.blockPositions = options.kvBlockPositions;
  kv.budgetBytes = options.kvMemoryBytes;
  kv.slidingWindow = this->info.slidingWindow;
  cache = std::make_unique<PagedKVCache>(kv);
  const StepLibraryManifest &lib = stepLibrary();
  if (lib.device == "cuda") {
    cuda::CudaStepInputs in;
    in.artifactPath = this->file.path();
    in.arch = lib.cudaArch;
    in.ptx = this->file.section(lib.ptxSection);
    in.cubin = this->file.section(lib.cubinSection);
    in.weights = weightBytes;
    in.arenaBytes = this->info.arenaBytes;
    in.maxTokens = this->info.maxTokens;
    in.vocabSize = this->info.vocabSize;
    in.cacheBytes = cache->poolBytes();
    in.stepFn = this->library.symbol("kiln_cuda_step");
    in.emulatedLaunch = this->library.symbol("kiln_cuda_emulated_launch");
    in.emulatedError = this->library.symbol("kiln_cuda_emulated_error");
    cudaRunner = cuda::CudaStepRunner::create(in);
  }
}

std::string CompiledModel::cudaDevice() const {
  return cudaRunner ? cudaRunner->describe() : std::string();
}

CompiledModel::~CompiledModel() = default;

void CompiledModel::FreeDeleter::operator()(void *p) const { std::free(p); }

TokenizerSpec CompiledModel::tokenizerSpec() const {
  return tokenizerSpecFromJson(file.section(section::kTokenizer));
}

void CompiledModel::reset() { cache->reset(); }

void CompiledModel::freeSequence(int32_t seq) { cache->freeSequence(seq); }

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
  limits.maxSequences = cache->abi()->max_seqs;
  limits.contextLength = int32_t(info.contextLength);
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
  args.weights = reinterpret_cast<const uint8_t *>(weightBytes.data());
  args.arena = static_cast<uint8_t *>(arena.get());
  cache->prepareStep(batch, begin, end);
  args.cache = cache->abi();
  args.parallel = &parallel;
  args.call_seconds = profiling ? callSeconds.data() : nullptr;
  args.weight_prefetch = int32_t(weightPrefetch);
  if (cudaRunner) {
    cudaRunner->step(args);
    cache->finishStep(batch, begin, end);
    return;
  }
  if (int32_t status = library.step(args); status != 0)
    throw std::runtime_error(file.path() + ": the step failed with status " +
                             std::to_string(status));
  cache->finishStep(batch, begin, end);
}

} // namespace kiln::runtime
