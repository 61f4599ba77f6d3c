// RUN: kiln-opt %s -split-input-file --kiln-fuse-attention | FileCheck %s
// Decomposing first changes nothing: fusion is the inverse of decomposition.
// RUN: kiln-opt %s -split-input-file --kiln-decompose-attention \
// RUN:   --kiln-fuse-attention | FileCheck %s

// The unfused chain over one cache read becomes kiln.attention; 8 query heads
// share 4 key/value heads.

// CHECK-LABEL: func @causal_gqa
// CHECK-SAME: (%[[Q:[a-zA-Z0-9]+]]: tensor<?x8x8xf32>, %[[C:[a-zA-Z0-9]+]]: !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f16>, %[[SEQ:[a-zA-Z0-9]+]]: tensor<?xi32>, %[[POS:[a-zA-Z0-9]+]]: tensor<?xi32>)
// CHECK-NEXT: %[[O:.+]] = kiln.attention %[[Q]], %[[C]][1] seqs %[[SEQ]] positions %[[POS]] scale = 0.35355339059327373 : tensor<?x8x8xf32>, !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f16>, tensor<?xi32>
// CHECK-NOT: kiln.kv_read
// CHECK-NOT: kiln.softmax
// CHECK-NEXT: return %[[O]]
func.func @causal_gqa(%q: tensor<?x8x8xf32>,
                      %c: !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f16>,
                      %seq: tensor<?xi32>, %pos: tensor<?xi32>) -> tensor<?x8x8xf32> {
  %k, %v = kiln.kv_read %c[1] seqs %seq positions %pos
      : !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f16>, tensor<?xi32>
      -> tensor<?x?x4x8xf32>, tensor<?x?x4x8xf32>
  %s = kiln.attention_scores %q, %k
      : tensor<?x8x8xf32>, tensor<?x?x4x8xf32> -> tensor<?x8x?xf32>
  %ss = kiln.scale %s by 0.35355339059327373 : tensor<?x8x?xf32>
  %m = kiln.attention_mask %ss, %pos : tensor<?x8x?xf32>, tensor<?xi32>
  %p = kiln.softmax %m : tensor<?x8x?xf32>
  %o = kiln.attention_output %p, %v
      : tensor<?x8x?xf32>, tensor<?x?x4x8xf32> -> tensor<?x8x8xf32>
  return %o : tensor<?x8x8xf32>
}

// -----

// The mask's window is carried over; static token counts are kept.

// CHECK-LABEL: func @sliding_window
// CHECK-NEXT: %[[O:.+]] = kiln.attention %{{.*}}, %{{.*}}[0] seqs %{{.*}} positions %{{.*}} scale = 2.500000e-01 window = 4096 : tensor<3x4x16xf32>
// CHECK-NOT: kiln.attention_mask
// CHECK-NEXT: return %[[O]]
func.func @sliding_window(%q: tensor<3x4x16xf32>,
                          %c: !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 16, f32>,
                          %seq: tensor<3xi32>, %pos: tensor<3xi32>) -> tensor<3x4x16xf32> {
  %k, %v = kiln.kv_read %c[0] seqs %seq positions %pos
      : !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 16, f32>, tensor<3xi32>
      -> tensor<3x?x2x16xf32>, tensor<3x?x2x16xf32>
  %s = kiln.attention_scores %q, %k
      : tensor<3x4x16xf32>, tensor<3x?x2x16xf32> -> tensor<3x4x?xf32>
  %ss = kiln.scale %s by 0.25 : tensor<3x4x?xf32>
  %m = kiln.attention_mask %ss, %pos window = 4096 : tensor<3x4x?xf32>, tensor<3xi32>
  %p = kiln.softmax %m : tensor<3x4x?xf32>
  %o = kiln.attention_output %p, %v
      : tensor<3x4x?xf32>, tensor<3x?x2x16xf32> -> tensor<3x4x16xf32>
  return %o : tensor<3x4x16xf32>
}

// -----

// Without a kiln.scale (a canonicalizer folds `scale by 1.0` away) the scale
// is 1.

// CHECK-LABEL: func @missing_scale
// CHECK-NEXT: %[[O:.+]] = kiln.attention {{.*}} scale = 1.000000e+00 : tensor<?x2x4xf32>
// CHECK-NOT: kiln.attention_scores
// CHECK-NEXT: return %[[O]]
func.func @missing_scale(%q: tensor<?x2x4xf32>,
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

// The cache read stays while something else still reads its keys.

// CHECK-LABEL: func @read_kept_for_other_users
// CHECK-NEXT: %[[K:.+]], %{{.+}} = kiln.kv_read
// CHECK-NEXT: %[[O:.+]] = kiln.attention
// CHECK-NOT: kiln.softmax
// CHECK-NEXT: return %[[O]], %[[K]]
func.func @read_kept_for_other_users(%q: tensor<?x2x4xf32>,
                                     %c: !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>,
                                     %seq: tensor<?xi32>, %pos: tensor<?xi32>)
    -> (tensor<?x2x4xf32>, tensor<?x?x2x4xf32>) {
  %k, %v = kiln.kv_read %c[0] seqs %seq positions %pos
      : !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>, tensor<?xi32>
      -> tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>
  %s = kiln.attention_scores %q, %k
      : tensor<?x2x4xf32>, tensor<?x?x2x4xf32> -> tensor<?x2x?xf32>
  %ss = kiln.scale %s by 0.5 : tensor<?x2x?xf32>
  %m = kiln.attention_mask %ss, %pos : tensor<?x2x?xf32>, tensor<?xi32>
  %p = kiln.softmax %m : tensor<?x2x?xf32>
  %o = kiln.attention_output %p, %v
      : tensor<?x2x?xf32>, tensor<?x?x2x4xf32> -> tensor<?x2x4xf32>
  return %o, %k : tensor<?x2x4xf32>, tensor<?x?x2x4xf32>
}

// -----

// An already fused op is left alone (and, in the second RUN line, decomposed
// and fused back to the same op).

// CHECK-LABEL: func @fused_already
// CHECK-NEXT: kiln.attention %{{.*}}, %{{.*}}[1] seqs %{{.*}} positions %{{.*}} scale = 1.250000e-01 window = 16 : tensor<?x6x8xf32>
// CHECK-NEXT: return
func.func @fused_already(%q: tensor<?x6x8xf32>,
                         %c: !kiln.kv_cache<layers = 2, kv_heads = 3, head_dim = 8, bf16>,
                         %seq: tensor<?xi32>, %pos: tensor<?xi32>) -> tensor<?x6x8xf32> {
  %o = kiln.attention %q, %c[1] seqs %seq positions %pos scale = 0.125 window = 16
      : tensor<?x6x8xf32>, !kiln.kv_cache<layers = 2, kv_heads = 3, head_dim = 8, bf16>, tensor<?xi32>
  return %o : tensor<?x6x8xf32>
}

// -----

// The scores are also returned, so they must be materialized anyway: fusing
// would compute them twice.

// CHECK-LABEL: func @no_fuse_intermediate_two_users
// CHECK: kiln.kv_read
// CHECK: kiln.softmax
// CHECK: kiln.attention_output
// CHECK-NOT: kiln.attention %
func.func @no_fuse_intermediate_two_users(%q: tensor<?x2x4xf32>,
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
  %o = kiln.attention_output %p, %v
      : tensor<?x2x?xf32>, tensor<?x?x2x4xf32> -> tensor<?x2x4xf32>
  return %o, %s : tensor<?x2x4xf32>, tensor<?x2x?xf32>
}

// -----

// Keys and values come from reads of different layers: no single cache
// entry describes them.

// CHECK-LABEL: func @no_fuse_different_reads
// CHECK: kiln.kv_read %{{.*}}[0]
// CHECK: kiln.kv_read %{{.*}}[1]
// CHECK: kiln.attention_output
// CHECK-NOT: kiln.attention %
func.func @no_fuse_different_reads(%q: tensor<?x2x4xf32>,
                                   %c: !kiln.kv_cache<layers = 2, kv_heads = 2, head_dim = 4, f32>,
                                   %seq: tensor<?xi32>, %pos: tensor<?xi32>) -> tensor<?x2x4xf32> {
  %k, %v0 = kiln.kv_read %c[0] seqs %seq positions %pos
      : !kiln.kv_cache<layers = 2, kv_heads = 2, head_dim = 4, f32>, tensor<?xi32>
      -> tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>
  %k1, %v = kiln.kv_read %c[1] seqs %seq positions %pos
      : !kiln.kv_cache<layers = 2, kv_heads = 2, head_dim = 4, f32>, tensor<?xi32>
      -> tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>
  %s = kiln.attention_scores %q, %k
      : tensor<?x2x4xf32>, tensor<?x?x2x4xf32> -> tensor<?x2x?xf32>
  %ss = kiln.scale %s by 0.5 : tensor<?x2x?xf32>
  %m = kiln.attention_mask %ss, %pos : tensor<?x2x?xf32>, tensor<?xi32>
  %p = kiln.softmax %m : tensor<?x2x?xf32>
  %o = kiln.attention_output %p, %v
      : tensor<?x2x?xf32>, tensor<?x?x2x4xf32> -> tensor<?x2x4xf32>
  return %o : tensor<?x2x4xf32>
}

// -----

// The mask uses other positions than the cache read; kiln.attention has one
// positions operand for both.

// CHECK-LABEL: func @no_fuse_mask_positions_differ
// CHECK: kiln.kv_read
// CHECK: kiln.attention_mask
// CHECK: kiln.attention_output
// CHECK-NOT: kiln.attention %
func.func @no_fuse_mask_positions_differ(%q: tensor<?x2x4xf32>,
                                         %c: !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>,
                                         %seq: tensor<?xi32>, %pos: tensor<?xi32>,
                                         %mask_pos: tensor<?xi32>) -> tensor<?x2x4xf32> {
  %k, %v = kiln.kv_read %c[0] seqs %seq positions %pos
      : !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>, tensor<?xi32>
      -> tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>
  %s = kiln.attention_scores %q, %k
      : tensor<?x2x4xf32>, tensor<?x?x2x4xf32> -> tensor<?x2x?xf32>
  %ss = kiln.scale %s by 0.5 : tensor<?x2x?xf32>
  %m = kiln.attention_mask %ss, %mask_pos : tensor<?x2x?xf32>, tensor<?xi32>
  %p = kiln.softmax %m : tensor<?x2x?xf32>
  %o = kiln.attention_output %p, %v
      : tensor<?x2x?xf32>, tensor<?x?x2x4xf32> -> tensor<?x2x4xf32>
  return %o : tensor<?x2x4xf32>
}
