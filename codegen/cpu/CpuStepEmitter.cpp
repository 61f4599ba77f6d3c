//===- CpuStepEmitter.cpp - C++ SIMD kernels for a CPU target -------------===//
//
// Part of Kiln. See codegen/StepEmitter.h. Walks the step function once, in
// order: every compute op becomes a call of a kernel (KernelTemplates.h with
// this op's constants), every value a pointer into the arena (the memory
// plan's offsets), the step's arguments or the packed weights. Kernels with
// identical text (the same op in every layer) are emitted once.
//
//===----------------------------------------------------------------------===//

#include "codegen/StepEmitter.h"

#include "codegen/cpu/KernelTemplates.h"
#include "ir/KilnDialect.h"
#include "ir/KilnOps.h"
#include "ir/Tiling.h"
#include "passes/MemoryPlan.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <stdexcept>

using namespace mlir;

namespace kiln::codegen {

StepEmitter::~StepEmitter() = default;

namespace {
using namespace cpu;

/// `text` with every $KEY of `subs` replaced by its value. A placeholder is
/// a whole identifier: $N does not touch $NAME, which a later call fills.
std::string
substitute(const std::string &text,
           const std::vector<std::pair<std::string, std::string>> &subs) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (text[i] != '$') {
      out += text[i++];
      continue;
    }
    size_t end = i + 1;
    while (end < text.size() &&
           (std::isalnum(static_cast<unsigned char>(text[end])) ||
            text[end] == '_'))
      ++end;
    std::string key = text.substr(i + 1, end - i - 1);
    auto it = std::find_if(subs.begin(), subs.end(),
                           [&](const auto &sub) { return sub.first == key; });
    out += it != subs.end() ? it->second : text.substr(i, end - i);
    i = end;
  }
  return out;
}

/// A float as an exact C++ literal (hexadecimal).
std::string floatLiteral(float value) {
  if (std::isinf(value))
    return value > 0 ? "INFINITY" : "-INFINITY";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%af", double(value));
  return buffer;
}

std::string str(int64_t value) { return std::to_string(value); }

std::string describe(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << op->getName() << " at " << op->getLoc();
  return text;
}

[[noreturn]] void unsupported(Operation *op, const std::string &what) {
  throw std::runtime_error("codegen/cpu: " + describe(op) + ": " + what);
}

std::string typeString(Type type) {
  std::string text;
  llvm::raw_string_ostream(text) << type;
  return text;
}

/// One distinct kernel and the ops it implements.
struct Kernel {
  std::string name;
  std::string kind;
  std::string body; // with $NAME still in it
  std::string declaration;
  std::vector<std::string> uses; // op and location, one per call
  std::string details;           // shapes, packing, tiles (the same for all)
};

class CpuStepEmitter : public StepEmitter {
public:
  explicit CpuStepEmitter(const target::TargetDescription &target)
      : target(target) {}

  EmittedStep emit(func::FuncOp step, WeightPacker &packer,
                   const EmitOptions &options) override;

private:
  // Values.
  std::string pointer(Value value, Operation *user);
  std::string rows(Value value);
  std::string weightPlain(Value value);
  void bindResults(Operation *op);

  // Kernels.
  std::string useKernel(const std::string &kind, const std::string &body,
                        const std::string &declaration, Operation *op,
                        const std::string &details);
  void emitGemm(Operation *op);
  void emitAttention(AttentionOp op);
  void emitRope(RopeOp op);
  void emitOp(Operation *op);
  void call(Operation *op, const std::string &statement);
  std::string callTable() const;

  target::TargetDescription target;
  WeightPacker *packer = nullptr;
  EmitOptions options;
  llvm::DenseMap<Value, std::string> pointers;
  llvm::DenseMap<Value, std::string> rowCounts;
  Value logits;
  int64_t maxTokens = 0;
  int64_t scratchBytes = 0;
  std::vector<Kernel> kernels;
  llvm::StringMap<size_t> kernelByBody;
  std::string calls;
  std::vector<std::string> callNames;
};

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

std::string CpuStepEmitter::pointer(Value value, Operation *user) {
  auto it = pointers.find(value);
  if (it != pointers.end())
    return it->second;
  if (value.getDefiningOp<WeightOp>() || value.getDefiningOp<ConcatOp>())
    return weightPlain(value);
  unsupported(user, "an operand has no storage (is the step planned? run "
                    "--kiln-pipeline before code generation)");
}

std::string CpuStepEmitter::rows(Value value) {
  auto it = rowCounts.find(value);
  return it != rowCounts.end() ? it->second : "a->tokens";
}

std::string CpuStepEmitter::weightPlain(Value value) {
  return "(const float *)(a->weights + " + str(packer->packPlain(value)) + ")";
}

/// Records where `op`'s results live (the memory plan's offsets; the logits
/// go straight to the caller's buffer) and how many rows they have.
void CpuStepEmitter::bindResults(Operation *op) {
  // Weights (and weights packed by a concat) live in the packed blob.
  if (isa<WeightOp>(op) ||
      (isa<ConcatOp>(op) && !op->hasAttr(kBuffersAttrName)))
    return;
  auto buffers = op->getAttrOfType<ArrayAttr>(kBuffersAttrName);
  for (auto [index, result] : llvm::enumerate(op->getResults())) {
    if (!isa<RankedTensorType>(result.getType()))
      continue;
    if (result == logits) {
      pointers[result] = "a->logits";
    } else {
      auto entry = buffers && index < buffers.size()
                       ? dyn_cast<DictionaryAttr>(buffers[index])
                       : DictionaryAttr();
      auto offset = entry ? entry.getAs<IntegerAttr>("offset") : IntegerAttr();
      if (!offset)
        unsupported(op, "result " + str(index) +
                            " has no buffer in the memory plan (run "
                            "--kiln-pipeline before code generation)");
      pointers[result] = "(float *)(a->arena + " + str(offset.getInt()) + ")";
    }
    // Rows: R after kiln.gather_rows, else those of the first input.
    if (isa<GatherRowsOp>(op))
      rowCounts[result] = "a->rows";
    else if (op->getNumOperands() && rowCounts.count(op->getOperand(0)))
      rowCounts[result] = rowCounts[op->getOperand(0)];
  }
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

std::string CpuStepEmitter::useKernel(const std::string &kind,
                                      const std::string &body,
                                      const std::string &declaration,
                                      Operation *op,
                                      const std::string &details) {
  auto [it, inserted] = kernelByBody.try_emplace(body, kernels.size());
  if (inserted) {
    char name[64];
    std::snprintf(name, sizeof name, "k%02zu_%s", kernels.size(), kind.c_str());
    kernels.push_back({name, kind, body, declaration, {}, ""});
  }
  Kernel &kernel = kernels[it->second];
  kernel.uses.push_back(describe(op));
  // Identical kernel text means identical shapes and tiles.
  kernel.details = details;
  return kernel.name;
}

void CpuStepEmitter::call(Operation *op, const std::string &statement) {
  std::string where = describe(op);
  std::string kernel = statement.substr(statement.find("kiln_gen::") + 10);
  kernel = kernel.substr(0, kernel.find('('));
  std::string index = str(int64_t(callNames.size()));
  callNames.push_back(kernel + ": " + where);
  calls +=
      "  // " + where + "\n  KILN_CALL(" + index + ", " + statement + ")\n";
}

/// The tile sizes of `phase` of `op`'s kiln.tiles; throws if absent.
static int64_t tile(Operation *op, StringRef phase, StringRef name) {
  std::optional<int64_t> size = getTileSize(op, phase, name);
  if (!size)
    unsupported(op, ("no kiln.tiles " + phase + "." + name +
                     " (run --kiln-pipeline before code generation)")
                        .str());
  return *size;
}

static std::string tilesSummary(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (auto tiles = op->getAttrOfType<DictionaryAttr>(kTilesAttrName)) {
    os << "tiles: decode " << tiles.get("decode") << ", prefill "
       << tiles.get("prefill");
    if (auto from = tiles.getAs<IntegerAttr>("prefill_from"))
      os << " from " << from.getInt() << " rows";
  }
  return text;
}

void CpuStepEmitter::emitGemm(Operation *op) {
  Value input, weight, up, bias, residual, normWeight;
  FloatAttr normEpsilon;
  std::string activation = "identity";
  if (auto matmul = dyn_cast<MatmulOp>(op)) {
    input = matmul.getInput();
    weight = matmul.getWeight();
    bias = matmul.getBias();
  } else if (auto fused = dyn_cast<FusedMatmulOp>(op)) {
    input = fused.getInput();
    weight = fused.getWeight();
    bias = fused.getBias();
    residual = fused.getResidual();
    normWeight = fused.getNormWeight();
    normEpsilon = fused.getNormEpsilonAttr();
    if (auto act = fused.getActivation())
      activation = stringifyActivation(*act).str();
  } else {
    auto swiglu = cast<SwigluOp>(op);
    input = swiglu.getInput();
    weight = swiglu.getGate();
    up = swiglu.getUp();
    normWeight = swiglu.getNormWeight();
    normEpsilon = swiglu.getNormEpsilonAttr();
  }
  auto weightType = cast<RankedTensorType>(weight.getType());
  int64_t n = weightType.getDimSize(0), k = weightType.getDimSize(1);
  int64_t nr = tile(op, "prefill", "nr");
  if (nr % target.cpu().vectorFloats() != 0 || tile(op, "decode", "nr") != nr)
    unsupported(op, "nr must be a multiple of the vector width (" +
                        str(target.cpu().vectorFloats()) +
                        ") and the same in both phases (one packed layout)");

  PackedType packed = options.weightType;
  std::string wtype = packed == PackedType::F32   ? "float"
                      : packed == PackedType::F16 ? "_Float16"
                                                  : "bf16";
  int64_t mr = tile(op, "prefill", "mr");
  int64_t vectorFloats = target.cpu().vectorFloats();
  // bf16 panels multiply in bf16 dot products (vdpbf16ps) where the
  // target has them: weights and activations as pairs along K. Otherwise
  // panels with an even number of vectors per row load as lane pairs.
  bool bf16Dot = packed == PackedType::BF16 && target.cpu().avx512bf16 &&
                 vectorFloats == 16;
  bool bf16Pairs =
      packed == PackedType::BF16 && !bf16Dot && (nr / vectorFloats) % 2 == 0;
  std::string cases;
  for (int64_t m = 1; m <= mr; ++m)
    cases += "  case " + str(m) + ":\n    return block<" + str(m) +
             ">(g, m0, panel, k0, kl, first, last);\n";
  std::string body = substitute(
      kGemmKernel,
      {{"N", str(n)},
       {"K", str(k)},
       {"NR", str(nr)},
       {"MR", str(mr)},
       {"PREFILL_FROM", str(tile(op, "prefill", "mr"))},
       {"PM", str(tile(op, "prefill", "m"))},
       {"PN", str(tile(op, "prefill", "n"))},
       {"PK", str(tile(op, "prefill", "k"))},
       {"DN", str(tile(op, "decode", "n"))},
       {"DK", str(tile(op, "decode", "k"))},
       {"SWIGLU", up ? "true" : "false"},
       {"HAS_BIAS", bias ? "true" : "false"},
       {"HAS_RESIDUAL", residual ? "true" : "false"},
       {"HAS_PROLOGUE", normWeight ? "true" : "false"},
       {"HAS_ACTIVATION", activation != "identity" ? "true" : "false"},
       {"BF16_PAIRS", bf16Pairs ? "true" : "false"},
       {"BF16_DOT", bf16Dot ? "true" : "false"},
       {"WTYPE", wtype},
       {"ACTIVATION", activation},
       {"EPSILON", normEpsilon
                       ? floatLiteral(float(normEpsilon.getValueAsDouble()))
                       : "0.0f"},
       {"DISPATCH_CASES", cases}});
  std::string declaration =
      "void $NAME(const kiln_step_args *a, int64_t rows, const float *x, "
      "const float *norm_weight, float *scratch, const void *w, const void "
      "*w2, const float *bias, const float *residual, float *y);";
  std::string details = "[" + str(n) + ", " + str(k) + "] weights " +
                        typeString(weightType) + (up ? " (gate and up)" : "") +
                        ", packed " + packedTypeName(packed).str() +
                        " in panels of " + str(nr) +
                        (bf16Dot ? " as k pairs (bf16 dot products)" : "") +
                        "; " + tilesSummary(op);
  std::string name =
      useKernel(up ? "swiglu" : "gemm", body, declaration, op, details);

  // Scratch: the normalized rows (f32), then for bf16 dot products the
  // rows as bf16 pairs.
  int64_t scratch = (normWeight ? maxTokens * k * 4 : 0) +
                    (bf16Dot ? maxTokens * (k + (k & 1)) * 2 : 0);
  scratchBytes = std::max(scratchBytes, scratch);
  auto packedPointer = [&](Value w) {
    PanelLayout layout = bf16Dot     ? PanelLayout::KPairs
                         : bf16Pairs ? PanelLayout::LanePairs
                                     : PanelLayout::Plain;
    return "a->weights + " +
           str(packer->packPanels(w, nr, packed, layout, vectorFloats));
  };
  std::string result = pointer(op->getResult(0), op);
  call(op, "kiln_gen::" + name + "(a, " + rows(input) + ", " +
               pointer(input, op) + ", " +
               (normWeight ? pointer(normWeight, op) : "nullptr") +
               ", scratch, " + packedPointer(weight) + ", " +
               (up ? packedPointer(up) : "nullptr") + ", " +
               (bias ? pointer(bias, op) : "nullptr") + ", " +
               (residual ? pointer(residual, op) : "nullptr") + ", " + result +
               ");");
}

void CpuStepEmitter::emitAttention(AttentionOp op) {
  auto cache = cast<KVCacheType>(op.getCache().getType());
  if (!cache.getElementType().isF32())
    unsupported(op, "the CPU kernels read an f32 KV cache, not " +
                        typeString(cache.getElementType()));
  RankedTensorType query = op.getQuery().getType();
  int64_t kv = tile(op, "decode", "kv");
  std::string body = substitute(
      kAttentionKernel,
      {{"H", str(query.getDimSize(1))},
       {"HKV", str(cache.getNumKvHeads())},
       {"D", str(cache.getHeadDim())},
       {"KV", str(kv)},
       {"QB", str(tile(op, "prefill", "q"))},
       {"WINDOW", str(op.getWindow() ? int64_t(*op.getWindow()) : 0)},
       {"SCALE", floatLiteral(float(op.getScale().convertToDouble()))}});
  std::string name = useKernel(
      "attention", body,
      "void $NAME(const kiln_step_args *a, int64_t layer, const float *q, "
      "float *y);",
      op,
      "query " + typeString(query) + ", layer " + str(op.getLayer()) + "; " +
          tilesSummary(op));
  call(op, "kiln_gen::" + name + "(a, " + str(op.getLayer()) + ", " +
               pointer(op.getQuery(), op) + ", " + pointer(op.getResult(), op) +
               ");");
}

void CpuStepEmitter::emitRope(RopeOp op) {
  RankedTensorType input = op.getInput().getType();
  int64_t heads = input.getDimSize(1), d = input.getDimSize(2);
  // The interpreter's ropeFrequency, in float as it computes it.
  std::string freqs;
  float theta = float(op.getTheta().convertToDouble());
  RopeScalingAttr scaling = op.getScalingAttr();
  for (int64_t i = 0; i < d / 2; ++i) {
    float freq = 1.0f / std::pow(theta, float(2 * i) / float(d));
    if (scaling) {
      float factor = float(scaling.getFactor().convertToDouble());
      if (scaling.getKind() == RopeScalingKind::Linear) {
        freq = freq / factor;
      } else {
        float low = float(scaling.getLowFreqFactor().convertToDouble());
        float high = float(scaling.getHighFreqFactor().convertToDouble());
        float context = float(scaling.getOriginalContext());
        float wavelength = float(2 * M_PI) / freq;
        if (wavelength > context / low) {
          freq = freq / factor;
        } else if (wavelength >= context / high) {
          float smooth = (context / wavelength - low) / (high - low);
          freq = (1.0f - smooth) * freq / factor + smooth * freq;
        }
      }
    }
    freqs += (i ? ", " : "") + floatLiteral(freq);
  }
  std::string body = substitute(
      kRopeKernel,
      {{"H", str(heads)},
       {"D", str(d)},
       {"ADJACENT", op.getLayout() == RopeLayout::Adjacent ? "true" : "false"},
       {"INV_FREQ", freqs}});
  std::string name = useKernel(
      "rope", body,
      "void $NAME(const kiln_step_args *a, int64_t rows, const int32_t "
      "*positions, const float *x, float *y);",
      op, "input " + typeString(input));
  call(op, "kiln_gen::" + name + "(a, " + rows(op.getInput()) + ", " +
               pointer(op.getPositions(), op) + ", " +
               pointer(op.getInput(), op) + ", " + pointer(op.getResult(), op) +
               ");");
}

void CpuStepEmitter::emitOp(Operation *op) {
  llvm::TypeSwitch<Operation *>(op)
      .Case<WeightOp, ReshapeOp, func::ReturnOp>([](Operation *) {})
      .Case([&](ConcatOp concat) {
        // Packed weights (the QKV rule) are concatenated by the packer.
        for (Value input : concat.getInputs())
          if (!input.getDefiningOp<WeightOp>() &&
              !input.getDefiningOp<ConcatOp>())
            unsupported(op, "only concatenations of weights are supported");
      })
      .Case<MatmulOp, FusedMatmulOp, SwigluOp>(
          [&](Operation *gemm) { emitGemm(gemm); })
      .Case([&](AttentionOp o) { emitAttention(o); })
      .Case([&](RopeOp o) { emitRope(o); })
      .Case([&](EmbeddingOp o) {
        RankedTensorType table = o.getTable().getType();
        if (!table.getElementType().isF32() &&
            !isa<BlockQuantizedTypeInterface>(table.getElementType()) &&
            !table.getElementType().isF16() && !table.getElementType().isBF16())
          unsupported(op, "unsupported table type");
        std::string name = useKernel(
            "embedding",
            substitute(kEmbeddingKernel, {{"D", str(table.getDimSize(1))}}),
            "void $NAME(const kiln_step_args *a, int64_t rows, const int32_t "
            "*ids, const float *table, float *out);",
            op, "table " + typeString(table) + " (stored f32)");
        call(op, "kiln_gen::" + name + "(a, " + rows(o.getIds()) + ", " +
                     pointer(o.getIds(), op) + ", " +
                     weightPlain(o.getTable()) + ", " +
                     pointer(o.getResult(), op) + ");");
      })
      .Case([&](SplitOp o) {
        RankedTensorType input = o.getInput().getType();
        if (input.getRank() != 2 || o.getAxis() != 1)
          unsupported(op, "only splits of [rows, N] along axis 1");
        std::string widths, outs;
        for (Value result : o.getResults()) {
          widths += (widths.empty() ? "" : ", ") +
                    str(cast<RankedTensorType>(result.getType()).getDimSize(1));
          outs += (outs.empty() ? "" : ", ") + pointer(result, op);
        }
        std::string name = useKernel(
            "split",
            substitute(kSplitKernel, {{"N", str(input.getDimSize(1))},
                                      {"PARTS", str(o.getNumResults())},
                                      {"WIDTHS", widths}}),
            "void $NAME(const kiln_step_args *a, int64_t rows, const float "
            "*x, float *const *out);",
            op, "input " + typeString(input) + " into " + widths);
        call(op, "{\n    float *const out[] = {" + outs +
                     "};\n    kiln_gen::" + name + "(a, " + rows(o.getInput()) +
                     ", " + pointer(o.getInput(), op) + ", out);\n  }");
      })
      .Case([&](KVAppendOp o) {
        auto cache = cast<KVCacheType>(o.getCache().getType());
        if (!cache.getElementType().isF32())
          unsupported(op, "the CPU kernels write an f32 KV cache, not " +
                              typeString(cache.getElementType()));
        std::string name = useKernel(
            "kv_append",
            substitute(kKVAppendKernel, {{"HKV", str(cache.getNumKvHeads())},
                                         {"D", str(cache.getHeadDim())}}),
            "void $NAME(const kiln_step_args *a, int64_t layer, const float "
            "*keys, const float *values);",
            op, "layer " + str(o.getLayer()));
        call(op, "kiln_gen::" + name + "(a, " + str(o.getLayer()) + ", " +
                     pointer(o.getKeys(), op) + ", " +
                     pointer(o.getValues(), op) + ");");
      })
      .Case([&](GatherRowsOp o) {
        RankedTensorType input = o.getInput().getType();
        std::string name = useKernel(
            "gather_rows",
            substitute(kGatherRowsKernel, {{"D", str(input.getDimSize(1))}}),
            "void $NAME(const kiln_step_args *a, const int32_t *rows, const "
            "float *x, float *out);",
            op, "input " + typeString(input));
        call(op, "kiln_gen::" + name + "(a, " + pointer(o.getRows(), op) +
                     ", " + pointer(o.getInput(), op) + ", " +
                     pointer(o.getResult(), op) + ");");
      })
      .Case([&](RmsNormOp o) {
        RankedTensorType input = o.getInput().getType();
        std::string name = useKernel(
            "rms_norm",
            substitute(kRmsNormKernel,
                       {{"D", str(input.getShape().back())},
                        {"EPSILON", floatLiteral(float(
                                        o.getEpsilon().convertToDouble()))}}),
            "void $NAME(const kiln_step_args *a, int64_t rows, const float "
            "*x, const float *g, float *y);",
            op, "input " + typeString(input));
        call(op, "kiln_gen::" + name + "(a, " + rows(o.getInput()) + ", " +
                     pointer(o.getInput(), op) + ", " +
                     pointer(o.getWeight(), op) + ", " +
                     pointer(o.getResult(), op) + ");");
      })
      .Default([&](Operation *other) {
        unsupported(other, "no CPU kernel for this op yet (the fusion "
                           "pipeline removes most unfused ops)");
      });
}

/// kiln_step_call_count / kiln_step_call_name: the profile's row names.
std::string CpuStepEmitter::callTable() const {
  std::string text = "static const char *const kCallNames[] = {\n";
  for (const std::string &name : callNames) {
    std::string escaped;
    for (char c : name) {
      if (c == '"' || c == '\\')
        escaped += '\\';
      escaped += c == '\n' ? ' ' : c;
    }
    text += "    \"" + escaped + "\",\n";
  }
  text += "};\n\nextern \"C\" int32_t kiln_step_call_count(void) {\n"
          "  return " +
          str(int64_t(callNames.size())) +
          ";\n}\n\nextern \"C\" const char *kiln_step_call_name(int32_t "
          "i) {\n  return i >= 0 && i < " +
          str(int64_t(callNames.size())) + " ? kCallNames[i] : \"\";\n}\n\n";
  return text;
}

EmittedStep CpuStepEmitter::emit(func::FuncOp step, WeightPacker &packer,
                                 const EmitOptions &options) {
  this->packer = &packer;
  this->options = options;
  if (!target.isCpu())
    throw std::runtime_error("codegen/cpu: target " + target.name +
                             " is not a CPU");
  auto plan = step->getAttrOfType<DictionaryAttr>(kMemoryPlanAttrName);
  if (!plan)
    throw std::runtime_error("codegen: the step function has no memory plan "
                             "(run --kiln-pipeline before code generation)");
  maxTokens = plan.getAs<IntegerAttr>("max_tokens").getInt();
  int64_t arenaBytes = plan.getAs<IntegerAttr>("arena_bytes").getInt();

  Block &body = step.getBody().front();
  static const char *arguments[] = {"a->token_ids", "a->positions",
                                    "a->seq_ids", "a->logit_rows"};
  for (unsigned i = 0; i < 4; ++i)
    pointers[body.getArgument(i)] = arguments[i];
  logits = body.getTerminator()->getOperand(0);

  for (Operation &op : body.getOperations()) {
    bindResults(&op);
    emitOp(&op);
  }

  EmittedStep emitted;
  emitted.maxTokens = maxTokens;
  int64_t scratchOffset = alignBytes(arenaBytes);
  emitted.arenaBytes = scratchOffset + alignBytes(scratchBytes);

  std::string declarations;
  for (Kernel &kernel : kernels) {
    std::string header = "// " + kernel.name + ".cpp - a " + kernel.kind +
                         " kernel generated by Kiln for target " +
                         target.spec() + ".\n//\n// Implements:\n";
    for (const std::string &use : kernel.uses)
      header += "//   - " + use + "\n//\n";
    header += "// Shapes and tiles: " + kernel.details + "\n";
    header += "//\n// Weights are packed by codegen/WeightPacker.h; the "
              "arena offsets come from\n// the memory plan (kiln.buffers).\n\n"
              "#include \"kiln_kernels.h\"\n";
    emitted.kernels.push_back(
        {kernel.name + ".cpp",
         header + substitute(kernel.body, {{"NAME", kernel.name}})});
    declarations +=
        substitute(kernel.declaration, {{"NAME", kernel.name}}) + "\n";
    emitted.kernelSummaries.push_back(kernel.name + ": " +
                                      str(kernel.uses.size()) + " op(s)");
  }

  std::string stepText =
      "// step.cpp - the step function, generated by Kiln for target " +
      target.spec() +
      ".\n//\n// Calls the kernels in program order; arena offsets from "
      "the memory plan\n// (max " +
      str(maxTokens) + " tokens, " + str(emitted.arenaBytes) +
      " bytes with scratch), weight offsets from the packer.\n\n"
      "#include \"kiln_kernels.h\"\n\nnamespace kiln_gen {\n" +
      declarations +
      "} // namespace kiln_gen\n\n"
      "extern \"C\" int32_t kiln_step_abi_version(void) {\n"
      "  return KILN_STEP_ABI_VERSION;\n}\n\n" +
      callTable() +
      "// Runs one kernel call, timing it when the caller asks for a "
      "profile.\n"
      "#define KILN_CALL(index, ...)                                  \\\n"
      "  if (a->call_seconds) {                                       \\\n"
      "    double start = kiln_gen::now();                            \\\n"
      "    __VA_ARGS__                                                \\\n"
      "    a->call_seconds[index] += kiln_gen::now() - start;         \\\n"
      "  } else {                                                     \\\n"
      "    __VA_ARGS__                                                \\\n"
      "  }\n\n"
      "extern \"C\" int32_t kiln_step(const kiln_step_args *a) {\n"
      "  if (a->tokens < 1 || a->tokens > " +
      str(maxTokens) +
      " || a->rows < 0 || a->rows > a->tokens)\n"
      "    return 1;\n"
      "  float *scratch = (float *)(a->arena + " +
      str(scratchOffset) + ");\n  (void)scratch;\n" + calls +
      "  return 0;\n}\n";
  emitted.step = {"step.cpp", stepText};
  emitted.headers.push_back(
      {"kiln_kernels.h",
       substitute(cpu::kSupportHeader,
                  {{"TARGET", target.spec()},
                   {"V", str(target.cpu().vectorFloats())}})});
  return emitted;
}

} // namespace

std::unique_ptr<StepEmitter>
createCpuStepEmitter(const target::TargetDescription &target) {
  return std::make_unique<CpuStepEmitter>(target);
}

} // namespace kiln::codegen
