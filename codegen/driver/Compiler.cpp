//===- Compiler.cpp - Kiln's compiler as a library ------------------------===//
//
// Part of Kiln's compiler driver. See Compiler.h.
//
//===----------------------------------------------------------------------===//

#include "codegen/driver/Compiler.h"

#include "codegen/driver/CompileCache.h"
#include "codegen/driver/LoadedModel.h"

#include "codegen/CompileStep.h"
#include "codegen/WriteArtifact.h"
#include "codegen/cpu/HostCompiler.h"
#include "frontends/LlamaBuilder.h"
#include "frontends/formats/Quantize.h"
#include "ir/KilnOps.h"
#include "ir/KilnTypes.h"
#include "passes/FusionDiagnostics.h"
#include "passes/Passes.h"
#include "passes/Pipelines.h"
#include "runtime/Artifact.h"
#include "runtime/ChatTemplate.h"
#include "runtime/cuda/CudaObjects.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace mlir;

namespace kiln {

namespace {

/// Counts the stages for CompileOptions::progress.
struct Progress {
  const CompileOptions &options;
  int stages, stage = 0;
  void operator()(const std::string &what) {
    if (options.progress)
      options.progress(++stage, stages, what);
  }
};

/// f32, f16 or bf16, as `option` (--dtype, --kv-type) names them.
codegen::PackedType packedType(const std::string &name,
                               const std::string &option = "--dtype") {
  if (name == "f32")
    return codegen::PackedType::F32;
  if (name == "f16")
    return codegen::PackedType::F16;
  if (name == "bf16")
    return codegen::PackedType::BF16;
  throw std::runtime_error(option + " must be f32, f16 or bf16, not '" + name +
                           "'");
}

/// --dtype: the type every GEMM weight is packed as, or (empty) nothing:
/// each keeps its own element type.
std::optional<codegen::PackedType> forcedWeightType(const std::string &name) {
  if (name.empty())
    return std::nullopt;
  return packedType(name);
}

/// `kiln compile --quantize`: the weights of `inner` with every tensor the
/// scheme quantizes (formats::schemeTensorType: every matrix for a pure
/// type, as llama-quantize --pure; llama.cpp's per-tensor mix for q4_k_m)
/// turned into its type's blocks, each once and kept. quantizeModule
/// declares those tensors in the IR with their block types, so the packer
/// asks for their blocks (and gets floats, widened from the blocks, where
/// --dtype asks for floats).
class QuantizingWeightProvider : public WeightProvider {
public:
  QuantizingWeightProvider(WeightProvider &inner,
                           formats::QuantizationScheme scheme)
      : inner(inner), scheme(scheme) {}

  /// Declares every tensor of `module` that the scheme quantizes as its
  /// type (its kiln.weight_decl and kiln.weight ops), remembering the
  /// file's types to read the floats with.
  void quantizeModule(ModuleOp module) {
    MLIRContext *context = module.getContext();
    // The mixes treat layers differently: count each kind's tensors, in
    // declaration order (the file's), as llama-quantize does.
    llvm::StringMap<int> kindCount, kindSeen;
    bool hasOutput = false;
    for (auto decl : module.getOps<WeightDeclOp>()) {
      llvm::StringRef name = decl.getSymName();
      hasOutput |= name == "output.weight";
      ++kindCount[tensorKind(name)];
    }
    llvm::StringMap<RankedTensorType> declared;
    for (auto decl : module.getOps<WeightDeclOp>()) {
      RankedTensorType tensor = decl.getTensorType();
      std::string name = decl.getSymName().str();
      std::vector<int64_t> shape(tensor.getShape().begin(),
                                 tensor.getShape().end());
      std::string kind = tensorKind(name);
      formats::TensorPlacement placement{kindSeen[kind]++, kindCount[kind],
                                         hasOutput};
      formats::ElementType type =
          formats::schemeTensorType(scheme, name, shape, placement);
      if (!formats::isBlockQuantized(type))
        continue;
      int64_t block = formats::blockSize(type);
      if (shape.back() % block != 0)
        throw std::runtime_error(
            "tensor '" + name + "' has rows of " +
            std::to_string(shape.back()) + " weights, not a multiple of " +
            std::to_string(block) + ": it cannot be quantized to " +
            formats::elementTypeName(type));
      fileTypes[name] = tensor;
      types[name] = type;
      auto quantized = RankedTensorType::get(tensor.getShape(),
                                             getIRElementType(context, type));
      declared[decl.getSymName()] = quantized;
      decl.setTypeAttr(TypeAttr::get(quantized));
    }
    module.walk([&](WeightOp weight) {
      if (auto it = declared.find(weight.getName()); it != declared.end())
        weight.getResult().setType(it->second);
    });
  }

  const float *getWeight(llvm::StringRef name,
                         RankedTensorType tensorType) override {
    auto file = fileTypes.find(name.str());
    if (file == fileTypes.end())
      return inner.getWeight(name, tensorType);
    auto [it, inserted] = widened.try_emplace(name.str());
    if (inserted) {
      const std::vector<uint8_t> &blocks = quantized(name);
      it->second.resize(static_cast<size_t>(tensorType.getNumElements()));
      formats::dequantize(types.at(name.str()), blocks.data(),
                          it->second.data(), tensorType.getNumElements());
    }
    return it->second.data();
  }

  const uint8_t *getBlocks(llvm::StringRef name,
                           RankedTensorType tensorType) override {
    if (!fileTypes.count(name.str()))
      return inner.getBlocks(name, tensorType);
    return quantized(name).data();
  }

private:
  /// A tensor's kind: its name without the layer ("blk.3.attn_v.weight" ->
  /// "attn_v.weight").
  static std::string tensorKind(llvm::StringRef name) {
    if (name.starts_with("blk.")) {
      llvm::StringRef rest = name.drop_front(4);
      size_t dot = rest.find('.');
      if (dot != llvm::StringRef::npos)
        return rest.drop_front(dot + 1).str();
    }
    return name.str();
  }

  /// The tensor's blocks, rows one after another (throws naming the tensor
  /// when its rows are not whole blocks or hold NaN or infinities).
  const std::vector<uint8_t> &quantized(llvm::StringRef name) {
    auto [it, inserted] = blocks.try_emplace(name.str());
    if (inserted) {
      RankedTensorType fileType = fileTypes.at(name.str());
      std::vector<int64_t> shape(fileType.getShape().begin(),
                                 fileType.getShape().end());
      it->second =
          formats::quantizeTensor(types.at(name.str()), name.str(), shape,
                                  inner.getWeight(name, fileType));
    }
    return it->second;
  }

  WeightProvider &inner;
  formats::QuantizationScheme scheme;
  std::map<std::string, RankedTensorType> fileTypes;
  std::map<std::string, formats::ElementType> types;
  std::map<std::string, std::vector<uint8_t>> blocks;
  std::map<std::string, std::vector<float>> widened;
};

/// --quantize's scheme, or nothing when it is empty; throws for another
/// name.
std::optional<formats::QuantizationScheme>
quantizeScheme(const std::string &name) {
  if (name.empty())
    return std::nullopt;
  if (auto scheme = formats::parseQuantizationScheme(name))
    return scheme;
  throw std::runtime_error("--quantize must be q8_0, q4_0, q4_k, q5_k, q6_k "
                           "or q4_k_m, not '" +
                           name + "'");
}

/// Copies `artifact` into the cache as `cached`, through a temporary file
/// and a rename so that a reader never sees half a file. A cache that cannot
/// be written costs only the next compile's time: errors are ignored.
void storeInCache(const fs::path &artifact, const fs::path &cached) {
  fs::path temp = cached;
  temp += ".tmp." + std::to_string(getpid());
  std::error_code ec;
  if (fs::copy_file(artifact, temp, fs::copy_options::overwrite_existing, ec))
    fs::rename(temp, cached, ec);
  if (ec)
    fs::remove(temp, ec);
}

/// Compiles without the cache, writing the artifact to `output`: the model
/// is imported once, then each target runs the pipeline on its own copy and
/// gets its own step library (and packed weights: the layout depends on the
/// target's tiles, docs/artifact.md).
void compileUncached(const CompileOptions &o,
                     const std::vector<target::TargetDescription> &targets,
                     const std::string &output) {
  Progress progress{o, 2 + 3 * int(targets.size())};
  progress("importing " + o.model);
  LoadedModel model = loadModel(o.model);
  runtime::Tokenizer tokenizer = loadTokenizer(model, o.model, o.tokenizer);
  // Read (and parsed) now, so a broken template costs no compile.
  std::string chatTemplate;
  if (!o.chatTemplate.empty())
    chatTemplate = runtime::readChatTemplateFile(o.chatTemplate);
  std::optional<formats::QuantizationScheme> quantized =
      quantizeScheme(o.quantize);
  for (auto decl : model.module->getOps<WeightDeclOp>())
    if (isa<BlockQuantizedTypeInterface>(
            decl.getTensorType().getElementType())) {
      if (quantized)
        throw std::runtime_error(o.model +
                                 " already has block-quantized weights; "
                                 "--quantize takes f32, f16 or bf16 models");
      if (o.notice && !o.dtype.empty())
        o.notice(o.model +
                 " has block-quantized weights; "
                 "--dtype " +
                 o.dtype + " widens them to " + o.dtype);
      break;
    }

  std::unique_ptr<QuantizingWeightProvider> quantizing;
  if (quantized) {
    quantizing =
        std::make_unique<QuantizingWeightProvider>(*model.weights, *quantized);
    quantizing->quantizeModule(*model.module);
    if (o.notice && !o.dtype.empty())
      o.notice("--quantize " + o.quantize + " with --dtype " + o.dtype +
               ": the " + o.quantize + " blocks are widened to " + o.dtype +
               " (the artifact carries " + o.quantize + "'s rounding at " +
               o.dtype + "'s size)");
  }
  WeightProvider &weights =
      quantizing ? static_cast<WeightProvider &>(*quantizing) : *model.weights;

  fs::path work =
      fs::temp_directory_path() / ("kiln-compile-" + std::to_string(getpid()));
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{work};

  setExplainFusion(o.explainFusion);
  bool several = targets.size() > 1;
  std::vector<OwningOpRef<ModuleOp>> modules;
  std::vector<codegen::CompiledStep> compiled;
  for (const target::TargetDescription &target : targets) {
    std::string prefix = several ? target.name + ": " : "";
    progress(prefix + "running the pipeline for " + target.name);
    OwningOpRef<ModuleOp> module = model.module->clone();
    PassManager pm(model.context.get());
    KilnPipelineOptions pipeline;
    pipeline.target = target.spec();
    pipeline.maxTokens = o.maxTokens;
    pipeline.tuningFile = o.tuningFile;
    pipeline.weightType = o.dtype;
    pipeline.fusionRules = o.fusionRules;
    pipeline.fusion = o.fusion;
    addKilnPipeline(pm, pipeline);
    if (failed(pm.run(*module)))
      throw std::runtime_error(o.model + ": the pipeline failed for " +
                               target.name + " (see the errors above)");

    codegen::CompileStepOptions step;
    step.target = target;
    step.weightType = forcedWeightType(o.dtype);
    step.cacheType = packedType(o.kvType, "--kv-type");
    step.workDir =
        (several ? work / codegen::librarySourceDirectory(target) : work)
            .string();
    step.progress = [&](const std::string &stage) { progress(prefix + stage); };
    compiled.push_back(codegen::compileStep(*module, weights, step));
    modules.push_back(std::move(module));
  }

  progress("writing " + output);
  codegen::ArtifactModelInfo info;
  info.source = fs::absolute(o.model).string();
  info.contextLength = o.context > 0 ? o.context : model.contextLength;
  info.stopsAtEos = model.stopsAtEos;
  info.tokenizer = tokenizer.spec();
  if (!o.chatTemplate.empty())
    info.tokenizer.chatTemplate = chatTemplate;
  std::vector<codegen::ArtifactLibrary> libraries;
  for (size_t i = 0; i < targets.size(); ++i)
    libraries.push_back({targets[i], &compiled[i]});
  codegen::writeArtifact(*modules.front(), libraries, info, output);
}

/// `cuda:native[,overrides]` as the spec of device 0's architecture and SM
/// count (asked of the CUDA driver), the overrides kept after them; the
/// device's description in `device`. Other specs: nullopt.
std::optional<std::string> resolveCudaNative(const std::string &spec,
                                             std::string &device) {
  const std::string head = "cuda:native";
  if (spec.compare(0, head.size(), head) != 0 ||
      (spec.size() > head.size() && spec[head.size()] != ','))
    return std::nullopt;
  runtime::cuda::CudaDeviceInfo info;
  try {
    runtime::cuda::CudaDriver driver;
    info = runtime::cuda::CudaDevice(driver, 0).info();
  } catch (const std::exception &e) {
    std::string why = e.what();
    if (!why.empty() && why.back() != '.')
      why += '.';
    throw std::runtime_error("--target " + spec +
                             ": cuda:native asks the CUDA driver about device "
                             "0: " +
                             why +
                             " Name the architecture instead: cuda:sm_80, "
                             "cuda:sm_86, cuda:sm_89 or cuda:sm_90");
  }
  device = info.describe();
  return "cuda:" + info.architecture() +
         ",sm_count=" + std::to_string(info.smCount) + spec.substr(head.size());
}

} // namespace

std::vector<target::TargetDescription>
parseCompileTargets(const std::string &list) {
  std::vector<target::TargetDescription> targets;
  for (const std::string &given : splitTargetList(list)) {
    std::string device;
    std::optional<std::string> native = resolveCudaNative(given, device);
    llvm::Expected<target::TargetDescription> t =
        target::parseTarget(native ? *native : given);
    if (!t && native)
      throw std::runtime_error(
          "--target " + given + ": device 0 is " + device + ", and " +
          llvm::toString(t.takeError()) +
          " (an artifact for an older architecture runs on it through its "
          "PTX)");
    if (!t)
      throw std::runtime_error("--target: " + llvm::toString(t.takeError()));
    if (native)
      t->origin = "device 0 (cuda:native): " + device;
    if (t->isCuda()) {
      // A CUDA artifact holds one step library: the GPU's.
      if (splitTargetList(list).size() > 1)
        throw std::runtime_error("--target " + list + ": a CUDA target " +
                                 t->spec() +
                                 " compiles alone (an artifact runs on "
                                 "the GPU or on CPUs, not both yet)");
      targets.push_back(*t);
      continue;
    }
    std::vector<std::string> features = codegen::requiredCpuFeatures(*t);
    std::sort(features.begin(), features.end());
    for (const target::TargetDescription &other : targets) {
      std::vector<std::string> theirs = codegen::requiredCpuFeatures(other);
      std::sort(theirs.begin(), theirs.end());
      if (theirs == features)
        throw std::runtime_error(
            "--target " + list + ": " + other.spec() + " and " + t->spec() +
            " need the same CPU features, so the runtime could not choose "
            "between their step libraries; give one of them");
    }
    targets.push_back(*t);
  }
  if (targets.empty())
    throw std::runtime_error("--target: no target given");
  return targets;
}

size_t extractSources(const std::string &artifact, const std::string &dir) {
  runtime::Artifact file = runtime::Artifact::open(artifact, false);
  file.verifySection(runtime::section::kSources);
  size_t count = 0;
  for (const auto &[name, text] :
       runtime::unpackSources(file.section(runtime::section::kSources))) {
    fs::path path = fs::path(dir) / name; // unpackSources checked the path
    fs::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out)
      throw std::runtime_error("--emit-source: cannot write '" + path.string() +
                               "'");
    ++count;
  }
  return count;
}

std::vector<std::string> splitTargetList(const std::string &list) {
  std::vector<std::string> specs;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = std::min(list.find(',', start), list.size());
    std::string item = list.substr(start, comma - start);
    // "cores=4" overrides the target before it.
    if (item.find('=') != std::string::npos && !specs.empty())
      specs.back() += "," + item;
    else
      specs.push_back(item);
    start = comma + 1;
  }
  return specs;
}

CompileResult compileModel(const CompileOptions &o) {
  auto start = std::chrono::steady_clock::now();
  std::vector<target::TargetDescription> targets =
      parseCompileTargets(o.target);
  forcedWeightType(o.dtype); // check early
  packedType(o.kvType, "--kv-type");
  quantizeScheme(o.quantize);
  if (o.output.empty() && o.emitSource.empty())
    throw std::runtime_error("kiln compile needs -o ARTIFACT, --emit-source "
                             "DIR or both");

  CompileResult result;
  for (const target::TargetDescription &t : targets)
    result.targets.push_back(t.name);
  result.artifact = o.output;
  fs::path cached;
  if (o.useCache)
    cached = compileCachePath(o, targets);
  // Sources only: the artifact is the cache's, or a temporary file.
  fs::path output = o.output;
  struct Temporary {
    fs::path file;
    ~Temporary() {
      std::error_code ec;
      if (!file.empty())
        fs::remove(file, ec);
    }
  } temporary;
  if (output.empty()) {
    if (!cached.empty()) {
      output = cached;
    } else {
      output = temporary.file =
          fs::temp_directory_path() /
          ("kiln-sources-" + std::to_string(getpid()) + ".kiln");
    }
  }
  if (!cached.empty() && fs::exists(cached)) {
    if (fs::absolute(output) != fs::absolute(cached))
      fs::copy_file(cached, output, fs::copy_options::overwrite_existing);
    result.fromCache = true;
  }
  if (!result.fromCache) {
    compileUncached(o, targets, output.string());
    if (!cached.empty() && fs::absolute(output) != fs::absolute(cached))
      storeInCache(output, cached);
  }
  if (!o.emitSource.empty())
    result.sourcesWritten = extractSources(output.string(), o.emitSource);
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return result;
}

std::string compiledArtifactFor(const CompileOptions &options) {
  std::vector<target::TargetDescription> targets =
      parseCompileTargets(options.target);
  CompileOptions o = options;
  o.output = compileCachePath(options, targets).string();
  o.emitSource.clear();
  o.useCache = false;
  if (!fs::exists(o.output))
    compileModel(o);
  return o.output;
}

void fuseLoadedModel(LoadedModel &model, bool builtin, bool explain,
                     const std::string &rulesFile) {
  setExplainFusion(explain);
  PassManager pm(model.context.get());
  if (builtin)
    addFusionPasses(pm);
  if (!rulesFile.empty()) {
    ApplyFusionRulesOptions options;
    options.rules = rulesFile;
    pm.addPass(createApplyFusionRules(options));
    // The rule driver does not fold what the rules create.
    pm.addPass(mlir::createCanonicalizerPass());
  }
  if (failed(pm.run(*model.module)))
    throw std::runtime_error("fusion failed (see the errors above)");
}

} // namespace kiln
