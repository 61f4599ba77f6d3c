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

def FuseMatmulEpilogue : Pass<"kiln-fuse-matmul-epilogue"> {
  let summary = "Fuse activations and residual adds into matmuls";
  let description = [{
    Rewrites `act(matmul(x, W, b))` (act: `kiln.silu`, `kiln.gelu` with or
    without `tanh`, `kiln.relu`) into `kiln.fused_matmul x, W bias b
    activation<act>`, and then `matmul(...) + r` (either operand order) into
    `kiln.fused_matmul ... residual r`, keeping bias and activation; a
    `kiln.fused_matmul` producer without activation (for an activation) or
    without residual (for a residual) extends the same way. Activations go
    first, so `act(x·Wᵀ + b) + r` becomes one op. It applies when the matmul
    has no other use; when both add operands qualify, the rhs (`x + f(x)`)
    takes the lhs as its residual. The epilogue is computed on each output
    tile in registers instead of in extra passes over memory. Candidates that
    do not fuse are explained under `--kiln-explain-fusion` (rules
    `matmul-<act>` and `matmul-residual`).
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

#endif // KILN_PASSES_PASSES_TD
