//===- WriteArtifact.cpp - Pack a compiled step into an artifact ----------===//
//
// Part of Kiln. See WriteArtifact.h.
//
//===----------------------------------------------------------------------===//

#include "codegen/WriteArtifact.h"

#include "codegen/cpu/HostCompiler.h"
#include "ir/KilnOps.h"
#include "runtime/Artifact.h"
#include "runtime/StepABI.h"
#include "runtime/TokenizerSpecJson.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

using namespace mlir;

namespace kiln::codegen {

/// The CPU features a library's code needs: its target's for a CPU step;
/// none for a CUDA step, whose host code is portable.
static std::vector<std::string>
hostCpuFeatures(const target::TargetDescription &target) {
  return target.isCpu() ? requiredCpuFeatures(target)
                        : std::vector<std::string>{};
}

/// The manifest's "weights.entries" (docs/artifact.md, "Weight entries").
static nlohmann::json
weightEntriesJson(const std::vector<runtime::PackedWeight> &entries) {
  nlohmann::json list = nlohmann::json::array();
  for (const runtime::PackedWeight &w : entries) {
    nlohmann::json entry = {
        {"name", w.name}, {"layout", w.layout}, {"shape", {w.rows, w.cols}},
        {"type", w.type}, {"offset", w.offset}, {"bytes", w.bytes}};
    if (w.layout == "panels") {
      entry["panel_rows"] = w.panelRows;
      if (!w.pairs.empty())
        entry["pairs"] = w.pairs;
    }
    list.push_back(entry);
  }
  return list;
}

namespace {

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error("cannot read '" + path + "'");
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

/// Whether the files at `a` and `b` hold the same bytes (compared in 1 MiB
/// chunks: packed weights can be gigabytes).
bool sameBytes(const std::string &a, const std::string &b) {
  std::error_code ec1, ec2;
  if (std::filesystem::file_size(a, ec1) !=
          std::filesystem::file_size(b, ec2) ||
      ec1 || ec2)
    return false;
  std::ifstream fa(a, std::ios::binary), fb(b, std::ios::binary);
  std::vector<char> ba(1 << 20), bb(1 << 20);
  while (fa && fb) {
    fa.read(ba.data(), std::streamsize(ba.size()));
    fb.read(bb.data(), std::streamsize(bb.size()));
    if (fa.gcount() != fb.gcount() ||
        std::memcmp(ba.data(), bb.data(), size_t(fa.gcount())) != 0)
      return false;
  }
  return fa.eof() && fb.eof();
}

/// A section name for `target`'s library: "code.avx512-bf16" (names allow
/// [A-Za-z0-9._-], so '+' becomes '-').
std::string sectionName(const char *prefix,
                        const target::TargetDescription &target) {
  std::string name = std::string(prefix) + "." + target.name;
  std::replace(name.begin(), name.end(), '+', '-');
  return name;
}

} // namespace

std::string librarySourceDirectory(const target::TargetDescription &target) {
  return target.name;
}

/// The manifest's "weights.type": the GEMM panels' types, "+"-joined in
/// first-use order ("q4_0+q8_0" for a mixed model), or f32 when there are
/// none.
static std::string
weightTypesSummary(const std::vector<runtime::PackedWeight> &entries) {
  std::vector<std::string> types;
  for (const runtime::PackedWeight &entry : entries)
    if (entry.layout == "panels" &&
        std::find(types.begin(), types.end(), entry.type) == types.end())
      types.push_back(entry.type);
  std::string summary;
  for (const std::string &type : types)
    summary += (summary.empty() ? "" : "+") + type;
  return summary.empty() ? "f32" : summary;
}

void writeArtifact(ModuleOp module, std::vector<ArtifactLibrary> libraries,
                   const ArtifactModelInfo &model, const std::string &path) {
  if (libraries.empty())
    throw std::runtime_error(path + ": an artifact needs a step library");
  // Least demanding first: a reader that knows only the "code" and "weights"
  // sections (Kiln before step library lists) then runs on the most CPUs.
  // (std::sort on the indices keeps equals in order; std::stable_sort trips
  // a deprecation warning in libstdc++ 12 under clang.)
  std::vector<size_t> order(libraries.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    size_t na = hostCpuFeatures(libraries[a].target).size(),
           nb = hostCpuFeatures(libraries[b].target).size();
    return na != nb ? na < nb : a < b;
  });
  std::vector<ArtifactLibrary> sorted;
  for (size_t i : order)
    sorted.push_back(libraries[i]);
  libraries = std::move(sorted);
  for (size_t i = 0; i < libraries.size(); ++i)
    for (size_t j = 0; j < i; ++j) {
      std::vector<std::string> a = hostCpuFeatures(libraries[i].target),
                               b = hostCpuFeatures(libraries[j].target);
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      if (a == b)
        throw std::runtime_error(
            path + ": targets " + libraries[j].target.spec() + " and " +
            libraries[i].target.spec() +
            " need the same CPU features; the runtime could not choose "
            "between their step libraries");
    }

  func::FuncOp step = getStepFunction(module);
  auto cacheType = cast<KVCacheType>(step.getArgumentTypes().back());
  int64_t vocab =
      cast<RankedTensorType>(step.getResultTypes().front()).getDimSize(1);
  // Query heads: the attention (fused or not) says, from its query [T, H, d].
  int64_t heads = 0;
  step.walk([&](Operation *op) {
    if (auto fused = dyn_cast<AttentionOp>(op))
      heads = fused.getQuery().getType().getDimSize(1);
    else if (auto scores = dyn_cast<AttentionScoresOp>(op))
      heads = scores.getQuery().getType().getDimSize(1);
    return heads ? WalkResult::interrupt() : WalkResult::advance();
  });
  PackedType cacheElement = libraries.front().compiled->cacheType;
  for (const ArtifactLibrary &library : libraries)
    if (library.compiled->cacheType != cacheElement)
      throw std::runtime_error(path + ": step libraries disagree on the KV "
                                      "cache's element type");
  // The attention's sliding window, if any: the runtime frees KV blocks
  // wholly outside it.
  int64_t window = 0;
  step.walk([&](Operation *op) {
    if (auto fused = dyn_cast<AttentionOp>(op); fused && fused.getWindow())
      window = int64_t(*fused.getWindow());
    else if (auto mask = dyn_cast<AttentionMaskOp>(op);
             mask && mask.getWindow())
      window = int64_t(*mask.getWindow());
  });
  if (model.contextLength <= 0)
    throw std::runtime_error(model.source + ": the model declares no context "
                                            "length; pass --context N");

  // (section, file) pairs of each library's code and weights (none when it
  // shares an earlier library's), written after the manifest.
  std::vector<std::pair<std::string, std::string>> code,
      packed(libraries.size());
  nlohmann::json list = nlohmann::json::array();
  std::vector<std::pair<std::string, std::string>> sources;
  // (section, file) of each CUDA library's PTX and cubin.
  std::vector<std::pair<std::string, std::string>> cudaImages;
  double emitSeconds = 0, compileSeconds = 0;
  bool several = libraries.size() > 1;
  for (size_t i = 0; i < libraries.size(); ++i) {
    const target::TargetDescription &target = libraries[i].target;
    const CompiledStep &compiled = *libraries[i].compiled;
    std::string codeName = i == 0 ? std::string(runtime::section::kCode)
                                  : sectionName("code", target);
    std::string weights;
    for (size_t j = 0; j < i && weights.empty(); ++j)
      if (sameBytes(compiled.weightsPath, libraries[j].compiled->weightsPath))
        weights = list[j]["sections"]["weights"].get<std::string>();
    if (weights.empty()) {
      weights = i == 0 ? std::string(runtime::section::kWeights)
                       : sectionName("weights", target);
      packed[i] = {weights, compiled.weightsPath};
    }
    code.push_back({codeName, compiled.libraryPath});
    if (compiled.device == "cuda") {
      std::string suffix = i == 0 ? "" : "." + target.name;
      cudaImages.push_back({"ptx" + suffix, compiled.ptxPath});
      cudaImages.push_back({"cubin" + suffix, compiled.cubinPath});
    }
    list.push_back(
        {{"name", target.name},
         {"sections", {{"code", codeName}, {"weights", weights}}},
         {"target",
          {{"spec", target.spec()}, {"cpu_features", hostCpuFeatures(target)}}},
         {"weights",
          {{"type", weightTypesSummary(compiled.weightEntries)},
           {"bytes", compiled.weightsBytes},
           {"entries", weightEntriesJson(compiled.weightEntries)}}},
         {"step",
          {{"max_tokens", compiled.maxTokens},
           {"arena_bytes", compiled.arenaBytes},
           {"kernels", compiled.kernelSummaries}}},
         {"compile",
          {{"emit_seconds", compiled.emitSeconds},
           {"compile_seconds", compiled.compileSeconds}}}});
    if (compiled.device == "cuda") {
      std::string suffix = i == 0 ? "" : "." + target.name;
      list.back()["device"] = "cuda";
      list.back()["cuda"] = {{"arch", compiled.cudaArch},
                             {"ptx", "ptx" + suffix},
                             {"cubin", "cubin" + suffix},
                             {"nvrtc", compiled.nvrtcVersion}};
    }
    emitSeconds += compiled.emitSeconds;
    compileSeconds += compiled.compileSeconds;
    std::string dir = several ? librarySourceDirectory(target) + "/" : "";
    for (const SourceFile &file : compiled.sources)
      sources.push_back({dir + file.name, file.text});
  }

  // The top-level target, weights and step are the first library's, as in
  // an artifact with one: readers that predate "libraries" run that one.
  nlohmann::json manifest = {
      {"kiln", {{"version", kKilnVersion}, {"abi", KILN_STEP_ABI_VERSION}}},
      {"model",
       {{"source", model.source},
        {"vocab_size", vocab},
        {"heads", heads},
        {"context_length", model.contextLength},
        {"stops_at_eos", model.stopsAtEos}}},
      {"target", list[0]["target"]},
      {"weights", list[0]["weights"]},
      {"cache",
       {{"element_type", packedTypeName(cacheElement).str()},
        {"layers", cacheType.getNumLayers()},
        {"kv_heads", cacheType.getNumKvHeads()},
        {"head_dim", cacheType.getHeadDim()},
        {"sliding_window", window}}},
      {"step", list[0]["step"]},
      {"compile",
       {{"emit_seconds", emitSeconds}, {"compile_seconds", compileSeconds}}},
      {"libraries", list}};

  runtime::ArtifactWriter writer;
  writer.addSection(runtime::section::kManifest, manifest.dump(2));
  for (size_t i = 0; i < code.size(); ++i) {
    writer.addSection(code[i].first, readFile(code[i].second));
    if (!packed[i].first.empty())
      writer.addSectionFromFile(packed[i].first, packed[i].second,
                                runtime::kPageAlignment);
  }
  for (const auto &[name, file] : cudaImages)
    writer.addSection(name, readFile(file));
  writer.addSection(runtime::section::kTokenizer,
                    runtime::tokenizerSpecToJson(model.tokenizer));
  writer.addSection(runtime::section::kSources, runtime::packSources(sources));
  writer.write(path);
}

void writeArtifact(ModuleOp module, const CompiledStep &compiled,
                   const CompileStepOptions &options,
                   const ArtifactModelInfo &model, const std::string &path) {
  writeArtifact(module, {{options.target, &compiled}}, model, path);
}

} // namespace kiln::codegen
