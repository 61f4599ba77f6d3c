// RUN: kiln-opt %s -split-input-file --kiln-explain-fusion --kiln-fuse-swiglu --kiln-fuse-matmul-activation --kiln-fuse-matmul-epilogue -verify-diagnostics
// RUN: not kiln-opt %s -split-input-file --kiln-fuse-swiglu --kiln-fuse-matmul-activation --kiln-fuse-matmul-epilogue 2>&1 | FileCheck %s --check-prefix=ERR --implicit-check-not=remark

// With --kiln-explain-fusion, every candidate of the swiglu and matmul
// epilogue rules that does not fuse gets one remark naming the rule and the
// failed precondition. With kiln.fuse_required on an op of the candidate, the
// same message is an error, with or without the flag (second RUN line, which
// also shows that there are no remarks without the flag).

// The silu is also returned. The epilogue pass then fuses it into its matmul,
// which has one use: no remark for that.
func.func @swiglu_silu_two_users(%x: tensor<?x64xf32>, %w1: tensor<172x64xf32>,
                                 %w3: tensor<172x64xf32>) -> (tensor<?x172xf32>, tensor<?x172xf32>) {
  %gate = kiln.matmul %x, %w1 : (tensor<?x64xf32>, tensor<172x64xf32>) -> tensor<?x172xf32>
  %act = kiln.silu %gate : tensor<?x172xf32>
  %up = kiln.matmul %x, %w3 : (tensor<?x64xf32>, tensor<172x64xf32>) -> tensor<?x172xf32>
  // expected-remark @+1 {{swiglu: %1 has 2 users}}
  %h = kiln.mul %act, %up : tensor<?x172xf32>
  return %h, %act : tensor<?x172xf32>, tensor<?x172xf32>
}

// -----

func.func @swiglu_different_inputs(%x: tensor<?x64xf32>, %y: tensor<?x64xf32>, %w1: tensor<172x64xf32>,
                                   %w3: tensor<172x64xf32>) -> tensor<?x172xf32> {
  %gate = kiln.matmul %x, %w1 : (tensor<?x64xf32>, tensor<172x64xf32>) -> tensor<?x172xf32>
  %act = kiln.silu %gate : tensor<?x172xf32>
  %up = kiln.matmul %y, %w3 : (tensor<?x64xf32>, tensor<172x64xf32>) -> tensor<?x172xf32>
  // expected-remark @+1 {{swiglu: the gate and up matmuls read different inputs (%arg0, %arg1)}}
  %h = kiln.mul %act, %up : tensor<?x172xf32>
  return %h : tensor<?x172xf32>
}

// -----

func.func @swiglu_bias(%x: tensor<?x64xf32>, %w1: tensor<172x64xf32>, %b1: tensor<172xf32>,
                       %w3: tensor<172x64xf32>) -> tensor<?x172xf32> {
  %gate = kiln.matmul %x, %w1 bias %b1 : (tensor<?x64xf32>, tensor<172x64xf32>, tensor<172xf32>) -> tensor<?x172xf32>
  %act = kiln.silu %gate : tensor<?x172xf32>
  %up = kiln.matmul %x, %w3 : (tensor<?x64xf32>, tensor<172x64xf32>) -> tensor<?x172xf32>
  // expected-remark @+1 {{swiglu: %0 has a bias}}
  %h = kiln.mul %act, %up : tensor<?x172xf32>
  return %h : tensor<?x172xf32>
}

// -----

func.func @swiglu_weight_types(%x: tensor<?x64xf32>, %w1: tensor<172x64xf32>,
                               %w3: tensor<172x64xf16>) -> tensor<?x172xf32> {
  %gate = kiln.matmul %x, %w1 : (tensor<?x64xf32>, tensor<172x64xf32>) -> tensor<?x172xf32>
  %act = kiln.silu %gate : tensor<?x172xf32>
  %up = kiln.matmul %x, %w3 : (tensor<?x64xf32>, tensor<172x64xf16>) -> tensor<?x172xf32>
  // expected-remark @+1 {{swiglu: the gate and up weights have different types (tensor<172x64xf32>, tensor<172x64xf16>)}}
  %h = kiln.mul %act, %up : tensor<?x172xf32>
  return %h : tensor<?x172xf32>
}

// -----

// The gate matmul is also returned: neither swiglu nor matmul-silu applies,
// and each says so once.
func.func @gate_two_users(%x: tensor<?x64xf32>, %w1: tensor<172x64xf32>,
                          %w3: tensor<172x64xf32>) -> (tensor<?x172xf32>, tensor<?x172xf32>) {
  %gate = kiln.matmul %x, %w1 : (tensor<?x64xf32>, tensor<172x64xf32>) -> tensor<?x172xf32>
  // expected-remark @+1 {{matmul-silu: %0 has 2 users}}
  %act = kiln.silu %gate : tensor<?x172xf32>
  %up = kiln.matmul %x, %w3 : (tensor<?x64xf32>, tensor<172x64xf32>) -> tensor<?x172xf32>
  // expected-remark @+1 {{swiglu: %0 has 2 users}}
  %h = kiln.mul %act, %up : tensor<?x172xf32>
  return %h, %gate : tensor<?x172xf32>, tensor<?x172xf32>
}

// -----

func.func @gelu_tanh_two_users(%x: tensor<?x64xf32>, %w: tensor<256x64xf32>)
    -> (tensor<?x256xf32>, tensor<?x256xf32>) {
  %m = kiln.matmul %x, %w : (tensor<?x64xf32>, tensor<256x64xf32>) -> tensor<?x256xf32>
  // expected-remark @+1 {{matmul-gelu-tanh: %0 has 2 users}}
  %y = kiln.gelu %m tanh : tensor<?x256xf32>
  return %y, %m : tensor<?x256xf32>, tensor<?x256xf32>
}

// -----

func.func @relu_after_residual(%x: tensor<?x64xf32>, %w: tensor<64x64xf32>,
                               %r: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %m = kiln.fused_matmul %x, %w residual %r : (tensor<?x64xf32>, tensor<64x64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  // expected-remark @+1 {{matmul-relu: %0 already has a residual, and act(y + r) is not act(y) + r}}
  %y = kiln.relu %m : tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

func.func @residual_two_users(%x0: tensor<?x64xf32>, %a: tensor<?x64xf32>,
                              %wo: tensor<64x64xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  %o = kiln.matmul %a, %wo : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  // expected-remark @+1 {{matmul-residual: %0 has 2 users}}
  %x1 = kiln.add %x0, %o : tensor<?x64xf32>
  return %x1, %o : tensor<?x64xf32>, tensor<?x64xf32>
}

// -----

// Both operands are matmul candidates; one remark gives both reasons.
func.func @residual_both_blocked(%x: tensor<?x64xf32>, %w1: tensor<64x64xf32>, %w2: tensor<64x64xf32>)
    -> (tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>) {
  %m1 = kiln.matmul %x, %w1 : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %m2 = kiln.matmul %x, %w2 : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  // expected-remark @+1 {{matmul-residual: %0 has 2 users; %1 has 2 users}}
  %y = kiln.add %m1, %m2 : tensor<?x64xf32>
  return %y, %m1, %m2 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>
}

// -----

func.func @residual_same_operand(%x: tensor<?x64xf32>, %w: tensor<64x64xf32>) -> tensor<?x64xf32> {
  %m = kiln.matmul %x, %w : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  // expected-remark @+1 {{matmul-residual: both operands are %0, so there is no other residual}}
  %y = kiln.add %m, %m : tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// kiln.fuse_required on the root of the candidate (the mul).
func.func @required_on_root(%x: tensor<?x64xf32>, %w1: tensor<172x64xf32>,
                            %w3: tensor<172x64xf32>) -> (tensor<?x172xf32>, tensor<?x172xf32>) {
  %gate = kiln.matmul %x, %w1 : (tensor<?x64xf32>, tensor<172x64xf32>) -> tensor<?x172xf32>
  %act = kiln.silu %gate : tensor<?x172xf32>
  %up = kiln.matmul %x, %w3 : (tensor<?x64xf32>, tensor<172x64xf32>) -> tensor<?x172xf32>
  // ERR: error: swiglu: %1 has 2 users (the candidate is marked kiln.fuse_required)
  // expected-error @+1 {{swiglu: %1 has 2 users (the candidate is marked kiln.fuse_required)}}
  %h = kiln.mul %act, %up {kiln.fuse_required} : tensor<?x172xf32>
  return %h, %act : tensor<?x172xf32>, tensor<?x172xf32>
}

// -----

// kiln.fuse_required on another op of the candidate (the matmul); the error
// is reported at the root, the add.
func.func @required_on_matmul(%x0: tensor<?x64xf32>, %a: tensor<?x64xf32>,
                              %wo: tensor<64x64xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  %o = kiln.matmul %a, %wo {kiln.fuse_required} : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  // ERR: error: matmul-residual: %0 has 2 users (the candidate is marked kiln.fuse_required)
  // expected-error @+1 {{matmul-residual: %0 has 2 users (the candidate is marked kiln.fuse_required)}}
  %x1 = kiln.add %x0, %o : tensor<?x64xf32>
  return %x1, %o : tensor<?x64xf32>, tensor<?x64xf32>
}

// -----

// kiln.fuse_required on candidates that fuse: no diagnostic.
func.func @required_and_fused(%x: tensor<?x64xf32>, %w1: tensor<172x64xf32>, %w3: tensor<172x64xf32>,
                              %r: tensor<?x172xf32>, %w: tensor<172x172xf32>) -> tensor<?x172xf32> {
  %gate = kiln.matmul %x, %w1 {kiln.fuse_required} : (tensor<?x64xf32>, tensor<172x64xf32>) -> tensor<?x172xf32>
  %act = kiln.silu %gate : tensor<?x172xf32>
  %up = kiln.matmul %x, %w3 : (tensor<?x64xf32>, tensor<172x64xf32>) -> tensor<?x172xf32>
  %h = kiln.mul %act, %up {kiln.fuse_required} : tensor<?x172xf32>
  %m = kiln.matmul %h, %w : (tensor<?x172xf32>, tensor<172x172xf32>) -> tensor<?x172xf32>
  %y = kiln.add %r, %m {kiln.fuse_required} : tensor<?x172xf32>
  return %y : tensor<?x172xf32>
}
