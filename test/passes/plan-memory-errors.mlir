// RUN: kiln-opt %s -split-input-file --kiln-plan-memory -verify-diagnostics
// RUN: not kiln-opt %s -split-input-file --kiln-plan-memory="max-tokens=0" 2>&1 | FileCheck %s --check-prefix=TOKENS

// What kiln-plan-memory refuses, each with a message saying why.

// T and R are known only through the step contract's arguments.
// expected-error @+1 {{kiln-plan-memory plans kiln.step functions (docs/step-contract.md); @not_a_step is not one}}
func.func @not_a_step(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %y = kiln.silu %x : tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

// An unranked activation has no size.
module attributes {kiln.weights_source = #kiln.weights_source<gguf, "m.gguf">} {
  kiln.weight_decl @emb : tensor<8x16xf32>
  func.func @unranked(%tokens: tensor<?xi32>, %positions: tensor<?xi32>,
                      %seq_ids: tensor<?xi32>, %logit_rows: tensor<?xi32>,
                      %cache: !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      -> (tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      attributes {kiln.step} {
    %emb = kiln.weight @emb : tensor<8x16xf32>
    %x = kiln.embedding %emb[%tokens] : tensor<8x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    // expected-error @+1 {{result #0 is an unranked tensor; the memory plan sizes activations from their ranked types}}
    %u = tensor.cast %x : tensor<?x16xf32> to tensor<*xf32>
    %r = tensor.cast %u : tensor<*xf32> to tensor<?x16xf32>
    %logits = kiln.matmul %r, %emb : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
    return %logits, %cache : tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>
  }
}

// -----

// A dynamic dimension that is neither T, R nor S cannot be bounded.
module attributes {kiln.weights_source = #kiln.weights_source<gguf, "m.gguf">} {
  kiln.weight_decl @emb : tensor<8x16xf32>
  func.func @unbounded_dimension(%tokens: tensor<?xi32>, %positions: tensor<?xi32>,
                                 %seq_ids: tensor<?xi32>, %logit_rows: tensor<?xi32>,
                                 %cache: !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      -> (tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      attributes {kiln.step} {
    %emb = kiln.weight @emb : tensor<8x16xf32>
    %c0 = arith.constant 0 : index
    %n = tensor.dim %tokens, %c0 : tensor<?xi32>
    // expected-error @+1 {{cannot bound dynamic dimension 0 of result #0 ('tensor<?x16xf32>'): the memory plan knows the step's token count T, its logit-row count R and cached-position counts S, and this is none of them}}
    %e = tensor.empty(%n) : tensor<?x16xf32>
    %logits = kiln.matmul %e, %emb : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
    return %logits, %cache : tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>
  }
}

// -----

// The cached positions a step reads are bounded by the context length only.
module attributes {kiln.weights_source = #kiln.weights_source<gguf, "m.gguf">} {
  kiln.weight_decl @emb : tensor<8x16xf32>
  func.func @no_context_length(%tokens: tensor<?xi32>, %positions: tensor<?xi32>,
                               %seq_ids: tensor<?xi32>, %logit_rows: tensor<?xi32>,
                               %cache: !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      -> (tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      attributes {kiln.step} {
    %emb = kiln.weight @emb : tensor<8x16xf32>
    // expected-error @+1 {{dynamic dimension 1 of result #0 counts cached positions, and the step function has no kiln.context_length to bound it (or pass context-length=N to kiln-plan-memory)}}
    %k, %v = kiln.kv_read %cache[0] seqs %seq_ids positions %positions
        : !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>, tensor<?xi32> -> tensor<?x?x4x4xf32>, tensor<?x?x4x4xf32>
    %x = kiln.embedding %emb[%tokens] : tensor<8x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %logits = kiln.matmul %x, %emb : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
    return %logits, %cache : tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>
  }
}

// -----

// A step needs at least one token. (This step is valid at the default
// max-tokens; its only tensors do not depend on the step's arguments, so it
// has no activations.)
// TOKENS: error: kiln-plan-memory needs max-tokens >= 1 and context-length >= 0, got max-tokens=0 context-length=0
func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>,
                %seq_ids: tensor<?xi32>, %logit_rows: tensor<?xi32>,
                %cache: !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
    -> (tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
    attributes {kiln.step} {
  %logits = tensor.empty() : tensor<4x8xf32>
  %l = tensor.cast %logits : tensor<4x8xf32> to tensor<?x8xf32>
  return %l, %cache : tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>
}
