//===- CpuStepEmitter.cpp - C++ SIMD kernels for a CPU target -------------===//
//
// Part of Kiln. See codegen/StepEmitter.h. Walks the step function once, in
// order: every compute op becomes a call of a kernel of the kernel library
// (codegen/cpu/kernels/, written with the sources), instantiated with this
// op's constants; every value becomes a pointer into the arena (the memory
// plan's offsets), the step's arguments or the packed weights, and every
// dynamic dimension a count the step knows (tokens, logit rows or cached
// positions). Kernels with identical instantiations (the same op in every
// layer) are emitted once.
//
//===----------------------------------------------------------------------===//

#include "codegen/StepEmitter.h"

#include "codegen/EmitText.h"

#include "codegen/cpu/KernelLibrary.h"
#include "ir/KilnDialect.h"
#include "ir/KilnOps.h"
#include "ir/RopeFrequency.h"
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

[[noreturn]] void unsupported(Operation *op, const std::string &what) {
  throw std::runtime_error("codegen/cpu: " + describe(op) + ": " + what);
}

/// An instantiation of a kernel-library template: the family header, the
/// configuration's members and the call that the named entry point makes.
struct Instance {
  std::string kind;      ///< e.g. "gemm": the file's name suffix
  std::string header;    ///< e.g. "kernels/Gemm.h"
  std::string config;    ///< members of `struct Config`, one per line
  std::string signature; ///< the entry point's parameters
  std::string body;      ///< its statement, e.g. "kiln::kernels::...;"
  std::string key() const {
    return header + "\n" + config + "\n" + signature + "\n" + body;
  }
};

/// One distinct kernel and the ops it implements.
struct Kernel {
  std::string name;
  Instance instance;
  std::vector<std::string> uses; // op and location, one per call
  std::string details;           // shapes, packing, tiles (the same for all)
};

/// The C++ expression of each dimension of a value: a literal for static
/// ones, else the step's count (`a->tokens`, `a->rows` or `cached`).
using Dims = std::vector<std::string>;

class CpuStepEmitter : public StepEmitter {
public:
  explicit CpuStepEmitter(const target::TargetDescription &target)
      : target(target) {}

  EmittedStep emit(func::FuncOp step, WeightPacker &packer,
                   const EmitOptions &options) override;

private:
  // Values.
  std::string pointer(Value value, Operation *user);
  std::string weightPlain(Value value);
  const Dims &dims(Value value, Operation *user);
  std::string rows(Value value, Operation *user);
  std::string elements(Value value, Operation *user);
  void bindResults(Operation *op);
  Dims inferDims(OpResult result);

  // Kernels.
  std::string useKernel(const Instance &instance, Operation *op,
                        const std::string &details);
  void call(Operation *op, const std::string &kernel,
            const std::vector<std::string> &arguments,
            const std::string &prelude = "");
  /// How a GEMM's weight is packed: type, panel rows and layout.
  struct GemmPacking {
    PackedType type = PackedType::F32;
    int64_t nr = 0;
    PanelLayout layout = PanelLayout::Plain;
    std::string wtype; // the kernel's packed element
  };
  GemmPacking gemmPacking(Operation *op, PackedType type, int64_t nr = 0);
  PackedType storedType(Value weight) const;
  int64_t packGemmWeight(Value weight, const GemmPacking &packing);
  void emitGemm(Operation *op);
  void emitEmbedding(EmbeddingOp op);
  void emitAttention(AttentionOp op);
  void emitRope(RopeOp op);
  void emitUnary(Operation *op, const std::string &kind,
                 const std::string &unary, double factor);
  void emitBinary(Operation *op, const std::string &kind,
                  const std::string &binary);
  void emitSoftmax(SoftmaxOp op);
  void emitNorm(Operation *op);
  void emitTranspose(TransposeOp op);
  void emitSplit(SplitOp op);
  void emitKVRead(KVReadOp op);
  void emitAttentionPiece(Operation *op);
  void emitOp(Operation *op);
  std::string callTable() const;
  void requireF32Cache(Operation *op, Type cacheType);
  Instance cacheKernel(Operation *op, Type cacheType, const std::string &kind);
  std::string kvElementLine() const;

  target::TargetDescription target;
  WeightPacker *packer = nullptr;
  EmitOptions options;
  llvm::DenseMap<Value, std::string> pointers;
  llvm::DenseMap<Value, Dims> dimExprs;
  Value logits;
  bool readsCache = false; // a kv_read needs the cached-position count
  int64_t maxTokens = 0;
  int64_t scratchBytes = 0;
  std::vector<Kernel> kernels;
  llvm::StringMap<size_t> kernelByKey;
  std::string calls;
  std::vector<std::string> callNames;
  /// GEMM weights read straight from a kiln.weight, by name: where a tied
  /// classifier's table is also an embedding's, the embedding reads the
  /// GEMM's panels and the table is stored once.
  llvm::StringMap<Operation *> gemmByWeight;
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

std::string CpuStepEmitter::weightPlain(Value value) {
  return "(const float *)(a->weights + " + str(packer->packPlain(value)) + ")";
}

const Dims &CpuStepEmitter::dims(Value value, Operation *user) {
  auto it = dimExprs.find(value);
  if (it != dimExprs.end())
    return it->second;
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !type.hasStaticShape())
    unsupported(user, "an operand's dynamic dimensions are unknown");
  Dims &d = dimExprs[value];
  for (int64_t extent : type.getShape())
    d.push_back(str(extent));
  return d;
}

std::string CpuStepEmitter::rows(Value value, Operation *user) {
  return dims(value, user).front();
}

/// The number of elements of `value` as a C++ expression.
std::string CpuStepEmitter::elements(Value value, Operation *user) {
  const Dims &d = dims(value, user);
  std::vector<std::string> dynamic;
  int64_t fixed = 1;
  for (const std::string &e : d) {
    if (!e.empty() && std::isdigit(static_cast<unsigned char>(e[0])))
      fixed *= std::stoll(e);
    else
      dynamic.push_back(e);
  }
  if (fixed != 1 || dynamic.empty())
    dynamic.push_back(str(fixed));
  return join(dynamic, " * ");
}

/// The dimensions of `result` from those of its op's operands, by the op's
/// semantics (the memory plan bounds the same counts: docs/passes/
/// memory-planning.md).
Dims CpuStepEmitter::inferDims(OpResult result) {
  Operation *op = result.getOwner();
  auto type = cast<RankedTensorType>(result.getType());
  int64_t rank = type.getRank();
  std::vector<std::optional<std::string>> g(rank);
  auto copyFrom = [&](Value value) {
    const Dims &d = dims(value, op);
    for (int64_t i = 0; i < rank && i < int64_t(d.size()); ++i)
      g[i] = d[i];
  };
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](EmbeddingOp o) { g[0] = rows(o.getIds(), op); })
      .Case([&](GatherRowsOp o) {
        copyFrom(o.getInput());
        g[0] = rows(o.getRows(), op);
      })
      .Case([&](KVReadOp o) {
        g[0] = rows(o.getPositions(), op);
        g[1] = "cached";
      })
      .Case([&](AttentionScoresOp o) {
        g[0] = rows(o.getQuery(), op);
        g[2] = dims(o.getKeys(), op)[1];
      })
      .Case([&](AttentionOutputOp o) { g[0] = rows(o.getProbs(), op); })
      .Case([&](TransposeOp o) {
        const Dims &in = dims(o.getInput(), op);
        for (auto [j, p] : llvm::enumerate(o.getPermutation()))
          g[j] = in[p];
      })
      .Case([&](ReshapeOp o) {
        // The k-th dynamic dimension of the result is the input's k-th.
        ArrayRef<int64_t> in = o.getInput().getType().getShape();
        const Dims &inDims = dims(o.getInput(), op);
        for (size_t i = 0, j = 0; i < size_t(rank); ++i) {
          if (!type.isDynamicDim(i))
            continue;
          while (j < in.size() && !ShapedType::isDynamic(in[j]))
            ++j;
          if (j < in.size())
            g[i] = inDims[j++];
        }
      })
      .Default([&](Operation *) {
        // Element-wise ops, norms, rope, softmax, the mask, matmuls,
        // swiglu, attention and split keep their first activation's
        // dimensions.
        for (Value operand : op->getOperands())
          if (auto t = dyn_cast<RankedTensorType>(operand.getType());
              t && t.getRank() == rank && dimExprs.count(operand)) {
            copyFrom(operand);
            return;
          }
      });
  Dims d;
  for (int64_t i = 0; i < rank; ++i) {
    if (!type.isDynamicDim(i))
      d.push_back(str(type.getDimSize(i)));
    else if (g[i])
      d.push_back(*g[i]);
    else
      unsupported(op, "cannot tell dynamic dimension " + str(i) +
                          " of result " + str(result.getResultNumber()) + " (" +
                          typeString(type) +
                          "): the step knows its tokens, logit rows and "
                          "cached positions, and it is none of them");
  }
  return d;
}

/// Records where `op`'s results live (the memory plan's offsets; the logits
/// go straight to the caller's buffer) and their dimensions.
void CpuStepEmitter::bindResults(Operation *op) {
  // Weights (and weights packed by a concat) live in the packed blob.
  if (isa<WeightOp>(op) ||
      (isa<ConcatOp>(op) && !op->hasAttr(kBuffersAttrName)))
    return;
  for (auto [index, result] : llvm::enumerate(op->getResults())) {
    if (!isa<RankedTensorType>(result.getType()))
      continue;
    dimExprs[result] = inferDims(cast<OpResult>(result));
    if (result == logits && isa<ReshapeOp>(op))
      unsupported(op, "the logits are a reshape: the step's result must be "
                      "computed by a kernel");
    if (isa<ReshapeOp>(op)) {
      // A view: the same storage as its input.
      pointers[result] = pointer(op->getOperand(0), op);
      continue;
    }
    if (result == logits) {
      pointers[result] = "a->logits";
      continue;
    }
    auto buffer = dyn_cast_or_null<BufferAttr>(getBufferEntry(result));
    if (!buffer)
      unsupported(op, "result " + str(index) +
                          " has no buffer in the memory plan (run "
                          "--kiln-pipeline before code generation)");
    pointers[result] = "(float *)(a->arena + " + str(buffer.getOffset()) + ")";
  }
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

std::string CpuStepEmitter::useKernel(const Instance &instance, Operation *op,
                                      const std::string &details) {
  auto [it, inserted] = kernelByKey.try_emplace(instance.key(), kernels.size());
  if (inserted) {
    char name[64];
    std::snprintf(name, sizeof name, "k%02zu_%s", kernels.size(),
                  instance.kind.c_str());
    kernels.push_back({name, instance, {}, ""});
  }
  Kernel &kernel = kernels[it->second];
  kernel.uses.push_back(describe(op));
  // An identical instantiation means identical shapes and tiles.
  kernel.details = details;
  return kernel.name;
}

void CpuStepEmitter::call(Operation *op, const std::string &kernel,
                          const std::vector<std::string> &arguments,
                          const std::string &prelude) {
  std::string where = describe(op);
  std::string index = str(int64_t(callNames.size()));
  callNames.push_back(kernel + ": " + where);
  std::string statement =
      "kiln_gen::" + kernel + "(a, " + join(arguments, ", ") + ");";
  if (!prelude.empty())
    statement = "{\n    " + prelude + "\n    " + statement + "\n  }";
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

/// The row count from which `op`'s prefill tiles apply (kiln.tiles'
/// prefill_from); throws if absent.
static int64_t prefillFrom(Operation *op) {
  std::optional<int64_t> from = getPrefillFrom(op);
  if (!from)
    unsupported(op, "no kiln.tiles (run --kiln-pipeline before code "
                    "generation)");
  return *from;
}

static std::string tilesSummary(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (Attribute tiles = op->getAttr(kTilesAttrName))
    os << "tiles " << tiles;
  return text;
}

void CpuStepEmitter::requireF32Cache(Operation *op, Type cacheType) {
  auto cache = cast<KVCacheType>(cacheType);
  if (!cache.getElementType().isF32())
    unsupported(op, "the CPU kernels keep an f32 KV cache, not " +
                        typeString(cache.getElementType()));
}

/// The Config line naming the KV cache's element type.
std::string CpuStepEmitter::kvElementLine() const {
  switch (options.cacheType) {
  case PackedType::F32:
    return "using KvElement = float;\n";
  case PackedType::F16:
    return "using KvElement = _Float16;\n";
  case PackedType::BF16:
    return "using KvElement = kiln::kernels::bf16;\n";
  case PackedType::Q8_0:
  case PackedType::Q4_0:
  case PackedType::Q4_K:
  case PackedType::Q5_K:
  case PackedType::Q6_K:
    break; // --kv-type is a float type (the driver checks)
  }
  return "";
}

/// A Gather.h kernel of the KV cache (kv_append, kv_read): its rows are
/// HKV x D elements of the cache's type.
Instance CpuStepEmitter::cacheKernel(Operation *op, Type cacheType,
                                     const std::string &kind) {
  requireF32Cache(op, cacheType);
  auto cache = cast<KVCacheType>(cacheType);
  Instance instance;
  instance.kind = kind;
  instance.header = "kernels/Gather.h";
  instance.config =
      "static constexpr int64_t HKV = " + str(cache.getNumKvHeads()) +
      ", D = " + str(cache.getHeadDim()) + ";\n" + kvElementLine();
  return instance;
}

/// The type a weight is packed as: --dtype's where given (float types
/// only), else the weight's own element type (a concatenation's pieces share
/// it: kiln.concat's verifier).
PackedType CpuStepEmitter::storedType(Value weight) const {
  if (options.weightType)
    return *options.weightType;
  return packedTypeOf(
      cast<RankedTensorType>(weight.getType()).getElementType());
}

/// The panel rows, type and layout of a GEMM op's weights as `type`: `nr`
/// rows per panel, or (0) the op's tiles' nr.
CpuStepEmitter::GemmPacking
CpuStepEmitter::gemmPacking(Operation *op, PackedType type, int64_t nr) {
  GemmPacking packing;
  packing.type = type;
  packing.nr = nr ? nr : tile(op, "prefill", "nr");
  int64_t vectorFloats = target.cpu().vectorFloats();
  if (packing.nr % vectorFloats != 0 ||
      (!nr && tile(op, "decode", "nr") != packing.nr))
    unsupported(op, "nr must be a multiple of the vector width (" +
                        str(vectorFloats) +
                        ") and the same in both phases (one packed layout)");
  // bf16 panels multiply in bf16 dot products (vdpbf16ps) where the
  // target has them: weights and activations as pairs along K. Otherwise
  // panels with an even number of vectors per row load as lane pairs.
  if (type == PackedType::BF16) {
    if (target.cpu().avx512bf16 && vectorFloats == 16)
      packing.layout = PanelLayout::KPairs;
    else if ((packing.nr / vectorFloats) % 2 == 0)
      packing.layout = PanelLayout::LanePairs;
  }
  switch (type) {
  case PackedType::F32:
    packing.wtype = "float";
    break;
  case PackedType::F16:
    packing.wtype = "_Float16";
    break;
  case PackedType::BF16:
    packing.wtype = "kiln::kernels::bf16";
    break;
  case PackedType::Q8_0:
  case PackedType::Q4_0:
  case PackedType::Q4_K:
  case PackedType::Q5_K:
  case PackedType::Q6_K:
    packing.wtype = "uint8_t";
    break;
  }
  return packing;
}

/// The weights-section offset of `weight` packed as `packing` says.
int64_t CpuStepEmitter::packGemmWeight(Value weight,
                                       const GemmPacking &packing) {
  if (isQuantized(packing.type))
    return packer->packQuantizedPanels(weight, packing.nr, packing.type);
  return packer->packPanels(weight, packing.nr, packing.type, packing.layout,
                            target.cpu().vectorFloats());
}

/// The Config line naming a kernel's quantized weight format.
static std::string quantLine(PackedType type) {
  const char *name = type == PackedType::Q8_0   ? "Q8_0"
                     : type == PackedType::Q4_0 ? "Q4_0"
                     : type == PackedType::Q4_K ? "Q4_K"
                     : type == PackedType::Q5_K ? "Q5_K"
                     : type == PackedType::Q6_K ? "Q6_K"
                                                : "None";
  return std::string("static constexpr kiln::kernels::Quant QUANT = "
                     "kiln::kernels::Quant::") +
         name + ";\n";
}

void CpuStepEmitter::emitGemm(Operation *op) {
  Value input, weight, up, bias, residual, normWeight;
  FloatAttr normEpsilon;
  std::string activation = "Identity";
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
    if (auto act = fused.getActivation()) {
      switch (*act) {
      case Activation::Silu:
        activation = "Silu";
        break;
      case Activation::Gelu:
        activation = "Gelu";
        break;
      case Activation::GeluTanh:
        activation = "GeluTanh";
        break;
      case Activation::Relu:
        activation = "Relu";
        break;
      }
    }
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
  // swiglu's gate and up share one kernel, so one type: where a mixed model
  // stores them differently, both are widened to f32.
  PackedType packed = storedType(weight);
  if (up && storedType(up) != packed)
    packed = PackedType::F32;
  GemmPacking packing = gemmPacking(op, packed);
  int64_t nr = packing.nr;
  const std::string &wtype = packing.wtype;
  int64_t mr = tile(op, "prefill", "mr");
  bool bf16Dot = packing.layout == PanelLayout::KPairs;
  bool bf16Pairs = packing.layout == PanelLayout::LanePairs;
  bool quantized = isQuantized(packed);
  // AMX tiles where the target has them for this format (kernels/Gemm.h):
  // bf16 k pairs, Q8_0 and Q4_0 levels; 16 columns of a panel at a time.
  const target::CpuTarget &cpu = target.cpu();
  bool amx = nr % 16 == 0 &&
             ((bf16Dot && cpu.amxBf16) ||
              ((packed == PackedType::Q8_0 || packed == PackedType::Q4_0) &&
               cpu.amxInt8));
  Instance gemm;
  gemm.kind = up ? "swiglu" : "gemm";
  gemm.header = "kernels/Gemm.h";
  gemm.config =
      "static constexpr int64_t N = " + str(n) + ", K = " + str(k) +
      "; // weight [N, K]\n"
      "static constexpr int NR = " +
      str(nr) + ", MR = " + str(mr) +
      ", DECODE_MR = " + str(tile(op, "decode", "mr")) +
      "; // register blocks\n"
      "static constexpr int64_t PREFILL_FROM = " +
      str(prefillFrom(op)) +
      ";\n"
      "static constexpr int64_t PREFILL_M = " +
      str(tile(op, "prefill", "m")) +
      ", PREFILL_N = " + str(tile(op, "prefill", "n")) +
      ", PREFILL_K = " + str(tile(op, "prefill", "k")) +
      ";\n"
      "static constexpr int64_t DECODE_M = " +
      str(tile(op, "decode", "m")) +
      ", DECODE_N = " + str(tile(op, "decode", "n")) +
      ", DECODE_K = " + str(tile(op, "decode", "k")) +
      ";\n"
      "static constexpr bool SWIGLU = " +
      boolean(bool(up)) + ", HAS_BIAS = " + boolean(bool(bias)) +
      ", HAS_RESIDUAL = " + boolean(bool(residual)) +
      ", HAS_PROLOGUE = " + boolean(bool(normWeight)) +
      ";\n"
      "static constexpr kiln::kernels::Unary ACTIVATION = "
      "kiln::kernels::Unary::" +
      activation +
      ";\n"
      "static constexpr float EPSILON = " +
      (normEpsilon ? floatLiteral(float(normEpsilon.getValueAsDouble()))
                   : "0.0f") +
      ";\n"
      "static constexpr bool BF16_PAIRS = " +
      boolean(bf16Pairs) + ", BF16_DOT = " + boolean(bf16Dot) + ";\n" +
      quantLine(packed) + "static constexpr bool AMX = " + boolean(amx) +
      "; // AMX tiles\n" + "using wtype = " + wtype +
      "; // packed weight element\n";
  gemm.signature =
      "const kiln_step_args *a, int64_t rows, const float *x, const float "
      "*norm_weight, float *scratch, const void *w, const void *w2, const "
      "float *bias, const float *residual, float *y";
  gemm.body = "kiln::kernels::Gemm<Config>::run(a, rows, x, norm_weight, "
              "scratch, w, w2, bias, residual, y);";
  std::string details = "[" + str(n) + ", " + str(k) + "] weights " +
                        typeString(weightType) + (up ? " (gate and up)" : "") +
                        ", packed " + packedTypeName(packed).str() +
                        " in panels of " + str(nr) +
                        (bf16Dot ? " as k pairs (bf16 dot products)" : "") +
                        (amx ? " (AMX tiles)" : "") +
                        (quantized ? std::string(" (integer dot products, "
                                                 "activations quantized per "
                                                 "block of ") +
                                         str(quantizedBlockSize(packed)) + ")"
                                   : std::string()) +
                        "; " + tilesSummary(op);
  std::string name = useKernel(gemm, op, details);

  // Scratch (Gemm::scratch_bytes): the normalized rows (f32), the rows as
  // bf16 pairs for bf16 dot products, the rows quantized per block (levels,
  // then each block's scale and offset term: 8 bytes; for K-quants each
  // super-block's record of 13 words, kernels/KQuant.h), swiglu's partial
  // up sums.
  auto aligned = [](int64_t bytes) { return (bytes + 63) / 64 * 64; };
  int64_t scratch =
      (normWeight ? aligned(maxTokens * k * 4) : 0) +
      (bf16Dot ? aligned(maxTokens * (k + (k & 1)) * 2) : 0) +
      (quantized ? aligned(maxTokens * k) +
                       aligned(maxTokens * (k / quantizedBlockSize(packed)) *
                               (isKQuant(packed) ? 13 * 4 : 8))
                 : 0) +
      (up ? aligned(maxTokens * n * 4) : 0);
  scratchBytes = std::max(scratchBytes, scratch);
  auto packedPointer = [&](Value w) {
    return "a->weights + " + str(packGemmWeight(w, packing));
  };
  call(op, name,
       {rows(input, op), pointer(input, op),
        normWeight ? pointer(normWeight, op) : "nullptr", "scratch",
        packedPointer(weight), up ? packedPointer(up) : "nullptr",
        bias ? pointer(bias, op) : "nullptr",
        residual ? pointer(residual, op) : "nullptr",
        pointer(op->getResult(0), op)});
}

/// kiln.embedding. An f32 table row-major (a row is a memcpy); a table that
/// a GEMM also reads (a tied classifier) from that GEMM's panels, so it is
/// stored once; an f16, bf16 or quantized table as panels of one vector's
/// rows in its own type (its size kept).
void CpuStepEmitter::emitEmbedding(EmbeddingOp op) {
  RankedTensorType table = op.getTable().getType();
  int64_t d = table.getDimSize(1);
  Instance instance;
  instance.kind = "embedding";
  instance.header = "kernels/Gather.h";
  std::string tableName;
  if (auto weight = op.getTable().getDefiningOp<WeightOp>())
    tableName = weight.getName().str();
  Operation *tied =
      tableName.empty() ? nullptr : gemmByWeight.lookup(tableName);
  PackedType type = storedType(op.getTable());
  std::string tablePointer, details;
  if (!tied && type == PackedType::F32) {
    instance.config = "static constexpr int64_t D = " + str(d) + ";\n";
    instance.signature = "const kiln_step_args *a, int64_t rows, const "
                         "int32_t *ids, const float *table, float *out";
    instance.body =
        "kiln::kernels::embedding<Config>(a, rows, ids, table, out);";
    tablePointer = weightPlain(op.getTable());
    details = "table " + typeString(table) + " (stored f32)";
  } else {
    GemmPacking packing;
    if (tied) {
      // The GEMM's own packing (emitGemm's choice for the same weight), so
      // the packer returns the panels it already wrote or will write.
      packing = gemmPacking(tied, type);
      details = "table " + typeString(table) + " read from " + describe(tied) +
                "'s " + packedTypeName(type).str() +
                " panels (a tied classifier, stored once)";
    } else {
      packing = gemmPacking(op, type, target.cpu().vectorFloats());
      details = "table " + typeString(table) + " as " +
                packedTypeName(type).str() + " panels of " + str(packing.nr);
    }
    int layout = packing.layout == PanelLayout::Plain       ? 0
                 : packing.layout == PanelLayout::LanePairs ? 1
                                                            : 2;
    // Only the fields this table's path reads: the Config sits in an
    // anonymous namespace, where Clang reports a constant no code reads
    // (-Wunused-const-variable, an error under the kernels' -Werror).
    std::string fields = "static constexpr int NR = " + str(packing.nr);
    if (!isQuantized(packing.type))
      fields += ", PANEL_LAYOUT = " + str(layout) +
                "; // 0 plain, 1 lane pairs, 2 k pairs\n";
    else
      fields += ";\n";
    if (layout == 1)
      fields +=
          "static constexpr int LANES = " + str(target.cpu().vectorFloats()) +
          ";\n";
    instance.config = "static constexpr int64_t D = " + str(d) + ";\n" +
                      fields + quantLine(packing.type) +
                      "using wtype = " + packing.wtype + ";\n";
    instance.signature = "const kiln_step_args *a, int64_t rows, const "
                         "int32_t *ids, const void *panels, float *out";
    instance.body = "kiln::kernels::embedding_panels<Config>(a, rows, ids, "
                    "panels, out);";
    tablePointer =
        "a->weights + " + str(packGemmWeight(op.getTable(), packing));
  }
  std::string name = useKernel(instance, op, details);
  call(op, name,
       {rows(op.getIds(), op), pointer(op.getIds(), op), tablePointer,
        pointer(op.getResult(), op)});
}

void CpuStepEmitter::emitAttention(AttentionOp op) {
  requireF32Cache(op, op.getCache().getType());
  auto cache = cast<KVCacheType>(op.getCache().getType());
  RankedTensorType query = op.getQuery().getType();
  Instance attention;
  attention.kind = "attention";
  attention.header = "kernels/Attention.h";
  attention.config =
      "static constexpr int64_t H = " + str(query.getDimSize(1)) +
      ", HKV = " + str(cache.getNumKvHeads()) +
      ", D = " + str(cache.getHeadDim()) +
      ";\n"
      "static constexpr int64_t PREFILL_FROM = " +
      str(prefillFrom(op)) +
      ";\n"
      "static constexpr int64_t Q_BLOCK = " +
      str(tile(op, "prefill", "q")) +
      ", DECODE_Q = " + str(tile(op, "decode", "q")) +
      ";\n"
      "// One kv for both phases (the tiles' verifier checks): batch "
      "invariance.\n"
      "static constexpr int64_t KV_BLOCK = " +
      str(tile(op, "prefill", "kv")) +
      ";\n"
      "static constexpr int64_t WINDOW = " +
      str(op.getWindow() ? int64_t(*op.getWindow()) : 0) +
      "; // 0: none\n"
      "static constexpr float SCALE = " +
      floatLiteral(float(op.getScale().convertToDouble())) + ";\n" +
      kvElementLine();
  attention.signature =
      "const kiln_step_args *a, int64_t layer, const float *q, float *y";
  attention.body = "kiln::kernels::Attention<Config>::run(a, layer, q, y);";
  std::string name =
      useKernel(attention, op,
                "query " + typeString(query) + ", layer " + str(op.getLayer()) +
                    "; " + tilesSummary(op));
  call(op, name,
       {str(op.getLayer()), pointer(op.getQuery(), op),
        pointer(op.getResult(), op)});
}

void CpuStepEmitter::emitRope(RopeOp op) {
  RankedTensorType input = op.getInput().getType();
  int64_t heads = input.getDimSize(1), d = input.getDimSize(2);
  // The interpreter's frequencies, in float (ir/RopeFrequency.h).
  std::vector<std::string> freqs;
  for (int64_t i = 0; i < d / 2; ++i)
    freqs.push_back(floatLiteral(ropeInverseFrequency<float>(op, i, d)));
  Instance rope;
  rope.kind = "rope";
  rope.header = "kernels/Rope.h";
  rope.config = "static constexpr int64_t H = " + str(heads) +
                ", D = " + str(d) +
                ";\n"
                "static constexpr bool ADJACENT = " +
                boolean(op.getLayout() == RopeLayout::Adjacent) +
                "; // pairs (2i, 2i + 1), else (i, i + D / 2)\n"
                "static constexpr float INV_FREQ[D / 2] = {" +
                join(freqs, ", ") + "};\n";
  rope.signature = "const kiln_step_args *a, int64_t rows, const int32_t "
                   "*positions, const float *x, float *y";
  rope.body = "kiln::kernels::rope<Config>(a, rows, positions, x, y);";
  std::string name = useKernel(rope, op, "input " + typeString(input));
  call(op, name,
       {rows(op.getInput(), op), pointer(op.getPositions(), op),
        pointer(op.getInput(), op), pointer(op.getResult(), op)});
}

void CpuStepEmitter::emitUnary(Operation *op, const std::string &kind,
                               const std::string &unary, double factor) {
  Value input = op->getOperand(0), result = op->getResult(0);
  Instance instance;
  instance.kind = kind;
  instance.header = "kernels/Elementwise.h";
  instance.config = "static constexpr kiln::kernels::Unary OP = "
                    "kiln::kernels::Unary::" +
                    unary +
                    ";\n"
                    "static constexpr float FACTOR = " +
                    floatLiteral(float(factor)) + ";\n";
  instance.signature =
      "const kiln_step_args *a, int64_t n, const float *x, float *y";
  instance.body = "kiln::kernels::unary<Config>(a, n, x, y);";
  std::string name =
      useKernel(instance, op, "input " + typeString(input.getType()));
  call(op, name,
       {elements(input, op), pointer(input, op), pointer(result, op)});
}

void CpuStepEmitter::emitBinary(Operation *op, const std::string &kind,
                                const std::string &binary) {
  Value lhs = op->getOperand(0), rhs = op->getOperand(1);
  Instance instance;
  instance.kind = kind;
  instance.header = "kernels/Elementwise.h";
  instance.config = "static constexpr kiln::kernels::Binary OP = "
                    "kiln::kernels::Binary::" +
                    binary + ";\n";
  instance.signature = "const kiln_step_args *a, int64_t n, const float *l, "
                       "const float *r, float *y";
  instance.body = "kiln::kernels::binary<Config>(a, n, l, r, y);";
  std::string name =
      useKernel(instance, op, "operands " + typeString(lhs.getType()));
  call(op, name,
       {elements(lhs, op), pointer(lhs, op), pointer(rhs, op),
        pointer(op->getResult(0), op)});
}

void CpuStepEmitter::emitSoftmax(SoftmaxOp op) {
  const Dims &d = dims(op.getInput(), op);
  Dims outer(d.begin(), d.end() - 1);
  std::string rowCount = outer.empty() ? "1" : join(outer, " * ");
  Instance instance;
  instance.kind = "softmax";
  instance.header = "kernels/Elementwise.h";
  instance.signature = "const kiln_step_args *a, int64_t rows, int64_t cols, "
                       "const float *x, float *y";
  instance.body = "kiln::kernels::softmax(a, rows, cols, x, y);";
  std::string name = useKernel(instance, op,
                               "input " + typeString(op.getInput().getType()) +
                                   ", rows of the last dimension");
  call(op, name,
       {rowCount, d.back(), pointer(op.getInput(), op),
        pointer(op.getResult(), op)});
}

void CpuStepEmitter::emitNorm(Operation *op) {
  Value input = op->getOperand(0), weight = op->getOperand(1);
  auto inputType = cast<RankedTensorType>(input.getType());
  const Dims &d = dims(input, op);
  Dims outer(d.begin(), d.end() - 1);
  std::string rowCount = outer.empty() ? "1" : join(outer, " * ");
  Instance instance;
  instance.header = "kernels/Norms.h";
  std::vector<std::string> arguments = {rowCount, pointer(input, op),
                                        pointer(weight, op)};
  std::string grain =
      "static constexpr int64_t PREFILL_FROM = " + str(prefillFrom(op)) +
      ", PREFILL_ROWS = " + str(tile(op, "prefill", "rows")) +
      ", DECODE_ROWS = " + str(tile(op, "decode", "rows")) + ";\n";
  if (auto rms = dyn_cast<RmsNormOp>(op)) {
    instance.kind = "rms_norm";
    instance.config =
        grain +
        "static constexpr int64_t D = " + str(inputType.getShape().back()) +
        ";\nstatic constexpr float EPSILON = " +
        floatLiteral(float(rms.getEpsilon().convertToDouble())) + ";\n";
    instance.signature = "const kiln_step_args *a, int64_t rows, const float "
                         "*x, const float *g, float *y";
    instance.body = "kiln::kernels::rms_norm<Config>(a, rows, x, g, y);";
  } else {
    auto layer = cast<LayerNormOp>(op);
    instance.kind = "layer_norm";
    instance.config =
        grain +
        "static constexpr int64_t D = " + str(inputType.getShape().back()) +
        ";\nstatic constexpr float EPSILON = " +
        floatLiteral(float(layer.getEpsilon().convertToDouble())) +
        ";\nstatic constexpr bool HAS_BIAS = " +
        boolean(bool(layer.getBias())) + ";\n";
    instance.signature = "const kiln_step_args *a, int64_t rows, const float "
                         "*x, const float *g, const float *b, float *y";
    instance.body = "kiln::kernels::layer_norm<Config>(a, rows, x, g, b, y);";
    arguments.push_back(layer.getBias() ? pointer(layer.getBias(), op)
                                        : "nullptr");
  }
  arguments.push_back(pointer(op->getResult(0), op));
  std::string name = useKernel(
      instance, op, "input " + typeString(inputType) + "; " + tilesSummary(op));
  call(op, name, arguments);
}

void CpuStepEmitter::emitTranspose(TransposeOp op) {
  RankedTensorType input = op.getInput().getType();
  std::vector<std::string> permutation;
  for (int64_t p : op.getPermutation())
    permutation.push_back(str(p));
  Instance instance;
  instance.kind = "transpose";
  instance.header = "kernels/Gather.h";
  instance.config = "static constexpr int RANK = " + str(input.getRank()) +
                    ";\nstatic constexpr int PERM[RANK] = {" +
                    join(permutation, ", ") + "};\n";
  instance.signature = "const kiln_step_args *a, const int64_t *dims, const "
                       "float *x, float *y";
  instance.body = "kiln::kernels::transpose<Config>(a, dims, x, y);";
  std::string name = useKernel(instance, op,
                               "input " + typeString(input) + " to " +
                                   typeString(op.getType()));
  call(op, name,
       {"dims", pointer(op.getInput(), op), pointer(op.getResult(), op)},
       "const int64_t dims[] = {" + join(dims(op.getInput(), op), ", ") + "};");
}

void CpuStepEmitter::emitSplit(SplitOp op) {
  RankedTensorType input = op.getInput().getType();
  int64_t axis = op.getAxis();
  const Dims &d = dims(op.getInput(), op);
  Dims before(d.begin(), d.begin() + axis),
      after(d.begin() + axis + 1, d.end());
  std::vector<std::string> widths, outs;
  for (Value result : op.getResults()) {
    widths.push_back(
        str(cast<RankedTensorType>(result.getType()).getDimSize(axis)));
    outs.push_back(pointer(result, op));
  }
  if (input.isDynamicDim(axis))
    unsupported(op, "a split along a dynamic dimension");
  Instance instance;
  instance.kind = "split";
  instance.header = "kernels/Gather.h";
  instance.config =
      "static constexpr int64_t AXIS_SIZE = " + str(input.getDimSize(axis)) +
      ", PARTS = " + str(int64_t(widths.size())) +
      ";\nstatic constexpr int64_t WIDTH[PARTS] = {" + join(widths, ", ") +
      "};\n";
  instance.signature = "const kiln_step_args *a, int64_t outer, int64_t "
                       "inner, const float *x, float *const *out";
  instance.body = "kiln::kernels::split<Config>(a, outer, inner, x, out);";
  std::string name = useKernel(instance, op,
                               "input " + typeString(input) + " along axis " +
                                   str(axis) + " into " + join(widths, ", "));
  call(op, name,
       {before.empty() ? "1" : join(before, " * "),
        after.empty() ? "1" : join(after, " * "), pointer(op.getInput(), op),
        "out"},
       "float *const out[] = {" + join(outs, ", ") + "};");
}

void CpuStepEmitter::emitKVRead(KVReadOp op) {
  readsCache = true;
  Instance instance = cacheKernel(op, op.getCache().getType(), "kv_read");
  instance.signature = "const kiln_step_args *a, int64_t layer, int64_t s, "
                       "float *keys, float *values";
  instance.body = "kiln::kernels::kv_read<Config>(a, layer, s, keys, values);";
  std::string name = useKernel(instance, op, "layer " + str(op.getLayer()));
  call(op, name,
       {str(op.getLayer()), "cached", pointer(op.getKeys(), op),
        pointer(op.getValues(), op)});
}

/// kiln.attention_scores, kiln.attention_mask, kiln.attention_output.
void CpuStepEmitter::emitAttentionPiece(Operation *op) {
  Instance instance;
  instance.header = "kernels/AttentionPieces.h";
  std::vector<std::string> arguments;
  std::string details;
  auto headsConfig = [&](RankedTensorType query, RankedTensorType keys) {
    return "static constexpr int64_t H = " + str(query.getDimSize(1)) +
           ", HKV = " + str(keys.getDimSize(2)) +
           ", D = " + str(keys.getDimSize(3)) + ";\n";
  };
  if (auto scores = dyn_cast<AttentionScoresOp>(op)) {
    instance.kind = "attention_scores";
    instance.config =
        headsConfig(scores.getQuery().getType(), scores.getKeys().getType());
    instance.signature = "const kiln_step_args *a, int64_t rows, int64_t s, "
                         "const float *q, const float *keys, float *scores";
    instance.body = "kiln::kernels::attention_scores<Config>(a, rows, s, q, "
                    "keys, scores);";
    arguments = {rows(scores.getQuery(), op), dims(scores.getKeys(), op)[1],
                 pointer(scores.getQuery(), op), pointer(scores.getKeys(), op),
                 pointer(scores.getResult(), op)};
    details = "query " + typeString(scores.getQuery().getType()) + ", keys " +
              typeString(scores.getKeys().getType());
  } else if (auto mask = dyn_cast<AttentionMaskOp>(op)) {
    RankedTensorType type = mask.getScores().getType();
    instance.kind = "attention_mask";
    instance.config =
        "static constexpr int64_t H = " + str(type.getDimSize(1)) +
        ";\nstatic constexpr int64_t WINDOW = " +
        str(mask.getWindow() ? int64_t(*mask.getWindow()) : 0) +
        "; // 0: none\n";
    instance.signature = "const kiln_step_args *a, int64_t rows, int64_t s, "
                         "const float *x, const int32_t *positions, float *y";
    instance.body = "kiln::kernels::attention_mask<Config>(a, rows, s, x, "
                    "positions, y);";
    const Dims &d = dims(mask.getScores(), op);
    arguments = {d[0], d[2], pointer(mask.getScores(), op),
                 pointer(mask.getPositions(), op),
                 pointer(mask.getResult(), op)};
    details = "scores " + typeString(type);
  } else {
    auto output = cast<AttentionOutputOp>(op);
    instance.kind = "attention_output";
    instance.config =
        headsConfig(output.getResult().getType(), output.getValues().getType());
    instance.signature = "const kiln_step_args *a, int64_t rows, int64_t s, "
                         "const float *probs, const float *values, float *y";
    instance.body = "kiln::kernels::attention_output<Config>(a, rows, s, "
                    "probs, values, y);";
    arguments = {rows(output.getProbs(), op), dims(output.getProbs(), op)[2],
                 pointer(output.getProbs(), op),
                 pointer(output.getValues(), op),
                 pointer(output.getResult(), op)};
    details = "probabilities " + typeString(output.getProbs().getType()) +
              ", values " + typeString(output.getValues().getType());
  }
  std::string name = useKernel(instance, op, details);
  call(op, name, arguments);
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
      .Case([&](AddOp) { emitBinary(op, "add", "Add"); })
      .Case([&](MulOp) { emitBinary(op, "mul", "Mul"); })
      .Case([&](SiluOp) { emitUnary(op, "silu", "Silu", 1.0); })
      .Case([&](GeluOp o) {
        emitUnary(op, o.getTanh() ? "gelu_tanh" : "gelu",
                  o.getTanh() ? "GeluTanh" : "Gelu", 1.0);
      })
      .Case([&](ReluOp) { emitUnary(op, "relu", "Relu", 1.0); })
      .Case([&](ScaleOp o) {
        emitUnary(op, "scale", "Scale", o.getFactor().convertToDouble());
      })
      .Case([&](SoftmaxOp o) { emitSoftmax(o); })
      .Case<RmsNormOp, LayerNormOp>([&](Operation *norm) { emitNorm(norm); })
      .Case([&](TransposeOp o) { emitTranspose(o); })
      .Case([&](SplitOp o) { emitSplit(o); })
      .Case([&](KVReadOp o) { emitKVRead(o); })
      .Case<AttentionScoresOp, AttentionMaskOp, AttentionOutputOp>(
          [&](Operation *piece) { emitAttentionPiece(piece); })
      .Case([&](EmbeddingOp o) { emitEmbedding(o); })
      .Case([&](KVAppendOp o) {
        Instance instance =
            cacheKernel(op, o.getCache().getType(), "kv_append");
        instance.signature = "const kiln_step_args *a, int64_t layer, const "
                             "float *keys, const float *values";
        instance.body =
            "kiln::kernels::kv_append<Config>(a, layer, keys, values);";
        std::string name =
            useKernel(instance, op, "layer " + str(o.getLayer()));
        call(op, name,
             {str(o.getLayer()), pointer(o.getKeys(), op),
              pointer(o.getValues(), op)});
      })
      .Case([&](GatherRowsOp o) {
        RankedTensorType input = o.getInput().getType();
        Instance instance;
        instance.kind = "gather_rows";
        instance.header = "kernels/Gather.h";
        instance.config =
            "static constexpr int64_t D = " + str(input.getDimSize(1)) + ";\n";
        instance.signature = "const kiln_step_args *a, const int32_t *rows, "
                             "const float *x, float *out";
        instance.body = "kiln::kernels::gather_rows<Config>(a, rows, x, out);";
        std::string name =
            useKernel(instance, op, "input " + typeString(input));
        call(op, name,
             {pointer(o.getRows(), op), pointer(o.getInput(), op),
              pointer(o.getResult(), op)});
      })
      .Default([&](Operation *other) {
        unsupported(other, "no CPU kernel for this op (kiln-opt "
                           "--kiln-check-cpu-legality says why)");
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

/// A kernel's source file: a header naming the ops, shapes and tiles it
/// implements, its configuration and the entry point the step calls.
std::string kernelSource(const Kernel &kernel, const std::string &target) {
  const Instance &instance = kernel.instance;
  std::string text = "// " + kernel.name + ".cpp - the " + instance.kind +
                     " kernel of this step, generated by Kiln for target " +
                     target + ".\n//\n// Implements:\n";
  for (const std::string &use : kernel.uses)
    text += "//   - " + use + "\n//\n";
  text += "// Shapes and tiles: " + kernel.details + "\n";
  text += "//\n// The kernel is " + instance.header +
          " (Kiln's kernel library) instantiated with\n// the configuration "
          "below; weights are packed by codegen/WeightPacker.h and\n// the "
          "arena offsets come from the memory plan (kiln.buffers).\n\n"
          "#include \"kiln_kernels.h\"\n\n#include \"" +
          instance.header + "\"\n\nnamespace kiln_gen {\n";
  if (!instance.config.empty())
    text += "namespace {\n\nstruct Config {\n" + instance.config +
            "};\n\n} // namespace\n\n";
  text += "void " + kernel.name + "(" + instance.signature + ") {\n  " +
          instance.body + "\n}\n\n} // namespace kiln_gen\n";
  return text;
}

EmittedStep CpuStepEmitter::emit(func::FuncOp step, WeightPacker &packer,
                                 const EmitOptions &options) {
  this->packer = &packer;
  this->options = options;
  if (!target.isCpu())
    throw std::runtime_error("codegen/cpu: target " + target.name +
                             " is not a CPU");
  MemoryPlanAttr plan = getMemoryPlan(step);
  if (!plan)
    throw std::runtime_error("codegen: the step function has no memory plan "
                             "(run --kiln-pipeline before code generation)");
  maxTokens = plan.getMaxTokens();
  int64_t arenaBytes = plan.getArenaBytes();

  Block &body = step.getBody().front();
  static const char *arguments[] = {"a->token_ids", "a->positions",
                                    "a->seq_ids", "a->logit_rows"};
  static const char *counts[] = {"a->tokens", "a->tokens", "a->tokens",
                                 "a->rows"};
  for (unsigned i = 0; i < 4; ++i) {
    pointers[body.getArgument(i)] = arguments[i];
    dimExprs[body.getArgument(i)] = {counts[i]};
  }
  logits = body.getTerminator()->getOperand(0);
  for (Operation &op : body.getOperations()) {
    Value weight;
    if (auto matmul = dyn_cast<MatmulOp>(op))
      weight = matmul.getWeight();
    else if (auto fused = dyn_cast<FusedMatmulOp>(op))
      weight = fused.getWeight();
    if (auto w = weight ? weight.getDefiningOp<WeightOp>() : WeightOp())
      gemmByWeight.try_emplace(w.getName(), &op);
  }

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
    emitted.kernels.push_back(
        {kernel.name + ".cpp", kernelSource(kernel, target.spec())});
    declarations +=
        "void " + kernel.name + "(" + kernel.instance.signature + ");\n";
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
      "    double start = kiln::kernels::now();                       \\\n"
      "    __VA_ARGS__                                                \\\n"
      "    a->call_seconds[index] += kiln::kernels::now() - start;    \\\n"
      "  } else {                                                     \\\n"
      "    __VA_ARGS__                                                \\\n"
      "  }\n\n"
      "extern \"C\" int32_t kiln_step(const kiln_step_args *a) {\n"
      "  if (a->tokens < 1 || a->tokens > " +
      str(maxTokens) +
      " || a->rows < 0 || a->rows > a->tokens)\n"
      "    return 1;\n"
      "  float *scratch = (float *)(a->arena + " +
      str(scratchOffset) + ");\n  (void)scratch;\n" +
      (readsCache ? "  // S: the cached positions kiln.kv_read reads (the "
                    "step's last position + 1).\n  const int64_t cached = "
                    "kiln::kernels::cached_positions(a);\n"
                  : "") +
      calls + "  return 0;\n}\n";
  emitted.step = {"step.cpp", stepText};
  emitted.headers.push_back(
      {"kiln_kernels.h",
       "// kiln_kernels.h - what every kernel of this step includes.\n"
       "// Generated by Kiln for target " +
           target.spec() + ": vectors of " + str(target.cpu().vectorFloats()) +
           " floats.\n#ifndef KILN_KERNELS_H\n#define KILN_KERNELS_H\n\n"
           "#define KILN_VECTOR_FLOATS " +
           str(target.cpu().vectorFloats()) +
           "\n#include \"kernels/Vector.h\"\n\n#endif // KILN_KERNELS_H\n"});
  for (const cpu::KernelLibraryFile &file : cpu::kernelLibrary())
    emitted.headers.push_back({file.path, file.text});
  return emitted;
}

} // namespace

std::unique_ptr<StepEmitter>
createCpuStepEmitter(const target::TargetDescription &target) {
  return std::make_unique<CpuStepEmitter>(target);
}

} // namespace kiln::codegen
