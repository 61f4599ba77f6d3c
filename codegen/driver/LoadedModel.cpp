//===- LoadedModel.cpp - A model ready to run, from any file --------------===//
//
// Part of Kiln's compiler driver. See LoadedModel.h.
//
//===----------------------------------------------------------------------===//

#include "codegen/driver/LoadedModel.h"

#include "frontends/formats/FormatError.h"
#include "frontends/formats/GGUF.h"
#include "frontends/formats/TokenizerLoaders.h"
#include "ir/KilnOps.h"
#include "ir/interpreter/Interpreter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <filesystem>
#include <stdexcept>

using namespace mlir;

namespace kiln {

std::unique_ptr<MLIRContext> makeContext() {
  auto context = std::make_unique<MLIRContext>();
  context->loadDialect<KilnDialect, func::FuncDialect, arith::ArithDialect,
                       tensor::TensorDialect>();
  return context;
}

static bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Parses a .mlir file, collecting diagnostics into the error message.
static OwningOpRef<ModuleOp> parseModule(const std::string &path,
                                         MLIRContext *context) {
  std::string errors;
  ScopedDiagnosticHandler capture(context, [&](Diagnostic &diag) {
    if (auto loc = dyn_cast<FileLineColLoc>(diag.getLocation()))
      errors += loc.getFilename().str() + ":" + std::to_string(loc.getLine()) +
                ":" + std::to_string(loc.getColumn()) + ": ";
    else
      errors += path + ": ";
    errors += diag.str() + "\n";
    return success();
  });
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(path, context);
  if (!module)
    throw std::runtime_error(errors.empty() ? path + ": cannot parse" : errors);
  return module;
}

LoadedModel loadModel(const std::string &path) {
  LoadedModel model;
  model.context = makeContext();
  if (endsWith(path, ".mlir")) {
    model.module = parseModule(path, model.context.get());
    std::string dir = std::filesystem::path(path).parent_path().string();
    model.weights = FileWeightProvider::forModule(*model.module, dir);
    auto source = (*model.module)
                      ->getAttrOfType<WeightsSourceAttr>(
                          KilnDialect::kWeightsSourceAttrName);
    model.stopsAtEos = source.getFormat() != WeightsFormat::Llama2c;
  } else {
    model.imported = readModel(path);
    model.module = importModel(model.context.get(), *model.imported);
    if (failed(verify(*model.module)))
      throw std::runtime_error(path + ": the imported module does not verify");
    model.weights =
        std::make_unique<FileWeightProvider>(formats::WeightFile::open(
            toWeightFileFormat(model.imported->location.format), path));
    model.contextLength = model.imported->config.contextLength;
    model.stopsAtEos =
        model.imported->location.format != WeightsFormat::Llama2c;
  }
  func::FuncOp step = findStepFunction(*model.module);
  auto logits = cast<RankedTensorType>(step.getResultTypes()[0]);
  model.vocabSize = logits.getDimSize(1);
  if (auto context =
          step->getAttrOfType<IntegerAttr>(KilnDialect::kContextLengthAttrName))
    model.contextLength = context.getInt();
  return model;
}

runtime::TokenizerSpec readTokenizerFile(const std::string &path) {
  namespace fs = std::filesystem;
  if (fs::is_directory(path))
    return formats::tokenizerFromJson(
        (fs::path(path) / "tokenizer.json").string());
  if (endsWith(path, ".json"))
    return formats::tokenizerFromJson(path);
  auto file = formats::MappedFile::open(path);
  if (formats::hasGGUFMagic(*file))
    return formats::tokenizerFromGGUF(formats::GGUFFile::read(file));
  return formats::loadLlama2cTokenizer(path);
}

runtime::Tokenizer loadTokenizer(const LoadedModel &model,
                                 const std::string &modelPath,
                                 const std::string &explicitPath) {
  std::string origin = explicitPath;
  std::optional<runtime::TokenizerSpec> spec;
  if (!explicitPath.empty()) {
    spec = readTokenizerFile(explicitPath);
  } else if (model.imported && model.imported->tokenizer) {
    spec = model.imported->tokenizer;
    origin = modelPath + " (its vocabulary)";
  } else {
    // The weights may carry a vocabulary: a GGUF's, or the tokenizer.json of
    // a Hugging Face directory. Else llama2.c's convention: tokenizer.bin
    // beside the model.
    std::string weightsPath = model.weights->weightFile().path();
    std::filesystem::path json =
        std::filesystem::path(weightsPath) / "tokenizer.json";
    if (std::filesystem::is_directory(weightsPath)) {
      if (std::filesystem::exists(json)) {
        spec = formats::tokenizerFromJson(json.string());
        origin = json.string();
      }
    } else {
      auto file = formats::MappedFile::open(weightsPath);
      if (formats::hasGGUFMagic(*file)) {
        formats::GGUFFile gguf = formats::GGUFFile::read(file);
        if (gguf.getString("tokenizer.ggml.model")) {
          spec = formats::tokenizerFromGGUF(gguf);
          origin = weightsPath + " (its vocabulary)";
        }
      }
    }
    if (!spec) {
      // MODEL.tokenizer.bin (what `kiln make-model` writes), else llama2.c's
      // tokenizer.bin in the same directory.
      origin = weightsPath + ".tokenizer.bin";
      if (!std::filesystem::exists(origin))
        origin =
            (std::filesystem::path(weightsPath).parent_path() / "tokenizer.bin")
                .string();
      if (!std::filesystem::exists(origin))
        throw std::runtime_error(
            modelPath + ": no tokenizer found (none inside the model and no " +
            origin + "); pass --tokenizer FILE");
      spec = formats::loadLlama2cTokenizer(origin);
    }
  }
  if (static_cast<int64_t>(spec->tokens.size()) != model.vocabSize)
    throw std::runtime_error(
        "tokenizer " + origin + " has " + std::to_string(spec->tokens.size()) +
        " tokens but the model's vocabulary has " +
        std::to_string(model.vocabSize) + "; pass a matching --tokenizer");
  return runtime::Tokenizer(std::move(*spec));
}

} // namespace kiln
