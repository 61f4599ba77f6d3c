// RUN: kiln-opt %s -split-input-file --kiln-fuse-matmul-activation --kiln-fuse-matmul-epilogue | FileCheck %s

// The epilogue rules after the declarative activation rules, as the fusion
// pipeline runs them (test/passes/fuse-matmul-activation.mlir tests those
// alone).

// An activation of a matmul becomes the fused_matmul's activation.

// CHECK-LABEL: func @matmul_silu
// CHECK-SAME: (%[[X:[a-zA-Z0-9]+]]: tensor<?x64xf32>, %[[W:[a-zA-Z0-9]+]]: tensor<172x64xf32>)
// CHECK-NEXT: %[[Y:.+]] = kiln.fused_matmul %[[X]], %[[W]] activation<silu> : (tensor<?x64xf32>, tensor<172x64xf32>) -> tensor<?x172xf32>
// CHECK-NEXT: return %[[Y]]
func.func @matmul_silu(%x: tensor<?x64xf32>, %w: tensor<172x64xf32>) -> tensor<?x172xf32> {
  %m = kiln.matmul %x, %w : (tensor<?x64xf32>, tensor<172x64xf32>) -> tensor<?x172xf32>
  %y = kiln.silu %m : tensor<?x172xf32>
  return %y : tensor<?x172xf32>
}

// -----

// CHECK-LABEL: func @matmul_gelu
// CHECK-SAME: (%[[X:[a-zA-Z0-9]+]]: tensor<?x64xf32>, %[[W:[a-zA-Z0-9]+]]: tensor<256x64xf32>)
// CHECK-NEXT: %[[Y:.+]] = kiln.fused_matmul %[[X]], %[[W]] activation<gelu> :
// CHECK-NEXT: return %[[Y]]
func.func @matmul_gelu(%x: tensor<?x64xf32>, %w: tensor<256x64xf32>) -> tensor<?x256xf32> {
  %m = kiln.matmul %x, %w : (tensor<?x64xf32>, tensor<256x64xf32>) -> tensor<?x256xf32>
  %y = kiln.gelu %m : tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}

// -----

// The tanh approximation of gelu is its own activation.

// CHECK-LABEL: func @matmul_gelu_tanh
// CHECK-SAME: (%[[X:[a-zA-Z0-9]+]]: tensor<?x64xf32>, %[[W:[a-zA-Z0-9]+]]: tensor<256x64xf32>)
// CHECK-NEXT: %[[Y:.+]] = kiln.fused_matmul %[[X]], %[[W]] activation<gelu_tanh> :
// CHECK-NEXT: return %[[Y]]
func.func @matmul_gelu_tanh(%x: tensor<?x64xf32>, %w: tensor<256x64xf32>) -> tensor<?x256xf32> {
  %m = kiln.matmul %x, %w : (tensor<?x64xf32>, tensor<256x64xf32>) -> tensor<?x256xf32>
  %y = kiln.gelu %m tanh : tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}

// -----

// CHECK-LABEL: func @matmul_relu
// CHECK-SAME: (%[[X:[a-zA-Z0-9]+]]: tensor<?x64xf32>, %[[W:[a-zA-Z0-9]+]]: tensor<256x64xf32>)
// CHECK-NEXT: %[[Y:.+]] = kiln.fused_matmul %[[X]], %[[W]] activation<relu> :
// CHECK-NEXT: return %[[Y]]
func.func @matmul_relu(%x: tensor<?x64xf32>, %w: tensor<256x64xf32>) -> tensor<?x256xf32> {
  %m = kiln.matmul %x, %w : (tensor<?x64xf32>, tensor<256x64xf32>) -> tensor<?x256xf32>
  %y = kiln.relu %m : tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}

// -----

// The bias is kept: act(x·Wᵀ + b).

// CHECK-LABEL: func @matmul_bias_gelu
// CHECK-SAME: (%[[X:[a-zA-Z0-9]+]]: tensor<?x768xf32>, %[[W:[a-zA-Z0-9]+]]: tensor<3072x768xf32>, %[[B:[a-zA-Z0-9]+]]: tensor<3072xf32>)
// CHECK-NEXT: %[[Y:.+]] = kiln.fused_matmul %[[X]], %[[W]] bias %[[B]] activation<gelu> : (tensor<?x768xf32>, tensor<3072x768xf32>, tensor<3072xf32>) -> tensor<?x3072xf32>
// CHECK-NEXT: return %[[Y]]
func.func @matmul_bias_gelu(%x: tensor<?x768xf32>, %w: tensor<3072x768xf32>,
                            %b: tensor<3072xf32>) -> tensor<?x3072xf32> {
  %m = kiln.matmul %x, %w bias %b : (tensor<?x768xf32>, tensor<3072x768xf32>, tensor<3072xf32>) -> tensor<?x3072xf32>
  %y = kiln.gelu %m : tensor<?x3072xf32>
  return %y : tensor<?x3072xf32>
}

// -----

// A fused_matmul with neither activation nor residual takes one too.

// CHECK-LABEL: func @fused_matmul_silu
// CHECK-SAME: (%[[X:[a-zA-Z0-9]+]]: tensor<?x64xf32>, %[[W:[a-zA-Z0-9]+]]: tensor<172x64xf32>, %[[B:[a-zA-Z0-9]+]]: tensor<172xf32>)
// CHECK-NEXT: %[[Y:.+]] = kiln.fused_matmul %[[X]], %[[W]] bias %[[B]] activation<silu> :
// CHECK-NEXT: return %[[Y]]
func.func @fused_matmul_silu(%x: tensor<?x64xf32>, %w: tensor<172x64xf32>,
                             %b: tensor<172xf32>) -> tensor<?x172xf32> {
  %m = kiln.fused_matmul %x, %w bias %b : (tensor<?x64xf32>, tensor<172x64xf32>, tensor<172xf32>) -> tensor<?x172xf32>
  %y = kiln.silu %m : tensor<?x172xf32>
  return %y : tensor<?x172xf32>
}

// -----

// The residual stream added after a projection (`x + f(x)`, as the importers
// write it) becomes the fused_matmul's residual.

// CHECK-LABEL: func @residual_rhs
// CHECK-SAME: (%[[X0:[a-zA-Z0-9]+]]: tensor<?x64xf32>, %[[A:[a-zA-Z0-9]+]]: tensor<?x64xf32>, %[[WO:[a-zA-Z0-9]+]]: tensor<64x64xf32>)
// CHECK-NEXT: %[[X1:.+]] = kiln.fused_matmul %[[A]], %[[WO]] residual %[[X0]] : (tensor<?x64xf32>, tensor<64x64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
// CHECK-NEXT: return %[[X1]]
func.func @residual_rhs(%x0: tensor<?x64xf32>, %a: tensor<?x64xf32>,
                        %wo: tensor<64x64xf32>) -> tensor<?x64xf32> {
  %o = kiln.matmul %a, %wo : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %x1 = kiln.add %x0, %o : tensor<?x64xf32>
  return %x1 : tensor<?x64xf32>
}

// -----

// kiln.add is commutative: the matmul may be its lhs.

// CHECK-LABEL: func @residual_lhs
// CHECK-SAME: (%[[X0:[a-zA-Z0-9]+]]: tensor<?x64xf32>, %[[A:[a-zA-Z0-9]+]]: tensor<?x64xf32>, %[[WO:[a-zA-Z0-9]+]]: tensor<64x64xf32>)
// CHECK-NEXT: %[[X1:.+]] = kiln.fused_matmul %[[A]], %[[WO]] residual %[[X0]] :
// CHECK-NEXT: return %[[X1]]
func.func @residual_lhs(%x0: tensor<?x64xf32>, %a: tensor<?x64xf32>,
                        %wo: tensor<64x64xf32>) -> tensor<?x64xf32> {
  %o = kiln.matmul %a, %wo : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %x1 = kiln.add %o, %x0 : tensor<?x64xf32>
  return %x1 : tensor<?x64xf32>
}

// -----

// The bias is kept: (x·Wᵀ + b) + r.

// CHECK-LABEL: func @residual_keeps_bias
// CHECK-SAME: (%[[R:[a-zA-Z0-9]+]]: tensor<?x64xf32>, %[[X:[a-zA-Z0-9]+]]: tensor<?x32xf32>, %[[W:[a-zA-Z0-9]+]]: tensor<64x32xf32>, %[[B:[a-zA-Z0-9]+]]: tensor<64xf32>)
// CHECK-NEXT: %[[Y:.+]] = kiln.fused_matmul %[[X]], %[[W]] bias %[[B]] residual %[[R]] : (tensor<?x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
// CHECK-NEXT: return %[[Y]]
func.func @residual_keeps_bias(%r: tensor<?x64xf32>, %x: tensor<?x32xf32>,
                               %w: tensor<64x32xf32>, %b: tensor<64xf32>) -> tensor<?x64xf32> {
  %m = kiln.matmul %x, %w bias %b : (tensor<?x32xf32>, tensor<64x32xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  %y = kiln.add %r, %m : tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// Activations are fused first, so act(x·Wᵀ + b) + r ends as one op.

// CHECK-LABEL: func @activation_then_residual
// CHECK-SAME: (%[[R:[a-zA-Z0-9]+]]: tensor<?x256xf32>, %[[X:[a-zA-Z0-9]+]]: tensor<?x64xf32>, %[[W:[a-zA-Z0-9]+]]: tensor<256x64xf32>, %[[B:[a-zA-Z0-9]+]]: tensor<256xf32>)
// CHECK-NEXT: %[[Y:.+]] = kiln.fused_matmul %[[X]], %[[W]] bias %[[B]] activation<relu> residual %[[R]] :
// CHECK-NOT: kiln.matmul
// CHECK-NOT: kiln.relu
// CHECK-NOT: kiln.add
// CHECK: return %[[Y]]
func.func @activation_then_residual(%r: tensor<?x256xf32>, %x: tensor<?x64xf32>,
                                    %w: tensor<256x64xf32>, %b: tensor<256xf32>) -> tensor<?x256xf32> {
  %m = kiln.matmul %x, %w bias %b : (tensor<?x64xf32>, tensor<256x64xf32>, tensor<256xf32>) -> tensor<?x256xf32>
  %a = kiln.relu %m : tensor<?x256xf32>
  %y = kiln.add %r, %a : tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}

// -----

// A fused_matmul with an activation and no residual takes the residual and
// keeps its activation.

// CHECK-LABEL: func @fused_matmul_residual
// CHECK-SAME: (%[[R:[a-zA-Z0-9]+]]: tensor<?x256xf32>, %[[X:[a-zA-Z0-9]+]]: tensor<?x64xf32>, %[[W:[a-zA-Z0-9]+]]: tensor<256x64xf32>)
// CHECK-NEXT: %[[Y:.+]] = kiln.fused_matmul %[[X]], %[[W]] activation<gelu_tanh> residual %[[R]] :
// CHECK-NEXT: return %[[Y]]
func.func @fused_matmul_residual(%r: tensor<?x256xf32>, %x: tensor<?x64xf32>,
                                 %w: tensor<256x64xf32>) -> tensor<?x256xf32> {
  %m = kiln.fused_matmul %x, %w activation<gelu_tanh> : (tensor<?x64xf32>, tensor<256x64xf32>) -> tensor<?x256xf32>
  %y = kiln.add %m, %r : tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}

// -----

// When both operands are matmuls, the rhs takes the lhs as its residual.

// CHECK-LABEL: func @residual_both_matmuls
// CHECK-SAME: (%[[X:[a-zA-Z0-9]+]]: tensor<?x64xf32>, %[[W1:[a-zA-Z0-9]+]]: tensor<64x64xf32>, %[[W2:[a-zA-Z0-9]+]]: tensor<64x64xf32>)
// CHECK-NEXT: %[[M1:.+]] = kiln.matmul %[[X]], %[[W1]] :
// CHECK-NEXT: %[[Y:.+]] = kiln.fused_matmul %[[X]], %[[W2]] residual %[[M1]] :
// CHECK-NEXT: return %[[Y]]
func.func @residual_both_matmuls(%x: tensor<?x64xf32>, %w1: tensor<64x64xf32>,
                                 %w2: tensor<64x64xf32>) -> tensor<?x64xf32> {
  %m1 = kiln.matmul %x, %w1 : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %m2 = kiln.matmul %x, %w2 : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %y = kiln.add %m1, %m2 : tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// When the rhs matmul cannot take the residual (it is also returned), the lhs
// matmul takes it.

// CHECK-LABEL: func @residual_lhs_when_rhs_blocked
// CHECK-SAME: (%[[X:[a-zA-Z0-9]+]]: tensor<?x64xf32>, %[[W1:[a-zA-Z0-9]+]]: tensor<64x64xf32>, %[[W2:[a-zA-Z0-9]+]]: tensor<64x64xf32>)
// CHECK-NEXT: %[[M2:.+]] = kiln.matmul %[[X]], %[[W2]] :
// CHECK-NEXT: %[[Y:.+]] = kiln.fused_matmul %[[X]], %[[W1]] residual %[[M2]] :
// CHECK-NEXT: return %[[Y]], %[[M2]]
func.func @residual_lhs_when_rhs_blocked(%x: tensor<?x64xf32>, %w1: tensor<64x64xf32>,
                                         %w2: tensor<64x64xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  %m1 = kiln.matmul %x, %w1 : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %m2 = kiln.matmul %x, %w2 : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %y = kiln.add %m1, %m2 : tensor<?x64xf32>
  return %y, %m2 : tensor<?x64xf32>, tensor<?x64xf32>
}

// -----

// Nothing should happen: the matmul's value is also returned, so it must
// still be computed without the activation.

// CHECK-LABEL: func @no_fuse_activation_multiple_users
// CHECK: kiln.matmul
// CHECK: kiln.silu
// CHECK-NOT: kiln.fused_matmul
func.func @no_fuse_activation_multiple_users(%x: tensor<?x64xf32>, %w: tensor<172x64xf32>)
    -> (tensor<?x172xf32>, tensor<?x172xf32>) {
  %m = kiln.matmul %x, %w : (tensor<?x64xf32>, tensor<172x64xf32>) -> tensor<?x172xf32>
  %y = kiln.silu %m : tensor<?x172xf32>
  return %y, %m : tensor<?x172xf32>, tensor<?x172xf32>
}

// -----

// Nothing should happen: the fused_matmul already has an activation, and it
// has room for one.

// CHECK-LABEL: func @no_fuse_second_activation
// CHECK: kiln.fused_matmul %{{.*}} activation<silu>
// CHECK-NEXT: kiln.relu
func.func @no_fuse_second_activation(%x: tensor<?x64xf32>, %w: tensor<172x64xf32>) -> tensor<?x172xf32> {
  %m = kiln.fused_matmul %x, %w activation<silu> : (tensor<?x64xf32>, tensor<172x64xf32>) -> tensor<?x172xf32>
  %y = kiln.relu %m : tensor<?x172xf32>
  return %y : tensor<?x172xf32>
}

// -----

// Nothing should happen: the activation applies after the residual, and
// act(y + r) is not act(y) + r.

// CHECK-LABEL: func @no_fuse_activation_after_residual
// CHECK: kiln.fused_matmul %{{.*}} residual
// CHECK-NEXT: kiln.gelu
func.func @no_fuse_activation_after_residual(%x: tensor<?x64xf32>, %w: tensor<64x64xf32>,
                                             %r: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %m = kiln.fused_matmul %x, %w residual %r : (tensor<?x64xf32>, tensor<64x64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  %y = kiln.gelu %m : tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// Nothing should happen: the matmul's value is also returned, so it must
// still be computed without the residual.

// CHECK-LABEL: func @no_fuse_residual_multiple_users
// CHECK: kiln.matmul
// CHECK: kiln.add
// CHECK-NOT: kiln.fused_matmul
func.func @no_fuse_residual_multiple_users(%x0: tensor<?x64xf32>, %a: tensor<?x64xf32>,
                                           %wo: tensor<64x64xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  %o = kiln.matmul %a, %wo : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %x1 = kiln.add %x0, %o : tensor<?x64xf32>
  return %x1, %o : tensor<?x64xf32>, tensor<?x64xf32>
}

// -----

// Nothing should happen: the fused_matmul already has a residual, and it has
// room for one.

// CHECK-LABEL: func @no_fuse_second_residual
// CHECK: kiln.fused_matmul %{{.*}} residual
// CHECK-NEXT: kiln.add
func.func @no_fuse_second_residual(%x: tensor<?x64xf32>, %w: tensor<64x64xf32>,
                                   %r1: tensor<?x64xf32>, %r2: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %m = kiln.fused_matmul %x, %w residual %r1 : (tensor<?x64xf32>, tensor<64x64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  %y = kiln.add %m, %r2 : tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// Nothing should happen: the matmul is added to itself, so there is no other
// value to be the residual.

// CHECK-LABEL: func @no_fuse_same_operand
// CHECK: kiln.matmul
// CHECK-NEXT: kiln.add
// CHECK-NOT: kiln.fused_matmul
func.func @no_fuse_same_operand(%x: tensor<?x64xf32>, %w: tensor<64x64xf32>) -> tensor<?x64xf32> {
  %m = kiln.matmul %x, %w : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %y = kiln.add %m, %m : tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// Nothing should happen: kiln.scale is no epilogue of fused_matmul.

// CHECK-LABEL: func @no_fuse_other_op
// CHECK-NEXT: kiln.matmul
// CHECK-NEXT: kiln.scale
// CHECK-NEXT: return
func.func @no_fuse_other_op(%x: tensor<?x64xf32>, %w: tensor<64x64xf32>) -> tensor<?x64xf32> {
  %m = kiln.matmul %x, %w : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %y = kiln.scale %m by 2.0 : tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
