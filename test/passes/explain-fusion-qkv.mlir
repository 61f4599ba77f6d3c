// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-explain-fusion \
// RUN:   --kiln-fuse-qkv
// RUN: not kiln-opt %s -split-input-file --kiln-fuse-qkv 2>&1 \
// RUN:   | FileCheck %s --check-prefix=ERR --implicit-check-not=remark

// --kiln-explain-fusion: one remark per value with two or more matmul users
// that did not fuse, at the first of its matmuls, naming the failed
// precondition. With kiln.fuse_required on one of the matmuls it is an error,
// with or without the flag (second RUN line, which also shows that there are
// no remarks without the flag).

// Projections that fuse, and a single projection, are not explained.
func.func @fuses(%x: tensor<?x16xf32>, %wq: tensor<16x16xf32>,
                 %wk: tensor<8x16xf32>, %wo: tensor<16x16xf32>)
    -> (tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x16xf32>) {
  %q = kiln.matmul %x, %wq
      : (tensor<?x16xf32>, tensor<16x16xf32>) -> tensor<?x16xf32>
  %k = kiln.matmul %x, %wk
      : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
  %o = kiln.matmul %q, %wo
      : (tensor<?x16xf32>, tensor<16x16xf32>) -> tensor<?x16xf32>
  return %q, %k, %o : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x16xf32>
}

// -----

func.func @mixed_bias(%x: tensor<?x16xf32>, %wq: tensor<16x16xf32>,
                      %wk: tensor<8x16xf32>, %bk: tensor<8xf32>)
    -> (tensor<?x16xf32>, tensor<?x8xf32>) {
  // expected-remark @+1 {{qkv: %1 has a bias and %0 does not}}
  %q = kiln.matmul %x, %wq
      : (tensor<?x16xf32>, tensor<16x16xf32>) -> tensor<?x16xf32>
  %k = kiln.matmul %x, %wk bias %bk
      : (tensor<?x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return %q, %k : tensor<?x16xf32>, tensor<?x8xf32>
}

// -----

func.func @different_weight_types(%x: tensor<?x64xf32>, %wq: tensor<64x64x!kiln.q8_0>,
                                  %wk: tensor<32x64x!kiln.q4_0>)
    -> (tensor<?x64xf32>, tensor<?x32xf32>) {
  // expected-remark @+1 {{qkv: the weight of %0 is !kiln.q8_0, the weight of %1 is !kiln.q4_0}}
  %q = kiln.matmul %x, %wq
      : (tensor<?x64xf32>, tensor<64x64x!kiln.q8_0>) -> tensor<?x64xf32>
  %k = kiln.matmul %x, %wk
      : (tensor<?x64xf32>, tensor<32x64x!kiln.q4_0>) -> tensor<?x32xf32>
  return %q, %k : tensor<?x64xf32>, tensor<?x32xf32>
}

// -----

func.func @dynamic_rows(%x: tensor<?x16xf32>, %wq: tensor<?x16xf32>,
                        %wk: tensor<8x16xf32>) -> (tensor<?x?xf32>, tensor<?x8xf32>) {
  // expected-remark @+1 {{qkv: the weight %arg1 of %0 has a dynamic number of rows}}
  %q = kiln.matmul %x, %wq
      : (tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x?xf32>
  %k = kiln.matmul %x, %wk
      : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
  return %q, %k : tensor<?x?xf32>, tensor<?x8xf32>
}

// -----

func.func @use_before_operand(%x: tensor<2x4xf32>, %wq: tensor<4x4xf32>)
    -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  // expected-remark @+1 {{qkv: %0 is used before %cst, an operand of the fused matmul, is defined}}
  %q = kiln.matmul %x, %wq
      : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %r = kiln.relu %q : tensor<2x4xf32>
  %wk = arith.constant dense<1.0> : tensor<4x4xf32>
  %k = kiln.matmul %x, %wk
      : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  return %r, %k : tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// The second block is unreachable, which keeps the example free of control
// flow ops; the rule groups matmuls per block either way.
func.func @different_blocks(%x: tensor<?x16xf32>, %wq: tensor<16x16xf32>,
                            %wk: tensor<8x16xf32>) -> tensor<?x16xf32> {
  // expected-remark @+1 {{qkv: the 2 matmuls of %arg0 are in different blocks}}
  %q = kiln.matmul %x, %wq
      : (tensor<?x16xf32>, tensor<16x16xf32>) -> tensor<?x16xf32>
  return %q : tensor<?x16xf32>
^other:
  %k = kiln.matmul %x, %wk
      : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
  return %q : tensor<?x16xf32>
}

// -----

// kiln.fuse_required on any matmul of the group turns the remark into an
// error, reported at the first matmul.
func.func @required(%x: tensor<?x16xf32>, %wq: tensor<16x16xf32>,
                    %bq: tensor<16xf32>, %wk: tensor<8x16xf32>)
    -> (tensor<?x16xf32>, tensor<?x8xf32>) {
  // expected-error @+1 {{qkv: %0 has a bias and %1 does not (the candidate is marked kiln.fuse_required)}}
  %q = kiln.matmul %x, %wq bias %bq
      : (tensor<?x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> tensor<?x16xf32>
  %k = kiln.matmul %x, %wk {kiln.fuse_required}
      : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
  return %q, %k : tensor<?x16xf32>, tensor<?x8xf32>
}
// ERR: error: qkv: %0 has a bias and %1 does not (the candidate is marked kiln.fuse_required)
