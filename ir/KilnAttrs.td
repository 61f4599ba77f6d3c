//===- KilnAttrs.td - Attributes of the kiln dialect -------*- tablegen -*-===//
//
// Part of Kiln. Enums and attributes: rope layout and scaling, epilogue
// activations, the module's weights source, the tiles of compute ops and
// the memory plan of a step.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_KILNATTRS_TD
#define KILN_IR_KILNATTRS_TD

include "ir/KilnDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

// A double printed in its shortest exact form (e.g. `4.0`, `1.0e-05`).
class Kiln_F64Parameter<string desc, string default = "">
    : APFloatParameter<desc> {
  let parser = [{ [&]() -> ::mlir::FailureOr<::llvm::APFloat> {
    double value;
    if (::mlir::failed($_parser.parseFloat(value)))
      return ::mlir::failure();
    return ::llvm::APFloat(value);
  }() }];
  let printer = [{ $_printer.printFloat($_self) }];
  let defaultValue = default;
}

// An integer that may be absent: printed only when present.
class Kiln_OptionalI64Parameter<string desc>
    : OptionalParameter<"std::optional<int64_t>", desc> {
  let printer = [{ $_printer << *$_self }];
}

// A list of f32 that may be absent, `[1.0, 1.5]`, each number printed in the
// shortest form that reads back as the same f32: the builtin dense array's
// six digits would change the values a round trip through text.
class Kiln_OptionalF32ArrayParameter<string desc>
    : OptionalParameter<"::mlir::DenseF32ArrayAttr", desc> {
  let parser = [{ [&]() -> ::mlir::FailureOr<::mlir::DenseF32ArrayAttr> {
    ::llvm::SmallVector<float> values;
    auto parseOne = [&]() -> ::mlir::ParseResult {
      ::llvm::APFloat value(0.0f);
      if (::mlir::failed($_parser.parseFloat(::llvm::APFloat::IEEEsingle(),
                                             value)))
        return ::mlir::failure();
      values.push_back(value.convertToFloat());
      return ::mlir::success();
    };
    if (::mlir::failed($_parser.parseCommaSeparatedList(
            ::mlir::AsmParser::Delimiter::Square, parseOne)))
      return ::mlir::failure();
    return ::mlir::DenseF32ArrayAttr::get($_ctxt, values);
  }() }];
  let printer = [{
    $_printer << '[';
    ::llvm::interleaveComma($_self.asArrayRef(), $_printer, [&](float value) {
      $_printer.printFloat(::llvm::APFloat(value));
    });
    $_printer << ']';
  }];
}

class Kiln_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Kiln_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

//===----------------------------------------------------------------------===//
// RopeLayout
//===----------------------------------------------------------------------===//

def Kiln_RopeLayout : I32EnumAttr<"RopeLayout",
    "rope pair layout (adjacent or halves)", [
      // Pairs (2i, 2i+1): llama2.c checkpoints and GGUF files.
      I32EnumAttrCase<"Adjacent", 0, "adjacent">,
      // Pairs (i, i + d/2): Hugging Face checkpoints (GPT-NeoX style).
      I32EnumAttrCase<"Halves", 1, "halves">,
    ]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
}
def Kiln_RopeLayoutAttr : EnumAttr<Kiln_Dialect, Kiln_RopeLayout,
                                   "rope_layout"> {
  let assemblyFormat = "`<` $value `>`";
}

//===----------------------------------------------------------------------===//
// RopeScaling
//===----------------------------------------------------------------------===//

def Kiln_RopeScalingKind : I32EnumAttr<"RopeScalingKind",
    "rope scaling kind (linear, llama3 or factors)", [
      // Every frequency divided by `factor` (position interpolation).
      I32EnumAttrCase<"Linear", 0, "linear">,
      // Llama 3.1: low frequencies divided by `factor`, high ones kept,
      // a smooth blend in between.
      I32EnumAttrCase<"Llama3", 1, "llama3">,
      // One divisor per pair, given as numbers: how GGUF files store Llama 3
      // scaling (the rope_freqs tensor llama.cpp's converter computes).
      I32EnumAttrCase<"Factors", 2, "factors">,
    ]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
}
def Kiln_RopeScalingKindAttr : EnumAttr<Kiln_Dialect, Kiln_RopeScalingKind,
                                        "rope_scaling_kind"> {
  let assemblyFormat = "`<` $value `>`";
}

def Kiln_RopeScalingAttr : Kiln_Attr<"RopeScaling", "rope_scaling"> {
  let summary = "frequency scaling of a rotary embedding";
  let description = [{
    With inverse frequency `f_i = theta^(-2i/d)` and wavelength
    `λ_i = 2π / f_i`:

    - `linear`: `f_i' = f_i / factor`.
    - `llama3`: with `L = original_context`, `λ_lo = L / low_freq_factor`,
      `λ_hi = L / high_freq_factor`: `f_i' = f_i` when `λ_i < λ_hi`,
      `f_i / factor` when `λ_i > λ_lo`, and otherwise
      `(1 - s) f_i / factor + s f_i` with
      `s = (L / λ_i - low_freq_factor) / (high_freq_factor - low_freq_factor)`.
    - `factors`: `f_i' = f_i / freq_factors[i] / factor`, one f32 divisor per
      rotated pair (`freq_factors` has `d/2` entries, each finite and
      positive), and `factor` a further divisor for all pairs (1.0 unless
      the model also has linear scaling). GGUF files hold Llama 3 scaling
      this way: llama.cpp's converter evaluates the `llama3` formula in f32
      and stores `freq_factors[i] = f_i / f_i'` as the `rope_freqs` tensor.

    ```mlir
    #kiln.rope_scaling<linear, factor = 4.0>
    #kiln.rope_scaling<llama3, factor = 8.0, low_freq_factor = 1.0,
                       high_freq_factor = 4.0, original_context = 8192>
    #kiln.rope_scaling<factors, factor = 1.0,
                       freq_factors = [1.0, 1.5, 8.0, 8.0]>
    ```
  }];
  let parameters = (ins
    "::kiln::RopeScalingKind":$kind,
    Kiln_F64Parameter<"frequency divisor">:$factor,
    Kiln_F64Parameter<"llama3: low-frequency factor",
                      "::llvm::APFloat(0.0)">:$low_freq_factor,
    Kiln_F64Parameter<"llama3: high-frequency factor",
                      "::llvm::APFloat(0.0)">:$high_freq_factor,
    DefaultValuedParameter<"int64_t", "0">:$original_context,
    Kiln_OptionalF32ArrayParameter<"factors: divisor of each pair's "
                                   "frequency">:$freq_factors
  );
  let assemblyFormat = [{
    `<` $kind `,` struct($factor, $low_freq_factor, $high_freq_factor,
                         $original_context, $freq_factors) `>`
  }];
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Activation
//===----------------------------------------------------------------------===//

def Kiln_Activation : I32EnumAttr<"Activation",
    "epilogue activation (silu, gelu, gelu_tanh or relu)", [
      I32EnumAttrCase<"Silu", 0, "silu">,
      I32EnumAttrCase<"Gelu", 1, "gelu">,
      I32EnumAttrCase<"GeluTanh", 2, "gelu_tanh">,
      I32EnumAttrCase<"Relu", 3, "relu">,
    ]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
}
def Kiln_ActivationAttr : EnumAttr<Kiln_Dialect, Kiln_Activation,
                                   "activation"> {
  let assemblyFormat = "`<` $value `>`";
}

//===----------------------------------------------------------------------===//
// WeightsSource
//===----------------------------------------------------------------------===//

def Kiln_WeightsFormat : I32EnumAttr<"WeightsFormat",
    "weights format (llama2c, gguf or safetensors)", [
      I32EnumAttrCase<"Llama2c", 0, "llama2c">,
      I32EnumAttrCase<"GGUF", 1, "gguf">,
      I32EnumAttrCase<"Safetensors", 2, "safetensors">,
    ]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
}
def Kiln_WeightsFormatAttr : EnumAttr<Kiln_Dialect, Kiln_WeightsFormat,
                                      "weights_format"> {
  let assemblyFormat = "`<` $value `>`";
}

def Kiln_WeightsSourceAttr : Kiln_Attr<"WeightsSource", "weights_source"> {
  let summary = "file a module's weight declarations resolve against";
  let description = [{
    Placed on the module as `kiln.weights_source`. Every `kiln.weight_decl
    @name` of the module names a tensor `name` in this file (for llama2.c
    checkpoints, which have no tensor names, the importer's canonical names
    documented in docs/step-contract.md). A relative path is resolved against
    the directory of the file the module was read from, so a module saved
    beside its weights runs again. For `safetensors`, the path is a model
    directory or a `model.safetensors.index.json`.

    ```mlir
    module attributes {kiln.weights_source =
        #kiln.weights_source<gguf, "stories260K-f32.gguf">} {
    }
    ```
  }];
  let parameters = (ins "::kiln::WeightsFormat":$format,
                        StringRefParameter<"path to the weights">:$path);
  let assemblyFormat = "`<` $format `,` $path `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Tiles (kiln.tiles): the seam between tiling and code generation
//===----------------------------------------------------------------------===//

def Kiln_GemmPhaseAttr : Kiln_Attr<"GemmPhase", "gemm_phase"> {
  let summary = "block sizes of a GEMM in one phase";
  let description = [{
    For `y[M, N] = x[M, K] · W[N, K]ᵀ`: `m` rows per block, `n` columns per
    task (whole panels; threads split n), `k` the reduction block, and the
    `mr x nr` register block (`nr` is also the packed panel width). All
    positive.
  }];
  let parameters = (ins "int64_t":$m, "int64_t":$n, "int64_t":$k,
                        "int64_t":$mr, "int64_t":$nr);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Kiln_AttentionPhaseAttr : Kiln_Attr<"AttentionPhase", "attention_phase"> {
  let summary = "block sizes of attention in one phase";
  let description = [{
    `q` query tokens per job (jobs of (q tokens, head) run on threads) and
    `kv` cached positions per online-softmax block. Both positive.
  }];
  let parameters = (ins "int64_t":$q, "int64_t":$kv);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Kiln_RowsPhaseAttr : Kiln_Attr<"RowsPhase", "rows_phase"> {
  let summary = "rows per task of a row-wise op in one phase";
  let description = [{
    `rows` rows per task of a norm (tasks run on threads). Positive.
  }];
  let parameters = (ins "int64_t":$rows);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

class Kiln_TilesAttr<string name, string attrMnemonic, string phase,
                     string what>
    : Kiln_Attr<name, attrMnemonic> {
  let summary = "tiles of " # what # " for decode and prefill";
  let description = [{
    The value of `kiln.tiles`, written by `--kiln-tile`
    (passes/TileOps.cpp) and read by code generation
    (docs/passes/tiling.md, "What code generation reads"): the `decode`
    sizes below `prefill_from` tokens (rows) in a step, the `prefill` sizes
    from there, and where the sizes came from (`source`: the target, then
    any tuning-file lines that applied). `prefill_from` is positive.

    Both phases split a row's reduction alike (GEMM `k`, attention `kv`), so
    a token's results are bitwise the same whatever else its step holds
    (batch invariance); the verifier rejects tiles where they differ.
  }];
  let parameters = (ins phase:$decode, phase:$prefill, "int64_t":$prefill_from,
                        StringRefParameter<"where the sizes come from">:$source);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Kiln_GemmTilesAttr
    : Kiln_TilesAttr<"GemmTiles", "gemm_tiles", "GemmPhaseAttr",
                     "a GEMM (matmul, fused_matmul, swiglu)"> {
  let summary = "tiles of a GEMM for decode and prefill";
}
def Kiln_AttentionTilesAttr
    : Kiln_TilesAttr<"AttentionTiles", "attention_tiles", "AttentionPhaseAttr",
                     "attention"> {
  let summary = "tiles of attention for decode and prefill";
}
def Kiln_RowsTilesAttr
    : Kiln_TilesAttr<"RowsTiles", "rows_tiles", "RowsPhaseAttr",
                     "a norm"> {
  let summary = "tiles of a row-wise op for decode and prefill";
}

//===----------------------------------------------------------------------===//
// Memory plan (kiln.buffers, kiln.memory_plan): the seam between memory
// planning and code generation
//===----------------------------------------------------------------------===//

def Kiln_BufferAttr : Kiln_Attr<"Buffer", "buffer"> {
  let summary = "arena storage of one step activation";
  let description = [{
    An entry of `kiln.buffers`, the array with one entry per result that
    `--kiln-plan-memory` (passes/PlanMemory.cpp) writes on each op with a
    planned result: the result has storage of its own in the step's arena.
    `offset` is its start, in bytes from the arena's start (a multiple of the
    plan's `alignment`); at `T` tokens it takes
    `bytes_per_token · T + bytes_fixed` bytes. All three are non-negative, so
    a buffer never shrinks as `T` grows and offsets planned at the plan's
    `max_tokens` hold for every smaller step.

    Code generation (codegen/cpu/CpuStepEmitter.cpp) addresses the result at
    `arena + offset`; `--kiln-print-memory-plan` reads the offset and checks
    the sizes against the IR (docs/passes/memory-planning.md).

    ```mlir
    %x = kiln.silu %e {kiln.buffers = [
        #kiln.buffer<offset = 32768, bytes_fixed = 0, bytes_per_token = 64>]}
        : tensor<?x16xf32>
    ```
  }];
  let parameters = (ins
    AttrParameter<"int64_t", "bytes from the arena's start">:$offset,
    AttrParameter<"int64_t", "bytes at any token count">:$bytes_fixed,
    AttrParameter<"int64_t", "bytes added by each token">:$bytes_per_token
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Bytes of the buffer at `tokens` tokens.
    int64_t bytesAt(int64_t tokens) const {
      return getBytesPerToken() * tokens + getBytesFixed();
    }
  }];
}

def Kiln_BufferViewAttr : Kiln_Attr<"BufferView", "buffer_view"> {
  let summary = "a step activation that shares an operand's storage";
  let description = [{
    An entry of `kiln.buffers` (see `#kiln.buffer`) for a result that has no
    storage of its own: it is operand `operand` of its op (0-based) under
    another type, in that operand's buffer. `--kiln-plan-memory` writes it
    for `kiln.reshape`, which reinterprets row-major elements. The view's
    uses keep the operand's buffer live; code generation points the result at
    the operand's storage. The dialect checks that the operand exists and is
    a ranked tensor.

    ```mlir
    %k = kiln.reshape %x {kiln.buffers = [#kiln.buffer_view<operand = 0>]}
        : tensor<?x16xf32> -> tensor<?x4x4xf32>
    ```
  }];
  let parameters = (ins
    AttrParameter<"int64_t", "number of the operand whose storage it is">:
        $operand
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Kiln_MemoryPlanAttr : Kiln_Attr<"MemoryPlan", "memory_plan"> {
  let summary = "arena layout of a step function's activations";
  let description = [{
    The value of `kiln.memory_plan` on a `kiln.step` function, written by
    `--kiln-plan-memory` with the `kiln.buffers` of its ops:

    - `alignment`: every buffer's offset is a multiple of it, and every
      buffer is padded to it (a power of two; 64, one cache line);
    - `max_tokens`: the token count the offsets were planned at; they are
      valid for every step of 1 to `max_tokens` tokens (positive);
    - `arena_bytes`: the arena at `max_tokens` tokens, the end of the
      furthest buffer; an executor allocates this much for activations;
    - `naive_bytes`: the sum of all buffers allocated each on its own (padded
      the same way), for comparison;
    - `context_length` (omitted when none): the bound on cached positions the
      sizes of `[T, S, ...]` activations were computed with (positive).

    Code generation reads `max_tokens` and `arena_bytes`;
    `--kiln-print-memory-plan` reads `max_tokens` and `context_length`
    (docs/passes/memory-planning.md). The reference interpreter ignores it.

    ```mlir
    func.func @step(...) attributes {kiln.step, kiln.memory_plan =
        #kiln.memory_plan<alignment = 64, max_tokens = 512,
                          arena_bytes = 65536, naive_bytes = 147456,
                          context_length = 512>}
    ```
  }];
  let parameters = (ins
    AttrParameter<"int64_t", "bytes every offset is a multiple of">:$alignment,
    AttrParameter<"int64_t", "token count the offsets are planned at">:
        $max_tokens,
    AttrParameter<"int64_t", "arena bytes at max_tokens">:$arena_bytes,
    AttrParameter<"int64_t", "bytes of all buffers allocated separately">:
        $naive_bytes,
    Kiln_OptionalI64Parameter<"bound on cached positions">:$context_length
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // KILN_IR_KILNATTRS_TD
