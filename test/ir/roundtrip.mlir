// RUN: kiln-opt %s -split-input-file | FileCheck %s
// Parse -> print -> parse -> print gives the same text:
// RUN: kiln-opt %s -split-input-file > %t.once.mlir
// RUN: kiln-opt %t.once.mlir -split-input-file > %t.twice.mlir
// RUN: diff %t.once.mlir %t.twice.mlir
// The generic form carries every attribute and type too:
// RUN: kiln-opt %s -split-input-file -mlir-print-op-generic \
// RUN:   | kiln-opt -split-input-file | FileCheck %s

// Every kiln type, attribute and op, in its custom assembly form.

// CHECK: module attributes {kiln.weights_source = #kiln.weights_source<gguf, "model.gguf">}
// CHECK: kiln.weight_decl @token_embd.weight : tensor<512x64xf16>
// CHECK: kiln.weight_decl @w_q8 : tensor<96x64x!kiln.q8_0>
// CHECK: kiln.weight_decl @w_q4 : tensor<96x64x!kiln.q4_0>
// CHECK: kiln.weight_decl @w_bf16 : tensor<96x64xbf16>
// CHECK-LABEL: func @weights
// CHECK: kiln.weight @token_embd.weight : tensor<512x64xf16>
// CHECK: kiln.weight @w_q8 : tensor<96x64x!kiln.q8_0>
// CHECK: kiln.weight @w_q4 : tensor<96x64x!kiln.q4_0>
// CHECK: kiln.weight @w_bf16 : tensor<96x64xbf16>
module attributes {kiln.weights_source = #kiln.weights_source<gguf, "model.gguf">} {
  kiln.weight_decl @"token_embd.weight" : tensor<512x64xf16>
  kiln.weight_decl @w_q8 : tensor<96x64x!kiln.q8_0>
  kiln.weight_decl @w_q4 : tensor<96x64x!kiln.q4_0>
  kiln.weight_decl @w_bf16 : tensor<96x64xbf16>
  func.func @weights() -> (tensor<512x64xf16>, tensor<96x64x!kiln.q8_0>,
                           tensor<96x64x!kiln.q4_0>, tensor<96x64xbf16>) {
    %e = kiln.weight @"token_embd.weight" : tensor<512x64xf16>
    %a = kiln.weight @w_q8 : tensor<96x64x!kiln.q8_0>
    %b = kiln.weight @w_q4 : tensor<96x64x!kiln.q4_0>
    %c = kiln.weight @w_bf16 : tensor<96x64xbf16>
    return %e, %a, %b, %c : tensor<512x64xf16>, tensor<96x64x!kiln.q8_0>,
                            tensor<96x64x!kiln.q4_0>, tensor<96x64xbf16>
  }
}

// -----

// The K-quant super-block types.
// CHECK-LABEL: func @k_quant_weights
// CHECK: kiln.weight @w_q4k : tensor<32x256x!kiln.q4_k>
// CHECK: kiln.weight @w_q5k : tensor<32x512x!kiln.q5_k>
// CHECK: kiln.weight @w_q6k : tensor<32x256x!kiln.q6_k>
module {
  kiln.weight_decl @w_q4k : tensor<32x256x!kiln.q4_k>
  kiln.weight_decl @w_q5k : tensor<32x512x!kiln.q5_k>
  kiln.weight_decl @w_q6k : tensor<32x256x!kiln.q6_k>
  func.func @k_quant_weights() -> (tensor<32x256x!kiln.q4_k>,
                                   tensor<32x512x!kiln.q5_k>,
                                   tensor<32x256x!kiln.q6_k>) {
    %a = kiln.weight @w_q4k : tensor<32x256x!kiln.q4_k>
    %b = kiln.weight @w_q5k : tensor<32x512x!kiln.q5_k>
    %c = kiln.weight @w_q6k : tensor<32x256x!kiln.q6_k>
    return %a, %b, %c : tensor<32x256x!kiln.q4_k>, tensor<32x512x!kiln.q5_k>,
                        tensor<32x256x!kiln.q6_k>
  }
}

// -----

// CHECK: #kiln.weights_source<llama2c, "stories260K.bin">
module attributes {kiln.weights_source = #kiln.weights_source<llama2c, "stories260K.bin">} {}

// -----

// CHECK: #kiln.weights_source<safetensors, "/models/Qwen2-0.5B">
module attributes {kiln.weights_source = #kiln.weights_source<safetensors, "/models/Qwen2-0.5B">} {}

// -----

// CHECK-LABEL: func @embedding_and_rows
// CHECK: kiln.embedding %{{.*}}[%{{.*}}] : tensor<512x64x!kiln.q8_0>, tensor<?xi32> -> tensor<?x64xf32>
// CHECK: kiln.gather_rows %{{.*}}[%{{.*}}] : tensor<?x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
func.func @embedding_and_rows(%table: tensor<512x64x!kiln.q8_0>,
                              %ids: tensor<?xi32>, %rows: tensor<?xi32>)
    -> tensor<?x64xf32> {
  %x = kiln.embedding %table[%ids]
      : tensor<512x64x!kiln.q8_0>, tensor<?xi32> -> tensor<?x64xf32>
  %y = kiln.gather_rows %x[%rows]
      : tensor<?x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// CHECK-LABEL: func @matmuls
// CHECK: kiln.matmul %{{.*}}, %{{.*}} : (tensor<?x64xf32>, tensor<96x64x!kiln.q4_0>) -> tensor<?x96xf32>
// CHECK: kiln.matmul %{{.*}}, %{{.*}} bias %{{.*}} : (tensor<?x64xf32>, tensor<96x64xf32>, tensor<96xf32>) -> tensor<?x96xf32>
// CHECK: kiln.fused_matmul %{{.*}}, %{{.*}} bias %{{.*}} activation<gelu_tanh> residual %{{.*}} : (tensor<?x64xf32>, tensor<96x64xf32>, tensor<96xf32>, tensor<?x96xf32>) -> tensor<?x96xf32>
// CHECK: kiln.fused_matmul %{{.*}}, %{{.*}} activation<silu> : (tensor<?x64xf32>, tensor<96x64xf32>) -> tensor<?x96xf32>
// CHECK: kiln.fused_matmul %{{.*}}, %{{.*}} residual %{{.*}} : (tensor<?x64xf32>, tensor<96x64xf32>, tensor<?x96xf32>) -> tensor<?x96xf32>
// CHECK: kiln.fused_matmul %{{.*}}, %{{.*}} bias %{{.*}} activation<relu> : (tensor<?x64xf32>, tensor<96x64xf32>, tensor<96xf32>) -> tensor<?x96xf32>
// CHECK: kiln.fused_matmul %{{.*}}, %{{.*}} activation<gelu> : (tensor<?x64xf32>, tensor<96x64xf32>) -> tensor<?x96xf32>
// CHECK: kiln.swiglu %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x64xf32>, tensor<96x64x!kiln.q8_0> -> tensor<?x96xf32>
// CHECK: kiln.fused_matmul %{{.*}} rms_norm(%{{.*}}, epsilon = 1.000000e-05), %{{.*}} bias %{{.*}} activation<silu> residual %{{.*}} : (tensor<?x64xf32>, tensor<96x64xf32>, tensor<96xf32>, tensor<?x96xf32>, tensor<64xf32>) -> tensor<?x96xf32>
// CHECK: kiln.swiglu %{{.*}} rms_norm(%{{.*}} : tensor<64xf32>, epsilon = 9.9999999999999995E-7), %{{.*}}, %{{.*}} : tensor<?x64xf32>, tensor<96x64x!kiln.q8_0> -> tensor<?x96xf32>
func.func @matmuls(%x: tensor<?x64xf32>, %wq: tensor<96x64x!kiln.q4_0>,
                   %w: tensor<96x64xf32>, %b: tensor<96xf32>,
                   %r: tensor<?x96xf32>, %g: tensor<96x64x!kiln.q8_0>,
                   %u: tensor<96x64x!kiln.q8_0>, %n: tensor<64xf32>) {
  %0 = kiln.matmul %x, %wq
      : (tensor<?x64xf32>, tensor<96x64x!kiln.q4_0>) -> tensor<?x96xf32>
  %1 = kiln.matmul %x, %w bias %b
      : (tensor<?x64xf32>, tensor<96x64xf32>, tensor<96xf32>) -> tensor<?x96xf32>
  %2 = kiln.fused_matmul %x, %w bias %b activation<gelu_tanh> residual %r
      : (tensor<?x64xf32>, tensor<96x64xf32>, tensor<96xf32>, tensor<?x96xf32>)
      -> tensor<?x96xf32>
  %3 = kiln.fused_matmul %x, %w activation<silu>
      : (tensor<?x64xf32>, tensor<96x64xf32>) -> tensor<?x96xf32>
  %4 = kiln.fused_matmul %x, %w residual %r
      : (tensor<?x64xf32>, tensor<96x64xf32>, tensor<?x96xf32>) -> tensor<?x96xf32>
  %5 = kiln.fused_matmul %x, %w bias %b activation<relu>
      : (tensor<?x64xf32>, tensor<96x64xf32>, tensor<96xf32>) -> tensor<?x96xf32>
  %6 = kiln.fused_matmul %x, %w activation<gelu>
      : (tensor<?x64xf32>, tensor<96x64xf32>) -> tensor<?x96xf32>
  %7 = kiln.swiglu %x, %g, %u
      : tensor<?x64xf32>, tensor<96x64x!kiln.q8_0> -> tensor<?x96xf32>
  %8 = kiln.fused_matmul %x rms_norm(%n, epsilon = 1.0e-05), %w bias %b
      activation<silu> residual %r
      : (tensor<?x64xf32>, tensor<96x64xf32>, tensor<96xf32>, tensor<?x96xf32>,
         tensor<64xf32>) -> tensor<?x96xf32>
  %9 = kiln.swiglu %x rms_norm(%n : tensor<64xf32>, epsilon = 1.0e-06), %g, %u
      : tensor<?x64xf32>, tensor<96x64x!kiln.q8_0> -> tensor<?x96xf32>
  return
}

// -----

// CHECK-LABEL: func @elementwise
// CHECK: kiln.add %{{.*}}, %{{.*}} : tensor<?x64xf32>
// CHECK: kiln.mul %{{.*}}, %{{.*}} : tensor<?x64xf32>
// CHECK: kiln.silu %{{.*}} : tensor<?x64xf32>
// CHECK: kiln.gelu %{{.*}} : tensor<?x64xf32>
// CHECK: kiln.gelu %{{.*}} tanh : tensor<?x64xf32>
// CHECK: kiln.relu %{{.*}} : tensor<?x64xf32>
// CHECK: kiln.scale %{{.*}} by 1.250000e-01 : tensor<?x64xf32>
// CHECK: kiln.softmax %{{.*}} : tensor<?x64xf32>
// CHECK: kiln.add %{{.*}}, %{{.*}} : tensor<?x64xbf16>
// CHECK: kiln.mul %{{.*}}, %{{.*}} : tensor<?x64xf16>
func.func @elementwise(%x: tensor<?x64xf32>, %y: tensor<?x64xf32>,
                       %b: tensor<?x64xbf16>, %h: tensor<?x64xf16>) {
  %0 = kiln.add %x, %y : tensor<?x64xf32>
  %1 = kiln.mul %0, %y : tensor<?x64xf32>
  %2 = kiln.silu %1 : tensor<?x64xf32>
  %3 = kiln.gelu %2 : tensor<?x64xf32>
  %4 = kiln.gelu %3 tanh : tensor<?x64xf32>
  %5 = kiln.relu %4 : tensor<?x64xf32>
  %6 = kiln.scale %5 by 0.125 : tensor<?x64xf32>
  %7 = kiln.softmax %6 : tensor<?x64xf32>
  %8 = kiln.add %b, %b : tensor<?x64xbf16>
  %9 = kiln.mul %h, %h : tensor<?x64xf16>
  return
}

// -----

// CHECK-LABEL: func @norms_and_rope
// CHECK: kiln.rms_norm %{{.*}}, %{{.*}} epsilon = 1.000000e-05 : tensor<?x64xf32>, tensor<64xf32>
// CHECK: kiln.layer_norm %{{.*}}, %{{.*}}, %{{.*}} epsilon = 9.9999999999999995E-7 : tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32>
// CHECK: kiln.layer_norm %{{.*}}, %{{.*}} epsilon = 1.000000e-05 : tensor<?x64xf32>, tensor<64xf32>
// CHECK: kiln.rope %{{.*}}, %{{.*}} layout<adjacent> theta = 1.000000e+04 : tensor<?x8x8xf32>, tensor<?xi32>
// CHECK: kiln.rope %{{.*}}, %{{.*}} layout<halves> theta = 1.000000e+06 scaling<linear, factor = 4.000000e+00> : tensor<?x8x8xf32>, tensor<?xi32>
// CHECK: kiln.rope %{{.*}}, %{{.*}} layout<halves> theta = 5.000000e+05 scaling<llama3, factor = 8.000000e+00, low_freq_factor = 1.000000e+00, high_freq_factor = 4.000000e+00, original_context = 8192> : tensor<?x8x8xf32>, tensor<?xi32>
// Per-pair factors keep every bit of their f32 value through text:
// CHECK: kiln.rope %{{.*}}, %{{.*}} layout<adjacent> theta = 5.000000e+05 scaling<factors, factor = 1.000000e+00, freq_factors = [1.000000e+00, 1.33766031, 5.000000e+00, 8.000000e+00]> : tensor<?x8x8xf32>, tensor<?xi32>
func.func @norms_and_rope(%x: tensor<?x64xf32>, %w: tensor<64xf32>,
                          %b: tensor<64xf32>, %q: tensor<?x8x8xf32>,
                          %pos: tensor<?xi32>) {
  %0 = kiln.rms_norm %x, %w epsilon = 1.0e-05 : tensor<?x64xf32>, tensor<64xf32>
  %1 = kiln.layer_norm %x, %w, %b epsilon = 1.0e-06
      : tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %2 = kiln.layer_norm %x, %w epsilon = 1.0e-05 : tensor<?x64xf32>, tensor<64xf32>
  %3 = kiln.rope %q, %pos layout<adjacent> theta = 1.0e+04
      : tensor<?x8x8xf32>, tensor<?xi32>
  %4 = kiln.rope %q, %pos layout<halves> theta = 1.0e+06
      scaling<linear, factor = 4.0> : tensor<?x8x8xf32>, tensor<?xi32>
  %5 = kiln.rope %q, %pos layout<halves> theta = 5.0e+05
      scaling<llama3, factor = 8.0, low_freq_factor = 1.0,
              high_freq_factor = 4.0, original_context = 8192>
      : tensor<?x8x8xf32>, tensor<?xi32>
  %6 = kiln.rope %q, %pos layout<adjacent> theta = 5.0e+05
      scaling<factors, factor = 1.0,
              freq_factors = [1.0, 1.33766031, 5.0, 8.0]>
      : tensor<?x8x8xf32>, tensor<?xi32>
  return
}

// -----

// CHECK-LABEL: func @views
// CHECK: kiln.reshape %{{.*}} : tensor<?x64xf32> -> tensor<?x8x8xf32>
// CHECK: kiln.transpose %{{.*}} permutation = [1, 0, 2] : tensor<?x8x8xf32> -> tensor<8x?x8xf32>
// CHECK: kiln.split %{{.*}} axis = 1 : tensor<?x128xf32> -> tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32>
// CHECK: kiln.concat %{{.*}}, %{{.*}}, %{{.*}} axis = 1 : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32> -> tensor<?x128xf32>
func.func @views(%x: tensor<?x64xf32>, %qkv: tensor<?x128xf32>) {
  %0 = kiln.reshape %x : tensor<?x64xf32> -> tensor<?x8x8xf32>
  %1 = kiln.transpose %0 permutation = [1, 0, 2]
      : tensor<?x8x8xf32> -> tensor<8x?x8xf32>
  %q, %k, %v = kiln.split %qkv axis = 1
      : tensor<?x128xf32> -> tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32>
  %2 = kiln.concat %q, %k, %v axis = 1
      : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32> -> tensor<?x128xf32>
  return
}

// -----

// Weights, block-quantized ones included, are packed along a leading axis.
// CHECK-LABEL: func @concat_weights
// CHECK: kiln.concat %{{.*}}, %{{.*}}, %{{.*}} axis = 0 : tensor<64x64x!kiln.q8_0>, tensor<32x64x!kiln.q8_0>, tensor<32x64x!kiln.q8_0> -> tensor<128x64x!kiln.q8_0>
func.func @concat_weights(%wq: tensor<64x64x!kiln.q8_0>,
                          %wk: tensor<32x64x!kiln.q8_0>,
                          %wv: tensor<32x64x!kiln.q8_0>)
    -> tensor<128x64x!kiln.q8_0> {
  %w = kiln.concat %wq, %wk, %wv axis = 0
      : tensor<64x64x!kiln.q8_0>, tensor<32x64x!kiln.q8_0>,
        tensor<32x64x!kiln.q8_0> -> tensor<128x64x!kiln.q8_0>
  return %w : tensor<128x64x!kiln.q8_0>
}

// -----

// CHECK-LABEL: func @attention_pieces
// CHECK-SAME: !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f16>
// CHECK: kiln.kv_append %{{.*}}[1] keys %{{.*}} values %{{.*}} seqs %{{.*}} positions %{{.*}} : !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f16>, tensor<?x4x8xf32>, tensor<?xi32>
// CHECK: kiln.kv_read %{{.*}}[1] seqs %{{.*}} positions %{{.*}} : !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f16>, tensor<?xi32> -> tensor<?x?x4x8xf32>, tensor<?x?x4x8xf32>
// CHECK: kiln.attention_scores %{{.*}}, %{{.*}} : tensor<?x8x8xf32>, tensor<?x?x4x8xf32> -> tensor<?x8x?xf32>
// CHECK: kiln.attention_mask %{{.*}}, %{{.*}} : tensor<?x8x?xf32>, tensor<?xi32>
// CHECK: kiln.attention_mask %{{.*}}, %{{.*}} window = 4096 : tensor<?x8x?xf32>, tensor<?xi32>
// CHECK: kiln.attention_output %{{.*}}, %{{.*}} : tensor<?x8x?xf32>, tensor<?x?x4x8xf32> -> tensor<?x8x8xf32>
// CHECK: kiln.attention %{{.*}}, %{{.*}}[1] seqs %{{.*}} positions %{{.*}} scale = 0.35355339059327373 : tensor<?x8x8xf32>, !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f16>, tensor<?xi32>
// CHECK: kiln.attention %{{.*}}, %{{.*}}[1] seqs %{{.*}} positions %{{.*}} scale = 1.250000e-01 window = 4096 : tensor<?x8x8xf32>, !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f16>, tensor<?xi32>
func.func @attention_pieces(
    %cache: !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f16>,
    %q: tensor<?x8x8xf32>, %k: tensor<?x4x8xf32>, %v: tensor<?x4x8xf32>,
    %seq: tensor<?xi32>, %pos: tensor<?xi32>)
    -> !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f16> {
  %c = kiln.kv_append %cache[1] keys %k values %v seqs %seq positions %pos
      : !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f16>,
        tensor<?x4x8xf32>, tensor<?xi32>
  %ck, %cv = kiln.kv_read %c[1] seqs %seq positions %pos
      : !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f16>,
        tensor<?xi32> -> tensor<?x?x4x8xf32>, tensor<?x?x4x8xf32>
  %s = kiln.attention_scores %q, %ck
      : tensor<?x8x8xf32>, tensor<?x?x4x8xf32> -> tensor<?x8x?xf32>
  %m = kiln.attention_mask %s, %pos : tensor<?x8x?xf32>, tensor<?xi32>
  %w = kiln.attention_mask %s, %pos window = 4096
      : tensor<?x8x?xf32>, tensor<?xi32>
  %o = kiln.attention_output %m, %cv
      : tensor<?x8x?xf32>, tensor<?x?x4x8xf32> -> tensor<?x8x8xf32>
  %f = kiln.attention %q, %c[1] seqs %seq positions %pos
      scale = 0.35355339059327373
      : tensor<?x8x8xf32>,
        !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f16>,
        tensor<?xi32>
  %fw = kiln.attention %q, %c[1] seqs %seq positions %pos scale = 0.125
      window = 4096
      : tensor<?x8x8xf32>,
        !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f16>,
        tensor<?xi32>
  return %c : !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f16>
}

// -----

// The step contract's signature and marker.
// CHECK-LABEL: func @step
// CHECK-SAME: (%{{.*}}: tensor<?xi32>, %{{.*}}: tensor<?xi32>, %{{.*}}: tensor<?xi32>, %{{.*}}: tensor<?xi32>, %{{.*}}: !kiln.kv_cache<layers = 1, kv_heads = 1, head_dim = 2, bf16>)
// CHECK-SAME: -> (tensor<?x16xf32>, !kiln.kv_cache<layers = 1, kv_heads = 1, head_dim = 2, bf16>)
// CHECK-SAME: attributes {kiln.context_length = 4096 : i64, kiln.step}
func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>,
                %seq_ids: tensor<?xi32>, %logit_rows: tensor<?xi32>,
                %cache: !kiln.kv_cache<layers = 1, kv_heads = 1, head_dim = 2, bf16>)
    -> (tensor<?x16xf32>, !kiln.kv_cache<layers = 1, kv_heads = 1, head_dim = 2, bf16>)
    attributes {kiln.step, kiln.context_length = 4096 : i64} {
  %logits = arith.constant dense<0.0> : tensor<1x16xf32>
  %dyn = tensor.cast %logits : tensor<1x16xf32> to tensor<?x16xf32>
  return %dyn, %cache : tensor<?x16xf32>, !kiln.kv_cache<layers = 1, kv_heads = 1, head_dim = 2, bf16>
}

// -----

// CHECK-LABEL: func @fuse_required
// CHECK: kiln.silu %{{.*}} {kiln.fuse_required} : tensor<?x4xf32>
func.func @fuse_required(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = kiln.silu %x {kiln.fuse_required} : tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
