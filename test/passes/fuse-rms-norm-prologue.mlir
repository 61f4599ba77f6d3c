// RUN: kiln-opt %s -split-input-file --kiln-fuse-rms-norm-prologue | FileCheck %s

// An rms_norm whose only consumer is a matmul becomes that matmul's prologue:
// the normalized tensor is never stored.

// CHECK-LABEL: func @matmul_prologue
// CHECK-SAME: (%[[X:[a-zA-Z0-9]+]]: tensor<?x64xf32>, %[[G:[a-zA-Z0-9]+]]: tensor<64xf32>, %[[W:[a-zA-Z0-9]+]]: tensor<96x64xf32>)
// CHECK-NEXT: %[[Y:.+]] = kiln.fused_matmul %[[X]] rms_norm(%[[G]], epsilon = 1.000000e-05), %[[W]] : (tensor<?x64xf32>, tensor<96x64xf32>, tensor<64xf32>) -> tensor<?x96xf32>
// CHECK-NEXT: return %[[Y]]
func.func @matmul_prologue(%x: tensor<?x64xf32>, %g: tensor<64xf32>, %w: tensor<96x64xf32>) -> tensor<?x96xf32> {
  %h = kiln.rms_norm %x, %g epsilon = 1.0e-05 : tensor<?x64xf32>, tensor<64xf32>
  %y = kiln.matmul %h, %w : (tensor<?x64xf32>, tensor<96x64xf32>) -> tensor<?x96xf32>
  return %y : tensor<?x96xf32>
}

// -----

// A kiln.fused_matmul keeps its bias, activation and residual, and a
// kiln.swiglu takes the prologue too. Both consumers of one norm (unpacked
// projections) get it: each recomputes the row statistic.

// CHECK-LABEL: func @fused_and_swiglu
// CHECK-SAME: (%[[X:[a-zA-Z0-9]+]]: tensor<3x64xf32>, %[[G:[a-zA-Z0-9]+]]: tensor<64xf32>, %[[W:[a-zA-Z0-9]+]]: tensor<64x64xf32>, %[[B:[a-zA-Z0-9]+]]: tensor<64xf32>, %[[W1:[a-zA-Z0-9]+]]: tensor<172x64xf32>, %[[W3:[a-zA-Z0-9]+]]: tensor<172x64xf32>)
// CHECK-NEXT: %[[Y:.+]] = kiln.fused_matmul %[[X]] rms_norm(%[[G]], epsilon = 9.9999999999999995E-7), %[[W]] bias %[[B]] activation<relu> residual %[[X]]
// CHECK-NEXT: %[[H:.+]] = kiln.swiglu %[[X]] rms_norm(%[[G]] : tensor<64xf32>, epsilon = 9.9999999999999995E-7), %[[W1]], %[[W3]] : tensor<3x64xf32>, tensor<172x64xf32> -> tensor<3x172xf32>
// CHECK-NOT: kiln.rms_norm
// CHECK: return %[[Y]], %[[H]]
func.func @fused_and_swiglu(%x: tensor<3x64xf32>, %g: tensor<64xf32>, %w: tensor<64x64xf32>, %b: tensor<64xf32>,
                            %w1: tensor<172x64xf32>, %w3: tensor<172x64xf32>) -> (tensor<3x64xf32>, tensor<3x172xf32>) {
  %h = kiln.rms_norm %x, %g epsilon = 1.0e-06 : tensor<3x64xf32>, tensor<64xf32>
  %y = kiln.fused_matmul %h, %w bias %b activation<relu> residual %x
      : (tensor<3x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<3x64xf32>) -> tensor<3x64xf32>
  %f = kiln.swiglu %h, %w1, %w3 : tensor<3x64xf32>, tensor<172x64xf32> -> tensor<3x172xf32>
  return %y, %f : tensor<3x64xf32>, tensor<3x172xf32>
}

// -----

// The normalized tensor is also a step output: it must be stored anyway, so
// the norm stays and its matmul is unchanged.

// CHECK-LABEL: func @no_fuse_norm_escapes
// CHECK: kiln.rms_norm
// CHECK-NEXT: kiln.matmul
// CHECK-NOT: kiln.fused_matmul
func.func @no_fuse_norm_escapes(%x: tensor<?x64xf32>, %g: tensor<64xf32>, %w: tensor<96x64xf32>) -> (tensor<?x96xf32>, tensor<?x64xf32>) {
  %h = kiln.rms_norm %x, %g epsilon = 1.0e-05 : tensor<?x64xf32>, tensor<64xf32>
  %y = kiln.matmul %h, %w : (tensor<?x64xf32>, tensor<96x64xf32>) -> tensor<?x96xf32>
  return %y, %h : tensor<?x96xf32>, tensor<?x64xf32>
}

// -----

// The norm is the residual of the matmul, not its input: only inputs are
// normalized by a prologue.

// CHECK-LABEL: func @no_fuse_norm_as_residual
// CHECK: kiln.rms_norm
// CHECK-NOT: rms_norm(
func.func @no_fuse_norm_as_residual(%x: tensor<?x64xf32>, %g: tensor<64xf32>, %w: tensor<64x64xf32>) -> tensor<?x64xf32> {
  %h = kiln.rms_norm %x, %g epsilon = 1.0e-05 : tensor<?x64xf32>, tensor<64xf32>
  %y = kiln.fused_matmul %x, %w residual %h : (tensor<?x64xf32>, tensor<64x64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// The consumer already normalizes its input: two prologues do not stack.

// CHECK-LABEL: func @no_fuse_prologue_taken
// CHECK: kiln.rms_norm
// CHECK-NEXT: kiln.fused_matmul %{{.+}} rms_norm(
func.func @no_fuse_prologue_taken(%x: tensor<?x64xf32>, %g: tensor<64xf32>, %w: tensor<64x64xf32>) -> tensor<?x64xf32> {
  %h = kiln.rms_norm %x, %g epsilon = 1.0e-05 : tensor<?x64xf32>, tensor<64xf32>
  %y = kiln.fused_matmul %h rms_norm(%g, epsilon = 1.0e-05), %w : (tensor<?x64xf32>, tensor<64x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
