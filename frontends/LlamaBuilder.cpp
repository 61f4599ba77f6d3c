//===- LlamaBuilder.cpp - Kiln IR for Llama-family models -----------------===//
//
// Part of Kiln. The step reads like llama2.c's forward pass: embedding, then
// per layer attention and feed-forward with residuals, then the classifier
// for the rows that need logits. Ops are the unfused ones; fusion passes
// rewrite them.
//
//===----------------------------------------------------------------------===//

#include "frontends/LlamaBuilder.h"

#include "frontends/formats/FormatError.h"
#include "ir/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <cmath>
#include <map>

using namespace mlir;
using namespace kiln;
using formats::FormatError;
using formats::ModelConfig;
using formats::TensorInfo;

Type kiln::getIRElementType(MLIRContext *context, formats::ElementType type) {
  switch (type) {
  case formats::ElementType::F32:
    return Float32Type::get(context);
  case formats::ElementType::F16:
    return Float16Type::get(context);
  case formats::ElementType::BF16:
    return BFloat16Type::get(context);
  case formats::ElementType::Q8_0:
    return Q8_0Type::get(context);
  case formats::ElementType::Q4_0:
    return Q4_0Type::get(context);
  case formats::ElementType::Q4_K:
    return Q4_KType::get(context);
  case formats::ElementType::Q5_K:
    return Q5_KType::get(context);
  case formats::ElementType::Q6_K:
    return Q6_KType::get(context);
  }
  llvm_unreachable("unknown element type");
}

namespace {

constexpr int64_t kDyn = ShapedType::kDynamic;

/// Emits the step function op by op; holds the values every layer uses.
class StepEmitter {
public:
  StepEmitter(ModuleOp module, const ModelConfig &config,
              const std::vector<TensorInfo> &tensors,
              const WeightsLocation &location)
      : module(module), config(config), location(location),
        builder(module.getContext()), f32(builder.getF32Type()) {
    for (const TensorInfo &t : tensors)
      byName.emplace(t.name, &t);
  }

  void emit();

private:
  RankedTensorType activation(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, f32);
  }

  /// Declares (once) and references the weight `name`, which must have
  /// `shape`.
  Value weight(const std::string &name, ArrayRef<int64_t> shape);

  Location loc(const std::string &name) {
    return NameLoc::get(builder.getStringAttr(name));
  }

  Value rmsNorm(Value x, const std::string &weightName);
  Value linear(Value x, int64_t layer, const char *weight, const char *bias,
               int64_t outDim, int64_t inDim);
  Value attention(Value x, int64_t layer);
  Value feedForward(Value x, int64_t layer);

  ModuleOp module;
  const ModelConfig &config;
  const WeightsLocation &location;
  OpBuilder builder;
  Type f32;
  std::map<std::string, const TensorInfo *> byName;
  std::map<std::string, RankedTensorType> declared;
  Block::iterator declInsertion;

  Value positions, seqIds, cache;
};

Value StepEmitter::weight(const std::string &name, ArrayRef<int64_t> shape) {
  auto it = byName.find(name);
  if (it == byName.end())
    throw FormatError(location.path, "tensor '" + name + "' is missing");
  const TensorInfo &info = *it->second;
  if (info.shape != std::vector<int64_t>(shape.begin(), shape.end())) {
    std::string got, want;
    for (int64_t d : info.shape)
      got += (got.empty() ? "" : ", ") + std::to_string(d);
    for (int64_t d : shape)
      want += (want.empty() ? "" : ", ") + std::to_string(d);
    throw FormatError(location.path, "tensor '" + name + "' has shape [" + got +
                                         "], the model's configuration "
                                         "implies [" +
                                         want + "]");
  }
  auto type = RankedTensorType::get(
      shape, getIRElementType(builder.getContext(), info.type));
  if (!declared.count(name)) {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPoint(module.getBody(), declInsertion);
    builder.create<WeightDeclOp>(loc(name), StringRef(name), type);
    declared.emplace(name, type);
  }
  return builder.create<WeightOp>(
      loc(name), type, FlatSymbolRefAttr::get(builder.getContext(), name));
}

Value StepEmitter::rmsNorm(Value x, const std::string &weightName) {
  Value w = weight(weightName, {config.dim});
  return builder.create<RmsNormOp>(loc(weightName), x.getType(), x, w,
                                   builder.getF64FloatAttr(config.normEpsilon));
}

Value StepEmitter::linear(Value x, int64_t layer, const char *weightSuffix,
                          const char *biasSuffix, int64_t outDim,
                          int64_t inDim) {
  std::string name = formats::layerTensorName(layer, weightSuffix);
  Value w = weight(name, {outDim, inDim});
  Value bias;
  if (biasSuffix && config.qkvBias)
    bias = weight(formats::layerTensorName(layer, biasSuffix), {outDim});
  return builder.create<MatmulOp>(loc(name), activation({kDyn, outDim}), x, w,
                                  bias);
}

Value StepEmitter::attention(Value x, int64_t layer) {
  const int64_t d = config.headDim, h = config.numHeads,
                hkv = config.numKvHeads;
  Value hNorm = rmsNorm(x, formats::layerTensorName(layer, "attn_norm.weight"));
  Value q =
      linear(hNorm, layer, "attn_q.weight", "attn_q.bias", h * d, config.dim);
  Value k =
      linear(hNorm, layer, "attn_k.weight", "attn_k.bias", hkv * d, config.dim);
  Value v =
      linear(hNorm, layer, "attn_v.weight", "attn_v.bias", hkv * d, config.dim);
  Location l = loc(formats::layerTensorName(layer, "attn"));
  q = builder.create<ReshapeOp>(l, activation({kDyn, h, d}), q);
  k = builder.create<ReshapeOp>(l, activation({kDyn, hkv, d}), k);
  v = builder.create<ReshapeOp>(l, activation({kDyn, hkv, d}), v);

  auto layout = RopeLayoutAttr::get(
      builder.getContext(), config.ropePairs == formats::RopePairs::Halves
                                ? RopeLayout::Halves
                                : RopeLayout::Adjacent);
  RopeScalingAttr scaling;
  const std::optional<formats::RopeScalingConfig> &rs = config.ropeScaling;
  if (!config.ropeFreqFactors.empty()) {
    // GGUF's rope_freqs, with the file's linear scaling (if any) on top, as
    // llama.cpp applies both.
    scaling = RopeScalingAttr::get(
        builder.getContext(), RopeScalingKind::Factors,
        APFloat(rs ? rs->factor : 1.0), APFloat(0.0), APFloat(0.0), 0,
        builder.getDenseF32ArrayAttr(config.ropeFreqFactors));
  } else if (rs) {
    bool llama3 = rs->kind == formats::RopeScalingConfig::Kind::Llama3;
    scaling = RopeScalingAttr::get(
        builder.getContext(),
        llama3 ? RopeScalingKind::Llama3 : RopeScalingKind::Linear,
        APFloat(rs->factor), APFloat(llama3 ? rs->lowFreqFactor : 0.0),
        APFloat(llama3 ? rs->highFreqFactor : 0.0),
        llama3 ? rs->originalContext : 0, DenseF32ArrayAttr());
  }
  FloatAttr theta = builder.getF64FloatAttr(config.ropeTheta);
  q = builder.create<RopeOp>(l, q.getType(), q, positions, layout, theta,
                             scaling);
  k = builder.create<RopeOp>(l, k.getType(), k, positions, layout, theta,
                             scaling);

  IntegerAttr layerAttr = builder.getI64IntegerAttr(layer);
  cache = builder.create<KVAppendOp>(l, cache.getType(), cache, layerAttr, k, v,
                                     seqIds, positions);
  auto contextType = activation({kDyn, kDyn, hkv, d});
  auto read = builder.create<KVReadOp>(l, contextType, contextType, cache,
                                       layerAttr, seqIds, positions);
  auto scoresType = activation({kDyn, h, kDyn});
  Value s = builder.create<AttentionScoresOp>(l, scoresType, q, read.getKeys());
  s = builder.create<ScaleOp>(
      l, scoresType, s, builder.getF64FloatAttr(1.0 / std::sqrt(double(d))));
  IntegerAttr window;
  if (config.slidingWindow > 0)
    window = builder.getI64IntegerAttr(config.slidingWindow);
  s = builder.create<AttentionMaskOp>(l, scoresType, s, positions, window);
  s = builder.create<SoftmaxOp>(l, scoresType, s);
  Value o = builder.create<AttentionOutputOp>(l, activation({kDyn, h, d}), s,
                                              read.getValues());
  o = builder.create<ReshapeOp>(l, activation({kDyn, h * d}), o);
  Value out =
      linear(o, layer, "attn_output.weight", nullptr, config.dim, h * d);
  return builder.create<AddOp>(l, x.getType(), x, out);
}

Value StepEmitter::feedForward(Value x, int64_t layer) {
  const int64_t f = config.hiddenDim, dim = config.dim;
  Value hNorm = rmsNorm(x, formats::layerTensorName(layer, "ffn_norm.weight"));
  Value gate = linear(hNorm, layer, "ffn_gate.weight", nullptr, f, dim);
  Value up = linear(hNorm, layer, "ffn_up.weight", nullptr, f, dim);
  Location l = loc(formats::layerTensorName(layer, "ffn"));
  gate = builder.create<SiluOp>(l, gate.getType(), gate);
  Value hidden = builder.create<MulOp>(l, gate.getType(), gate, up);
  Value down = linear(hidden, layer, "ffn_down.weight", nullptr, dim, f);
  return builder.create<AddOp>(l, x.getType(), x, down);
}

void StepEmitter::emit() {
  MLIRContext *ctx = builder.getContext();
  module->setAttr(KilnDialect::kWeightsSourceAttrName,
                  WeightsSourceAttr::get(ctx, location.format, location.path));
  builder.setInsertionPointToEnd(module.getBody());
  declInsertion = module.getBody()->end();

  auto indexType = RankedTensorType::get({kDyn}, builder.getI32Type());
  auto cacheType = KVCacheType::get(ctx, config.numLayers, config.numKvHeads,
                                    config.headDim, f32);
  auto logitsType = activation({kDyn, config.vocabSize});
  auto funcType = builder.getFunctionType(
      {indexType, indexType, indexType, indexType, cacheType},
      {logitsType, cacheType});
  auto func = builder.create<func::FuncOp>(loc("step"), "step", funcType);
  func->setAttr(KilnDialect::kStepAttrName, builder.getUnitAttr());
  func->setAttr(KilnDialect::kContextLengthAttrName,
                builder.getI64IntegerAttr(config.contextLength));
  Block *body = func.addEntryBlock();
  // Weight declarations go before the function, in first-use order.
  declInsertion = Block::iterator(func);
  builder.setInsertionPointToStart(body);

  Value tokens = body->getArgument(0);
  positions = body->getArgument(1);
  seqIds = body->getArgument(2);
  Value logitRows = body->getArgument(3);
  cache = body->getArgument(4);

  Value table = weight("token_embd.weight", {config.vocabSize, config.dim});
  Value x = builder.create<EmbeddingOp>(
      loc("token_embd"), activation({kDyn, config.dim}), table, tokens);
  for (int64_t layer = 0; layer < config.numLayers; ++layer) {
    x = attention(x, layer);
    x = feedForward(x, layer);
  }

  // Only the rows that need logits go through the final norm and classifier.
  x = builder.create<GatherRowsOp>(loc("logit_rows"), x.getType(), x,
                                   logitRows);
  x = rmsNorm(x, "output_norm.weight");
  Value classifier =
      config.tiedClassifier
          ? table
          : weight("output.weight", {config.vocabSize, config.dim});
  Value logits = builder.create<MatmulOp>(loc("output"), logitsType, x,
                                          classifier, Value());
  builder.create<func::ReturnOp>(loc("step"), ValueRange{logits, cache});
}

} // namespace

OwningOpRef<ModuleOp>
kiln::buildLlamaModule(MLIRContext *context, const ModelConfig &config,
                       const std::vector<TensorInfo> &tensors,
                       const WeightsLocation &location) {
  context->loadDialect<KilnDialect, func::FuncDialect>();
  if (auto problem = config.validate())
    throw FormatError(location.path, "bad model configuration: " + *problem);
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(context));
  StepEmitter(*module, config, tensors, location).emit();
  return module;
}
