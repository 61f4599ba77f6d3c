//===- KilnOps.td - Operations of the kiln dialect ---------*- tablegen -*-===//
//
// Part of Kiln. Ops are grouped as a step reads: weights, embedding and
// matmuls, element-wise math, norms and rotary embedding, views, the KV cache
// and attention, then fused ops.
//
// Conventions: `T` is the (dynamic) number of tokens in a step, `D` the model
// width, `H`/`Hkv` query and key/value heads, `d` the head size, `S` the
// number of cached positions a step attends over.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_KILNOPS_TD
#define KILN_IR_KILNOPS_TD

include "ir/KilnDialect.td"
include "ir/KilnTypes.td"
include "ir/KilnAttrs.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Kiln_BlockQuantizedType : Type<
    CPred<"::llvm::isa<::kiln::BlockQuantizedTypeInterface>($_self)">,
    "block-quantized type">;

// Activations: f32/f16/bf16. Block-quantized element types are rejected here
// with a message that says where they belong.
def Kiln_Tensor : Type<RankedTensorOf<[F32, F16, BF16]>.predicate,
    "ranked tensor of f32, f16 or bf16 values (block-quantized element types "
    "are allowed only on weights)", "::mlir::RankedTensorType">;

def Kiln_WeightTensor : Type<
    RankedTensorOf<[F32, F16, BF16, Kiln_BlockQuantizedType]>.predicate,
    "ranked tensor of f32, f16, bf16 or block-quantized (q8_0, q4_0, q4_k, "
    "q5_k, q6_k) values",
    "::mlir::RankedTensorType">;

// The KV cache, printed in full (`!kiln.kv_cache<...>`) in op signatures.
def Kiln_KVCache : Type<CPred<"::llvm::isa<::kiln::KVCacheType>($_self)">,
    "KV cache", "::mlir::Type">;

// Token ids, positions, sequence ids and row indices.
def Kiln_IndexTensor : Type<1DTensorOf<[I32]>.predicate,
    "1-D tensor of i32 values", "::mlir::RankedTensorType">;

//===----------------------------------------------------------------------===//
// WeightDeclOp
//===----------------------------------------------------------------------===//

def Kiln_WeightDeclOp : Kiln_Op<"weight_decl",
    [Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "declaration of a named weight tensor";
  let description = [{
    Declares that the module's weights source (`kiln.weights_source` on the
    module) holds a tensor named like the symbol, with this shape and element
    type. Weights are never inlined into a model's IR; functions refer to them
    with `kiln.weight`. A block-quantized tensor must have a last dimension
    that is a multiple of its block size.

    ```mlir
    kiln.weight_decl @"token_embd.weight" : tensor<32000x4096xf16>
    kiln.weight_decl @"blk.0.attn_q.weight" : tensor<4096x4096x!kiln.q8_0>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<Kiln_WeightTensor>:$type);
  let assemblyFormat = "$sym_name attr-dict `:` $type";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
  }];
}

//===----------------------------------------------------------------------===//
// WeightOp
//===----------------------------------------------------------------------===//

def Kiln_WeightOp : Kiln_Op<"weight",
    [Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "reference to a declared weight tensor";
  let description = [{
    Produces the value of the weight declared by `kiln.weight_decl @name`.
    The result type must equal the declared type, so every use of a weight
    agrees with its declaration.

    ```mlir
    %wq = kiln.weight @"blk.0.attn_q.weight" : tensor<4096x4096x!kiln.q8_0>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$name);
  let results = (outs Kiln_WeightTensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// EmbeddingOp
//===----------------------------------------------------------------------===//

def Kiln_EmbeddingOp : Kiln_Op<"embedding", [Pure]> {
  let summary = "token embedding lookup";
  let description = [{
    `result[t, :] = dequantize(table[ids[t], :])` for a table of shape
    `[V, D]`. Ids outside `[0, V)` are a run-time error of the executor.

    ```mlir
    %x = kiln.embedding %table[%tokens]
        : tensor<32000x4096xf16>, tensor<?xi32> -> tensor<?x4096xf32>
    ```
  }];
  let arguments = (ins Kiln_WeightTensor:$table, Kiln_IndexTensor:$ids);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $table `[` $ids `]` attr-dict `:` type($table) `,` type($ids) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// GatherRowsOp
//===----------------------------------------------------------------------===//

def Kiln_GatherRowsOp : Kiln_Op<"gather_rows", [Pure]> {
  let summary = "selection of rows of an activation";
  let description = [{
    `result[r, ...] = input[rows[r], ...]`. A step uses it to keep only the
    tokens whose logits are requested before the classifier.

    ```mlir
    %last = kiln.gather_rows %h[%logit_rows]
        : tensor<?x4096xf32>, tensor<?xi32> -> tensor<?x4096xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_IndexTensor:$rows);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $input `[` $rows `]` attr-dict `:` type($input) `,` type($rows) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

def Kiln_MatmulOp : Kiln_Op<"matmul", [Pure]> {
  let summary = "matrix multiplication by a transposed weight";
  let description = [{
    `result[m, n] = sum_k input[m, k] * weight[n, k] (+ bias[n])`, i.e.
    `x·Wᵀ + b` with `W` stored `[N, K]` (out features by in features) as in
    llama2.c, GGUF and Hugging Face checkpoints. The weight may be
    block-quantized; it is dequantized exactly, accumulation is in the result
    element type or wider.

    ```mlir
    %q = kiln.matmul %h, %wq : (tensor<?x64xf32>, tensor<64x64xf32>)
        -> tensor<?x64xf32>
    %k = kiln.matmul %h, %wk bias %bk
        : (tensor<?x64xf32>, tensor<32x64xf32>, tensor<32xf32>)
        -> tensor<?x32xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_WeightTensor:$weight,
                       Optional<Kiln_Tensor>:$bias);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`bias` $bias^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Element-wise ops
//===----------------------------------------------------------------------===//

class Kiln_BinaryOp<string mnemonic, list<Trait> traits = []>
    : Kiln_Op<mnemonic, !listconcat([Pure, SameOperandsAndResultType],
                                    traits)> {
  let arguments = (ins Kiln_Tensor:$lhs, Kiln_Tensor:$rhs);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

class Kiln_UnaryOp<string mnemonic, list<Trait> traits = []>
    : Kiln_Op<mnemonic, !listconcat([Pure, SameOperandsAndResultType],
                                    traits)> {
  let arguments = (ins Kiln_Tensor:$input);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def Kiln_AddOp : Kiln_BinaryOp<"add", [Commutative]> {
  let summary = "element-wise addition";
  let description = [{
    `result = lhs + rhs`, element by element; operands and result have one
    type (no broadcasting).

    ```mlir
    %x1 = kiln.add %x0, %attn : tensor<?x64xf32>
    ```
  }];
}

def Kiln_MulOp : Kiln_BinaryOp<"mul", [Commutative]> {
  let summary = "element-wise multiplication";
  let description = [{
    `result = lhs * rhs`, element by element; operands and result have one
    type (no broadcasting).

    ```mlir
    %h = kiln.mul %gate, %up : tensor<?x172xf32>
    ```
  }];
}

def Kiln_SiluOp : Kiln_UnaryOp<"silu"> {
  let summary = "element-wise sigmoid linear unit";
  let description = [{
    `result = x * sigmoid(x) = x / (1 + exp(-x))`.

    ```mlir
    %a = kiln.silu %g : tensor<?x172xf32>
    ```
  }];
}

def Kiln_GeluOp : Kiln_Op<"gelu", [Pure, SameOperandsAndResultType]> {
  let summary = "element-wise Gaussian error linear unit";
  let description = [{
    `result = x * Φ(x) = 0.5 x (1 + erf(x / √2))`; with `tanh`,
    `0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³)))` as in GPT-2.

    ```mlir
    %a = kiln.gelu %g : tensor<?x256xf32>
    %b = kiln.gelu %g tanh : tensor<?x256xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, UnitAttr:$tanh);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input (`tanh` $tanh^)? attr-dict `:` type($result)";
}

def Kiln_ReluOp : Kiln_UnaryOp<"relu"> {
  let summary = "element-wise rectified linear unit";
  let description = [{
    `result = max(x, 0)`. Folds `relu(relu(x))` to `relu(x)`.

    ```mlir
    %a = kiln.relu %g : tensor<?x256xf32>
    ```
  }];
  let hasFolder = 1;
}

def Kiln_ScaleOp : Kiln_Op<"scale", [Pure, SameOperandsAndResultType]> {
  let summary = "multiplication by a constant";
  let description = [{
    `result = factor * x`. Folds to `x` when `factor` is 1; two scales in a
    row combine into one.

    ```mlir
    %s = kiln.scale %scores by 0.125 : tensor<?x8x?xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, F64Attr:$factor);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input `by` $factor attr-dict `:` type($result)";
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Kiln_SoftmaxOp : Kiln_UnaryOp<"softmax"> {
  let summary = "softmax over the last dimension";
  let description = [{
    `result[..., i] = exp(x[..., i] - m) / sum_j exp(x[..., j] - m)` with
    `m = max_j x[..., j]`; the subtraction of the row maximum is part of the
    definition, so `-inf` entries (masked positions) give exact zeros and
    large logits do not overflow.

    ```mlir
    %p = kiln.softmax %scores : tensor<?x8x?xf32>
    ```
  }];
}

//===----------------------------------------------------------------------===//
// Normalization and rotary embedding
//===----------------------------------------------------------------------===//

def Kiln_RmsNormOp : Kiln_Op<"rms_norm",
    [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "root-mean-square normalization over the last dimension";
  let description = [{
    `result[..., i] = x[..., i] / sqrt(mean_j x[..., j]² + epsilon) *
    weight[i]`, with `weight` of shape `[D]` for an input `[..., D]`.

    ```mlir
    %h = kiln.rms_norm %x, %w epsilon = 1.0e-05
        : tensor<?x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_Tensor:$weight,
                       F64Attr:$epsilon);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `epsilon` `=` $epsilon attr-dict `:` type($input) `,`
    type($weight)
  }];
  let hasVerifier = 1;
}

def Kiln_LayerNormOp : Kiln_Op<"layer_norm",
    [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "layer normalization over the last dimension";
  let description = [{
    With `μ = mean_j x[..., j]` and `σ² = mean_j (x[..., j] - μ)²`:
    `result[..., i] = (x[..., i] - μ) / sqrt(σ² + epsilon) * weight[i]
    (+ bias[i])`.

    ```mlir
    %h = kiln.layer_norm %x, %w, %b epsilon = 1.0e-05
        : tensor<?x768xf32>, tensor<768xf32>, tensor<768xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_Tensor:$weight,
                       Optional<Kiln_Tensor>:$bias, F64Attr:$epsilon);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? `epsilon` `=` $epsilon attr-dict `:`
    type($input) `,` type($weight) (`,` type($bias)^)?
  }];
  let hasVerifier = 1;
}

def Kiln_RopeOp : Kiln_Op<"rope", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "rotary position embedding";
  let description = [{
    For an input `[T, H, d]` (d even) and each pair index `i < d/2`, rotates
    a pair `(a, b)` of elements of every head by the angle
    `positions[t] * f_i`, with `f_i = theta^(-2i/d)` (after `scaling`, if
    present): `a' = a cos - b sin`, `b' = a sin + b cos`. The `layout` names
    the pair: `adjacent` is `(2i, 2i+1)` (llama2.c, GGUF); `halves` is
    `(i, i + d/2)` (Hugging Face). A `factors` scaling has one factor per
    pair: `d/2` of them.

    ```mlir
    %qr = kiln.rope %q, %positions layout<adjacent> theta = 1.0e+04
        : tensor<?x8x8xf32>, tensor<?xi32>
    %kr = kiln.rope %k, %positions layout<halves> theta = 5.0e+05
        scaling<llama3, factor = 8.0, low_freq_factor = 1.0,
                high_freq_factor = 4.0, original_context = 8192>
        : tensor<?x8x128xf32>, tensor<?xi32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_IndexTensor:$positions,
                       Kiln_RopeLayoutAttr:$layout, F64Attr:$theta,
                       OptionalAttr<Kiln_RopeScalingAttr>:$scaling);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $positions `layout` `` $layout `theta` `=` $theta
    (`scaling` `` $scaling^)? attr-dict `:` type($input) `,` type($positions)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// View ops
//===----------------------------------------------------------------------===//

def Kiln_ReshapeOp : Kiln_Op<"reshape", [Pure]> {
  let summary = "change of shape that keeps the token dimension";
  let description = [{
    Reinterprets the row-major elements of `input` with the result shape. Both
    shapes must have the same number of dynamic dimensions and the same
    product of static dimensions, so the number of elements per token is
    preserved whatever `T` is. Folds away when the types are equal, and
    `reshape(reshape(x))` becomes one reshape.

    ```mlir
    %heads = kiln.reshape %q : tensor<?x64xf32> -> tensor<?x8x8xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_TransposeOp : Kiln_Op<"transpose", [Pure]> {
  let summary = "permutation of dimensions";
  let description = [{
    `result[i_p0, ..., i_pn] = input[i_0, ..., i_n]` where
    `result.shape[j] = input.shape[permutation[j]]`. Folds away for the
    identity permutation; two transposes in a row compose into one.

    ```mlir
    %t = kiln.transpose %x permutation = [1, 0, 2]
        : tensor<?x8x16xf32> -> tensor<8x?x16xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $input `permutation` `=` $permutation attr-dict `:` type($input) `->`
    type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_SplitOp : Kiln_Op<"split", [Pure]> {
  let summary = "division of a tensor into consecutive slices along an axis";
  let description = [{
    Cuts `input` along `axis` into as many slices as there are results, in
    order; the slice sizes are the results' sizes along `axis`, which add up
    to the input's. Other dimensions are unchanged. A split with one result
    folds to its input.

    ```mlir
    %q, %k, %v = kiln.split %qkv axis = 1
        : tensor<?x128xf32> -> tensor<?x64xf32>, tensor<?x32xf32>,
          tensor<?x32xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, I64Attr:$axis);
  let results = (outs Variadic<Kiln_Tensor>:$results);
  let assemblyFormat = [{
    $input `axis` `=` $axis attr-dict `:` type($input) `->` type($results)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_ConcatOp : Kiln_Op<"concat", [Pure]> {
  let summary = "joining of tensors along an axis";
  let description = [{
    Places the inputs one after another along `axis`; other dimensions agree.
    A concat of one input folds to it, and a concat of all results of a
    `kiln.split` along the same axis, in order, folds to the split's input.

    Weights may be concatenated too, block-quantized ones included (the QKV
    fusion packs `W_q`, `W_k` and `W_v` this way). A block-quantized concat
    must not be along the last axis: its rows are whole blocks, and packing
    whole rows keeps every block intact and in place.

    ```mlir
    %qk = kiln.concat %q, %k axis = 1
        : tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x96xf32>
    %wqkv = kiln.concat %wq, %wk, %wv axis = 0
        : tensor<64x64x!kiln.q8_0>, tensor<32x64x!kiln.q8_0>,
          tensor<32x64x!kiln.q8_0> -> tensor<128x64x!kiln.q8_0>
    ```
  }];
  let arguments = (ins Variadic<Kiln_WeightTensor>:$inputs, I64Attr:$axis);
  let results = (outs Kiln_WeightTensor:$result);
  let assemblyFormat = [{
    $inputs `axis` `=` $axis attr-dict `:` type($inputs) `->` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// KV cache
//===----------------------------------------------------------------------===//

def Kiln_KVAppendOp : Kiln_Op<"kv_append", [Pure,
    AllTypesMatch<["cache", "result"]>, AllTypesMatch<["keys", "values"]>,
    AllTypesMatch<["seq_ids", "positions"]>]> {
  let summary = "write of a step's keys and values into the KV cache";
  let description = [{
    For every token `t` of the step, stores `keys[t]` and `values[t]`
    (`[Hkv, d]` each) at `(layer, seq_ids[t], positions[t])`, converting to
    the cache's element type, and returns the updated cache. Entries of other
    sequences and positions are unchanged.

    ```mlir
    %c1 = kiln.kv_append %c0[0] keys %k values %v seqs %seq positions %pos
        : !kiln.kv_cache<layers = 5, kv_heads = 4, head_dim = 8, f32>,
          tensor<?x4x8xf32>, tensor<?xi32>
    ```
  }];
  let arguments = (ins Kiln_KVCache:$cache, I64Attr:$layer,
                       Kiln_Tensor:$keys, Kiln_Tensor:$values,
                       Kiln_IndexTensor:$seq_ids, Kiln_IndexTensor:$positions);
  let results = (outs Kiln_KVCache:$result);
  let assemblyFormat = [{
    $cache `[` $layer `]` `keys` $keys `values` $values `seqs` $seq_ids
    `positions` $positions attr-dict `:` type($cache) `,` type($keys) `,`
    type($positions)
  }];
  let hasVerifier = 1;
}

def Kiln_KVReadOp : Kiln_Op<"kv_read", [Pure,
    AllTypesMatch<["seq_ids", "positions"]>]> {
  let summary = "read of the cached keys and values each token attends over";
  let description = [{
    With `S = max_t positions[t] + 1`: `keys[t, s]` and `values[t, s]`
    (`[Hkv, d]` each) are the cache entries at `(layer, seq_ids[t], s)` for
    `s < S`, converted to the result element type. Positions a sequence has
    not written read as zero; attention masks them (`s > positions[t]`).

    ```mlir
    %k, %v = kiln.kv_read %c1[0] seqs %seq positions %pos
        : !kiln.kv_cache<layers = 5, kv_heads = 4, head_dim = 8, f32>,
          tensor<?xi32> -> tensor<?x?x4x8xf32>, tensor<?x?x4x8xf32>
    ```
  }];
  let arguments = (ins Kiln_KVCache:$cache, I64Attr:$layer,
                       Kiln_IndexTensor:$seq_ids, Kiln_IndexTensor:$positions);
  let results = (outs Kiln_Tensor:$keys, Kiln_Tensor:$values);
  let assemblyFormat = [{
    $cache `[` $layer `]` `seqs` $seq_ids `positions` $positions attr-dict `:`
    type($cache) `,` type($positions) `->` type(results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Attention pieces
//===----------------------------------------------------------------------===//

def Kiln_AttentionScoresOp : Kiln_Op<"attention_scores", [Pure]> {
  let summary = "query-key dot products of grouped-query attention";
  let description = [{
    For `query` `[T, H, d]` and `keys` `[T, S, Hkv, d]` with `H` a multiple
    of `Hkv` (`g = H / Hkv` query heads share a key/value head):
    `result[t, h, s] = sum_i query[t, h, i] * keys[t, s, h / g, i]`.

    ```mlir
    %s = kiln.attention_scores %q, %k
        : tensor<?x8x8xf32>, tensor<?x?x4x8xf32> -> tensor<?x8x?xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$query, Kiln_Tensor:$keys);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $query `,` $keys attr-dict `:` type($query) `,` type($keys) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def Kiln_AttentionMaskOp : Kiln_Op<"attention_mask",
    [Pure, AllTypesMatch<["scores", "result"]>]> {
  let summary = "causal and sliding-window mask of attention scores";
  let description = [{
    `result[t, h, s] = -inf` if `s > positions[t]`, or, with a `window` `W`,
    if `s <= positions[t] - W` (each token sees itself and the `W - 1`
    positions before it, as in Mistral); otherwise `scores[t, h, s]`.

    ```mlir
    %m = kiln.attention_mask %s, %pos : tensor<?x8x?xf32>, tensor<?xi32>
    %w = kiln.attention_mask %s, %pos window = 4096
        : tensor<?x32x?xf32>, tensor<?xi32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$scores, Kiln_IndexTensor:$positions,
                       OptionalAttr<I64Attr>:$window);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $scores `,` $positions (`window` `=` $window^)? attr-dict `:`
    type($scores) `,` type($positions)
  }];
  let hasVerifier = 1;
}

def Kiln_AttentionOutputOp : Kiln_Op<"attention_output", [Pure]> {
  let summary = "probability-weighted sum of values in grouped-query attention";
  let description = [{
    For `probs` `[T, H, S]` and `values` `[T, S, Hkv, d]` with `g = H / Hkv`:
    `result[t, h, i] = sum_s probs[t, h, s] * values[t, s, h / g, i]`.

    ```mlir
    %o = kiln.attention_output %p, %v
        : tensor<?x8x?xf32>, tensor<?x?x4x8xf32> -> tensor<?x8x8xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$probs, Kiln_Tensor:$values);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $probs `,` $values attr-dict `:` type($probs) `,` type($values) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Fused ops
//===----------------------------------------------------------------------===//

def Kiln_AttentionOp : Kiln_Op<"attention", [Pure,
    AllTypesMatch<["query", "result"]>,
    AllTypesMatch<["seq_ids", "positions"]>]> {
  let summary = "fused causal grouped-query attention over the KV cache";
  let description = [{
    `softmax(mask(scale · Q·Kᵀ)) · V` per token and query head, where `K` and
    `V` are this layer's cached entries of the token's sequence (query head
    `h` reads key/value head `h / (H / Hkv)`), the mask is causal
    (`s <= positions[t]`) and, with `window` `W`, also `s > positions[t] - W`.
    It equals this chain of unfused ops:

    ```
    %k, %v = kiln.kv_read %cache[layer] seqs %seq positions %pos
    %s = kiln.attention_scores %q, %k
    %m = kiln.attention_mask (kiln.scale %s by scale), %pos [window]
    %o = kiln.attention_output (kiln.softmax %m), %v
    ```

    Implementations may compute the softmax online (a running maximum and
    sum over blocks of positions, rescaling partial sums), which matches the
    definition up to rounding; they never materialize `[T, H, S]` scores.

    ```mlir
    %o = kiln.attention %q, %c1[0] seqs %seq positions %pos scale = 0.35355339059327373
        : tensor<?x8x8xf32>,
          !kiln.kv_cache<layers = 5, kv_heads = 4, head_dim = 8, f32>,
          tensor<?xi32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$query, Kiln_KVCache:$cache,
                       I64Attr:$layer, Kiln_IndexTensor:$seq_ids,
                       Kiln_IndexTensor:$positions, F64Attr:$scale,
                       OptionalAttr<I64Attr>:$window);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $query `,` $cache `[` $layer `]` `seqs` $seq_ids `positions` $positions
    `scale` `=` $scale (`window` `=` $window^)? attr-dict `:` type($query) `,`
    type($cache) `,` type($positions)
  }];
  let hasVerifier = 1;
}

def Kiln_FusedMatmulOp : Kiln_Op<"fused_matmul",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "matrix multiplication with an rms_norm prologue and a bias, "
                "activation and residual epilogue";
  let description = [{
    `result = act(x'·weightᵀ + bias) + residual`, each part optional, where
    `x' = rms_norm(input, norm_weight, norm_epsilon)` when the prologue is
    present and `x' = input` otherwise (see `kiln.matmul` for the weight
    layout and `kiln.rms_norm` for the norm). Without a prologue, an
    activation and a residual it canonicalizes to `kiln.matmul`.

    ```mlir
    %x1 = kiln.fused_matmul %att, %wo residual %x0
        : (tensor<?x64xf32>, tensor<64x64xf32>, tensor<?x64xf32>)
        -> tensor<?x64xf32>
    %h = kiln.fused_matmul %x, %w1 bias %b1 activation<gelu>
        : (tensor<?x768xf32>, tensor<3072x768xf32>, tensor<3072xf32>)
        -> tensor<?x3072xf32>
    %qkv = kiln.fused_matmul %x rms_norm(%g, epsilon = 1.0e-05), %wqkv
        : (tensor<?x64xf32>, tensor<64xf32>, tensor<192x64xf32>)
        -> tensor<?x192xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_WeightTensor:$weight,
                       Optional<Kiln_Tensor>:$bias,
                       Optional<Kiln_Tensor>:$residual,
                       OptionalAttr<Kiln_ActivationAttr>:$activation,
                       Optional<Kiln_Tensor>:$norm_weight,
                       OptionalAttr<F64Attr>:$norm_epsilon);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $input (`rms_norm` `(` $norm_weight^ `,` `epsilon` `=` $norm_epsilon `)`)?
    `,` $weight (`bias` $bias^)? (`activation` `` $activation^)?
    (`residual` $residual^)? attr-dict `:` functional-type(operands, results)
  }];
  let builders = [
    // The epilogue-only form, which most rules create.
    OpBuilder<(ins "::mlir::Type":$result, "::mlir::Value":$input,
                   "::mlir::Value":$weight, "::mlir::Value":$bias,
                   "::mlir::Value":$residual,
                   "::kiln::ActivationAttr":$activation), [{
      build($_builder, $_state, result, input, weight, bias, residual,
            activation, /*norm_weight=*/::mlir::Value(),
            /*norm_epsilon=*/::mlir::FloatAttr());
    }]>
  ];
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Kiln_SwigluOp : Kiln_Op<"swiglu", [Pure, AllTypesMatch<["gate", "up"]>]> {
  let summary = "gated SiLU feed-forward projection with an optional rms_norm "
                "prologue";
  let description = [{
    `result = silu(x'·gateᵀ) ⊙ (x'·upᵀ)` for weights `gate` and `up` of
    shape `[F, D]` (llama2.c's `w1` and `w3`), giving `[T, F]`; `x'` is
    `rms_norm(input, norm_weight, norm_epsilon)` when the prologue is
    present, `input` otherwise.

    ```mlir
    %h = kiln.swiglu %x, %w1, %w3
        : tensor<?x64xf32>, tensor<172x64xf32> -> tensor<?x172xf32>
    %h = kiln.swiglu %x rms_norm(%g : tensor<64xf32>, epsilon = 1.0e-05),
        %w1, %w3 : tensor<?x64xf32>, tensor<172x64xf32> -> tensor<?x172xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_WeightTensor:$gate,
                       Kiln_WeightTensor:$up,
                       Optional<Kiln_Tensor>:$norm_weight,
                       OptionalAttr<F64Attr>:$norm_epsilon);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $input (`rms_norm` `(` $norm_weight^ `:` type($norm_weight) `,` `epsilon`
    `=` $norm_epsilon `)`)? `,` $gate `,` $up attr-dict `:` type($input) `,`
    type($gate) `->` type($result)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Type":$result, "::mlir::Value":$input,
                   "::mlir::Value":$gate, "::mlir::Value":$up), [{
      build($_builder, $_state, result, input, gate, up,
            /*norm_weight=*/::mlir::Value(),
            /*norm_epsilon=*/::mlir::FloatAttr());
    }]>
  ];
  let hasVerifier = 1;
}

#endif // KILN_IR_KILNOPS_TD
