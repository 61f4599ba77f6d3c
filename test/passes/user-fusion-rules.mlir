// RUN: kiln-opt %s -split-input-file --kiln-fusion-rules=%kiln_src_root/examples/fusion-rules/add-self-to-scale.pdll | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-fusion-rules=%kiln_src_root/examples/fusion-rules/add-self-to-scale.pdll --kiln-explain-fusion -verify-diagnostics > /dev/null
// RUN: not kiln-opt %s --kiln-fusion-rules=%S/Inputs/bad-rule.pdll 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not kiln-opt %s --kiln-fusion-rules=%S/Inputs/no-such-rule.pdll 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: echo 'pdl.pattern @EraseUsed : benefit(1) { %v = operand %k = type %o = operation "kiln.add"(%v, %v : !pdl.value, !pdl.value) -> (%k : !pdl.type) rewrite %o { erase %o } }' > %t.erase-used.mlir
// RUN: not kiln-opt %s -split-input-file --kiln-fusion-rules=%t.erase-used.mlir 2>&1 | FileCheck %s --check-prefix=ERASE
// RUN: echo 'pdl.pattern @NoFactor : benefit(1) { %v = operand %k = type %o = operation "kiln.add"(%v, %v : !pdl.value, !pdl.value) -> (%k : !pdl.type) rewrite %o { %n = operation "kiln.scale"(%v : !pdl.value) -> (%k : !pdl.type) replace %o with %n } }' > %t.no-factor.mlir
// RUN: not kiln-opt %s -split-input-file --kiln-fusion-rules=%t.no-factor.mlir 2>&1 | FileCheck %s --check-prefix=INVALID
// RUN: echo 'pdl.pattern @Unknown : benefit(1) { %v = operand %o = operation "kiln.add"(%v, %v : !pdl.value, !pdl.value) apply_native_constraint "IsCheap"(%v : !pdl.value) rewrite %o { erase %o } }' > %t.unknown.mlir
// RUN: not kiln-opt %s -split-input-file --kiln-fusion-rules=%t.unknown.mlir 2>&1 | FileCheck %s --check-prefix=UNKNOWN

// User fusion rules (docs/fusion.md, "User rules"): the example rule
// AddSelfToScale (examples/fusion-rules/add-self-to-scale.pdll) rewrites
// `kiln.add %x, %x` into `kiln.scale %x by 2.0` when the sum has one use and x
// is f32. The second RUN line checks the remarks --kiln-explain-fusion gives
// for the candidates a constraint rejects; the others, the errors for a
// malformed and a missing rule file and for rules (PDL, written by the RUN
// lines) that would break the IR or call a constraint Kiln does not have:
// errors, not crashes.

// CHECK-LABEL: func.func @add_self
// CHECK-NEXT:    %[[S:.*]] = kiln.scale %arg0 by 2.000000e+00 : tensor<?x64xf32>
// CHECK-NEXT:    return %[[S]]
func.func @add_self(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %s = kiln.add %x, %x : tensor<?x64xf32>
  return %s : tensor<?x64xf32>
}

// -----

// The sum is returned twice: HasOneUse rejects it.
// CHECK-LABEL: func.func @no_fuse_two_users
// CHECK-NOT:     kiln.scale
// CHECK:         kiln.add %arg0, %arg0
func.func @no_fuse_two_users(%x: tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  // expected-remark @+1 {{rule AddSelfToScale: constraint HasOneUse rejected %0}}
  %s = kiln.add %x, %x : tensor<?x64xf32>
  return %s, %s : tensor<?x64xf32>, tensor<?x64xf32>
}

// -----

// f16 operands: HasElementType rejects x, a block argument (the remark is at
// the function).
// CHECK-LABEL: func.func @no_fuse_f16
// CHECK-NOT:     kiln.scale
// CHECK:         kiln.add %arg0, %arg0
// expected-remark @+1 {{rule AddSelfToScale: constraint HasElementType rejected %arg0}}
func.func @no_fuse_f16(%x: tensor<?x64xf16>) -> tensor<?x64xf16> {
  %s = kiln.add %x, %x : tensor<?x64xf16>
  return %s : tensor<?x64xf16>
}

// -----

// Different operands are not the rule's shape at all: no remark.
// CHECK-LABEL: func.func @no_fuse_different_operands
// CHECK-NOT:     kiln.scale
// CHECK:         kiln.add %arg0, %arg1
func.func @no_fuse_different_operands(%x: tensor<?x64xf32>, %y: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %s = kiln.add %x, %y : tensor<?x64xf32>
  return %s : tensor<?x64xf32>
}

// BAD: error: kiln-apply-fusion-rules: cannot compile the rule file '{{.*}}Inputs/bad-rule.pdll':
// BAD-NEXT: {{.*}}Inputs/bad-rule.pdll:9:1: error: expected `;` after statement

// MISSING: error: kiln-apply-fusion-rules: rule file '{{.*}}Inputs/no-such-rule.pdll' does not exist

// ERASE: error: a rule in '{{.*}}erase-used.mlir' erased 'kiln.add' while its results were still used

// INVALID: error: 'kiln.scale' op requires attribute 'factor'
// INVALID: error: a rule in '{{.*}}no-factor.mlir' created an invalid 'kiln.scale'

// UNKNOWN: unknown.mlir:1:{{[0-9]+}}: error: rule file '{{.*}}unknown.mlir' calls the native constraint 'IsCheap', which Kiln does not provide
