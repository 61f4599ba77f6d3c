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

#include <fstream>
#include <stdexcept>

using namespace mlir;

namespace kiln::codegen {

namespace {

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error("cannot read '" + path + "'");
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

} // namespace

void writeArtifact(ModuleOp module, const CompiledStep &compiled,
                   const CompileStepOptions &options,
                   const ArtifactModelInfo &model, const std::string &path) {
  func::FuncOp step = getStepFunction(module);
  auto cacheType = cast<KVCacheType>(step.getArgumentTypes().back());
  int64_t vocab =
      cast<RankedTensorType>(step.getResultTypes().front()).getDimSize(1);
  if (model.contextLength <= 0)
    throw std::runtime_error(model.source + ": the model declares no context "
                                            "length; pass --context N");
  nlohmann::json manifest = {
      {"kiln", {{"version", kKilnVersion}, {"abi", KILN_STEP_ABI_VERSION}}},
      {"model",
       {{"source", model.source},
        {"vocab_size", vocab},
        {"context_length", model.contextLength},
        {"stops_at_eos", model.stopsAtEos}}},
      {"target",
       {{"spec", options.target.spec()},
        {"cpu_features", requiredCpuFeatures(options.target)}}},
      {"weights",
       {{"type", packedTypeName(options.weightType).str()},
        {"bytes", compiled.weightsBytes},
        {"entries", compiled.weightEntries}}},
      {"cache",
       {{"element_type", "f32"},
        {"layers", cacheType.getNumLayers()},
        {"kv_heads", cacheType.getNumKvHeads()},
        {"head_dim", cacheType.getHeadDim()}}},
      {"step",
       {{"max_tokens", compiled.maxTokens},
        {"arena_bytes", compiled.arenaBytes},
        {"kernels", compiled.kernelSummaries}}},
      {"compile",
       {{"emit_seconds", compiled.emitSeconds},
        {"compile_seconds", compiled.compileSeconds}}}};

  runtime::ArtifactWriter writer;
  writer.addSection(runtime::section::kManifest, manifest.dump(2));
  writer.addSection(runtime::section::kCode, readFile(compiled.libraryPath));
  writer.addSectionFromFile(runtime::section::kWeights, compiled.weightsPath,
                            runtime::kPageAlignment);
  writer.addSection(runtime::section::kTokenizer,
                    runtime::tokenizerSpecToJson(model.tokenizer));
  std::vector<std::pair<std::string, std::string>> sources;
  for (const SourceFile &file : compiled.sources)
    sources.push_back({file.name, file.text});
  writer.addSection(runtime::section::kSources, runtime::packSources(sources));
  writer.write(path);
}

} // namespace kiln::codegen
