// RUN: kiln-opt %s -split-input-file -verify-diagnostics

// KV cache ops and attention: layers exist, entries have the cache's head
// count and size, query heads are a multiple of key/value heads (GQA), and
// per-token operands agree on the token count.

func.func @append_layer(%c: !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f32>,
                        %k: tensor<?x4x8xf32>, %s: tensor<?xi32>) {
  // expected-error @+1 {{layer 2 is out of range for a cache of 2 layers}}
  %0 = kiln.kv_append %c[2] keys %k values %k seqs %s positions %s
      : !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f32>, tensor<?x4x8xf32>, tensor<?xi32>
  return
}

// -----

func.func @append_heads(%c: !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f32>,
                        %k: tensor<?x2x8xf32>, %s: tensor<?xi32>) {
  // expected-error @+1 {{keys have 2 heads of size 8 but the cache holds 4 heads of size 8}}
  %0 = kiln.kv_append %c[0] keys %k values %k seqs %s positions %s
      : !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f32>, tensor<?x2x8xf32>, tensor<?xi32>
  return
}

// -----

func.func @append_head_dim(%c: !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f32>,
                           %k: tensor<?x4x16xf32>, %s: tensor<?xi32>) {
  // expected-error @+1 {{keys have 4 heads of size 16 but the cache holds 4 heads of size 8}}
  %0 = kiln.kv_append %c[0] keys %k values %k seqs %s positions %s
      : !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f32>, tensor<?x4x16xf32>, tensor<?xi32>
  return
}

// -----

func.func @append_keys_values_differ(%c: !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f32>,
                                     %k: tensor<?x4x8xf32>, %v: tensor<?x4x8xf16>, %s: tensor<?xi32>) {
  // expected-error @+1 {{all of {keys, values} have same type}}
  %0 = "kiln.kv_append"(%c, %k, %v, %s, %s) {layer = 0 : i64}
      : (!kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f32>, tensor<?x4x8xf32>, tensor<?x4x8xf16>, tensor<?xi32>, tensor<?xi32>)
      -> !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f32>
  return
}

// -----

func.func @append_token_count(%c: !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f32>,
                              %k: tensor<5x4x8xf32>, %s: tensor<4xi32>) {
  // expected-error @+1 {{seq_ids has 4 entries but there are 5 tokens}}
  %0 = kiln.kv_append %c[0] keys %k values %k seqs %s positions %s
      : !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f32>, tensor<5x4x8xf32>, tensor<4xi32>
  return
}

// -----

func.func @append_result_cache(%c: !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f32>,
                               %k: tensor<?x4x8xf32>, %s: tensor<?xi32>) {
  // expected-error @+1 {{all of {cache, result} have same type}}
  %0 = "kiln.kv_append"(%c, %k, %k, %s, %s) {layer = 0 : i64}
      : (!kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f32>, tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<?xi32>, tensor<?xi32>)
      -> !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f16>
  return
}

// -----

func.func @append_not_a_cache(%c: tensor<4xf32>, %k: tensor<?x4x8xf32>, %s: tensor<?xi32>) {
  // expected-error @+1 {{operand #0 must be KV cache, but got 'tensor<4xf32>'}}
  %0 = "kiln.kv_append"(%c, %k, %k, %s, %s) {layer = 0 : i64}
      : (tensor<4xf32>, tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<?xi32>, tensor<?xi32>) -> tensor<4xf32>
  return
}

// -----

func.func @read_heads(%c: !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f32>, %s: tensor<?xi32>) {
  // expected-error @+1 {{keys have 8 heads of size 8 but the cache holds 4 heads of size 8}}
  %k, %v = kiln.kv_read %c[0] seqs %s positions %s
      : !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f32>, tensor<?xi32>
      -> tensor<?x?x8x8xf32>, tensor<?x?x8x8xf32>
  return
}

// -----

func.func @read_layer(%c: !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f32>, %s: tensor<?xi32>) {
  // expected-error @+1 {{layer -1 is out of range for a cache of 2 layers}}
  %k, %v = kiln.kv_read %c[-1] seqs %s positions %s
      : !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f32>, tensor<?xi32>
      -> tensor<?x?x4x8xf32>, tensor<?x?x4x8xf32>
  return
}

// -----

func.func @read_values_differ(%c: !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f32>, %s: tensor<?xi32>) {
  // expected-error @+1 {{values type 'tensor<?x?x4x8xf16>' differs from keys type 'tensor<?x?x4x8xf32>'}}
  %k, %v = kiln.kv_read %c[0] seqs %s positions %s
      : !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f32>, tensor<?xi32>
      -> tensor<?x?x4x8xf32>, tensor<?x?x4x8xf16>
  return
}

// -----

func.func @scores_gqa(%q: tensor<?x8x8xf32>, %k: tensor<?x?x3x8xf32>) {
  // expected-error @+1 {{query heads (8) must be a multiple of key/value heads (3)}}
  %0 = kiln.attention_scores %q, %k : tensor<?x8x8xf32>, tensor<?x?x3x8xf32> -> tensor<?x8x?xf32>
  return
}

// -----

func.func @scores_head_size(%q: tensor<?x8x16xf32>, %k: tensor<?x?x4x8xf32>) {
  // expected-error @+1 {{query head size 16 differs from key head size 8}}
  %0 = kiln.attention_scores %q, %k : tensor<?x8x16xf32>, tensor<?x?x4x8xf32> -> tensor<?x8x?xf32>
  return
}

// -----

func.func @scores_tokens(%q: tensor<3x8x8xf32>, %k: tensor<2x?x4x8xf32>) {
  // expected-error @+1 {{query has 3 tokens but keys have 2}}
  %0 = kiln.attention_scores %q, %k : tensor<3x8x8xf32>, tensor<2x?x4x8xf32> -> tensor<3x8x?xf32>
  return
}

// -----

func.func @scores_result(%q: tensor<?x8x8xf32>, %k: tensor<?x?x4x8xf32>) {
  // expected-error @+1 {{result shape [?, 4, ?] does not follow from the operands; expected [?, 8, ?]}}
  %0 = kiln.attention_scores %q, %k : tensor<?x8x8xf32>, tensor<?x?x4x8xf32> -> tensor<?x4x?xf32>
  return
}

// -----

func.func @scores_dynamic_heads(%q: tensor<?x?x8xf32>, %k: tensor<?x?x4x8xf32>) {
  // expected-error @+1 {{head counts must be static, got ? query heads and 4 key/value heads}}
  %0 = kiln.attention_scores %q, %k : tensor<?x?x8xf32>, tensor<?x?x4x8xf32> -> tensor<?x?x?xf32>
  return
}

// -----

func.func @mask_window(%s: tensor<?x8x?xf32>, %pos: tensor<?xi32>) {
  // expected-error @+1 {{window must be positive, got 0}}
  %0 = kiln.attention_mask %s, %pos window = 0 : tensor<?x8x?xf32>, tensor<?xi32>
  return
}

// -----

func.func @mask_rank(%s: tensor<?x8xf32>, %pos: tensor<?xi32>) {
  // expected-error @+1 {{scores must have rank 3 [T, H, S], got 'tensor<?x8xf32>'}}
  %0 = kiln.attention_mask %s, %pos : tensor<?x8xf32>, tensor<?xi32>
  return
}

// -----

func.func @output_gqa(%p: tensor<?x6x?xf32>, %v: tensor<?x?x4x8xf32>) {
  // expected-error @+1 {{query heads (6) must be a multiple of key/value heads (4)}}
  %0 = kiln.attention_output %p, %v : tensor<?x6x?xf32>, tensor<?x?x4x8xf32> -> tensor<?x6x8xf32>
  return
}

// -----

func.func @output_positions(%p: tensor<?x8x5xf32>, %v: tensor<?x6x4x8xf32>) {
  // expected-error @+1 {{probs cover 5 positions but values have 6}}
  %0 = kiln.attention_output %p, %v : tensor<?x8x5xf32>, tensor<?x6x4x8xf32> -> tensor<?x8x8xf32>
  return
}

// -----

func.func @output_result(%p: tensor<?x8x?xf32>, %v: tensor<?x?x4x8xf32>) {
  // expected-error @+1 {{result shape [?, 8, 4] does not follow from the operands; expected [?, 8, 8]}}
  %0 = kiln.attention_output %p, %v : tensor<?x8x?xf32>, tensor<?x?x4x8xf32> -> tensor<?x8x4xf32>
  return
}

// -----

func.func @attention_gqa(%q: tensor<?x6x8xf32>, %c: !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 8, f32>, %s: tensor<?xi32>) {
  // expected-error @+1 {{query heads (6) must be a multiple of key/value heads (4)}}
  %0 = kiln.attention %q, %c[0] seqs %s positions %s scale = 0.125
      : tensor<?x6x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 8, f32>, tensor<?xi32>
  return
}

// -----

func.func @attention_head_size(%q: tensor<?x8x16xf32>, %c: !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 8, f32>, %s: tensor<?xi32>) {
  // expected-error @+1 {{query head size 16 differs from the cache's head size 8}}
  %0 = kiln.attention %q, %c[0] seqs %s positions %s scale = 0.125
      : tensor<?x8x16xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 8, f32>, tensor<?xi32>
  return
}

// -----

func.func @attention_layer(%q: tensor<?x8x8xf32>, %c: !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 8, f32>, %s: tensor<?xi32>) {
  // expected-error @+1 {{layer 1 is out of range for a cache of 1 layers}}
  %0 = kiln.attention %q, %c[1] seqs %s positions %s scale = 0.125
      : tensor<?x8x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 8, f32>, tensor<?xi32>
  return
}

// -----

func.func @attention_scale(%q: tensor<?x8x8xf32>, %c: !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 8, f32>, %s: tensor<?xi32>) {
  // expected-error @+1 {{scale must be positive}}
  %0 = kiln.attention %q, %c[0] seqs %s positions %s scale = 0.0
      : tensor<?x8x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 8, f32>, tensor<?xi32>
  return
}

// -----

func.func @attention_window(%q: tensor<?x8x8xf32>, %c: !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 8, f32>, %s: tensor<?xi32>) {
  // expected-error @+1 {{window must be positive, got -4}}
  %0 = kiln.attention %q, %c[0] seqs %s positions %s scale = 0.125 window = -4
      : tensor<?x8x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 8, f32>, tensor<?xi32>
  return
}

// -----

func.func @attention_positions(%q: tensor<2x8x8xf32>, %c: !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 8, f32>, %s: tensor<3xi32>) {
  // expected-error @+1 {{positions has 3 entries but there are 2 tokens}}
  %0 = kiln.attention %q, %c[0] seqs %s positions %s scale = 0.125
      : tensor<2x8x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 8, f32>, tensor<3xi32>
  return
}
