// RUN: kiln-opt %s -split-input-file --kiln-fuse-matmul-activation --kiln-explain-fusion -verify-diagnostics | FileCheck %s
// RUN: not kiln-opt %s -split-input-file --kiln-fuse-matmul-activation 2>&1 | FileCheck %s --check-prefix=ERR --implicit-check-not=remark

// The declarative rules of passes/rules/MatmulActivation.pdll: an activation
// of a single-use matmul becomes the fused_matmul's activation, the bias
// kept. The first RUN line also checks the remarks for candidates a
// constraint rejects, the second the error for one marked
// kiln.fuse_required without --kiln-explain-fusion.

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

// CHECK-LABEL: func @matmul_bias_gelu_tanh_relu
// CHECK: kiln.fused_matmul %{{.*}}, %{{.*}} bias %{{.*}} activation<gelu_tanh>
// CHECK: kiln.fused_matmul %{{.*}}, %{{.*}} activation<gelu> :
// CHECK: kiln.fused_matmul %{{.*}}, %{{.*}} activation<relu> :
// CHECK-NOT: kiln.matmul
func.func @matmul_bias_gelu_tanh_relu(%x: tensor<?x64xf32>, %w: tensor<256x64xf32>, %b: tensor<256xf32>)
    -> (tensor<?x256xf32>, tensor<?x256xf32>, tensor<?x256xf32>) {
  %m0 = kiln.matmul %x, %w bias %b : (tensor<?x64xf32>, tensor<256x64xf32>, tensor<256xf32>) -> tensor<?x256xf32>
  %y0 = kiln.gelu %m0 tanh : tensor<?x256xf32>
  %m1 = kiln.matmul %x, %w : (tensor<?x64xf32>, tensor<256x64xf32>) -> tensor<?x256xf32>
  %y1 = kiln.gelu %m1 : tensor<?x256xf32>
  %m2 = kiln.matmul %x, %w : (tensor<?x64xf32>, tensor<256x64xf32>) -> tensor<?x256xf32>
  %y2 = kiln.relu %m2 : tensor<?x256xf32>
  return %y0, %y1, %y2 : tensor<?x256xf32>, tensor<?x256xf32>, tensor<?x256xf32>
}

// -----

// The matmul is also returned, so its pre-activation values are needed: the
// rule names the precondition.

// CHECK-LABEL: func @no_fuse_matmul_two_users
// CHECK: kiln.matmul
// CHECK-NEXT: kiln.gelu
// CHECK-NOT: kiln.fused_matmul
func.func @no_fuse_matmul_two_users(%x: tensor<?x64xf32>, %w: tensor<256x64xf32>)
    -> (tensor<?x256xf32>, tensor<?x256xf32>) {
  %m = kiln.matmul %x, %w : (tensor<?x64xf32>, tensor<256x64xf32>) -> tensor<?x256xf32>
  // expected-remark @+1 {{matmul-gelu-tanh: %0 has 2 users}}
  %y = kiln.gelu %m tanh : tensor<?x256xf32>
  return %y, %m : tensor<?x256xf32>, tensor<?x256xf32>
}

// -----

// Not the rule's shape (no matmul feeds the activation): nothing to say.

// CHECK-LABEL: func @no_fuse_not_a_matmul
// CHECK: kiln.silu
func.func @no_fuse_not_a_matmul(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %y = kiln.silu %x : tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// ERR: error: matmul-relu: %0 has 2 users (the candidate is marked kiln.fuse_required)
func.func @required(%x: tensor<?x64xf32>, %w: tensor<256x64xf32>)
    -> (tensor<?x256xf32>, tensor<?x256xf32>) {
  %m = kiln.matmul %x, %w : (tensor<?x64xf32>, tensor<256x64xf32>) -> tensor<?x256xf32>
  // expected-error @+1 {{matmul-relu: %0 has 2 users (the candidate is marked kiln.fuse_required)}}
  %y = kiln.relu %m {kiln.fuse_required} : tensor<?x256xf32>
  return %y, %m : tensor<?x256xf32>, tensor<?x256xf32>
}
