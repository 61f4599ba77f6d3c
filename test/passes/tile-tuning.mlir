// RUN: kiln-opt %s -split-input-file --kiln-tile="target=avx2 tuning-file=%S/Inputs/tuning.txt" | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-tile=target=avx2 --kiln-tuning-file=%S/Inputs/tuning.txt | FileCheck %s
// RUN: not kiln-opt %s -split-input-file --kiln-tile="target=avx2 tuning-file=%S/Inputs/bad-tuning.txt" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not kiln-opt %s -split-input-file --kiln-tile="target=avx2 tuning-file=%S/Inputs/missing.txt" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not kiln-opt %s -split-input-file --kiln-tile=target=avx3 2>&1 | FileCheck %s --check-prefix=TARGET
// RUN: not kiln-opt %s -split-input-file --kiln-tile="target=avx2 tuning-file=%S/Inputs/tuning-kv.txt" 2>&1 | FileCheck %s --check-prefix=KV

// A tuning file overrides the chosen sizes by op kind and shape; the
// attribute's source names the lines that applied. Without the file avx2
// chooses mr = 6, k = 100 (prefill) and n = 16 (decode) here
// (tile-ops.mlir); with it, prefill_from follows the new register block, and
// the prefill k also sets decode's (one reduction split for both phases:
// batch invariance).

// CHECK-LABEL: func @overridden
// CHECK: kiln.matmul {{.*}}decode = <m = 6, n = 64, k = 32, mr = 6, nr = 16>{{.*}}prefill = <m = 516, n = 32, k = 32, mr = 4, nr = 16>{{.*}}prefill_from = 4, source = "target avx2; tuning file {{.*}}tuning.txt:2; tuning file {{.*}}tuning.txt:3"
// The other shape gets only the line for every matmul.
// CHECK: kiln.matmul {{.*}}decode = <m = 6, n = 64, k = 64, mr = 6, {{.*}}prefill = <{{.*}}k = 64, mr = 6, {{.*}}source = "target avx2; tuning file {{.*}}tuning.txt:3"
// CHECK: kiln.rms_norm {{.*}}prefill = <rows = 3>
func.func @overridden(%x: tensor<?x100xf32>, %w: tensor<172x100xf32>, %x2: tensor<?x64xf32>,
                      %w2: tensor<64x64xf32>, %g: tensor<64xf32>) -> (tensor<?x172xf32>, tensor<?x64xf32>, tensor<?x64xf32>) {
  %y = kiln.matmul %x, %w : (tensor<?x100xf32>, tensor<172x100xf32>) -> tensor<?x172xf32>
  %z = kiln.matmul %x2, %w2 : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %n = kiln.rms_norm %x2, %g epsilon = 1.0e-05 : tensor<?x64xf32>, tensor<64xf32>
  return %y, %z, %n : tensor<?x172xf32>, tensor<?x64xf32>, tensor<?x64xf32>
}

// BAD: error: kiln-tile: {{.*}}bad-tuning.txt:2: 'q' is not a tile size of matmul (expected m, n, k, mr, nr)
// MISSING: error: kiln-tile: cannot read tuning file '{{.*}}missing.txt': No such file or directory
// TARGET: error: kiln-tile: {{.*}}avx3

// -----

// A tuned attention kv sets both phases, and must be whole vectors: avx2
// loads 8 key positions at a time.

// CHECK-LABEL: func @attention
// CHECK: kiln.attention {{.*}}decode = <q = 1, kv = 32>, prefill = <q = 64, kv = 32>
// KV: error: 'kiln.attention' op attention kv tile 20 (target avx2; tuning file {{.*}}tuning-kv.txt:2) must be a multiple of the target's 8-float vectors: key positions load in vectors
func.func @attention(%pos: tensor<?xi32>, %seq: tensor<?xi32>,
                     %c: !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 64, f32>,
                     %q: tensor<?x4x64xf32>) -> tensor<?x4x64xf32> {
  %o = kiln.attention %q, %c[0] seqs %seq positions %pos scale = 0.125
      : tensor<?x4x64xf32>, !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 64, f32>, tensor<?xi32>
  return %o : tensor<?x4x64xf32>
}
