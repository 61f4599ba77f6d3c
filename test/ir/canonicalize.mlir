// RUN: kiln-opt %s -split-input-file -canonicalize | FileCheck %s

// Folders and canonicalization patterns of kiln ops (ir/KilnFolders.cpp).

// reshape(x : T -> T) = x
// CHECK-LABEL: func @reshape_identity
// CHECK-SAME: (%[[X:.+]]: tensor<?x64xf32>)
// CHECK-NOT: kiln.reshape
// CHECK: return %[[X]]
func.func @reshape_identity(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %0 = kiln.reshape %x : tensor<?x64xf32> -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

// reshape(reshape(x)) = reshape(x)
// CHECK-LABEL: func @reshape_chain
// CHECK-SAME: (%[[X:.+]]: tensor<?x64xf32>)
// CHECK: %[[R:.+]] = kiln.reshape %[[X]] : tensor<?x64xf32> -> tensor<?x2x4x8xf32>
// CHECK-NOT: kiln.reshape
// CHECK: return %[[R]]
func.func @reshape_chain(%x: tensor<?x64xf32>) -> tensor<?x2x4x8xf32> {
  %0 = kiln.reshape %x : tensor<?x64xf32> -> tensor<?x8x8xf32>
  %1 = kiln.reshape %0 : tensor<?x8x8xf32> -> tensor<?x2x4x8xf32>
  return %1 : tensor<?x2x4x8xf32>
}

// -----

// A reshape there and back is no reshape.
// CHECK-LABEL: func @reshape_round_trip
// CHECK-SAME: (%[[X:.+]]: tensor<?x64xf32>)
// CHECK-NOT: kiln.reshape
// CHECK: return %[[X]]
func.func @reshape_round_trip(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %0 = kiln.reshape %x : tensor<?x64xf32> -> tensor<?x8x8xf32>
  %1 = kiln.reshape %0 : tensor<?x8x8xf32> -> tensor<?x64xf32>
  return %1 : tensor<?x64xf32>
}

// -----

// transpose(x, identity) = x
// CHECK-LABEL: func @transpose_identity
// CHECK-SAME: (%[[X:.+]]: tensor<?x8x16xf32>)
// CHECK-NOT: kiln.transpose
// CHECK: return %[[X]]
func.func @transpose_identity(%x: tensor<?x8x16xf32>) -> tensor<?x8x16xf32> {
  %0 = kiln.transpose %x permutation = [0, 1, 2] : tensor<?x8x16xf32> -> tensor<?x8x16xf32>
  return %0 : tensor<?x8x16xf32>
}

// -----

// transpose(transpose(x, q), p) = transpose(x, q ∘ p)
// CHECK-LABEL: func @transpose_chain
// CHECK-SAME: (%[[X:.+]]: tensor<?x8x16xf32>)
// CHECK: %[[T:.+]] = kiln.transpose %[[X]] permutation = [2, 0, 1] : tensor<?x8x16xf32> -> tensor<16x?x8xf32>
// CHECK-NOT: kiln.transpose
// CHECK: return %[[T]]
func.func @transpose_chain(%x: tensor<?x8x16xf32>) -> tensor<16x?x8xf32> {
  %0 = kiln.transpose %x permutation = [1, 0, 2] : tensor<?x8x16xf32> -> tensor<8x?x16xf32>
  %1 = kiln.transpose %0 permutation = [2, 1, 0] : tensor<8x?x16xf32> -> tensor<16x?x8xf32>
  return %1 : tensor<16x?x8xf32>
}

// -----

// Two swaps of the same dimensions cancel.
// CHECK-LABEL: func @transpose_cancel
// CHECK-SAME: (%[[X:.+]]: tensor<?x8x16xf32>)
// CHECK-NOT: kiln.transpose
// CHECK: return %[[X]]
func.func @transpose_cancel(%x: tensor<?x8x16xf32>) -> tensor<?x8x16xf32> {
  %0 = kiln.transpose %x permutation = [1, 0, 2] : tensor<?x8x16xf32> -> tensor<8x?x16xf32>
  %1 = kiln.transpose %0 permutation = [1, 0, 2] : tensor<8x?x16xf32> -> tensor<?x8x16xf32>
  return %1 : tensor<?x8x16xf32>
}

// -----

// scale(x, 1) = x
// CHECK-LABEL: func @scale_by_one
// CHECK-SAME: (%[[X:.+]]: tensor<?x8x?xf32>)
// CHECK-NOT: kiln.scale
// CHECK: return %[[X]]
func.func @scale_by_one(%x: tensor<?x8x?xf32>) -> tensor<?x8x?xf32> {
  %0 = kiln.scale %x by 1.0 : tensor<?x8x?xf32>
  return %0 : tensor<?x8x?xf32>
}

// -----

// scale(scale(x, a), b) = scale(x, a * b)
// CHECK-LABEL: func @scale_chain
// CHECK-SAME: (%[[X:.+]]: tensor<?x8x?xf32>)
// CHECK: %[[S:.+]] = kiln.scale %[[X]] by 1.250000e-01 : tensor<?x8x?xf32>
// CHECK-NOT: kiln.scale
// CHECK: return %[[S]]
func.func @scale_chain(%x: tensor<?x8x?xf32>) -> tensor<?x8x?xf32> {
  %0 = kiln.scale %x by 0.5 : tensor<?x8x?xf32>
  %1 = kiln.scale %0 by 0.25 : tensor<?x8x?xf32>
  return %1 : tensor<?x8x?xf32>
}

// -----

// relu(relu(x)) = relu(x)
// CHECK-LABEL: func @relu_relu
// CHECK-SAME: (%[[X:.+]]: tensor<?x64xf32>)
// CHECK: %[[R:.+]] = kiln.relu %[[X]]
// CHECK-NOT: kiln.relu
// CHECK: return %[[R]]
func.func @relu_relu(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %0 = kiln.relu %x : tensor<?x64xf32>
  %1 = kiln.relu %0 : tensor<?x64xf32>
  return %1 : tensor<?x64xf32>
}

// -----

// concat(split(x)) along the same axis, all results in order = x
// CHECK-LABEL: func @concat_of_split
// CHECK-SAME: (%[[X:.+]]: tensor<?x128xf32>)
// CHECK-NOT: kiln.concat
// CHECK-NOT: kiln.split
// CHECK: return %[[X]]
func.func @concat_of_split(%x: tensor<?x128xf32>) -> tensor<?x128xf32> {
  %q, %k, %v = kiln.split %x axis = 1
      : tensor<?x128xf32> -> tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32>
  %0 = kiln.concat %q, %k, %v axis = 1
      : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32> -> tensor<?x128xf32>
  return %0 : tensor<?x128xf32>
}

// -----

// Reordered pieces are a different tensor: nothing folds.
// CHECK-LABEL: func @no_fold_concat_reordered_split
// CHECK: kiln.split
// CHECK: kiln.concat
func.func @no_fold_concat_reordered_split(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %a, %b = kiln.split %x axis = 1 : tensor<?x64xf32> -> tensor<?x32xf32>, tensor<?x32xf32>
  %0 = kiln.concat %b, %a axis = 1 : tensor<?x32xf32>, tensor<?x32xf32> -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

// split(x) and concat(x) of a single piece are x.
// CHECK-LABEL: func @single_piece
// CHECK-SAME: (%[[X:.+]]: tensor<?x64xf32>)
// CHECK-NOT: kiln.split
// CHECK-NOT: kiln.concat
// CHECK: return %[[X]], %[[X]]
func.func @single_piece(%x: tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  %0 = kiln.split %x axis = 1 : tensor<?x64xf32> -> tensor<?x64xf32>
  %1 = kiln.concat %x axis = 0 : tensor<?x64xf32> -> tensor<?x64xf32>
  return %0, %1 : tensor<?x64xf32>, tensor<?x64xf32>
}

// -----

// fused_matmul(x, w, b) without activation or residual = matmul(x, w, b)
// CHECK-LABEL: func @fused_matmul_without_epilogue
// CHECK-SAME: (%[[X:.+]]: tensor<?x64xf32>, %[[W:.+]]: tensor<96x64xf32>, %[[B:.+]]: tensor<96xf32>)
// CHECK: %[[M:.+]] = kiln.matmul %[[X]], %[[W]] bias %[[B]]
// CHECK-NOT: kiln.fused_matmul
// CHECK: return %[[M]]
func.func @fused_matmul_without_epilogue(%x: tensor<?x64xf32>, %w: tensor<96x64xf32>, %b: tensor<96xf32>) -> tensor<?x96xf32> {
  %0 = kiln.fused_matmul %x, %w bias %b
      : (tensor<?x64xf32>, tensor<96x64xf32>, tensor<96xf32>) -> tensor<?x96xf32>
  return %0 : tensor<?x96xf32>
}

// -----

// An activation is an epilogue: the op stays fused.
// CHECK-LABEL: func @no_fold_fused_matmul_with_activation
// CHECK: kiln.fused_matmul %{{.*}}, %{{.*}} activation<silu>
func.func @no_fold_fused_matmul_with_activation(%x: tensor<?x64xf32>, %w: tensor<96x64xf32>) -> tensor<?x96xf32> {
  %0 = kiln.fused_matmul %x, %w activation<silu>
      : (tensor<?x64xf32>, tensor<96x64xf32>) -> tensor<?x96xf32>
  return %0 : tensor<?x96xf32>
}

// -----

// An rms_norm prologue is fused work too: the op stays fused.
// CHECK-LABEL: func @no_fold_fused_matmul_with_prologue
// CHECK: kiln.fused_matmul %{{.*}} rms_norm(
func.func @no_fold_fused_matmul_with_prologue(%x: tensor<?x64xf32>, %n: tensor<64xf32>, %w: tensor<96x64xf32>) -> tensor<?x96xf32> {
  %0 = kiln.fused_matmul %x rms_norm(%n, epsilon = 1.0e-05), %w
      : (tensor<?x64xf32>, tensor<96x64xf32>, tensor<64xf32>) -> tensor<?x96xf32>
  return %0 : tensor<?x96xf32>
}

// -----

// Pure ops whose results are unused disappear, weights included.
// CHECK-LABEL: func @dead_code
// CHECK-NOT: kiln.
// CHECK: return
module {
  kiln.weight_decl @w : tensor<96x64xf32>
  func.func @dead_code(%x: tensor<?x64xf32>) {
    %w = kiln.weight @w : tensor<96x64xf32>
    %0 = kiln.matmul %x, %w : (tensor<?x64xf32>, tensor<96x64xf32>) -> tensor<?x96xf32>
    %1 = kiln.silu %0 : tensor<?x96xf32>
    return
  }
}
