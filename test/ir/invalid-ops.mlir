// RUN: kiln-opt %s -split-input-file -verify-diagnostics

// Embedding, matmuls, element-wise ops, norms and rotary embedding: each
// verifier rule, violated once.

func.func @embedding_table_rank(%t: tensor<512xf32>, %ids: tensor<?xi32>) {
  // expected-error @+1 {{table must have rank 2 [V, D], got 'tensor<512xf32>'}}
  %0 = kiln.embedding %t[%ids] : tensor<512xf32>, tensor<?xi32> -> tensor<?x64xf32>
  return
}

// -----

func.func @embedding_result_width(%t: tensor<512x64xf32>, %ids: tensor<?xi32>) {
  // expected-error @+1 {{result shape [?, 32] does not follow from the operands; expected [?, 64]}}
  %0 = kiln.embedding %t[%ids] : tensor<512x64xf32>, tensor<?xi32> -> tensor<?x32xf32>
  return
}

// -----

func.func @embedding_ids_not_i32(%t: tensor<512x64xf32>, %ids: tensor<?xi64>) {
  // expected-error @+1 {{operand #1 must be 1-D tensor of i32 values, but got 'tensor<?xi64>'}}
  %0 = kiln.embedding %t[%ids] : tensor<512x64xf32>, tensor<?xi64> -> tensor<?x64xf32>
  return
}

// -----

func.func @gather_rows_element_type(%x: tensor<?x64xf32>, %r: tensor<?xi32>) {
  // expected-error @+1 {{result element type 'f16' differs from input element type 'f32'}}
  %0 = kiln.gather_rows %x[%r] : tensor<?x64xf32>, tensor<?xi32> -> tensor<?x64xf16>
  return
}

// -----

func.func @gather_rows_count(%x: tensor<?x64xf32>, %r: tensor<3xi32>) {
  // expected-error @+1 {{result shape [4, 64] does not follow from the operands; expected [3, 64]}}
  %0 = kiln.gather_rows %x[%r] : tensor<?x64xf32>, tensor<3xi32> -> tensor<4x64xf32>
  return
}

// -----

func.func @matmul_inner_dims(%x: tensor<?x64xf32>, %w: tensor<96x32xf32>) {
  // expected-error @+1 {{inner dimensions disagree: input [M, K] has K = 64 but weight [N, K] has K = 32}}
  %0 = kiln.matmul %x, %w : (tensor<?x64xf32>, tensor<96x32xf32>) -> tensor<?x96xf32>
  return
}

// -----

func.func @matmul_result_shape(%x: tensor<?x64xf32>, %w: tensor<96x64xf32>) {
  // expected-error @+1 {{result shape [?, 64] does not follow from the operands; expected [?, 96]}}
  %0 = kiln.matmul %x, %w : (tensor<?x64xf32>, tensor<96x64xf32>) -> tensor<?x64xf32>
  return
}

// -----

func.func @matmul_input_rank(%x: tensor<?x8x8xf32>, %w: tensor<96x64xf32>) {
  // expected-error @+1 {{input must have rank 2 [M, K], got 'tensor<?x8x8xf32>'}}
  %0 = kiln.matmul %x, %w : (tensor<?x8x8xf32>, tensor<96x64xf32>) -> tensor<?x96xf32>
  return
}

// -----

func.func @matmul_weight_rank(%x: tensor<?x64xf32>, %w: tensor<64xf32>) {
  // expected-error @+1 {{weight must have rank 2 [N, K], got 'tensor<64xf32>'}}
  %0 = kiln.matmul %x, %w : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x96xf32>
  return
}

// -----

func.func @matmul_result_element_type(%x: tensor<?x64xf32>, %w: tensor<96x64xf16>) {
  // expected-error @+1 {{result element type 'f16' differs from input element type 'f32'}}
  %0 = kiln.matmul %x, %w : (tensor<?x64xf32>, tensor<96x64xf16>) -> tensor<?x96xf16>
  return
}

// -----

func.func @matmul_bias_size(%x: tensor<?x64xf32>, %w: tensor<96x64xf32>, %b: tensor<64xf32>) {
  // expected-error @+1 {{bias has 64 elements but the result has N = 96}}
  %0 = kiln.matmul %x, %w bias %b : (tensor<?x64xf32>, tensor<96x64xf32>, tensor<64xf32>) -> tensor<?x96xf32>
  return
}

// -----

func.func @matmul_bias_element_type(%x: tensor<?x64xf32>, %w: tensor<96x64xf32>, %b: tensor<96xbf16>) {
  // expected-error @+1 {{bias element type 'bf16' differs from result element type 'f32'}}
  %0 = kiln.matmul %x, %w bias %b : (tensor<?x64xf32>, tensor<96x64xf32>, tensor<96xbf16>) -> tensor<?x96xf32>
  return
}

// -----

func.func @fused_matmul_residual(%x: tensor<?x64xf32>, %w: tensor<96x64xf32>, %r: tensor<?x64xf32>) {
  // expected-error @+1 {{residual type 'tensor<?x64xf32>' differs from result type 'tensor<?x96xf32>'}}
  %0 = kiln.fused_matmul %x, %w residual %r : (tensor<?x64xf32>, tensor<96x64xf32>, tensor<?x64xf32>) -> tensor<?x96xf32>
  return
}

// -----

func.func @fused_matmul_inner_dims(%x: tensor<?x64xf32>, %w: tensor<96x48xf32>) {
  // expected-error @+1 {{inner dimensions disagree: input [M, K] has K = 64 but weight [N, K] has K = 48}}
  %0 = kiln.fused_matmul %x, %w activation<silu> : (tensor<?x64xf32>, tensor<96x48xf32>) -> tensor<?x96xf32>
  return
}

// -----

func.func @fused_matmul_unknown_activation(%x: tensor<?x64xf32>, %w: tensor<96x64xf32>) {
  // expected-error @+2 {{expected ::kiln::Activation to be one of: silu, gelu, gelu_tanh, relu}}
  // expected-error @+1 {{failed to parse Kiln_ActivationAttr parameter 'value'}}
  %0 = kiln.fused_matmul %x, %w activation<tanh> : (tensor<?x64xf32>, tensor<96x64xf32>) -> tensor<?x96xf32>
  return
}

// -----

func.func @fused_matmul_prologue_width(%x: tensor<?x64xf32>, %w: tensor<96x64xf32>, %n: tensor<32xf32>) {
  // expected-error @+1 {{norm_weight has 32 elements but the normalized dimension has 64}}
  %0 = kiln.fused_matmul %x rms_norm(%n, epsilon = 1.0e-05), %w : (tensor<?x64xf32>, tensor<96x64xf32>, tensor<32xf32>) -> tensor<?x96xf32>
  return
}

// -----

func.func @fused_matmul_prologue_without_epsilon(%x: tensor<?x64xf32>, %w: tensor<96x64xf32>, %n: tensor<64xf32>) {
  // expected-error @+1 {{an rms_norm prologue needs both norm_weight and norm_epsilon}}
  %0 = "kiln.fused_matmul"(%x, %w, %n) <{operandSegmentSizes = array<i32: 1, 1, 0, 0, 1>}> : (tensor<?x64xf32>, tensor<96x64xf32>, tensor<64xf32>) -> tensor<?x96xf32>
  return
}

// -----

func.func @swiglu_prologue_negative_epsilon(%x: tensor<?x64xf32>, %g: tensor<96x64xf32>, %n: tensor<64xf32>) {
  // expected-error @+1 {{epsilon must be finite and non-negative}}
  %0 = kiln.swiglu %x rms_norm(%n : tensor<64xf32>, epsilon = -1.0), %g, %g : tensor<?x64xf32>, tensor<96x64xf32> -> tensor<?x96xf32>
  return
}

// -----

func.func @swiglu_gate_up_differ(%x: tensor<?x64xf32>, %g: tensor<96x64xf32>, %u: tensor<96x64xf16>) {
  // expected-error @+1 {{all of {gate, up} have same type}}
  %0 = "kiln.swiglu"(%x, %g, %u) : (tensor<?x64xf32>, tensor<96x64xf32>, tensor<96x64xf16>) -> tensor<?x96xf32>
  return
}

// -----

func.func @swiglu_inner_dims(%x: tensor<?x64xf32>, %g: tensor<96x32xf32>) {
  // expected-error @+1 {{inner dimensions disagree: input [M, K] has K = 64 but gate [N, K] has K = 32}}
  %0 = kiln.swiglu %x, %g, %g : tensor<?x64xf32>, tensor<96x32xf32> -> tensor<?x96xf32>
  return
}

// -----

func.func @add_types_differ(%a: tensor<?x64xf32>, %b: tensor<?x64xf16>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "kiln.add"(%a, %b) : (tensor<?x64xf32>, tensor<?x64xf16>) -> tensor<?x64xf32>
  return
}

// -----

func.func @mul_shapes_differ(%a: tensor<?x64xf32>, %b: tensor<?x32xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "kiln.mul"(%a, %b) : (tensor<?x64xf32>, tensor<?x32xf32>) -> tensor<?x64xf32>
  return
}

// -----

func.func @rms_norm_weight_size(%x: tensor<?x64xf32>, %w: tensor<32xf32>) {
  // expected-error @+1 {{weight has 32 elements but the normalized dimension has 64}}
  %0 = kiln.rms_norm %x, %w epsilon = 1.0e-05 : tensor<?x64xf32>, tensor<32xf32>
  return
}

// -----

func.func @rms_norm_weight_rank(%x: tensor<?x64xf32>, %w: tensor<1x64xf32>) {
  // expected-error @+1 {{weight must have rank 1 [D], got 'tensor<1x64xf32>'}}
  %0 = kiln.rms_norm %x, %w epsilon = 1.0e-05 : tensor<?x64xf32>, tensor<1x64xf32>
  return
}

// -----

func.func @rms_norm_negative_epsilon(%x: tensor<?x64xf32>, %w: tensor<64xf32>) {
  // expected-error @+1 {{epsilon must be finite and non-negative}}
  %0 = kiln.rms_norm %x, %w epsilon = -1.0e-05 : tensor<?x64xf32>, tensor<64xf32>
  return
}

// -----

func.func @layer_norm_bias_type(%x: tensor<?x64xf32>, %w: tensor<64xf32>, %b: tensor<64xf16>) {
  // expected-error @+1 {{bias type 'tensor<64xf16>' differs from weight type 'tensor<64xf32>'}}
  %0 = kiln.layer_norm %x, %w, %b epsilon = 1.0e-05 : tensor<?x64xf32>, tensor<64xf32>, tensor<64xf16>
  return
}

// -----

func.func @layer_norm_bias_size(%x: tensor<?x64xf32>, %w: tensor<64xf32>, %b: tensor<60xf32>) {
  // expected-error @+1 {{bias has 60 elements but the normalized dimension has 64}}
  %0 = kiln.layer_norm %x, %w, %b epsilon = 1.0e-05 : tensor<?x64xf32>, tensor<64xf32>, tensor<60xf32>
  return
}

// -----

func.func @rope_odd_head_size(%q: tensor<?x8x7xf32>, %pos: tensor<?xi32>) {
  // expected-error @+1 {{head size 7 must be static and even: rotary embedding rotates pairs of elements}}
  %0 = kiln.rope %q, %pos layout<adjacent> theta = 1.0e+04 : tensor<?x8x7xf32>, tensor<?xi32>
  return
}

// -----

func.func @rope_unknown_layout(%q: tensor<?x8x8xf32>, %pos: tensor<?xi32>) {
  // expected-error @+2 {{expected ::kiln::RopeLayout to be one of: adjacent, halves}}
  // expected-error @+1 {{failed to parse Kiln_RopeLayoutAttr parameter 'value'}}
  %0 = kiln.rope %q, %pos layout<interleaved> theta = 1.0e+04 : tensor<?x8x8xf32>, tensor<?xi32>
  return
}

// -----

func.func @rope_layout_missing(%q: tensor<?x8x8xf32>, %pos: tensor<?xi32>) {
  // expected-error @+1 {{requires attribute 'layout'}}
  %0 = "kiln.rope"(%q, %pos) {theta = 1.0e+04 : f64} : (tensor<?x8x8xf32>, tensor<?xi32>) -> tensor<?x8x8xf32>
  return
}

// -----

func.func @rope_rank(%q: tensor<?x64xf32>, %pos: tensor<?xi32>) {
  // expected-error @+1 {{input must have rank 3 [T, H, d], got 'tensor<?x64xf32>'}}
  %0 = kiln.rope %q, %pos layout<halves> theta = 1.0e+04 : tensor<?x64xf32>, tensor<?xi32>
  return
}

// -----

func.func @rope_factors_count(%q: tensor<?x8x8xf32>, %pos: tensor<?xi32>) {
  // expected-error @+1 {{'kiln.rope' op scaling has 3 freq_factors but a head of size 8 rotates 4 pairs}}
  %0 = kiln.rope %q, %pos layout<adjacent> theta = 1.0e+04 scaling<factors, factor = 1.0, freq_factors = [1.0, 2.0, 4.0]> : tensor<?x8x8xf32>, tensor<?xi32>
  return
}

// -----

func.func @rope_positions_count(%q: tensor<4x8x8xf32>, %pos: tensor<3xi32>) {
  // expected-error @+1 {{positions has 3 entries but there are 4 tokens}}
  %0 = kiln.rope %q, %pos layout<halves> theta = 1.0e+04 : tensor<4x8x8xf32>, tensor<3xi32>
  return
}

// -----

func.func @rope_theta(%q: tensor<?x8x8xf32>, %pos: tensor<?xi32>) {
  // expected-error @+1 {{theta must be positive}}
  %0 = kiln.rope %q, %pos layout<halves> theta = 0.0 : tensor<?x8x8xf32>, tensor<?xi32>
  return
}
