// RUN: kiln-opt %s -split-input-file --kiln-explain-fusion --kiln-fuse-rms-norm-prologue -verify-diagnostics
// RUN: not kiln-opt %s -split-input-file --kiln-fuse-rms-norm-prologue 2>&1 | FileCheck %s --check-prefix=ERR --implicit-check-not=remark

// Every rms_norm that feeds something and does not become a prologue is
// explained; with kiln.fuse_required on the norm or a consumer, it is an
// error (second RUN line).

func.func @norm_escapes(%x: tensor<?x64xf32>, %g: tensor<64xf32>, %w: tensor<96x64xf32>) -> (tensor<?x96xf32>, tensor<?x64xf32>) {
  // expected-remark @+1 {{rms-norm-prologue: %0 is used by func.return, which takes no prologue}}
  %h = kiln.rms_norm %x, %g epsilon = 1.0e-05 : tensor<?x64xf32>, tensor<64xf32>
  %y = kiln.matmul %h, %w : (tensor<?x64xf32>, tensor<96x64xf32>) -> tensor<?x96xf32>
  return %y, %h : tensor<?x96xf32>, tensor<?x64xf32>
}

// -----

func.func @norm_as_residual(%x: tensor<?x64xf32>, %g: tensor<64xf32>, %w: tensor<64x64xf32>) -> tensor<?x64xf32> {
  // expected-remark @+1 {{rms-norm-prologue: %0 is used by kiln.fused_matmul as operand 2, not as its input}}
  %h = kiln.rms_norm %x, %g epsilon = 1.0e-05 : tensor<?x64xf32>, tensor<64xf32>
  %y = kiln.fused_matmul %x, %w residual %h : (tensor<?x64xf32>, tensor<64x64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

func.func @prologue_taken(%x: tensor<?x64xf32>, %g: tensor<64xf32>, %w1: tensor<96x64xf32>, %w3: tensor<96x64xf32>) -> tensor<?x96xf32> {
  // expected-remark @+1 {{rms-norm-prologue: %0 is used by kiln.swiglu, which already has a prologue}}
  %h = kiln.rms_norm %x, %g epsilon = 1.0e-05 : tensor<?x64xf32>, tensor<64xf32>
  %y = kiln.swiglu %h rms_norm(%g : tensor<64xf32>, epsilon = 1.0e-05), %w1, %w3 : tensor<?x64xf32>, tensor<96x64xf32> -> tensor<?x96xf32>
  return %y : tensor<?x96xf32>
}

// -----

func.func @required(%x: tensor<?x64xf32>, %g: tensor<64xf32>, %w: tensor<96x64xf32>) -> (tensor<?x96xf32>, tensor<?x64xf32>) {
  // ERR: error: rms-norm-prologue: %0 is used by func.return, which takes no prologue (the candidate is marked kiln.fuse_required)
  // expected-error @+1 {{rms-norm-prologue: %0 is used by func.return, which takes no prologue (the candidate is marked kiln.fuse_required)}}
  %h = kiln.rms_norm %x, %g epsilon = 1.0e-05 {kiln.fuse_required} : tensor<?x64xf32>, tensor<64xf32>
  %y = kiln.matmul %h, %w : (tensor<?x64xf32>, tensor<96x64xf32>) -> tensor<?x96xf32>
  return %y, %h : tensor<?x96xf32>, tensor<?x64xf32>
}
