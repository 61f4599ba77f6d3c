// RUN: kiln-opt %s -split-input-file --kiln-fuse-qkv | FileCheck %s

// The Q, K and V projections of one input become one matmul over the packed
// weights, split into the three results. The weights are referenced as the
// importer emits them, each right before its matmul; the fused matmul goes
// right after the last one, and nothing moves. 8 query heads and 4
// key/value heads of size 8, as in TinyStories 260K.

// CHECK-LABEL: func @qkv_gqa
// CHECK-SAME: (%[[X:[a-zA-Z0-9]+]]: tensor<?x64xf32>)
// CHECK: %[[WQ:.+]] = kiln.weight @blk.0.attn_q.weight
// CHECK-NEXT: %[[WK:.+]] = kiln.weight @blk.0.attn_k.weight
// CHECK-NEXT: %[[WV:.+]] = kiln.weight @blk.0.attn_v.weight
// CHECK-NEXT: %[[W:.+]] = kiln.concat %[[WQ]], %[[WK]], %[[WV]] axis = 0 : tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32> -> tensor<128x64xf32>
// CHECK-NEXT: %[[QKV:.+]] = kiln.matmul %[[X]], %[[W]] : (tensor<?x64xf32>, tensor<128x64xf32>) -> tensor<?x128xf32>
// CHECK-NEXT: %[[S:.+]]:3 = kiln.split %[[QKV]] axis = 1 : tensor<?x128xf32> -> tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32>
// CHECK-NOT: kiln.matmul
// CHECK: kiln.reshape %[[S]]#0 : tensor<?x64xf32> -> tensor<?x8x8xf32>
// CHECK-NEXT: kiln.reshape %[[S]]#1 : tensor<?x32xf32> -> tensor<?x4x8xf32>
// CHECK-NEXT: kiln.reshape %[[S]]#2 : tensor<?x32xf32> -> tensor<?x4x8xf32>
module attributes {kiln.weights_source = #kiln.weights_source<gguf, "m.gguf">} {
  kiln.weight_decl @"blk.0.attn_q.weight" : tensor<64x64xf32>
  kiln.weight_decl @"blk.0.attn_k.weight" : tensor<32x64xf32>
  kiln.weight_decl @"blk.0.attn_v.weight" : tensor<32x64xf32>
  func.func @qkv_gqa(%h: tensor<?x64xf32>)
      -> (tensor<?x8x8xf32>, tensor<?x4x8xf32>, tensor<?x4x8xf32>) {
    %wq = kiln.weight @"blk.0.attn_q.weight" : tensor<64x64xf32>
    %q = kiln.matmul %h, %wq
        : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
    %wk = kiln.weight @"blk.0.attn_k.weight" : tensor<32x64xf32>
    %k = kiln.matmul %h, %wk
        : (tensor<?x64xf32>, tensor<32x64xf32>) -> tensor<?x32xf32>
    %wv = kiln.weight @"blk.0.attn_v.weight" : tensor<32x64xf32>
    %v = kiln.matmul %h, %wv
        : (tensor<?x64xf32>, tensor<32x64xf32>) -> tensor<?x32xf32>
    %qh = kiln.reshape %q : tensor<?x64xf32> -> tensor<?x8x8xf32>
    %kh = kiln.reshape %k : tensor<?x32xf32> -> tensor<?x4x8xf32>
    %vh = kiln.reshape %v : tensor<?x32xf32> -> tensor<?x4x8xf32>
    return %qh, %kh, %vh : tensor<?x8x8xf32>, tensor<?x4x8xf32>, tensor<?x4x8xf32>
  }
}

// -----

// Qwen2-style biases are packed like the weights; static token counts stay.

// CHECK-LABEL: func @qwen2_biases
// CHECK-SAME: (%[[X:[a-zA-Z0-9]+]]: tensor<5x16xf32>, %[[WQ:[a-zA-Z0-9]+]]: tensor<16x16xf32>, %[[BQ:[a-zA-Z0-9]+]]: tensor<16xf32>, %[[WK:[a-zA-Z0-9]+]]: tensor<8x16xf32>, %[[BK:[a-zA-Z0-9]+]]: tensor<8xf32>, %[[WV:[a-zA-Z0-9]+]]: tensor<8x16xf32>, %[[BV:[a-zA-Z0-9]+]]: tensor<8xf32>)
// CHECK-NEXT: %[[W:.+]] = kiln.concat %[[WQ]], %[[WK]], %[[WV]] axis = 0 : {{.*}} -> tensor<32x16xf32>
// CHECK-NEXT: %[[B:.+]] = kiln.concat %[[BQ]], %[[BK]], %[[BV]] axis = 0 : tensor<16xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<32xf32>
// CHECK-NEXT: %[[QKV:.+]] = kiln.matmul %[[X]], %[[W]] bias %[[B]] : (tensor<5x16xf32>, tensor<32x16xf32>, tensor<32xf32>) -> tensor<5x32xf32>
// CHECK-NEXT: %[[S:.+]]:3 = kiln.split %[[QKV]] axis = 1 : tensor<5x32xf32> -> tensor<5x16xf32>, tensor<5x8xf32>, tensor<5x8xf32>
// CHECK-NOT: kiln.matmul
// CHECK-NEXT: return %[[S]]#0, %[[S]]#1, %[[S]]#2
func.func @qwen2_biases(%x: tensor<5x16xf32>,
                        %wq: tensor<16x16xf32>, %bq: tensor<16xf32>,
                        %wk: tensor<8x16xf32>, %bk: tensor<8xf32>,
                        %wv: tensor<8x16xf32>, %bv: tensor<8xf32>)
    -> (tensor<5x16xf32>, tensor<5x8xf32>, tensor<5x8xf32>) {
  %q = kiln.matmul %x, %wq bias %bq
      : (tensor<5x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> tensor<5x16xf32>
  %k = kiln.matmul %x, %wk bias %bk
      : (tensor<5x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<5x8xf32>
  %v = kiln.matmul %x, %wv bias %bv
      : (tensor<5x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<5x8xf32>
  return %q, %k, %v : tensor<5x16xf32>, tensor<5x8xf32>, tensor<5x8xf32>
}

// -----

// Block-quantized weights are packed whole rows at a time, still quantized.

// CHECK-LABEL: func @q8_0_weights
// CHECK-NEXT: %[[W:.+]] = kiln.concat %{{.*}}, %{{.*}}, %{{.*}} axis = 0 : tensor<64x64x!kiln.q8_0>, tensor<32x64x!kiln.q8_0>, tensor<32x64x!kiln.q8_0> -> tensor<128x64x!kiln.q8_0>
// CHECK-NEXT: kiln.matmul %{{.*}}, %[[W]] : (tensor<?x64xf32>, tensor<128x64x!kiln.q8_0>) -> tensor<?x128xf32>
// CHECK-NEXT: kiln.split
// CHECK-NOT: kiln.matmul
func.func @q8_0_weights(%x: tensor<?x64xf32>, %wq: tensor<64x64x!kiln.q8_0>,
                        %wk: tensor<32x64x!kiln.q8_0>, %wv: tensor<32x64x!kiln.q8_0>)
    -> (tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32>) {
  %q = kiln.matmul %x, %wq
      : (tensor<?x64xf32>, tensor<64x64x!kiln.q8_0>) -> tensor<?x64xf32>
  %k = kiln.matmul %x, %wk
      : (tensor<?x64xf32>, tensor<32x64x!kiln.q8_0>) -> tensor<?x32xf32>
  %v = kiln.matmul %x, %wv
      : (tensor<?x64xf32>, tensor<32x64x!kiln.q8_0>) -> tensor<?x32xf32>
  return %q, %k, %v : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32>
}

// -----

// Run alone, the pass also packs a feed-forward's gate and up projections
// (in the kiln-fusion pipeline, kiln-fuse-swiglu has taken them first).

// CHECK-LABEL: func @gate_up_when_alone
// CHECK-NEXT: %[[W:.+]] = kiln.concat %{{.*}}, %{{.*}} axis = 0 : tensor<172x64xf32>, tensor<172x64xf32> -> tensor<344x64xf32>
// CHECK-NEXT: %[[GU:.+]] = kiln.matmul %{{.*}}, %[[W]]
// CHECK-NEXT: %[[S:.+]]:2 = kiln.split %[[GU]] axis = 1 : tensor<?x344xf32> -> tensor<?x172xf32>, tensor<?x172xf32>
// CHECK-NEXT: %[[A:.+]] = kiln.silu %[[S]]#0
// CHECK-NEXT: kiln.mul %[[A]], %[[S]]#1
func.func @gate_up_when_alone(%x: tensor<?x64xf32>, %w1: tensor<172x64xf32>,
                              %w3: tensor<172x64xf32>) -> tensor<?x172xf32> {
  %gate = kiln.matmul %x, %w1
      : (tensor<?x64xf32>, tensor<172x64xf32>) -> tensor<?x172xf32>
  %act = kiln.silu %gate : tensor<?x172xf32>
  %up = kiln.matmul %x, %w3
      : (tensor<?x64xf32>, tensor<172x64xf32>) -> tensor<?x172xf32>
  %h = kiln.mul %act, %up : tensor<?x172xf32>
  return %h : tensor<?x172xf32>
}

// -----

// One projection of a value has nothing to be fused with.

// CHECK-LABEL: func @no_fuse_single_matmul
// CHECK-NEXT: kiln.matmul
// CHECK-NEXT: return
// CHECK-NOT: kiln.concat
func.func @no_fuse_single_matmul(%x: tensor<?x64xf32>, %w: tensor<64x64xf32>)
    -> tensor<?x64xf32> {
  %y = kiln.matmul %x, %w
      : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// Only the query projection has a bias: a packed bias would need zeros for
// the others, which the rule does not invent.

// CHECK-LABEL: func @no_fuse_mixed_bias
// CHECK-NEXT: kiln.matmul %{{.*}}, %{{.*}} bias
// CHECK-NEXT: kiln.matmul
// CHECK-NEXT: return
// CHECK-NOT: kiln.concat
func.func @no_fuse_mixed_bias(%x: tensor<?x16xf32>, %wq: tensor<16x16xf32>,
                              %bq: tensor<16xf32>, %wk: tensor<8x16xf32>)
    -> (tensor<?x16xf32>, tensor<?x8xf32>) {
  %q = kiln.matmul %x, %wq bias %bq
      : (tensor<?x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> tensor<?x16xf32>
  %k = kiln.matmul %x, %wk
      : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
  return %q, %k : tensor<?x16xf32>, tensor<?x8xf32>
}

// -----

// An f16 and a q8_0 weight cannot be packed into one tensor.

// CHECK-LABEL: func @no_fuse_different_weight_types
// CHECK-NEXT: kiln.matmul
// CHECK-NEXT: kiln.matmul
// CHECK-NEXT: return
// CHECK-NOT: kiln.concat
func.func @no_fuse_different_weight_types(%x: tensor<?x64xf32>,
                                          %wq: tensor<64x64xf16>,
                                          %wk: tensor<32x64x!kiln.q8_0>)
    -> (tensor<?x64xf32>, tensor<?x32xf32>) {
  %q = kiln.matmul %x, %wq
      : (tensor<?x64xf32>, tensor<64x64xf16>) -> tensor<?x64xf32>
  %k = kiln.matmul %x, %wk
      : (tensor<?x64xf32>, tensor<32x64x!kiln.q8_0>) -> tensor<?x32xf32>
  return %q, %k : tensor<?x64xf32>, tensor<?x32xf32>
}

// -----

// The query is used before the key weight exists: no single point follows
// every operand and precedes every use, and the rule moves nothing.

// CHECK-LABEL: func @no_fuse_use_before_operand
// CHECK-NEXT: kiln.matmul
// CHECK-NEXT: kiln.relu
// CHECK-NEXT: arith.constant
// CHECK-NEXT: kiln.matmul
// CHECK-NOT: kiln.concat
func.func @no_fuse_use_before_operand(%x: tensor<2x4xf32>, %wq: tensor<4x4xf32>)
    -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %q = kiln.matmul %x, %wq
      : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %r = kiln.relu %q : tensor<2x4xf32>
  %wk = arith.constant dense<1.0> : tensor<4x4xf32>
  %k = kiln.matmul %x, %wk
      : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  return %r, %k : tensor<2x4xf32>, tensor<2x4xf32>
}
