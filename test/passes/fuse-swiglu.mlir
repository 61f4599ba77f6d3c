// RUN: kiln-opt %s -split-input-file --kiln-fuse-swiglu | FileCheck %s

// The gated SiLU feed-forward becomes one kiln.swiglu: W1 is the gate, W3 the
// up projection.

// CHECK-LABEL: func @swiglu
// CHECK-SAME: (%[[X:[a-zA-Z0-9]+]]: tensor<?x64xf32>, %[[W1:[a-zA-Z0-9]+]]: tensor<172x64xf32>, %[[W3:[a-zA-Z0-9]+]]: tensor<172x64xf32>)
// CHECK-NEXT: %[[H:.+]] = kiln.swiglu %[[X]], %[[W1]], %[[W3]] : tensor<?x64xf32>, tensor<172x64xf32> -> tensor<?x172xf32>
// CHECK-NEXT: return %[[H]]
func.func @swiglu(%x: tensor<?x64xf32>, %w1: tensor<172x64xf32>,
                  %w3: tensor<172x64xf32>) -> tensor<?x172xf32> {
  %gate = kiln.matmul %x, %w1 : (tensor<?x64xf32>, tensor<172x64xf32>) -> tensor<?x172xf32>
  %act = kiln.silu %gate : tensor<?x172xf32>
  %up = kiln.matmul %x, %w3 : (tensor<?x64xf32>, tensor<172x64xf32>) -> tensor<?x172xf32>
  %h = kiln.mul %act, %up : tensor<?x172xf32>
  return %h : tensor<?x172xf32>
}

// -----

// kiln.mul is commutative: the silu branch may be its rhs; the weight under
// the silu is still the gate.

// CHECK-LABEL: func @swiglu_up_first
// CHECK-SAME: (%[[X:[a-zA-Z0-9]+]]: tensor<3x64xf32>, %[[W1:[a-zA-Z0-9]+]]: tensor<172x64xf32>, %[[W3:[a-zA-Z0-9]+]]: tensor<172x64xf32>)
// CHECK-NEXT: %[[H:.+]] = kiln.swiglu %[[X]], %[[W1]], %[[W3]] : tensor<3x64xf32>, tensor<172x64xf32> -> tensor<3x172xf32>
// CHECK-NOT: kiln.matmul
// CHECK-NOT: kiln.silu
// CHECK-NOT: kiln.mul
// CHECK: return %[[H]]
func.func @swiglu_up_first(%x: tensor<3x64xf32>, %w1: tensor<172x64xf32>,
                           %w3: tensor<172x64xf32>) -> tensor<3x172xf32> {
  %up = kiln.matmul %x, %w3 : (tensor<3x64xf32>, tensor<172x64xf32>) -> tensor<3x172xf32>
  %gate = kiln.matmul %x, %w1 : (tensor<3x64xf32>, tensor<172x64xf32>) -> tensor<3x172xf32>
  %act = kiln.silu %gate : tensor<3x172xf32>
  %h = kiln.mul %up, %act : tensor<3x172xf32>
  return %h : tensor<3x172xf32>
}

// -----

// Block-quantized weights read through kiln.weight fuse the same way.

kiln.weight_decl @w1 : tensor<96x64x!kiln.q8_0>
kiln.weight_decl @w3 : tensor<96x64x!kiln.q8_0>

// CHECK-LABEL: func @swiglu_quantized
// CHECK-SAME: (%[[X:[a-zA-Z0-9]+]]: tensor<?x64xf32>)
// CHECK-DAG: %[[W1:.+]] = kiln.weight @w1
// CHECK-DAG: %[[W3:.+]] = kiln.weight @w3
// CHECK: %[[H:.+]] = kiln.swiglu %[[X]], %[[W1]], %[[W3]] : tensor<?x64xf32>, tensor<96x64x!kiln.q8_0> -> tensor<?x96xf32>
// CHECK-NOT: kiln.matmul
// CHECK: return %[[H]]
func.func @swiglu_quantized(%x: tensor<?x64xf32>) -> tensor<?x96xf32> {
  %w1 = kiln.weight @w1 : tensor<96x64x!kiln.q8_0>
  %w3 = kiln.weight @w3 : tensor<96x64x!kiln.q8_0>
  %gate = kiln.matmul %x, %w1 : (tensor<?x64xf32>, tensor<96x64x!kiln.q8_0>) -> tensor<?x96xf32>
  %act = kiln.silu %gate : tensor<?x96xf32>
  %up = kiln.matmul %x, %w3 : (tensor<?x64xf32>, tensor<96x64x!kiln.q8_0>) -> tensor<?x96xf32>
  %h = kiln.mul %act, %up : tensor<?x96xf32>
  return %h : tensor<?x96xf32>
}

// -----

// Nothing should happen: the silu's value is also returned, so it must still
// be computed.

// CHECK-LABEL: func @no_fuse_silu_multiple_users
// CHECK: kiln.matmul
// CHECK: kiln.silu
// CHECK: kiln.matmul
// CHECK: kiln.mul
// CHECK-NOT: kiln.swiglu
func.func @no_fuse_silu_multiple_users(%x: tensor<?x64xf32>, %w1: tensor<172x64xf32>,
                                       %w3: tensor<172x64xf32>) -> (tensor<?x172xf32>, tensor<?x172xf32>) {
  %gate = kiln.matmul %x, %w1 : (tensor<?x64xf32>, tensor<172x64xf32>) -> tensor<?x172xf32>
  %act = kiln.silu %gate : tensor<?x172xf32>
  %up = kiln.matmul %x, %w3 : (tensor<?x64xf32>, tensor<172x64xf32>) -> tensor<?x172xf32>
  %h = kiln.mul %act, %up : tensor<?x172xf32>
  return %h, %act : tensor<?x172xf32>, tensor<?x172xf32>
}

// -----

// Nothing should happen: the gate projection is also returned before its
// silu, so it must still be computed.

// CHECK-LABEL: func @no_fuse_gate_multiple_users
// CHECK: kiln.silu
// CHECK: kiln.mul
// CHECK-NOT: kiln.swiglu
func.func @no_fuse_gate_multiple_users(%x: tensor<?x64xf32>, %w1: tensor<172x64xf32>,
                                       %w3: tensor<172x64xf32>) -> (tensor<?x172xf32>, tensor<?x172xf32>) {
  %gate = kiln.matmul %x, %w1 : (tensor<?x64xf32>, tensor<172x64xf32>) -> tensor<?x172xf32>
  %act = kiln.silu %gate : tensor<?x172xf32>
  %up = kiln.matmul %x, %w3 : (tensor<?x64xf32>, tensor<172x64xf32>) -> tensor<?x172xf32>
  %h = kiln.mul %act, %up : tensor<?x172xf32>
  return %h, %gate : tensor<?x172xf32>, tensor<?x172xf32>
}

// -----

// Nothing should happen: the up projection is also used by an add, so it must
// still be computed.

// CHECK-LABEL: func @no_fuse_up_multiple_users
// CHECK: kiln.silu
// CHECK: kiln.mul
// CHECK-NOT: kiln.swiglu
func.func @no_fuse_up_multiple_users(%x: tensor<?x64xf32>, %w1: tensor<172x64xf32>,
                                     %w3: tensor<172x64xf32>) -> tensor<?x172xf32> {
  %gate = kiln.matmul %x, %w1 : (tensor<?x64xf32>, tensor<172x64xf32>) -> tensor<?x172xf32>
  %act = kiln.silu %gate : tensor<?x172xf32>
  %up = kiln.matmul %x, %w3 : (tensor<?x64xf32>, tensor<172x64xf32>) -> tensor<?x172xf32>
  %h = kiln.mul %act, %up : tensor<?x172xf32>
  %s = kiln.add %h, %up : tensor<?x172xf32>
  return %s : tensor<?x172xf32>
}

// -----

// Nothing should happen: kiln.swiglu has no bias, and the gate has one.

// CHECK-LABEL: func @no_fuse_gate_bias
// CHECK: kiln.matmul %{{.*}} bias
// CHECK: kiln.mul
// CHECK-NOT: kiln.swiglu
func.func @no_fuse_gate_bias(%x: tensor<?x64xf32>, %w1: tensor<172x64xf32>, %b1: tensor<172xf32>,
                             %w3: tensor<172x64xf32>) -> tensor<?x172xf32> {
  %gate = kiln.matmul %x, %w1 bias %b1 : (tensor<?x64xf32>, tensor<172x64xf32>, tensor<172xf32>) -> tensor<?x172xf32>
  %act = kiln.silu %gate : tensor<?x172xf32>
  %up = kiln.matmul %x, %w3 : (tensor<?x64xf32>, tensor<172x64xf32>) -> tensor<?x172xf32>
  %h = kiln.mul %act, %up : tensor<?x172xf32>
  return %h : tensor<?x172xf32>
}

// -----

// Nothing should happen: kiln.swiglu has no bias, and the up projection has
// one.

// CHECK-LABEL: func @no_fuse_up_bias
// CHECK: kiln.matmul %{{.*}} bias
// CHECK: kiln.mul
// CHECK-NOT: kiln.swiglu
func.func @no_fuse_up_bias(%x: tensor<?x64xf32>, %w1: tensor<172x64xf32>,
                           %w3: tensor<172x64xf32>, %b3: tensor<172xf32>) -> tensor<?x172xf32> {
  %gate = kiln.matmul %x, %w1 : (tensor<?x64xf32>, tensor<172x64xf32>) -> tensor<?x172xf32>
  %act = kiln.silu %gate : tensor<?x172xf32>
  %up = kiln.matmul %x, %w3 bias %b3 : (tensor<?x64xf32>, tensor<172x64xf32>, tensor<172xf32>) -> tensor<?x172xf32>
  %h = kiln.mul %act, %up : tensor<?x172xf32>
  return %h : tensor<?x172xf32>
}

// -----

// Nothing should happen: the gate and up projections read different inputs,
// and kiln.swiglu has one.

// CHECK-LABEL: func @no_fuse_different_inputs
// CHECK: kiln.mul
// CHECK-NOT: kiln.swiglu
func.func @no_fuse_different_inputs(%x: tensor<?x64xf32>, %y: tensor<?x64xf32>, %w1: tensor<172x64xf32>,
                                    %w3: tensor<172x64xf32>) -> tensor<?x172xf32> {
  %gate = kiln.matmul %x, %w1 : (tensor<?x64xf32>, tensor<172x64xf32>) -> tensor<?x172xf32>
  %act = kiln.silu %gate : tensor<?x172xf32>
  %up = kiln.matmul %y, %w3 : (tensor<?x64xf32>, tensor<172x64xf32>) -> tensor<?x172xf32>
  %h = kiln.mul %act, %up : tensor<?x172xf32>
  return %h : tensor<?x172xf32>
}

// -----

// Nothing should happen: the weights have different element types, and
// kiln.swiglu takes one weight type for both.

// CHECK-LABEL: func @no_fuse_different_weight_types
// CHECK: kiln.mul
// CHECK-NOT: kiln.swiglu
func.func @no_fuse_different_weight_types(%x: tensor<?x64xf32>, %w1: tensor<172x64xf32>,
                                          %w3: tensor<172x64xf16>) -> tensor<?x172xf32> {
  %gate = kiln.matmul %x, %w1 : (tensor<?x64xf32>, tensor<172x64xf32>) -> tensor<?x172xf32>
  %act = kiln.silu %gate : tensor<?x172xf32>
  %up = kiln.matmul %x, %w3 : (tensor<?x64xf32>, tensor<172x64xf16>) -> tensor<?x172xf32>
  %h = kiln.mul %act, %up : tensor<?x172xf32>
  return %h : tensor<?x172xf32>
}

// -----

// Nothing should happen: the silu is multiplied by an argument, not by a
// projection of the same input.

// CHECK-LABEL: func @no_fuse_up_not_matmul
// CHECK: kiln.silu
// CHECK: kiln.mul
// CHECK-NOT: kiln.swiglu
func.func @no_fuse_up_not_matmul(%x: tensor<?x64xf32>, %w1: tensor<172x64xf32>,
                                 %u: tensor<?x172xf32>) -> tensor<?x172xf32> {
  %gate = kiln.matmul %x, %w1 : (tensor<?x64xf32>, tensor<172x64xf32>) -> tensor<?x172xf32>
  %act = kiln.silu %gate : tensor<?x172xf32>
  %h = kiln.mul %act, %u : tensor<?x172xf32>
  return %h : tensor<?x172xf32>
}
