//===- TileOps.cpp - Choose tile sizes for compute ops --------------------===//
//
// Part of Kiln. See the pass description in Passes.td and
// docs/passes/tiling.md.
//
// Every choice is integer arithmetic on the target description and static
// shapes, so the same IR and target always give the same tiles.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/TuningFile.h"
#include "passes/target/TargetDescription.h"

#include "ir/KilnAttrs.h"
#include "ir/KilnDialect.h"
#include "ir/KilnOps.h"
#include "ir/Tiling.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/ManagedStatic.h"

namespace kiln {
#define GEN_PASS_DEF_TILEOPS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

//===----------------------------------------------------------------------===//
// Arithmetic
//===----------------------------------------------------------------------===//

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t roundUp(int64_t a, int64_t b) { return ceilDiv(a, b) * b; }
/// The largest multiple of `b` not above `a`, but at least `b`.
int64_t roundDownAtLeast(int64_t a, int64_t b) {
  return std::max(b, a / b * b);
}

/// Bytes of `count` weights of element type `type`, rounded up (a
/// block-quantized weight costs its block's bytes over its block size).
int64_t weightBytes(Type type, int64_t count) {
  if (auto quant = dyn_cast<BlockQuantizedTypeInterface>(type))
    return ceilDiv(count * quant.getBlockBytes(), quant.getBlockSize());
  return count * ceilDiv(type.getIntOrFloatBitWidth(), 8);
}

/// K blocks of block-quantized weights hold whole blocks.
int64_t reductionAlignment(Type type, int64_t vectorFloats) {
  if (auto quant = dyn_cast<BlockQuantizedTypeInterface>(type))
    return std::max<int64_t>(quant.getBlockSize(), vectorFloats);
  return vectorFloats;
}

//===----------------------------------------------------------------------===//
// One phase's tiles
//===----------------------------------------------------------------------===//

/// Tile sizes and loop structure of one phase, before they become an
/// attribute.
struct Tiles {
  llvm::SmallVector<std::pair<std::string, int64_t>> sizes;

  int64_t get(StringRef name) const {
    for (auto &[key, size] : sizes)
      if (key == name)
        return size;
    return 0;
  }

  void set(StringRef name, int64_t value) {
    for (auto &[key, size] : sizes)
      if (key == name) {
        size = value;
        return;
      }
    sizes.push_back({name.str(), value});
  }
};

/// Whether tile `name` of a `kind` op is one size for both phases (the
/// tiles' verifiers check): what splits a row's reduction, so a token's
/// results do not depend on its batch (GEMM k, attention kv), and a GEMM's
/// nr, the packed panel width both phases read.
static bool sharedByPhases(StringRef kind, StringRef name) {
  return (kind == "gemm" && (name == "k" || name == "nr")) ||
         (kind == "attention" && name == "kv");
}

/// An op's choice: its kind, both phases and where prefill starts.
struct TileChoice {
  StringRef kind; // gemm, attention, rows
  Tiles decode, prefill;
  int64_t prefillFrom = 2;
};

//===----------------------------------------------------------------------===//
// CPU choices
//===----------------------------------------------------------------------===//

/// Architectural vector registers: 16 xmm/ymm below AVX-512 (and for
/// portable code, which may run on SSE2), 32 zmm with AVX-512.
unsigned vectorRegisters(const target::CpuTarget &cpu) {
  return cpu.isa == target::CpuIsa::AVX512 ? 32 : 16;
}

/// The register block mr x nr of a GEMM micro-kernel that streams `panels`
/// packed weight panels (2 for swiglu's gate and up). Per reduction step it
/// loads panels·u weight vectors (nr = u·V) and broadcasts mr inputs, and
/// issues mr·panels·u FMAs into as many accumulators; everything must fit
/// the vector registers with one to spare for the broadcast. Of the blocks
/// that fit, the one with the most FMAs per load wins (ties: wider nr, then
/// taller mr). AVX2 gets the classic 6x16, AVX-512 6x64.
std::pair<int64_t, int64_t> chooseRegisterBlock(const target::CpuTarget &cpu,
                                                int64_t panels) {
  int64_t regs = vectorRegisters(cpu), v = cpu.vectorFloats();
  int64_t bestMr = 1, bestU = 1, bestFma = 0, bestLoads = 1;
  for (int64_t u : {1, 2, 4})
    for (int64_t mr = 1; mr <= 16; ++mr) {
      int64_t fmas = mr * panels * u, loads = panels * u + mr;
      if (fmas + panels * u + 1 > regs)
        continue;
      // fmas/loads > bestFma/bestLoads, or equal and wider/taller.
      int64_t lhs = fmas * bestLoads, rhs = bestFma * loads;
      if (lhs > rhs || (lhs == rhs && (u > bestU || mr > bestMr))) {
        bestMr = mr;
        bestU = u;
        bestFma = fmas;
        bestLoads = loads;
      }
    }
  return {bestMr, bestU * v};
}

/// GEMM tiles for y[M, N] = x[M, K] · W[N, K]ᵀ over `panels` weights of type
/// `weightType` (Goto/BLIS blocking; docs/passes/tiling.md):
///  - prefill: the register block above; kc so that the panels' kc x nr
///    weights and the mr x kc inputs fill a quarter of L2, K split into
///    equal blocks (the weight panel streams from L2 faster than the FMAs
///    consume it, and a long kc amortizes the read-modify-write of the
///    output tile that every k block but the first pays; bench/NOTES.md v3
///    has the measurement); mc so that the mc x kc input block fills half of
///    L2; nc so that the kc x nc weight block fills half of this core's share
///    of L3, and small enough that every core gets a block. Loops n, k, m
///    (outermost first), threads over n: each core streams its own weights.
///  - decode (T below prefill_from = mr): a GEMV that streams the weights
///    once at memory bandwidth, using the same packed layout (same nr); all
///    its rows in one m block and one register block (m = mr), N split into
///    4 tasks per core for balance, and K blocked as prefill blocks it, so a
///    row's sums do not depend on the batch (batch invariance; its mr x kc
///    inputs stay in L1 or L2 either way). The kernel takes a panel's k
///    blocks one after another, so a task's weights are one run of bytes.
TileChoice chooseGemm(const target::CpuTarget &cpu, int64_t n, int64_t k,
                      Type weightType, int64_t panels, int64_t prefillTokens) {
  auto [mr, nr] = chooseRegisterBlock(cpu, panels);
  int64_t v = cpu.vectorFloats();
  int64_t kAlign = reductionAlignment(weightType, v);
  int64_t cores = std::max<unsigned>(cpu.cores, 1);
  int64_t bytesPerK = panels * weightBytes(weightType, nr) + mr * 4;
  int64_t kcMax = roundDownAtLeast(cpu.l2Bytes / 4 / bytesPerK, kAlign);
  int64_t kc = std::min(k, roundUp(ceilDiv(k, ceilDiv(k, kcMax)), kAlign));
  int64_t mc = std::min(roundDownAtLeast(cpu.l2Bytes / 2 / (kc * 4), mr),
                        roundUp(prefillTokens, mr));
  int64_t l3PerCore = cpu.l3Bytes / cores;
  int64_t nc = roundDownAtLeast(
      l3PerCore / 2 /
          std::max<int64_t>(panels * weightBytes(weightType, kc), 1),
      nr);
  nc = std::min({nc, roundUp(n, nr), roundUp(ceilDiv(n, cores), nr)});

  TileChoice choice;
  choice.kind = "gemm";
  choice.prefillFrom = mr;
  choice.prefill.sizes = {
      {"m", mc}, {"n", nc}, {"k", kc}, {"mr", mr}, {"nr", nr}};

  int64_t nDecode =
      std::min(roundUp(n, nr), roundUp(ceilDiv(n, cores * 4), nr));
  choice.decode.sizes = {
      {"m", mr}, {"n", nDecode}, {"k", kc}, {"mr", mr}, {"nr", nr}};
  return choice;
}

/// Attention tiles (flash-attention style, online softmax): kv cached
/// positions per block so one block of keys and one of values (kv x d each)
/// fill half of L1. Prefill takes q query rows per block: 64 (the
/// generated kernel's limit), at most prefill-tokens. The kernel transposes
/// each key block once per q rows and takes the rows through it in register
/// groups, streaming their queries and outputs from L2, so only the key
/// block must stay in L1 and more rows amortize its transposition
/// (bench/NOTES.md v3 compares it with the L1 rule). Jobs of (q rows, head)
/// on threads, then kv blocks. Decode has q = 1.
TileChoice chooseAttention(const target::CpuTarget &cpu, int64_t headDim,
                           Type kvType, int64_t prefillTokens) {
  int64_t v = cpu.vectorFloats();
  int64_t kv = roundDownAtLeast(
      cpu.l1dBytes / 2 / (2 * weightBytes(kvType, headDim)), v);
  int64_t q = std::clamp<int64_t>(prefillTokens, 1, 64);
  TileChoice choice;
  choice.kind = "attention";
  choice.prefillFrom = 2;
  choice.prefill.sizes = {{"q", q}, {"kv", kv}};
  choice.decode.sizes = {{"q", 1}, {"kv", kv}};
  return choice;
}

/// Row-wise ops (norms): rows per task so a task's inputs fill half of L1,
/// but no more than an even share of the prefill rows per core.
TileChoice chooseRows(const target::CpuTarget &cpu, int64_t width,
                      int64_t prefillTokens) {
  int64_t cores = std::max<unsigned>(cpu.cores, 1);
  int64_t rows = std::clamp<int64_t>(cpu.l1dBytes / 2 / (width * 4), 1,
                                     ceilDiv(prefillTokens, cores));
  TileChoice choice;
  choice.kind = "rows";
  choice.prefillFrom = 2;
  choice.prefill.sizes = {{"rows", rows}};
  choice.decode.sizes = {{"rows", 1}};
  return choice;
}

//===----------------------------------------------------------------------===//
// CUDA choices
//===----------------------------------------------------------------------===//

/// Whether GEMMs with `weightType` weights run on the tensor cores (mma with
/// 16-bit operands, GemmMma.cuh) rather than the CUDA cores in f32
/// (Gemm.cuh).
bool usesTensorCores(Type weightType) {
  return weightType.isF16() || weightType.isBF16();
}

/// CUDA GEMM tiles for y[M, N] = x[M, K] · W[N, K]ᵀ over `panels` weights
/// (codegen/cuda/kernels/, docs/passes/tiling.md):
///  - prefill on the tensor cores (f16/bf16 weights): a block computes
///    m x n of y, each warp mr x nr of it as mma.m16n8k16 tiles with f32
///    accumulators: panels·mr·nr/32 registers per thread, held to 64 (mr
///    halves for swiglu's two weights) so a 256-thread block keeps two
///    blocks per SM under __launch_bounds__ without spilling. k steps of 32
///    or 64 16-bit elements are staged in shared memory, rows padded by 8
///    elements (conflict-free fragment loads for both).
///  - prefill on the CUDA cores (f32): each thread computes an mr x nr
///    micro-tile, 256 threads a block, k steps of 16 floats. 8 x 8
///    micro-tiles spill on sm_80 under the launch bounds, so 32
///    accumulators at most: 128 x 64 or 64 x 64 blocks.
///  - m x n is the largest candidate (tensor cores: 128 x 128, 128 x 64,
///    64 x 128, 64 x 64; n halved for swiglu) whose blocks over
///    prefill_tokens rows cover every SM at least once; when none does, the
///    smallest (the most blocks).
///    Larger tiles read each staged element more times; a GPU with idle SMs
///    reads nothing.
///  - decode (fewer rows than prefill_from = 16, one mma tile's height): the
///    GEMV of Gemv.cuh, a warp per output column streaming its weight row
///    once for groups of m = 4 rows, n = 4 warps (columns) per block;
///    mr = 1, and nr is prefill's (one packed layout; the weights are
///    row-major whatever nr is).
/// Every tile size computes a row's sums in the same order (k in order, in
/// steps of 16 on the tensor cores), so m and n never change a result.
TileChoice chooseGemmCuda(const target::CudaTarget &gpu, int64_t n, int64_t k,
                          Type weightType, int64_t panels,
                          int64_t prefillTokens) {
  bool mma = usesTensorCores(weightType);
  int64_t sms = std::max<int64_t>(gpu.smCount, 1);
  int64_t bm = 64, bn = 64 / panels;
  using Tile = std::pair<int64_t, int64_t>;
  const Tile mmaTiles[] = {{128, 128}, {128, 64}, {64, 128}, {64, 64}};
  const Tile simtTiles[] = {{128, 64}, {64, 64}};
  for (auto [m, nb] :
       mma ? llvm::ArrayRef<Tile>(mmaTiles) : llvm::ArrayRef<Tile>(simtTiles)) {
    nb /= panels;
    if (ceilDiv(prefillTokens, m) * ceilDiv(n, nb) >= sms) {
      bm = m;
      bn = nb;
      break;
    }
  }
  int64_t kc, mr, nr;
  if (mma) {
    // Warp tiles of 64 x 32 (32 x 32 for swiglu); a 64-row block's warps
    // take 32 rows each, so it still has two rows of warps.
    nr = 32;
    mr = std::min<int64_t>(bm / 2, 64 / panels);
    kc = k >= 64 ? 64 : 32;
  } else {
    // 256 threads as a 16 x 16 grid of micro-tiles.
    mr = bm / 16;
    nr = bn / 16;
    kc = 16;
  }
  TileChoice choice;
  choice.kind = "gemm";
  choice.prefillFrom = 16;
  choice.prefill.sizes = {
      {"m", bm}, {"n", bn}, {"k", kc}, {"mr", mr}, {"nr", nr}};
  // nr as prefill's: the attribute's rule for one packed layout (the GEMV
  // reads whole rows and ignores it).
  choice.decode.sizes = {{"m", 4}, {"n", 4}, {"k", kc}, {"mr", 1}, {"nr", nr}};
  return choice;
}

/// CUDA attention (Attention.cuh): a warp per (token, query head), q = 1 in
/// both phases. Steps of fewer than prefill_from = 8 tokens (decode) have
/// too few warps to fill the GPU, so they split each token's positions
/// into chunks of kv positions, merged by attention_combine: kv is chosen
/// so that one token's heads times splits make 8 warps per SM over the
/// whole context, and at least 64 positions, whose reads outweigh the
/// split's partial result. Larger steps run one split per token.
TileChoice chooseAttentionCuda(const target::CudaTarget &gpu, int64_t heads,
                               int64_t context) {
  int64_t splits = ceilDiv(8 * std::max<int64_t>(gpu.smCount, 1),
                           std::max<int64_t>(heads, 1));
  int64_t kv = std::max<int64_t>(64, roundUp(ceilDiv(context, splits), 32));
  TileChoice choice;
  choice.kind = "attention";
  choice.prefillFrom = 8;
  choice.prefill.sizes = {{"q", 1}, {"kv", kv}};
  choice.decode.sizes = {{"q", 1}, {"kv", kv}};
  return choice;
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

/// `tiles` as its kind's typed attribute, or null after an error at `op`
/// (a size the attribute's verifier rejects, e.g. from a tuning file).
Attribute tilesAttr(Operation *op, const TileChoice &tiles, StringRef source) {
  MLIRContext *ctx = op->getContext();
  auto emitError = [&]() { return op->emitError() << "kiln-tile: "; };
  auto get = [](const Tiles &t, StringRef name) { return t.get(name); };
  if (tiles.kind == "gemm") {
    auto phase = [&](const Tiles &t) {
      return GemmPhaseAttr::getChecked(emitError, ctx, get(t, "m"), get(t, "n"),
                                       get(t, "k"), get(t, "mr"), get(t, "nr"));
    };
    GemmPhaseAttr decode = phase(tiles.decode), prefill = phase(tiles.prefill);
    if (!decode || !prefill)
      return {};
    return GemmTilesAttr::getChecked(emitError, ctx, decode, prefill,
                                     tiles.prefillFrom, source);
  }
  if (tiles.kind == "attention") {
    auto phase = [&](const Tiles &t) {
      return AttentionPhaseAttr::getChecked(emitError, ctx, get(t, "q"),
                                            get(t, "kv"));
    };
    AttentionPhaseAttr decode = phase(tiles.decode),
                       prefill = phase(tiles.prefill);
    if (!decode || !prefill)
      return {};
    return AttentionTilesAttr::getChecked(emitError, ctx, decode, prefill,
                                          tiles.prefillFrom, source);
  }
  auto phase = [&](const Tiles &t) {
    return RowsPhaseAttr::getChecked(emitError, ctx, get(t, "rows"));
  };
  RowsPhaseAttr decode = phase(tiles.decode), prefill = phase(tiles.prefill);
  if (!decode || !prefill)
    return {};
  return RowsTilesAttr::getChecked(emitError, ctx, decode, prefill,
                                   tiles.prefillFrom, source);
}

/// What the tuning file matches an op on.
struct OpKey {
  StringRef kind; // matmul, swiglu, attention, norm
  llvm::StringMap<int64_t> shape;
};

llvm::cl::opt<std::string> *tuningFileFlag = nullptr;

struct TileOpsPass : kiln::impl::TileOpsBase<TileOpsPass> {
  using TileOpsBase::TileOpsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::Expected<target::TargetDescription> target =
        target::parseTarget(targetSpec);
    if (!target) {
      module.emitError() << "kiln-tile: " << llvm::toString(target.takeError());
      return signalPassFailure();
    }
    std::string tuningPath = tuningFile;
    if (tuningPath.empty() && tuningFileFlag)
      tuningPath = *tuningFileFlag;
    SmallVector<TuningEntry> tuning;
    if (!tuningPath.empty()) {
      auto entries = loadTuningFile(tuningPath);
      if (!entries) {
        module.emitError() << "kiln-tile: "
                           << llvm::toString(entries.takeError());
        return signalPassFailure();
      }
      tuning = std::move(*entries);
    }

    Builder b(&getContext());
    if (weightType == "f32")
      packedWeightType = b.getF32Type();
    else if (weightType == "f16")
      packedWeightType = b.getF16Type();
    else if (weightType == "bf16")
      packedWeightType = b.getBF16Type();
    else if (!weightType.empty()) {
      module.emitError() << "kiln-tile: weight-type must be f32, f16 or bf16 "
                            "(or empty: each weight's own type), not '"
                         << weightType << "'";
      return signalPassFailure();
    }
    module->setAttr(kTargetAttrName, b.getStringAttr(target->spec()));
    bool ok = true;
    module.walk([&](Operation *op) {
      std::optional<std::pair<OpKey, TileChoice>> choice = choose(op, *target);
      if (!choice)
        return;
      OpKey &key = choice->first;
      TileChoice &tiles = choice->second;
      std::string source = "target " + target->name;
      for (const TuningEntry &entry : tuning) {
        if (entry.kind != key.kind ||
            !llvm::all_of(entry.shape, [&](const auto &want) {
              auto it = key.shape.find(want.getKey());
              return it != key.shape.end() && it->second == want.getValue();
            }))
          continue;
        Tiles &phase = entry.phase == "decode" ? tiles.decode : tiles.prefill;
        for (auto &[name, size] : entry.sizes) {
          phase.set(name, size);
          // One size for both phases (batch invariance, one packed
          // layout): a tuning line that sets it sets both.
          if (sharedByPhases(tiles.kind, name))
            (&phase == &tiles.decode ? tiles.prefill : tiles.decode)
                .set(name, size);
        }
        source += "; tuning file " + entry.location;
      }
      // A CPU GEMM switches to its prefill tiles once a full register block
      // of rows is there (below that the streaming GEMV wins). A CUDA GEMM's
      // switch is its rule's (one mma tile's height).
      if (tiles.kind == "gemm" && target->isCpu())
        tiles.prefillFrom = tiles.prefill.get("mr");
      // Compiled attention loads key positions in vectors (kernels/
      // Attention.h), so a tuned kv must stay whole vectors.
      if (tiles.kind == "attention" && target->isCpu() &&
          tiles.prefill.get("kv") % target->cpu().vectorFloats() != 0) {
        op->emitOpError() << "attention kv tile " << tiles.prefill.get("kv")
                          << " (" << source
                          << ") must be a multiple of the target's "
                          << target->cpu().vectorFloats()
                          << "-float vectors: key positions load in vectors";
        ok = false;
        return;
      }
      Attribute attr = tilesAttr(op, tiles, source);
      if (!attr) {
        ok = false;
        return;
      }
      op->setAttr(kTilesAttrName, attr);
    });
    if (!ok)
      signalPassFailure();
  }

  /// What every GEMM weight is packed as (weight-type), or null: each
  /// weight's own element type.
  Type packedWeightType;

  /// The choice for `op`, if it is a compute op with the static shapes
  /// tiling needs.
  std::optional<std::pair<OpKey, TileChoice>>
  choose(Operation *op, const target::TargetDescription &target) {
    auto gemm =
        [&](StringRef kind, Value weight,
            int64_t panels) -> std::optional<std::pair<OpKey, TileChoice>> {
      auto type = cast<RankedTensorType>(weight.getType());
      int64_t n = type.getDimSize(0), k = type.getDimSize(1);
      OpKey key{kind, {}};
      key.shape["n"] = n;
      key.shape["k"] = k;
      Type stored = packedWeightType ? packedWeightType : type.getElementType();
      TileChoice choice =
          target.isCpu()
              ? chooseGemm(target.cpu(), n, k, stored, panels, prefillTokens)
              : chooseGemmCuda(target.cuda(), n, k, stored, panels,
                               prefillTokens);
      return std::make_pair(std::move(key), std::move(choice));
    };
    return llvm::TypeSwitch<Operation *,
                            std::optional<std::pair<OpKey, TileChoice>>>(op)
        .Case([&](MatmulOp o) { return gemm("matmul", o.getWeight(), 1); })
        .Case([&](FusedMatmulOp o) { return gemm("matmul", o.getWeight(), 1); })
        .Case([&](SwigluOp o) { return gemm("swiglu", o.getGate(), 2); })
        .Case(
            [&](AttentionOp o) -> std::optional<std::pair<OpKey, TileChoice>> {
              auto cache = cast<KVCacheType>(o.getCache().getType());
              auto query = o.getQuery().getType();
              OpKey key{"attention", {}};
              key.shape["heads"] = query.getDimSize(1);
              key.shape["kv_heads"] = cache.getNumKvHeads();
              key.shape["head_dim"] = cache.getHeadDim();
              auto func = o->getParentOfType<func::FuncOp>();
              auto context = func ? func->getAttrOfType<IntegerAttr>(
                                        KilnDialect::kContextLengthAttrName)
                                  : IntegerAttr();
              if (target.isCuda())
                return std::make_pair(
                    std::move(key),
                    chooseAttentionCuda(target.cuda(), query.getDimSize(1),
                                        context ? context.getInt()
                                                : prefillTokens));
              const target::CpuTarget &cpu = target.cpu();
              TileChoice choice =
                  chooseAttention(cpu, cache.getHeadDim(),
                                  cache.getElementType(), prefillTokens);
              // No block longer than the context the model declares.
              if (context) {
                int64_t cap = roundUp(context.getInt(), cpu.vectorFloats());
                for (Tiles *t : {&choice.decode, &choice.prefill})
                  t->set("kv", std::min(t->get("kv"), cap));
              }
              return std::make_pair(std::move(key), std::move(choice));
            })
        .Case<RmsNormOp, LayerNormOp>(
            [&](auto o) -> std::optional<std::pair<OpKey, TileChoice>> {
              int64_t d = o.getInput().getType().getShape().back();
              if (ShapedType::isDynamic(d))
                return std::nullopt;
              OpKey key{"norm", {}};
              key.shape["d"] = d;
              target::CpuTarget cpu =
                  target.isCpu() ? target.cpu() : cudaAsCpu(target.cuda());
              return std::make_pair(std::move(key),
                                    chooseRows(cpu, d, prefillTokens));
            })
        .Default([](Operation *) { return std::nullopt; });
  }

  /// For ops whose CUDA tiling is the CPU rule over a block's shared memory
  /// (rows): the GPU seen as one "core" per SM with shared memory
  /// as its L1.
  static target::CpuTarget cudaAsCpu(const target::CudaTarget &gpu) {
    target::CpuTarget cpu;
    cpu.vectorBits = gpu.warpSize * 32;
    cpu.cores = gpu.smCount;
    cpu.l1dBytes = gpu.sharedMemPerBlockBytes;
    cpu.l2Bytes = cpu.l3Bytes = gpu.sharedMemPerBlockBytes * gpu.smCount;
    return cpu;
  }
};

} // namespace

namespace kiln {
void registerTilingCLOptions() {
  static llvm::cl::opt<std::string> flag(
      "kiln-tuning-file",
      llvm::cl::desc("Tile overrides for --kiln-tile and --kiln-pipeline "
                     "(docs/passes/tiling.md, \"Tuning files\")"),
      llvm::cl::value_desc("file"), llvm::cl::init(""));
  tuningFileFlag = &flag;
}
} // namespace kiln
