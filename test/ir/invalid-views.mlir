// RUN: kiln-opt %s -split-input-file -verify-diagnostics

// reshape, transpose, split and concat.

func.func @reshape_element_count(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{reshape changes the number of elements: [?, 64] has 64 per dynamic index, [?, 4, 8] has 32}}
  %0 = kiln.reshape %x : tensor<?x64xf32> -> tensor<?x4x8xf32>
  return
}

// -----

func.func @reshape_loses_token_dim(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{input has 1 dynamic dimensions but the result has 0; reshape keeps the token dimension}}
  %0 = kiln.reshape %x : tensor<?x64xf32> -> tensor<64xf32>
  return
}

// -----

func.func @reshape_element_type(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{result element type 'f16' differs from input element type 'f32'}}
  %0 = kiln.reshape %x : tensor<?x64xf32> -> tensor<?x8x8xf16>
  return
}

// -----

func.func @transpose_not_permutation(%x: tensor<?x8x8xf32>) {
  // expected-error @+1 {{permutation [0, 0, 2] is not a permutation of 0..2}}
  %0 = kiln.transpose %x permutation = [0, 0, 2] : tensor<?x8x8xf32> -> tensor<?x8x8xf32>
  return
}

// -----

func.func @transpose_length(%x: tensor<?x8x8xf32>) {
  // expected-error @+1 {{permutation has 2 entries but the input has rank 3}}
  %0 = kiln.transpose %x permutation = [1, 0] : tensor<?x8x8xf32> -> tensor<?x8x8xf32>
  return
}

// -----

func.func @transpose_result_shape(%x: tensor<?x8x16xf32>) {
  // expected-error @+1 {{result shape [8, ?, 8] does not follow from the operands; expected [8, ?, 16]}}
  %0 = kiln.transpose %x permutation = [1, 0, 2] : tensor<?x8x16xf32> -> tensor<8x?x8xf32>
  return
}

// -----

func.func @split_axis(%x: tensor<?x96xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0, %1 = kiln.split %x axis = 2 : tensor<?x96xf32> -> tensor<?x64xf32>, tensor<?x32xf32>
  return
}

// -----

func.func @split_sizes(%x: tensor<?x96xf32>) {
  // expected-error @+1 {{sizes along axis 1 add up to 80 but the whole has 96}}
  %0, %1 = kiln.split %x axis = 1 : tensor<?x96xf32> -> tensor<?x64xf32>, tensor<?x16xf32>
  return
}

// -----

func.func @split_other_dim(%x: tensor<4x96xf32>) {
  // expected-error @+1 {{result #1 has shape [3, 32], which differs from [4, 96] in dimension 0 (only axis 1 may differ)}}
  %0, %1 = kiln.split %x axis = 1 : tensor<4x96xf32> -> tensor<4x64xf32>, tensor<3x32xf32>
  return
}

// -----

func.func @concat_sizes(%a: tensor<?x64xf32>, %b: tensor<?x32xf32>) {
  // expected-error @+1 {{sizes along axis 1 add up to 96 but the whole has 128}}
  %0 = kiln.concat %a, %b axis = 1 : tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x128xf32>
  return
}

// -----

func.func @concat_rank(%a: tensor<?x64xf32>, %b: tensor<?x4x8xf32>) {
  // expected-error @+1 {{input #1 has rank 3 but should have rank 2}}
  %0 = kiln.concat %a, %b axis = 1 : tensor<?x64xf32>, tensor<?x4x8xf32> -> tensor<?x96xf32>
  return
}

// -----

func.func @concat_element_type(%a: tensor<?x64xf32>, %b: tensor<?x32xf16>) {
  // expected-error @+1 {{input #1 element type 'f16' differs from the whole element type 'f32'}}
  %0 = kiln.concat %a, %b axis = 1 : tensor<?x64xf32>, tensor<?x32xf16> -> tensor<?x96xf32>
  return
}

// -----

func.func @concat_quantized_last_axis(%a: tensor<4x64x!kiln.q8_0>, %b: tensor<4x32x!kiln.q8_0>) {
  // expected-error @+1 {{cannot concatenate block-quantized '!kiln.q8_0' tensors along their last axis 1, which holds their blocks of 32; concatenate along a leading axis}}
  %0 = kiln.concat %a, %b axis = 1 : tensor<4x64x!kiln.q8_0>, tensor<4x32x!kiln.q8_0> -> tensor<4x96x!kiln.q8_0>
  return
}
