//===- Passes.td - Kiln's passes ---------------------------*- tablegen -*-===//
//
// Part of Kiln. Passes are grouped by pipeline phase under banners,
// alphabetical within a group; one pass per file, named like the pass.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_PASSES_TD
#define KILN_PASSES_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Code generation legality
//===----------------------------------------------------------------------===//

def CheckCpuLegality : Pass<"kiln-check-cpu-legality", "::mlir::func::FuncOp"> {
  let summary = "Reject what the CPU code generator cannot compile";
  let description = [{
    Checks every `kiln.step` function against what the CPU code generator
    (codegen/cpu) takes, so that a step it cannot compile is an error at
    `kiln-opt` time, on the op at fault, rather than in the middle of code
    generation. Every kiln compute op has a CPU kernel; the step's weights
    (`kiln.weight`, and `kiln.concat` of weights) are packed at compile time.
    The pass rejects:

    - a `kiln.concat` with an input that is not a weight (a value defined by
      `kiln.weight` or by a concat of weights): activations are never
      concatenated at run time; and a concat of weights along an axis other
      than 0, which the weight packer cannot lay out (it packs whole rows);
    - an activation (a tensor result of a step op other than a weight, a
      concat of weights or an `i32` index tensor) whose element type is not
      `f32`: the kernels compute in f32 and read and write f32 activations;
    - a KV cache whose element type is not `f32`, used by `kiln.kv_append`,
      `kiln.kv_read` or `kiln.attention`: the kernels keep an f32 cache;
    - a `kiln.embedding` whose table is not a weight: the embedding kernel
      reads its rows from the packed weights;
    - any op of another dialect but `func.return`: it has no CPU kernel.

    Every violation is reported (an error on the op, saying what was
    expected), then the pass fails. Functions that are not steps are
    ignored; the IR is not changed. `--kiln-pipeline` runs the pass last
    when its target is a CPU.
  }];
}

//===----------------------------------------------------------------------===//
// Decomposition
//===----------------------------------------------------------------------===//

def DecomposeAttention : Pass<"kiln-decompose-attention"> {
  let summary = "Expand fused attention into its unfused pieces";
  let description = [{
    Rewrites every `kiln.attention` into the chain it is defined as:
    `kiln.kv_read`, `kiln.attention_scores`, `kiln.scale`,
    `kiln.attention_mask`, `kiln.softmax` and `kiln.attention_output`. The
    fused op stays analysable: executors without a fused kernel, and tests
    that compare fused against unfused results, use this expansion.
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

//===----------------------------------------------------------------------===//
// Fusion
//===----------------------------------------------------------------------===//

def ApplyFusionRules : Pass<"kiln-apply-fusion-rules"> {
  let summary = "Apply user-written fusion rules from a PDLL or PDL file";
  let description = [{
    Loads the rule file named by `rules` and applies its patterns (through
    the PDL interpreter) in program-order sweeps until none applies; it does
    not fold (run `--canonicalize` after it for that). A rule that breaks
    the IR (erases an op that is still used, creates an op that does not
    verify) is an error, not a crash. A `.pdll` file
    is compiled by the `mlir-pdll` CMake found, with the file's folder,
    Kiln's source root (so rules can `#include "ir/KilnOps.td"` and
    `"passes/rules/KilnConstraints.pdll"`) and MLIR's include folder on the
    include path; any other file is read as PDL MLIR. Rules may call Kiln's
    native constraints `HasOneUse`, `HasRank`, `HasElementType` and
    `SameType`; under `--kiln-explain-fusion` a constraint that rejects emits
    a remark "rule <pattern>: constraint <name> rejected <value>". A missing
    or malformed rule file is an error naming the file (and, for mlir-pdll
    and PDL parse errors, the line). kiln-opt's `--kiln-fusion-rules=FILE`
    and `kiln run --fusion-rules FILE` append this pass.
  }];
  let options = [
    Option<"rules", "rules", "std::string", /*default=*/"\"\"",
           "The rule file: .pdll (compiled with mlir-pdll) or PDL .mlir">
  ];
  let dependentDialects = ["::kiln::KilnDialect", "::mlir::pdl::PDLDialect",
                           "::mlir::pdl_interp::PDLInterpDialect"];
}

def FuseAttention : Pass<"kiln-fuse-attention"> {
  let summary = "Fuse the attention chain into kiln.attention";
  let description = [{
    Rewrites `kiln.kv_read` + `kiln.attention_scores` + `kiln.scale` +
    `kiln.attention_mask` + `kiln.softmax` + `kiln.attention_output` into one
    `kiln.attention` over the cache, carrying over the scale (1 when there is
    no `kiln.scale`) and the mask's window. The inverse of
    `--kiln-decompose-attention`.

    Applies when the chain is exactly that, each intermediate has one use,
    keys and values are the two results of one read, the mask's positions
    are the read's, and the query's head size and type fit the fused op. The
    fused op never materializes the `[T, H, S]` scores. Every
    `kiln.attention_output` that does not fuse is explained under
    `--kiln-explain-fusion` (rule "attention").
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def FuseMatmulActivation : Pass<"kiln-fuse-matmul-activation"> {
  let summary = "Fuse activations into the matmuls they follow (PDLL rules)";
  let description = [{
    Rewrites `act(matmul(x, W, b))` (act: `kiln.silu`, `kiln.gelu` with or
    without `tanh`, `kiln.relu`; the bias optional) into
    `kiln.fused_matmul x, W bias b activation<act>` when the matmul has no
    other use, so the activation is computed on each output tile in
    registers. The rules are declarative: passes/rules/MatmulActivation.pdll,
    compiled to PDL when Kiln is built. Candidates that do not fuse are
    explained under `--kiln-explain-fusion` (rules `matmul-silu`,
    `matmul-gelu`, `matmul-gelu-tanh`, `matmul-relu`).
  }];
  let dependentDialects = ["::kiln::KilnDialect", "::mlir::pdl::PDLDialect",
                           "::mlir::pdl_interp::PDLInterpDialect"];
}

def FuseMatmulEpilogue : Pass<"kiln-fuse-matmul-epilogue"> {
  let summary = "Fuse residual adds, and activations of fused matmuls, into "
                "matmuls";
  let description = [{
    Rewrites `matmul(...) + r` (either operand order) into
    `kiln.fused_matmul ... residual r`, keeping bias and activation, and
    `act(fused_matmul(...))` into the fused op with that activation when it
    has none and no residual (act: `kiln.silu`, `kiln.gelu` with or without
    `tanh`, `kiln.relu`; activations of plain matmuls are
    `--kiln-fuse-matmul-activation`'s). Activations go first, so
    `act(x·Wᵀ + b) + r` becomes one op. It applies when the matmul has no
    other use; when both add operands qualify, the rhs (`x + f(x)`) takes the
    lhs as its residual. The epilogue is computed on each output tile in
    registers instead of in extra passes over memory. Candidates that do not
    fuse are explained under `--kiln-explain-fusion` (rules `matmul-<act>`
    and `matmul-residual`).
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def FuseQKVProjections : Pass<"kiln-fuse-qkv"> {
  let summary = "Fuse projections of one input into one matmul";
  let description = [{
    Rewrites the matmuls of one input in one block (a layer's Q, K and V
    projections) into one matmul over their weights packed with
    `kiln.concat ... axis = 0` (and their biases, Qwen2-style, likewise),
    followed by `kiln.split ... axis = 1` into the original results. The input
    is then read once and one wide matmul replaces several narrow ones.

    Applies when all the weights have one element type (block-quantized ones
    included), all matmuls have a bias or none has, and a point after every
    operand precedes every use of the results; nothing is moved. Run alone,
    it also packs a feed-forward's gate and up projections; in the
    `kiln-fusion` pipeline `--kiln-fuse-swiglu` runs first and takes them.
    Every input with several matmuls that does not fuse is explained under
    `--kiln-explain-fusion` (rule "qkv").
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def FuseRmsNormPrologue : Pass<"kiln-fuse-rms-norm-prologue"> {
  let summary = "Fold kiln.rms_norm into the matmuls it feeds as a prologue";
  let description = [{
    Rewrites a `kiln.rms_norm` whose every use is the input of a
    `kiln.matmul`, or of a `kiln.fused_matmul` or `kiln.swiglu` without a
    prologue, into those consumers' `rms_norm(%g, epsilon = e)` prologue, and
    erases the norm. The consumers normalize each input row as they read it,
    so the normalized `[T, D]` tensor is never stored and the norm's own
    kernel disappears; the row statistic costs `D` multiply-adds per row and
    consumer, negligible next to the matmul. A norm with any other use is
    left alone (it must be stored anyway) and explained under
    `--kiln-explain-fusion` (rule `rms-norm-prologue`). Run it after the
    other fusion rules, which match plain `kiln.matmul` producers.
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def FuseSwiglu : Pass<"kiln-fuse-swiglu"> {
  let summary = "Fuse the gated SiLU feed-forward into kiln.swiglu";
  let description = [{
    Rewrites `kiln.mul(kiln.silu(kiln.matmul(x, W1)), kiln.matmul(x, W3))`,
    i.e. `silu(x·W1ᵀ) ⊙ (x·W3ᵀ)` (either operand order), into
    `kiln.swiglu x, W1, W3`. It applies when both matmuls read the same `x`
    without a bias, W1 and W3 have one type, and the silu and both matmuls
    have no other use. The fused op reads `x` once for both projections and
    never stores the `[T, F]` intermediates. Candidates that do not fuse are
    explained under `--kiln-explain-fusion` (rule `swiglu`).
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

//===----------------------------------------------------------------------===//
// Tiling
//===----------------------------------------------------------------------===//

def TileOps : Pass<"kiln-tile", "::mlir::ModuleOp"> {
  let summary = "Choose tile sizes and loop orders for compute ops";
  let description = [{
    Records on every `kiln.matmul`, `kiln.fused_matmul`, `kiln.swiglu`,
    `kiln.attention`, `kiln.rms_norm` and `kiln.layer_norm` a `kiln.tiles`
    attribute (ir/Tiling.h): block sizes, loop order and the loop split over
    threads, once for decode (T = 1) and once for prefill (large T, planned
    at `prefill-tokens`), with the T at which prefill takes over. The
    module gets `kiln.target`, the canonical spec of the target. Nothing
    else changes; the interpreter ignores the attributes.

    Sizes follow the target's registers and caches (docs/passes/tiling.md):
    GEMMs use the register block with the most FMAs per load that fits the
    vector registers, a reduction block that keeps one weight panel and one
    input sliver in half of L1, an input block in half of L2 and a weight
    block in half of the core's L3 share, split over cores along N; decode
    streams the weights once (a GEMV over the same packed layout). Attention
    blocks cached positions so a key and a value block fill half of L1.
    Shapes that are not multiples of the tiles keep their tiles (edge blocks
    are partial); a dimension smaller than its tile becomes the tile.

    `tuning-file` (or `--kiln-tuning-file`) overrides sizes by op kind and
    shape; the attribute's `source` says which lines applied.
  }];
  let options = [
    Option<"targetSpec", "target", "std::string", /*default=*/"\"native\"",
           "Target spec: native, portable, avx2, avx512[+bf16][+vnni], "
           "cuda:sm_XX, with ,key=value overrides (docs/targets.md)">,
    Option<"prefillTokens", "prefill-tokens", "int64_t", /*default=*/"512",
           "Token count prefill tiles are planned for">,
    Option<"tuningFile", "tuning-file", "std::string", /*default=*/"\"\"",
           "Tile overrides by op kind and shape (docs/passes/tiling.md)">,
    Option<"weightType", "weight-type", "std::string", /*default=*/"\"\"",
           "The type GEMM weights are packed as (f32, f16, bf16, as kiln "
           "compile --dtype); empty: each weight's own type">
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

//===----------------------------------------------------------------------===//
// Memory planning
//===----------------------------------------------------------------------===//

def PlanMemory : Pass<"kiln-plan-memory", "::mlir::func::FuncOp"> {
  let summary = "Place a step's activations in one arena by liveness";
  let description = [{
    Plans where every activation of a `kiln.step` function lives, in one
    arena that code generation allocates once per executor. An activation is
    a ranked tensor result computed from the step's arguments: weights (and
    weights packed by `kiln.concat`) live in the weight file, the KV cache is
    state the runtime owns, and the step's arguments are the runtime's. A
    `kiln.reshape` is a view of its input's storage; every other op,
    `kiln.split` and `kiln.transpose` included, writes a buffer of its own.

    Ops are numbered in program order; a buffer is live from the op that
    writes it to the last op that reads it or a view of it (a step output:
    to the end). Sizes are affine in the token count T, `bytes_per_token·T +
    bytes_fixed`, with the logit-row count R bounded by T and cached-position
    counts S by the context length (`kiln.context_length`, or
    `context-length`). Buffers are placed at their size for `max-tokens`
    tokens, largest first (ties in definition order), each at the lowest
    64-byte-aligned offset where it overlaps no placed buffer live at the
    same time: deterministic for a given IR. Sizes never decrease with T, so
    the offsets stay valid for every step of up to `max-tokens` tokens.

    Records `kiln.buffers` on each op with a planned result (one entry per
    result: a `#kiln.buffer<offset, bytes_fixed, bytes_per_token>`, a
    `#kiln.buffer_view<operand>` for a view, `unit` for a result without
    storage) and a `#kiln.memory_plan<alignment, max_tokens, arena_bytes,
    naive_bytes, context_length>` on the step as `kiln.memory_plan`
    (ir/KilnAttrs.td). A function that is not a step, or an activation whose
    size cannot be bounded, is an error.
    See docs/passes/memory-planning.md.
  }];
  let options = [
    Option<"maxTokens", "max-tokens", "int64_t", /*default=*/"512",
           "The most tokens a step is planned for">,
    Option<"contextLength", "context-length", "int64_t", /*default=*/"0",
           "Bound on cached positions S (0: the step's kiln.context_length)">
  ];
}

def PrintMemoryPlan : Pass<"kiln-print-memory-plan", "::mlir::func::FuncOp"> {
  let summary = "Print a step's memory plan as a table";
  let description = [{
    Prints the plan `--kiln-plan-memory` recorded on a step function to
    standard output: one row per buffer (its value as the IR printer names
    it, its op and location, its live range as op indices, its offset and
    its size at `tokens` tokens), then the arena's peak at `tokens` with the
    recorded offsets, the naive sum of all buffers allocated separately,
    their ratio, and the most bytes live at once (a bound no placement can
    beat). `tokens` defaults to the plan's `max_tokens` and may not exceed
    it. A step without a plan, or whose plan no longer matches its IR, is an
    error. The IR is not changed.
  }];
  let options = [
    Option<"tokens", "tokens", "int64_t", /*default=*/"0",
           "Token count to size the buffers at (0: the plan's max_tokens)">
  ];
}

#endif // KILN_PASSES_PASSES_TD
