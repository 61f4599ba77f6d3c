// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-explain-fusion \
// RUN:   --kiln-fuse-attention
// RUN: not kiln-opt %s -split-input-file --kiln-fuse-attention 2>&1 \
// RUN:   | FileCheck %s --check-prefix=ERR --implicit-check-not=remark

// --kiln-explain-fusion: one remark per kiln.attention_output that did not
// fuse, naming the failed precondition. With kiln.fuse_required on an op of
// the chain it is an error, with or without the flag (second RUN line, which
// also shows that there are no remarks without the flag).

// A chain that fuses is not explained.
func.func @fuses(%q: tensor<?x2x4xf32>,
                 %c: !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>,
                 %seq: tensor<?xi32>, %pos: tensor<?xi32>) -> tensor<?x2x4xf32> {
  %k, %v = kiln.kv_read %c[0] seqs %seq positions %pos
      : !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>, tensor<?xi32>
      -> tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>
  %s = kiln.attention_scores %q, %k
      : tensor<?x2x4xf32>, tensor<?x?x2x4xf32> -> tensor<?x2x?xf32>
  %m = kiln.attention_mask %s, %pos : tensor<?x2x?xf32>, tensor<?xi32>
  %p = kiln.softmax %m : tensor<?x2x?xf32>
  %o = kiln.attention_output %p, %v
      : tensor<?x2x?xf32>, tensor<?x?x2x4xf32> -> tensor<?x2x4xf32>
  return %o : tensor<?x2x4xf32>
}

// -----

func.func @probs_not_softmax(%p: tensor<?x2x?xf32>, %v: tensor<?x?x2x4xf32>)
    -> tensor<?x2x4xf32> {
  // expected-remark @+1 {{attention: the probabilities %arg0 are not a kiln.softmax}}
  %o = kiln.attention_output %p, %v
      : tensor<?x2x?xf32>, tensor<?x?x2x4xf32> -> tensor<?x2x4xf32>
  return %o : tensor<?x2x4xf32>
}

// -----

func.func @softmax_input_not_mask(%s: tensor<?x2x?xf32>, %v: tensor<?x?x2x4xf32>)
    -> tensor<?x2x4xf32> {
  %p = kiln.softmax %s : tensor<?x2x?xf32>
  // expected-remark @+1 {{attention: the softmax input %arg0 is not a kiln.attention_mask}}
  %o = kiln.attention_output %p, %v
      : tensor<?x2x?xf32>, tensor<?x?x2x4xf32> -> tensor<?x2x4xf32>
  return %o : tensor<?x2x4xf32>
}

// -----

func.func @mask_input_not_scores(%s: tensor<?x2x?xf32>, %v: tensor<?x?x2x4xf32>,
                                 %pos: tensor<?xi32>) -> tensor<?x2x4xf32> {
  %ss = kiln.scale %s by 0.5 : tensor<?x2x?xf32>
  %m = kiln.attention_mask %ss, %pos : tensor<?x2x?xf32>, tensor<?xi32>
  %p = kiln.softmax %m : tensor<?x2x?xf32>
  // expected-remark @+1 {{attention: the scores %arg0 are not a kiln.attention_scores}}
  %o = kiln.attention_output %p, %v
      : tensor<?x2x?xf32>, tensor<?x?x2x4xf32> -> tensor<?x2x4xf32>
  return %o : tensor<?x2x4xf32>
}

// -----

func.func @probs_two_users(%q: tensor<?x2x4xf32>,
                           %c: !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>,
                           %seq: tensor<?xi32>, %pos: tensor<?xi32>)
    -> (tensor<?x2x4xf32>, tensor<?x2x?xf32>) {
  %k, %v = kiln.kv_read %c[0] seqs %seq positions %pos
      : !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>, tensor<?xi32>
      -> tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>
  %s = kiln.attention_scores %q, %k
      : tensor<?x2x4xf32>, tensor<?x?x2x4xf32> -> tensor<?x2x?xf32>
  %m = kiln.attention_mask %s, %pos : tensor<?x2x?xf32>, tensor<?xi32>
  %p = kiln.softmax %m : tensor<?x2x?xf32>
  // expected-remark @+1 {{attention: %2 has 2 users}}
  %o = kiln.attention_output %p, %v
      : tensor<?x2x?xf32>, tensor<?x?x2x4xf32> -> tensor<?x2x4xf32>
  return %o, %p : tensor<?x2x4xf32>, tensor<?x2x?xf32>
}

// -----

func.func @scaled_two_users(%q: tensor<?x2x4xf32>,
                            %c: !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>,
                            %seq: tensor<?xi32>, %pos: tensor<?xi32>)
    -> (tensor<?x2x4xf32>, tensor<?x2x?xf32>) {
  %k, %v = kiln.kv_read %c[0] seqs %seq positions %pos
      : !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>, tensor<?xi32>
      -> tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>
  %s = kiln.attention_scores %q, %k
      : tensor<?x2x4xf32>, tensor<?x?x2x4xf32> -> tensor<?x2x?xf32>
  %ss = kiln.scale %s by 0.5 : tensor<?x2x?xf32>
  %m = kiln.attention_mask %ss, %pos : tensor<?x2x?xf32>, tensor<?xi32>
  %p = kiln.softmax %m : tensor<?x2x?xf32>
  // expected-remark @+1 {{attention: %1 has 2 users}}
  %o = kiln.attention_output %p, %v
      : tensor<?x2x?xf32>, tensor<?x?x2x4xf32> -> tensor<?x2x4xf32>
  return %o, %ss : tensor<?x2x4xf32>, tensor<?x2x?xf32>
}

// -----

func.func @keys_not_read(%q: tensor<?x2x4xf32>, %k: tensor<?x?x2x4xf32>,
                         %v: tensor<?x?x2x4xf32>, %pos: tensor<?xi32>)
    -> tensor<?x2x4xf32> {
  %s = kiln.attention_scores %q, %k
      : tensor<?x2x4xf32>, tensor<?x?x2x4xf32> -> tensor<?x2x?xf32>
  %m = kiln.attention_mask %s, %pos : tensor<?x2x?xf32>, tensor<?xi32>
  %p = kiln.softmax %m : tensor<?x2x?xf32>
  // expected-remark @+1 {{attention: the keys %arg1 are not the keys of a kiln.kv_read}}
  %o = kiln.attention_output %p, %v
      : tensor<?x2x?xf32>, tensor<?x?x2x4xf32> -> tensor<?x2x4xf32>
  return %o : tensor<?x2x4xf32>
}

// -----

func.func @keys_and_values_swapped(%q: tensor<?x2x4xf32>,
                                   %c: !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>,
                                   %seq: tensor<?xi32>, %pos: tensor<?xi32>)
    -> tensor<?x2x4xf32> {
  %k, %v = kiln.kv_read %c[0] seqs %seq positions %pos
      : !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>, tensor<?xi32>
      -> tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>
  %s = kiln.attention_scores %q, %v
      : tensor<?x2x4xf32>, tensor<?x?x2x4xf32> -> tensor<?x2x?xf32>
  %m = kiln.attention_mask %s, %pos : tensor<?x2x?xf32>, tensor<?xi32>
  %p = kiln.softmax %m : tensor<?x2x?xf32>
  // expected-remark @+1 {{attention: the keys %values are not the keys of a kiln.kv_read}}
  %o = kiln.attention_output %p, %k
      : tensor<?x2x?xf32>, tensor<?x?x2x4xf32> -> tensor<?x2x4xf32>
  return %o : tensor<?x2x4xf32>
}

// -----

func.func @different_reads(%q: tensor<?x2x4xf32>,
                           %c: !kiln.kv_cache<layers = 2, kv_heads = 2, head_dim = 4, f32>,
                           %seq: tensor<?xi32>, %pos: tensor<?xi32>)
    -> tensor<?x2x4xf32> {
  %k, %v0 = kiln.kv_read %c[0] seqs %seq positions %pos
      : !kiln.kv_cache<layers = 2, kv_heads = 2, head_dim = 4, f32>, tensor<?xi32>
      -> tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>
  %k1, %v = kiln.kv_read %c[1] seqs %seq positions %pos
      : !kiln.kv_cache<layers = 2, kv_heads = 2, head_dim = 4, f32>, tensor<?xi32>
      -> tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>
  %s = kiln.attention_scores %q, %k
      : tensor<?x2x4xf32>, tensor<?x?x2x4xf32> -> tensor<?x2x?xf32>
  %m = kiln.attention_mask %s, %pos : tensor<?x2x?xf32>, tensor<?xi32>
  %p = kiln.softmax %m : tensor<?x2x?xf32>
  // expected-remark @+1 {{attention: the keys %keys and the values %values_1 do not come from the same kiln.kv_read}}
  %o = kiln.attention_output %p, %v
      : tensor<?x2x?xf32>, tensor<?x?x2x4xf32> -> tensor<?x2x4xf32>
  return %o : tensor<?x2x4xf32>
}

// -----

func.func @mask_positions_differ(%q: tensor<?x2x4xf32>,
                                 %c: !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>,
                                 %seq: tensor<?xi32>, %pos: tensor<?xi32>,
                                 %mask_pos: tensor<?xi32>) -> tensor<?x2x4xf32> {
  %k, %v = kiln.kv_read %c[0] seqs %seq positions %pos
      : !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>, tensor<?xi32>
      -> tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>
  %s = kiln.attention_scores %q, %k
      : tensor<?x2x4xf32>, tensor<?x?x2x4xf32> -> tensor<?x2x?xf32>
  %m = kiln.attention_mask %s, %mask_pos : tensor<?x2x?xf32>, tensor<?xi32>
  %p = kiln.softmax %m : tensor<?x2x?xf32>
  // expected-remark @+1 {{attention: the mask reads positions %arg4, the cache read %arg3}}
  %o = kiln.attention_output %p, %v
      : tensor<?x2x?xf32>, tensor<?x?x2x4xf32> -> tensor<?x2x4xf32>
  return %o : tensor<?x2x4xf32>
}

// -----

// Dynamic head sizes let a query of head size 6 meet a cache of head size 4.
func.func @head_size_differs(%q: tensor<?x2x6xf32>,
                             %c: !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>,
                             %seq: tensor<?xi32>, %pos: tensor<?xi32>)
    -> tensor<?x2x6xf32> {
  %k, %v = kiln.kv_read %c[0] seqs %seq positions %pos
      : !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>, tensor<?xi32>
      -> tensor<?x?x2x?xf32>, tensor<?x?x2x?xf32>
  %s = kiln.attention_scores %q, %k
      : tensor<?x2x6xf32>, tensor<?x?x2x?xf32> -> tensor<?x2x?xf32>
  %m = kiln.attention_mask %s, %pos : tensor<?x2x?xf32>, tensor<?xi32>
  %p = kiln.softmax %m : tensor<?x2x?xf32>
  // expected-remark @+1 {{attention: the query head size 6 differs from the cache's 4}}
  %o = kiln.attention_output %p, %v
      : tensor<?x2x?xf32>, tensor<?x?x2x?xf32> -> tensor<?x2x6xf32>
  return %o : tensor<?x2x6xf32>
}

// -----

func.func @output_type_differs(%q: tensor<?x2x4xf32>,
                               %c: !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>,
                               %seq: tensor<?xi32>, %pos: tensor<?xi32>)
    -> tensor<5x2x4xf32> {
  %k, %v = kiln.kv_read %c[0] seqs %seq positions %pos
      : !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>, tensor<?xi32>
      -> tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>
  %s = kiln.attention_scores %q, %k
      : tensor<?x2x4xf32>, tensor<?x?x2x4xf32> -> tensor<?x2x?xf32>
  %m = kiln.attention_mask %s, %pos : tensor<?x2x?xf32>, tensor<?xi32>
  %p = kiln.softmax %m : tensor<?x2x?xf32>
  // expected-remark @+1 {{attention: the output type tensor<5x2x4xf32> differs from the query type tensor<?x2x4xf32>}}
  %o = kiln.attention_output %p, %v
      : tensor<?x2x?xf32>, tensor<?x?x2x4xf32> -> tensor<5x2x4xf32>
  return %o : tensor<5x2x4xf32>
}

// -----

func.func @scale_not_positive(%q: tensor<?x2x4xf32>,
                              %c: !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>,
                              %seq: tensor<?xi32>, %pos: tensor<?xi32>)
    -> tensor<?x2x4xf32> {
  %k, %v = kiln.kv_read %c[0] seqs %seq positions %pos
      : !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>, tensor<?xi32>
      -> tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>
  %s = kiln.attention_scores %q, %k
      : tensor<?x2x4xf32>, tensor<?x?x2x4xf32> -> tensor<?x2x?xf32>
  %ss = kiln.scale %s by -0.5 : tensor<?x2x?xf32>
  %m = kiln.attention_mask %ss, %pos : tensor<?x2x?xf32>, tensor<?xi32>
  %p = kiln.softmax %m : tensor<?x2x?xf32>
  // expected-remark @+1 {{attention: the scale factor -0.5 is not positive}}
  %o = kiln.attention_output %p, %v
      : tensor<?x2x?xf32>, tensor<?x?x2x4xf32> -> tensor<?x2x4xf32>
  return %o : tensor<?x2x4xf32>
}

// -----

// kiln.fuse_required on the root turns the remark into an error.
func.func @required_on_root(%q: tensor<?x2x4xf32>,
                            %c: !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>,
                            %seq: tensor<?xi32>, %pos: tensor<?xi32>)
    -> (tensor<?x2x4xf32>, tensor<?x2x?xf32>) {
  %k, %v = kiln.kv_read %c[0] seqs %seq positions %pos
      : !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>, tensor<?xi32>
      -> tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>
  %s = kiln.attention_scores %q, %k
      : tensor<?x2x4xf32>, tensor<?x?x2x4xf32> -> tensor<?x2x?xf32>
  %m = kiln.attention_mask %s, %pos : tensor<?x2x?xf32>, tensor<?xi32>
  %p = kiln.softmax %m : tensor<?x2x?xf32>
  // expected-error @+1 {{attention: %0 has 2 users (the candidate is marked kiln.fuse_required)}}
  %o = kiln.attention_output %p, %v {kiln.fuse_required}
      : tensor<?x2x?xf32>, tensor<?x?x2x4xf32> -> tensor<?x2x4xf32>
  return %o, %s : tensor<?x2x4xf32>, tensor<?x2x?xf32>
}
// ERR: error: attention: %0 has 2 users (the candidate is marked kiln.fuse_required)

// -----

// ...and so does kiln.fuse_required on any op of the chain; the error is
// reported at the root.
func.func @required_on_chain_op(%q: tensor<?x2x4xf32>,
                                %c: !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>,
                                %seq: tensor<?xi32>, %pos: tensor<?xi32>,
                                %mask_pos: tensor<?xi32>) -> tensor<?x2x4xf32> {
  %k, %v = kiln.kv_read %c[0] seqs %seq positions %pos
      : !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>, tensor<?xi32>
      -> tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>
  %s = kiln.attention_scores %q, %k {kiln.fuse_required}
      : tensor<?x2x4xf32>, tensor<?x?x2x4xf32> -> tensor<?x2x?xf32>
  %m = kiln.attention_mask %s, %mask_pos : tensor<?x2x?xf32>, tensor<?xi32>
  %p = kiln.softmax %m : tensor<?x2x?xf32>
  // expected-error @+1 {{attention: the mask reads positions %arg4, the cache read %arg3 (the candidate is marked kiln.fuse_required)}}
  %o = kiln.attention_output %p, %v
      : tensor<?x2x?xf32>, tensor<?x?x2x4xf32> -> tensor<?x2x4xf32>
  return %o : tensor<?x2x4xf32>
}
// ERR: error: attention: the mask reads positions %arg4, the cache read %arg3 (the candidate is marked kiln.fuse_required)
