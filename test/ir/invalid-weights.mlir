// RUN: kiln-opt %s -split-input-file -verify-diagnostics

// Weight declarations and references: shapes are static, block-quantized
// tensors have whole blocks, and every reference agrees with its declaration.

module {
  // expected-error @+1 {{weight @w must have a static shape, got 'tensor<?x64xf32>'}}
  kiln.weight_decl @w : tensor<?x64xf32>
}

// -----

module {
  // expected-error @+1 {{weight @w has last dimension 48, which is not a multiple of the '!kiln.q8_0' block size 32}}
  kiln.weight_decl @w : tensor<64x48x!kiln.q8_0>
}

// -----

module {
  // expected-error @+1 {{weight @w has last dimension 16, which is not a multiple of the '!kiln.q4_0' block size 32}}
  kiln.weight_decl @w : tensor<64x16x!kiln.q4_0>
}

// -----

module {
  // expected-error @+1 {{weight @w has last dimension 128, which is not a multiple of the '!kiln.q4_k' block size 256}}
  kiln.weight_decl @w : tensor<64x128x!kiln.q4_k>
}

// -----

module {
  // expected-error @+1 {{attribute 'type' failed to satisfy constraint: type attribute of ranked tensor of f32, f16, bf16 or block-quantized (q8_0, q4_0, q4_k, q5_k, q6_k) values}}
  kiln.weight_decl @w : tensor<64x64xi8>
}

// -----

func.func @decl_outside_module() {
  // expected-error @+1 {{expects parent op 'builtin.module'}}
  kiln.weight_decl @w : tensor<64x64xf32>
  return
}

// -----

module {
  func.func @undeclared() -> tensor<64x64xf32> {
    // expected-error @+1 {{@missing does not name a kiln.weight_decl}}
    %w = kiln.weight @missing : tensor<64x64xf32>
    return %w : tensor<64x64xf32>
  }
}

// -----

module {
  kiln.weight_decl @w : tensor<64x64xf32>
  func.func @shape_disagrees() -> tensor<64x32xf32> {
    // expected-error @+1 {{weight @w is declared as 'tensor<64x64xf32>' but used as 'tensor<64x32xf32>'}}
    %w = kiln.weight @w : tensor<64x32xf32>
    return %w : tensor<64x32xf32>
  }
}

// -----

module {
  kiln.weight_decl @w : tensor<64x64xf32>
  func.func @type_disagrees() -> tensor<64x64xf16> {
    // expected-error @+1 {{weight @w is declared as 'tensor<64x64xf32>' but used as 'tensor<64x64xf16>'}}
    %w = kiln.weight @w : tensor<64x64xf16>
    return %w : tensor<64x64xf16>
  }
}

// -----

// Block-quantized element types belong to weights only.
func.func @quantized_activation(%x: tensor<?x64x!kiln.q8_0>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of f32, f16 or bf16 values (block-quantized element types are allowed only on weights), but got 'tensor<?x64x!kiln.q8_0>'}}
  %0 = kiln.silu %x : tensor<?x64x!kiln.q8_0>
  return
}

// -----

func.func @quantized_result(%t: tensor<512x64x!kiln.q8_0>, %ids: tensor<?xi32>) {
  // expected-error @+1 {{result #0 must be ranked tensor of f32, f16 or bf16 values (block-quantized element types are allowed only on weights)}}
  %0 = kiln.embedding %t[%ids] : tensor<512x64x!kiln.q8_0>, tensor<?xi32> -> tensor<?x64x!kiln.q8_0>
  return
}

// -----

func.func @quantized_weight_partial_block(%x: tensor<?x40xf32>, %w: tensor<64x40x!kiln.q4_0>) {
  // expected-error @+1 {{weight has last dimension 40, which is not a multiple of the '!kiln.q4_0' block size 32}}
  %0 = kiln.matmul %x, %w : (tensor<?x40xf32>, tensor<64x40x!kiln.q4_0>) -> tensor<?x64xf32>
  return
}

// -----

func.func @quantized_table_partial_block(%t: tensor<512x48x!kiln.q8_0>, %ids: tensor<?xi32>) {
  // expected-error @+1 {{table has last dimension 48, which is not a multiple of the '!kiln.q8_0' block size 32}}
  %0 = kiln.embedding %t[%ids] : tensor<512x48x!kiln.q8_0>, tensor<?xi32> -> tensor<?x48xf32>
  return
}
