//===- CudaStepEmitter.cpp - CUDA kernels and their launches --------------===//
//
// Part of Kiln. See codegen/StepEmitter.h. Walks the step function once, in
// order, as the CPU emitter does, and writes two sources:
//
//  - kernels.cu: every compute op's kernel, an instance of the CUDA kernel
//    library (codegen/cuda/kernels/) with the op's constants, preceded by a
//    comment naming the ops it implements. NVRTC compiles it to PTX and a
//    cubin; the host compiler compiles it too, for the block emulator.
//  - step.cpp: kiln_cuda_step (runtime/CudaStepABI.h), host code that
//    launches the kernels in program order with the arena offsets of the
//    memory plan and the offsets of the packed weights, each launch's grid
//    computed from the step's token count.
//
// Matrix products have two instances, with the op's tiles (kiln.tiles,
// passes/TileOps.cpp): a GEMV for steps of fewer rows than the tiles'
// prefill_from (decode), a shared-memory GEMM above (f32 on the CUDA cores,
// f16/bf16 on the tensor cores). Attention splits each token's positions
// along keys in steps below its prefill_from, merging the splits with a
// second kernel. Weights are packed
// row-major ([n, k], one-row panels) as f32, f16 or bf16; quantized weights
// are refused with a clear message (widen them with --dtype).
//
//===----------------------------------------------------------------------===//

#include "codegen/StepEmitter.h"

#include "codegen/EmitText.h"

#include "codegen/cuda/CudaKernelLibrary.h"
#include "ir/KilnDialect.h"
#include "ir/KilnOps.h"
#include "ir/RopeFrequency.h"
#include "ir/Tiling.h"
#include "passes/MemoryPlan.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

using namespace mlir;

namespace kiln::codegen {
namespace {

[[noreturn]] void unsupported(Operation *op, const std::string &what) {
  throw std::runtime_error("codegen/cuda: " + describe(op) + ": " + what);
}

/// The kernel library's element type for a packed weight or cache type.
std::string elementName(PackedType type) {
  switch (type) {
  case PackedType::F32:
    return "float";
  case PackedType::F16:
    return "f16";
  case PackedType::BF16:
    return "bf16";
  default:
    return "";
  }
}

/// A matrix product's kernels' tiles: the prefill GEMM's block tile m x n,
/// k step and warp (mma) or thread (f32) tile mr x nr; the decode GEMV's
/// rows per pass over the weights and columns (warps) per block.
struct GemmTiles {
  int64_t m, n, k, mr, nr, threads;
  int64_t decodeRows, decodeColumns, decodeThreads, prefillFrom;
};

/// One kernel of kernels.cu: its entry points' text and the ops it serves.
struct Kernel {
  std::string name;
  std::string text; ///< the instance, with `NAME` standing for the name
  std::vector<std::string> uses;
  std::string details;
};

class CudaStepEmitter : public StepEmitter {
public:
  explicit CudaStepEmitter(const target::TargetDescription &target)
      : target(target) {}

  EmittedStep emit(func::FuncOp step, WeightPacker &packer,
                   const EmitOptions &options) override;

private:
  // Values: a C++ expression for each value's address, and for its rows.
  std::string pointer(Value value, Operation *user);
  std::string rows(Value value, Operation *user);
  int64_t width(Value value) const; ///< elements per row (static)
  void bindResults(Operation *op);

  std::string useKernel(const std::string &kind, const std::string &text,
                        Operation *op, const std::string &details);
  void launch(Operation *op, const std::string &statement);
  std::string weightAddress(Value weight, PackedType type);
  std::string plainAddress(Value weight);
  PackedType gemmType(Operation *op, Value weight, Value up);
  GemmTiles gemmTiles(Operation *op, PackedType type, int64_t panels);

  void emitGemm(Operation *op);
  void emitEmbedding(EmbeddingOp op);
  void emitSplit(SplitOp op);
  void emitRope(RopeOp op);
  void emitKVAppend(KVAppendOp op);
  void emitAttention(AttentionOp op);
  void emitGatherRows(GatherRowsOp op);
  void emitRmsNorm(RmsNormOp op);
  void emitAdd(AddOp op);
  void emitOp(Operation *op);

  target::TargetDescription target;
  WeightPacker *packer = nullptr;
  EmitOptions options;
  llvm::DenseMap<Value, std::string> pointers, rowExprs;
  Value logits;
  std::vector<Kernel> kernels;
  llvm::StringMap<size_t> kernelByText;
  /// Attention's partial results, after the memory plan's buffers.
  int64_t scratchOffset = 0, scratchBytes = 0;
  std::string launches;
  int64_t launchCount = 0;
};

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

std::string CudaStepEmitter::pointer(Value value, Operation *user) {
  auto it = pointers.find(value);
  if (it != pointers.end())
    return it->second;
  unsupported(user, "an operand has no storage (is the step planned? run "
                    "--kiln-pipeline before code generation)");
}

std::string CudaStepEmitter::rows(Value value, Operation *user) {
  auto it = rowExprs.find(value);
  if (it != rowExprs.end())
    return it->second;
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (type && type.hasStaticShape() && type.getRank() >= 1)
    return str(type.getDimSize(0));
  unsupported(user, "an operand's row count is unknown");
}

int64_t CudaStepEmitter::width(Value value) const {
  auto type = cast<RankedTensorType>(value.getType());
  int64_t w = 1;
  for (int64_t i = 1; i < type.getRank(); ++i)
    w *= type.getDimSize(i);
  return w;
}

void CudaStepEmitter::bindResults(Operation *op) {
  if (isa<WeightOp>(op) ||
      (isa<ConcatOp>(op) && !op->hasAttr(kBuffersAttrName)))
    return;
  for (auto [index, result] : llvm::enumerate(op->getResults())) {
    auto type = dyn_cast<RankedTensorType>(result.getType());
    if (!type)
      continue;
    // Rows: the ids' for an embedding, the row list's for gather_rows, else
    // the first activation operand's (the ops Kiln compiles keep rows).
    if (auto embedding = dyn_cast<EmbeddingOp>(op))
      rowExprs[result] = rows(embedding.getIds(), op);
    else if (auto gather = dyn_cast<GatherRowsOp>(op))
      rowExprs[result] = rows(gather.getRows(), op);
    else if (type.isDynamicDim(0)) {
      for (Value operand : op->getOperands())
        if (rowExprs.count(operand)) {
          std::string r = rowExprs.lookup(operand); // a copy: [] may rehash
          rowExprs[result] = r;
          break;
        }
      if (!rowExprs.count(result))
        unsupported(op, "cannot tell the rows of result " + str(index));
    }
    for (int64_t i = 1; i < type.getRank(); ++i)
      if (type.isDynamicDim(i))
        unsupported(op, "CUDA kernels take dynamic rows only, not " +
                            typeString(type));
    if (isa<ReshapeOp>(op)) {
      std::string p = pointer(op->getOperand(0), op); // [] may rehash
      pointers[result] = p;
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
// Kernels and launches
//===----------------------------------------------------------------------===//

/// Registers the kernel whose entry points are `text` (with NAME for its
/// name); identical instances (the same op in every layer) are one kernel.
std::string CudaStepEmitter::useKernel(const std::string &kind,
                                       const std::string &text, Operation *op,
                                       const std::string &details) {
  auto [it, inserted] = kernelByText.try_emplace(text, kernels.size());
  if (inserted) {
    char name[64];
    std::snprintf(name, sizeof name, "k%02zu_%s", kernels.size(), kind.c_str());
    kernels.push_back({name, text, {}, details});
  }
  kernels[it->second].uses.push_back(describe(op));
  return kernels[it->second].name;
}

void CudaStepEmitter::launch(Operation *op, const std::string &statement) {
  launches += "  // " + describe(op) + "\n  " + statement + "\n";
  ++launchCount;
}

std::string CudaStepEmitter::weightAddress(Value weight, PackedType type) {
  // Panels of one row are the matrix row-major ([n, k]) in `type`.
  return "a->weights + " + str(packer->packPanels(weight, 1, type));
}

std::string CudaStepEmitter::plainAddress(Value weight) {
  return "(const float *)(a->weights + " + str(packer->packPlain(weight)) + ")";
}

PackedType CudaStepEmitter::gemmType(Operation *op, Value weight, Value up) {
  auto stored = [&](Value w) {
    return options.weightType
               ? *options.weightType
               : packedTypeOf(
                     cast<RankedTensorType>(w.getType()).getElementType());
  };
  PackedType type = stored(weight);
  if (up && stored(up) != type)
    type = PackedType::F32; // gate and up share one kernel, so one type
  if (elementName(type).empty())
    unsupported(op, "the CUDA kernels read f32, f16 and bf16 weights, and " +
                        typeString(weight.getType()) + " is stored as " +
                        packedTypeName(type).str() +
                        "; compile with --dtype f16 or bf16 to widen it "
                        "(quantized CUDA kernels are on the roadmap)");
  return type;
}

/// A matrix product's tiles (kiln.tiles, passes/TileOps.cpp) as the
/// kernels take them, checked against what each kernel can run: a tuning
/// file may set any positive size.
GemmTiles CudaStepEmitter::gemmTiles(Operation *op, PackedType type,
                                     int64_t panels) {
  auto size = [&](StringRef phase, StringRef name) {
    std::optional<int64_t> value = getTileSize(op, phase, name);
    if (!value)
      unsupported(op, "no kiln.tiles (run --kiln-pipeline before code "
                      "generation)");
    return *value;
  };
  GemmTiles t;
  t.m = size("prefill", "m");
  t.n = size("prefill", "n");
  t.k = size("prefill", "k");
  t.mr = size("prefill", "mr");
  t.nr = size("prefill", "nr");
  t.decodeRows = size("decode", "m");
  t.decodeColumns = size("decode", "n");
  t.prefillFrom = *getPrefillFrom(op);
  t.decodeThreads = 32 * t.decodeColumns;
  auto refuse = [&](const std::string &why) {
    unsupported(op, "prefill tiles m = " + str(t.m) + ", n = " + str(t.n) +
                        ", k = " + str(t.k) + ", mr = " + str(t.mr) +
                        ", nr = " + str(t.nr) + ": " + why);
  };
  if (t.m % t.mr || t.n % t.nr)
    refuse("mr and nr must divide m and n");
  int64_t sharedBytes;
  if (type == PackedType::F32) {
    t.threads = (t.m / t.mr) * (t.n / t.nr);
    if (panels * t.mr * t.nr > 64)
      refuse("a thread holds panels * mr * nr accumulators, at most 64 "
             "(registers)");
    sharedBytes = 4 * (t.k * (t.m + 4) + panels * t.k * (t.n + 4) + t.m);
  } else {
    t.threads = 32 * (t.m / t.mr) * (t.n / t.nr);
    if (t.mr % 16 || t.nr % 8)
      refuse("a warp's tile is whole mma tiles: mr a multiple of 16, nr of "
             "8");
    if (t.k != 32 && t.k != 64)
      refuse("k steps are 32 or 64 elements (the padded shared-memory rows "
             "are conflict-free for those)");
    if (panels * t.mr * t.nr / 32 > 64)
      refuse("a thread holds panels * mr * nr / 32 accumulators, at most 64 "
             "(registers)");
    sharedBytes = 2 * (t.m + panels * t.n) * (t.k + 8) + 4 * t.m;
  }
  if (t.threads > 1024 || t.threads % 32)
    refuse("a block of " + str(t.threads) +
           " threads (whole warps, at most 1024)");
  if (sharedBytes > 48 * 1024)
    refuse(str(sharedBytes) +
           " bytes of shared memory, more than a block's static 48 KiB");
  if (t.decodeRows < 1 || t.decodeRows > 8 || t.decodeColumns > 32)
    unsupported(op, "decode tiles m = " + str(t.decodeRows) +
                        ", n = " + str(t.decodeColumns) +
                        ": the GEMV takes 1 to 8 rows per pass and at most 32 "
                        "warps (columns) per block");
  return t;
}

void CudaStepEmitter::emitGemm(Operation *op) {
  Value input, weight, up, residual, normWeight;
  double epsilon = 0;
  if (auto matmul = dyn_cast<MatmulOp>(op)) {
    input = matmul.getInput();
    weight = matmul.getWeight();
    if (matmul.getBias())
      unsupported(op, "CUDA GEMMs take no bias yet");
  } else if (auto fused = dyn_cast<FusedMatmulOp>(op)) {
    input = fused.getInput();
    weight = fused.getWeight();
    residual = fused.getResidual();
    normWeight = fused.getNormWeight();
    if (normWeight)
      epsilon = fused.getNormEpsilonAttr().getValueAsDouble();
    if (fused.getBias() || fused.getActivation())
      unsupported(op, "CUDA GEMMs take no bias or activation epilogue yet");
  } else {
    auto swiglu = cast<SwigluOp>(op);
    input = swiglu.getInput();
    weight = swiglu.getGate();
    up = swiglu.getUp();
    normWeight = swiglu.getNormWeight();
    if (normWeight)
      epsilon = swiglu.getNormEpsilonAttr().getValueAsDouble();
  }
  auto weightType = cast<RankedTensorType>(weight.getType());
  int64_t n = weightType.getDimSize(0), k = weightType.getDimSize(1);
  PackedType type = gemmType(op, weight, up);
  std::string w = elementName(type);
  std::string form = std::string(normWeight ? "true" : "false") + ", " +
                     (up ? "true" : "false");
  GemmTiles t = gemmTiles(op, type, up ? 2 : 1);
  std::string prefill =
      type == PackedType::F32
          ? "gemm_simt<" + str(t.m) + ", " + str(t.n) + ", " + str(t.k) + ", " +
                str(t.mr) + ", " + str(t.nr) + ", " + form + ">(m)"
          : "gemm_mma<" + w + ", " + str(t.m) + ", " + str(t.n) + ", " +
                str(t.k) + ", " + str(t.mr) + ", " + str(t.nr) + ", " + form +
                ">(m)";
  std::string text =
      "KILN_KERNEL(" + str(t.decodeThreads) +
      ") NAME_decode(Matmul m) {\n  gemv<" + w + ", " + str(t.decodeRows) +
      ", " + form +
      ">(m);\n}\nKILN_REGISTER_KERNEL(NAME_decode);\nKILN_KERNEL(" +
      str(t.threads) + ") NAME_prefill(Matmul m) {\n  " + prefill +
      ";\n}\nKILN_REGISTER_KERNEL(NAME_prefill);\n";
  std::string kind = isa<SwigluOp>(op) ? "swiglu" : "matmul";
  std::string details =
      "weight " + typeString(weightType) + " as " + packedTypeName(type).str() +
      (normWeight ? ", rms_norm prologue" : "") +
      (residual ? ", residual" : "") + (up ? ", swiglu" : "") +
      ".\n//   Decode (below " + str(t.prefillFrom) + " rows): GEMV, " +
      str(t.decodeColumns) + " columns per block, " + str(t.decodeRows) +
      " rows per pass. Prefill: " + str(t.m) + " x " + str(t.n) +
      " tiles, k steps of " + str(t.k) + ", " + str(t.mr) + " x " + str(t.nr) +
      (type == PackedType::F32 ? " per thread." : " per warp.");
  std::string name = useKernel(kind, text, op, details);

  std::string r = rows(input, op);
  std::string upAddress = up ? weightAddress(up, type) : "nullptr";
  launch(op, "{\n    Matmul m{" + pointer(op->getResult(0), op) + ", " +
                 pointer(input, op) + ", " + weightAddress(weight, type) +
                 ", " + upAddress + ", " +
                 (normWeight ? plainAddress(normWeight) : "nullptr") + ", " +
                 (residual ? pointer(residual, op) : "nullptr") + ", " +
                 floatLiteral(epsilon) + ", int(" + r + "), " + str(n) + ", " +
                 str(k) + "};\n    if (" + r + " < " + str(t.prefillFrom) +
                 ") {\n      KILN_LAUNCH(\"" + name + "_decode\", blocks(" +
                 str(n) + ", " + str(t.decodeColumns) + "), 1, " +
                 str(t.decodeThreads) +
                 ", m);\n    } else {\n      KILN_LAUNCH(\"" + name +
                 "_prefill\", blocks(" + str(n) + ", " + str(t.n) +
                 "), blocks(" + r + ", " + str(t.m) + "), " + str(t.threads) +
                 ", m);\n    }\n  }");
}

void CudaStepEmitter::emitEmbedding(EmbeddingOp op) {
  RankedTensorType table = op.getTable().getType();
  int64_t d = table.getDimSize(1);
  std::string name = useKernel(
      "embedding",
      "KILN_KERNEL(256)\nNAME(float *y, const float *table, const int *ids, "
      "int tokens, int d) {\n  embedding<float>(y, table, ids, tokens, d);\n}"
      "\nKILN_REGISTER_KERNEL(NAME);\n",
      op, "table " + typeString(table));
  std::string r = rows(op.getIds(), op);
  launch(op, "KILN_LAUNCH(\"" + name + "\", blocks(" + r + " * " + str(d) +
                 ", 256), 1, 256, " + pointer(op.getResult(), op) + ", " +
                 plainAddress(op.getTable()) + ", " + pointer(op.getIds(), op) +
                 ", int(" + r + "), int(" + str(d) + "));");
}

void CudaStepEmitter::emitSplit(SplitOp op) {
  RankedTensorType input = op.getInput().getType();
  if (int64_t(op.getAxis()) != input.getRank() - 1)
    unsupported(op, "CUDA splits are along the last axis");
  std::string name = useKernel(
      "split",
      "KILN_KERNEL(256)\nNAME(float *y, const float *x, int rows, int cols, "
      "int stride, int first) {\n  copy_columns(y, x, rows, cols, stride, "
      "first);\n}\nKILN_REGISTER_KERNEL(NAME);\n",
      op, "input " + typeString(input));
  std::string r = rows(op.getInput(), op);
  int64_t stride = input.getDimSize(input.getRank() - 1), first = 0;
  for (Value result : op.getResults()) {
    int64_t cols = cast<RankedTensorType>(result.getType())
                       .getDimSize(input.getRank() - 1);
    launch(op, "KILN_LAUNCH(\"" + name + "\", blocks(" + r + " * " + str(cols) +
                   ", 256), 1, 256, " + pointer(result, op) +
                   ", (const float *)" + pointer(op.getInput(), op) + ", int(" +
                   r + "), " + str(cols) + ", " + str(stride) + ", " +
                   str(first) + ");");
    first += cols;
  }
}

void CudaStepEmitter::emitRope(RopeOp op) {
  RankedTensorType input = op.getInput().getType();
  int64_t heads = input.getDimSize(1), d = input.getDimSize(2);
  std::string freqs;
  for (int64_t i = 0; i < d / 2; ++i)
    freqs +=
        (i ? ", " : "") + floatLiteral(ropeInverseFrequency<float>(op, i, d));
  bool adjacent = op.getLayout() == RopeLayout::Adjacent;
  std::string name = useKernel(
      "rope",
      "// The interpreter's inverse frequencies, in float "
      "(ir/RopeFrequency.h).\nKILN_CONSTANT float NAME_inv_freq[" +
          str(d / 2) + "] = {" + freqs +
          "};\nKILN_KERNEL(256)\nNAME(float *y, const float *x, const int "
          "*positions, int rows) {\n  rope<" +
          (adjacent ? "true" : "false") +
          ">(y, x, positions, NAME_inv_freq, "
          "rows, " +
          str(heads) + ", " + str(d) + ");\n}\nKILN_REGISTER_KERNEL(NAME);\n",
      op, "input " + typeString(input));
  std::string r = rows(op.getInput(), op);
  launch(op, "KILN_LAUNCH(\"" + name + "\", blocks(" + r + " * " +
                 str(heads * d / 2) + ", 256), 1, 256, " +
                 pointer(op.getResult(), op) + ", (const float *)" +
                 pointer(op.getInput(), op) + ", " +
                 pointer(op.getPositions(), op) + ", int(" + r + "));");
}

void CudaStepEmitter::emitKVAppend(KVAppendOp op) {
  auto cache = cast<KVCacheType>(op.getCache().getType());
  int64_t kvDim = cache.getNumKvHeads() * cache.getHeadDim();
  std::string e = elementName(options.cacheType);
  std::string name = useKernel(
      "kv_append",
      "KILN_KERNEL(256)\nNAME(KvCache c, int layer, const float *k, const "
      "float *v, const int *positions, const int *seqIds, int tokens, int "
      "kvDim, int headDim) {\n  kv_append<" +
          e +
          ">(c, layer, k, v, positions, seqIds, tokens, kvDim, headDim);\n}\n"
          "KILN_REGISTER_KERNEL(NAME);\n",
      op, "cache " + typeString(cache) + " as " + e);
  std::string r = rows(op.getKeys(), op);
  launch(op, "KILN_LAUNCH(\"" + name + "\", blocks(" + r + " * " + str(kvDim) +
                 ", 256), 1, 256, cache, int(" + str(op.getLayer()) +
                 "), (const float *)" + pointer(op.getKeys(), op) +
                 ", (const float *)" + pointer(op.getValues(), op) + ", " +
                 pointer(op.getPositions(), op) + ", " +
                 pointer(op.getSeqIds(), op) + ", int(" + r + "), int(" +
                 str(kvDim) + "), int(" + str(cache.getHeadDim()) + "));");
}

void CudaStepEmitter::emitAttention(AttentionOp op) {
  auto cache = cast<KVCacheType>(op.getCache().getType());
  RankedTensorType query = op.getQuery().getType();
  int64_t heads = query.getDimSize(1), d = cache.getHeadDim();
  std::string e = elementName(options.cacheType);
  std::string name = useKernel(
      "attention",
      "KILN_KERNEL(128)\nNAME(float *out, float *partials, const float *q, "
      "KvCache c, const int *positions, const int *seqIds, AttentionShape "
      "s) {\n  attention<" +
          e + ", " + str(d) +
          ", 4>(out, partials, q, c, positions, seqIds, s);\n}\n"
          "KILN_REGISTER_KERNEL(NAME);\n",
      op, "query " + typeString(query) + ", cache as " + e);
  std::string r = rows(op.getQuery(), op);
  int64_t window = op.getWindow() ? int64_t(*op.getWindow()) : 0;
  std::string out = pointer(op.getResult(), op);
  std::string arguments = ", (const float *)" + pointer(op.getQuery(), op) +
                          ", cache, " + pointer(op.getPositions(), op) + ", " +
                          pointer(op.getSeqIds(), op) +
                          ", AttentionShape{int(" + r + "), " + str(heads) +
                          ", " + str(cache.getNumKvHeads()) + ", " +
                          str(op.getLayer()) + ", " + str(window) + ", " +
                          floatLiteral(op.getScale().convertToDouble()) + "});";
  std::string oneSplit = "KILN_LAUNCH(\"" + name + "\", blocks(" + r + " * " +
                         str(heads) + ", 4), 1, 128, " + out +
                         ", (float *)nullptr" + arguments;
  // Steps below the tiles' prefill_from split each token's positions in
  // chunks of the decode kv (passes/TileOps.cpp), as many as the context
  // needs, their partial results in the scratch after the memory plan.
  std::optional<int64_t> from = getPrefillFrom(op);
  std::optional<int64_t> kv = getTileSize(op, "decode", "kv");
  if (!from || !kv)
    unsupported(op, "no kiln.tiles (run --kiln-pipeline before code "
                    "generation)");
  auto func = op->getParentOfType<func::FuncOp>();
  auto context = func ? func->getAttrOfType<IntegerAttr>(
                            KilnDialect::kContextLengthAttrName)
                      : IntegerAttr();
  int64_t splits = context ? (context.getInt() + *kv - 1) / *kv : 1;
  if (splits <= 1 || *from <= 1) {
    launch(op, oneSplit);
    return;
  }
  scratchBytes = std::max(scratchBytes, splits * (*from - 1) * heads * (d + 2) *
                                            int64_t(sizeof(float)));
  std::string partials = "(float *)(a->arena + " + str(scratchOffset) + ")";
  std::string combine = useKernel(
      "attention_combine",
      "KILN_KERNEL(256)\nNAME(float *out, const float *partials, int items, "
      "int splits) {\n  attention_combine<" +
          str(d) +
          ">(out, partials, items, splits);\n}\n"
          "KILN_REGISTER_KERNEL(NAME);\n",
      op, "merges the splits of attention, head_dim " + str(d));
  launch(op, "if (" + r + " < " + str(*from) + ") {\n    KILN_LAUNCH(\"" +
                 name + "\", blocks(" + r + " * " + str(heads) + ", 4), " +
                 str(splits) + ", 128, " + out + ", " + partials + arguments +
                 "\n    KILN_LAUNCH(\"" + combine + "\", blocks(" + r + " * " +
                 str(heads * d) + ", 256), 1, 256, " + out +
                 ", (const float *)" + partials + ", int(" + r + " * " +
                 str(heads) + "), " + str(splits) + ");\n  } else {\n    " +
                 oneSplit + "\n  }");
}

void CudaStepEmitter::emitGatherRows(GatherRowsOp op) {
  int64_t d = width(op.getInput());
  std::string name = useKernel(
      "gather_rows",
      "KILN_KERNEL(256)\nNAME(float *y, const float *x, const int *rowIds, "
      "int count, int d) {\n  gather_rows(y, x, rowIds, count, d);\n}\n"
      "KILN_REGISTER_KERNEL(NAME);\n",
      op, "input " + typeString(op.getInput().getType()));
  std::string r = rows(op.getRows(), op);
  launch(op, "KILN_LAUNCH(\"" + name + "\", blocks(" + r + " * " + str(d) +
                 ", 256), 1, 256, " + pointer(op.getResult(), op) +
                 ", (const float *)" + pointer(op.getInput(), op) + ", " +
                 pointer(op.getRows(), op) + ", int(" + r + "), int(" + str(d) +
                 "));");
}

void CudaStepEmitter::emitRmsNorm(RmsNormOp op) {
  int64_t d = width(op.getInput());
  std::string name = useKernel(
      "rms_norm",
      "KILN_KERNEL(256)\nNAME(float *y, const float *x, const float *g, int "
      "d, float eps) {\n  rms_norm<256>(y, x, g, d, eps);\n}\n"
      "KILN_REGISTER_KERNEL(NAME);\n",
      op, "input " + typeString(op.getInput().getType()));
  std::string r = rows(op.getInput(), op);
  launch(op, "KILN_LAUNCH(\"" + name + "\", blocks(" + r + ", 1), 1, 256, " +
                 pointer(op.getResult(), op) + ", (const float *)" +
                 pointer(op.getInput(), op) + ", " +
                 plainAddress(op.getWeight()) + ", int(" + str(d) + "), " +
                 floatLiteral(op.getEpsilon().convertToDouble()) + ");");
}

void CudaStepEmitter::emitAdd(AddOp op) {
  Value lhs = op->getOperand(0), rhs = op->getOperand(1);
  if (lhs.getType() != rhs.getType())
    unsupported(op, "CUDA adds take operands of one shape (no broadcast)");
  std::string name = useKernel(
      "add",
      "KILN_KERNEL(256)\nNAME(float *y, const float *a, const float *b, i64 "
      "n) {\n  add(y, a, b, n);\n}\nKILN_REGISTER_KERNEL(NAME);\n",
      op, "operands " + typeString(lhs.getType()));
  std::string n = rows(lhs, op) + " * " + str(width(lhs));
  launch(op, "KILN_LAUNCH(\"" + name + "\", blocks(" + n + ", 256), 1, 256, " +
                 pointer(op->getResult(0), op) + ", (const float *)" +
                 pointer(lhs, op) + ", (const float *)" + pointer(rhs, op) +
                 ", i64(" + n + "));");
}

void CudaStepEmitter::emitOp(Operation *op) {
  llvm::TypeSwitch<Operation *>(op)
      .Case<WeightOp, ReshapeOp, func::ReturnOp>([](Operation *) {})
      .Case([&](ConcatOp concat) {
        for (Value input : concat.getInputs())
          if (!input.getDefiningOp<WeightOp>() &&
              !input.getDefiningOp<ConcatOp>())
            unsupported(op, "only concatenations of weights are supported");
      })
      .Case<MatmulOp, FusedMatmulOp, SwigluOp>(
          [&](Operation *gemm) { emitGemm(gemm); })
      .Case([&](EmbeddingOp o) { emitEmbedding(o); })
      .Case([&](SplitOp o) { emitSplit(o); })
      .Case([&](RopeOp o) { emitRope(o); })
      .Case([&](KVAppendOp o) { emitKVAppend(o); })
      .Case([&](AttentionOp o) { emitAttention(o); })
      .Case([&](GatherRowsOp o) { emitGatherRows(o); })
      .Case([&](RmsNormOp o) { emitRmsNorm(o); })
      .Case([&](AddOp o) { emitAdd(o); })
      .Default([&](Operation *other) {
        unsupported(other, "no CUDA kernel for this op yet (the CUDA "
                           "backend compiles Llama-style steps: embedding, "
                           "fused matmuls, swiglu, rope, the paged KV cache "
                           "and attention)");
      });
}

/// `text` with every NAME replaced by `name`.
std::string instantiate(std::string text, const std::string &name) {
  for (size_t at = text.find("NAME"); at != std::string::npos;
       at = text.find("NAME", at + name.size()))
    text.replace(at, 4, name);
  return text;
}

EmittedStep CudaStepEmitter::emit(func::FuncOp step, WeightPacker &packer,
                                  const EmitOptions &options) {
  this->packer = &packer;
  this->options = options;
  if (!target.isCuda())
    throw std::runtime_error("codegen/cuda: target " + target.name +
                             " is not a CUDA GPU");
  if (elementName(options.cacheType).empty())
    throw std::runtime_error("codegen/cuda: the KV cache stores f32, f16 or "
                             "bf16");
  MemoryPlanAttr plan = getMemoryPlan(step);
  if (!plan)
    throw std::runtime_error("codegen: the step function has no memory plan "
                             "(run --kiln-pipeline before code generation)");
  int64_t maxTokens = plan.getMaxTokens();
  scratchOffset = (plan.getArenaBytes() + 255) / 256 * 256;

  Block &body = step.getBody().front();
  static const char *arguments[] = {"a->token_ids", "a->positions",
                                    "a->seq_ids", "a->logit_rows"};
  static const char *counts[] = {"tokens", "tokens", "tokens", "rows"};
  for (unsigned i = 0; i < 4; ++i) {
    pointers[body.getArgument(i)] = arguments[i];
    rowExprs[body.getArgument(i)] = counts[i];
  }
  logits = body.getTerminator()->getOperand(0);
  for (Operation &op : body.getOperations()) {
    bindResults(&op);
    emitOp(&op);
  }

  std::string spec = target.spec();
  std::string kernelsText =
      "// kernels.cu - the CUDA kernels of this step, generated by Kiln for "
      "target " +
      spec +
      ".\n//\n// Each kernel instantiates Kiln's CUDA kernel library "
      "(Gemv.cuh, GemmMma.cuh, ...:\n// the headers beside this file) for "
      "the ops named above it. NVRTC compiles\n// this file to PTX and a "
      "cubin; the host compiler compiles it for the block\n// emulator "
      "(DeviceHost.h), which runs the same kernels on the CPU.\n\n"
      "#include \"Attention.cuh\"\n#include \"Elementwise.cuh\"\n"
      "#include \"Gemm.cuh\"\n#include \"GemmMma.cuh\"\n#include "
      "\"Gemv.cuh\"\n#include \"KVCache.cuh\"\n#include \"Norms.cuh\"\n"
      "#include \"Rope.cuh\"\n\nusing namespace kiln::cuda;\n";
  EmittedStep emitted;
  for (const Kernel &kernel : kernels) {
    kernelsText += "\n// " + kernel.name + ": " + kernel.details + "\n";
    for (const std::string &use : kernel.uses)
      kernelsText += "//   - " + use + "\n";
    kernelsText += instantiate(kernel.text, kernel.name);
    emitted.kernelSummaries.push_back(
        kernel.name + ": " + str(int64_t(kernel.uses.size())) + " op(s)");
  }
  emitted.kernels.push_back({"kernels.cu", kernelsText});
  // The same kernels for the host, with the emulator's launcher.
  emitted.kernels.push_back(
      {"kernels_host.cpp",
       "// kernels_host.cpp - kernels.cu compiled for the host: the block\n"
       "// emulator's form of this step's kernels (runtime/CudaStepABI.h,\n"
       "// kiln_cuda_emulated_launch), generated by Kiln.\n\n"
       "#include \"kernels.cu\"\n\n#include \"CudaStepABI.h\"\n\n"
       "#include <string>\n\nnamespace {\nstd::string lastError;\n}\n\n"
       "extern \"C\" int32_t kiln_cuda_emulated_launch(void *, const char "
       "*kernel,\n    const uint32_t grid[3], uint32_t threads, void "
       "**params,\n    const size_t *sizes, int32_t count) {\n  try {\n"
       "    kiln::cuda::host::launchByName(\n        kernel, {int(grid[0]), "
       "int(grid[1]), int(grid[2])}, int(threads),\n        params, "
       "std::vector<size_t>(sizes, sizes + count));\n    return 0;\n  } "
       "catch (const std::exception &e) {\n    lastError = e.what();\n    "
       "return 3;\n  }\n}\n\nextern \"C\" const char "
       "*kiln_cuda_emulated_error(void) {\n  return lastError.c_str();\n}\n"});

  emitted.step = {
      "step.cpp",
      "// step.cpp - the CUDA step's launches, generated by Kiln for target " +
          spec + ".\n//\n// " + str(launchCount) +
          " launches in program order; arena offsets from the memory plan "
          "(max " +
          str(maxTokens) + " tokens, " + str(plan.getArenaBytes()) +
          " bytes; attention's split scratch " + str(scratchBytes) +
          " bytes at " + str(scratchOffset) +
          "), weight\n// offsets from the packer. Every address is the "
          "device's (runtime/CudaStepABI.h).\n\n"
          "#include \"CudaStepABI.h\"\n\n#include \"Attention.cuh\"\n"
          "#include \"Matmul.cuh\"\n\nusing namespace kiln::cuda;\n\n"
          "namespace {\n\n/// Launches `kernel` with `args`, the kernel's "
          "parameters in its types.\ntemplate <class... A>\nint32_t "
          "launch(const kiln_cuda_step_args *a, const char *kernel, "
          "uint32_t gx,\n               uint32_t gy, uint32_t threads, A... "
          "args) {\n  void *params[] = {&args...};\n  const size_t sizes[] = "
          "{sizeof(A)...};\n  const uint32_t grid[3] = {gx, gy, 1};\n  "
          "return a->launch(a->launcher, kernel, grid, threads, params, "
          "sizes,\n                   int32_t(sizeof...(A)));\n}\n\n"
          "uint32_t blocks(int64_t n, int64_t per) {\n  return uint32_t((n + "
          "per - 1) / per);\n}\n\n} // namespace\n\n"
          "#define KILN_LAUNCH(...)                                          "
          "     \\\n  if (int32_t status = launch(a, __VA_ARGS__))          "
          "            \\\n  return status\n\n"
          "extern \"C\" int32_t kiln_step_abi_version(void) {\n  return "
          "KILN_STEP_ABI_VERSION;\n}\n\n"
          "// A CUDA step does not run on the CPU: kiln_cuda_step does.\n"
          "extern \"C\" int32_t kiln_step(const kiln_step_args *) { return 2; "
          "}\n\n"
          "extern \"C\" int32_t kiln_cuda_step(const kiln_cuda_step_args *a) "
          "{\n  if (a->tokens < 1 || a->tokens > " +
          str(maxTokens) +
          " || a->rows < 0 || a->rows > a->tokens)\n    return 1;\n"
          "  const int64_t tokens = a->tokens, rows = a->rows;\n  (void)rows;\n"
          "  const KvCache cache = *reinterpret_cast<const KvCache "
          "*>(a->cache);\n" +
          launches + "  return 0;\n}\n"};
  for (const codegen::cuda::CudaLibraryFile &file :
       codegen::cuda::cudaKernelLibrary())
    emitted.headers.push_back({file.name, file.text});
  emitted.headers.push_back(
      {"CudaStepABI.h", codegen::cuda::cudaStepAbiText()});
  emitted.arenaBytes =
      scratchBytes ? scratchOffset + scratchBytes : plan.getArenaBytes();
  emitted.maxTokens = maxTokens;
  return emitted;
}

} // namespace

std::unique_ptr<StepEmitter>
createCudaStepEmitter(const target::TargetDescription &target) {
  return std::make_unique<CudaStepEmitter>(target);
}

} // namespace kiln::codegen
