// RUN: not kiln-opt %s -split-input-file --kiln-fusion-rules=%kiln_src_root/examples/fusion-rules/add-self-to-scale.pdll 2>&1 | FileCheck %s

// kiln.fuse_required holds for user rules too: a candidate that a rule
// matched but whose constraints rejected it, and that no rule rewrote, is an
// error naming the rule, the constraint and the value.

// The sum is also returned: HasOneUse rejects it.
// CHECK: error: rule AddSelfToScale: constraint HasOneUse rejected %0 (the candidate is marked kiln.fuse_required)
func.func @required_two_users(%x: tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  %s = kiln.add %x, %x {kiln.fuse_required} : tensor<?x64xf32>
  return %s, %s : tensor<?x64xf32>, tensor<?x64xf32>
}

// -----

// Marked but fused: no error for this one (CHECK-NOT up to the next split's
// error).
// CHECK-NOT: error
// CHECK: error: rule AddSelfToScale: constraint HasElementType rejected %arg0 (the candidate is marked kiln.fuse_required)
func.func @required_fused(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %s = kiln.add %x, %x {kiln.fuse_required} : tensor<?x64xf32>
  return %s : tensor<?x64xf32>
}

// -----

func.func @required_f16(%x: tensor<?x64xf16>) -> tensor<?x64xf16> {
  %s = kiln.add %x, %x {kiln.fuse_required} : tensor<?x64xf16>
  return %s : tensor<?x64xf16>
}
