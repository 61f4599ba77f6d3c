// RUN: kiln-opt %s -split-input-file --kiln-tile="target=avx2 tuning-file=%S/Inputs/tuning.txt" | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-tile=target=avx2 --kiln-tuning-file=%S/Inputs/tuning.txt | FileCheck %s
// RUN: not kiln-opt %s -split-input-file --kiln-tile="target=avx2 tuning-file=%S/Inputs/bad-tuning.txt" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not kiln-opt %s -split-input-file --kiln-tile="target=avx2 tuning-file=%S/Inputs/missing.txt" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not kiln-opt %s -split-input-file --kiln-tile=target=avx3 2>&1 | FileCheck %s --check-prefix=TARGET

// A tuning file overrides the chosen sizes by op kind and shape; the
// attribute's source names the lines that applied. Without the file avx2
// chooses mr = 6, k = 100 (prefill) and n = 16 (decode) here
// (tile-ops.mlir); with it, prefill_from follows the new register block.

// CHECK-LABEL: func @overridden
// CHECK: kiln.matmul {{.*}}decode = {k = 100 : i64, m = 6 : i64, mr = 6 : i64, n = 64 : i64, nr = 16 : i64}{{.*}}prefill = {k = 32 : i64, m = 516 : i64, mr = 4 : i64, n = 32 : i64, nr = 16 : i64}{{.*}}prefill_from = 4 : i64, source = "target avx2; tuning file {{.*}}tuning.txt:2; tuning file {{.*}}tuning.txt:3"
// The other shape gets only the line for every matmul.
// CHECK: kiln.matmul {{.*}}decode = {k = 64 : i64, m = 6 : i64, mr = 6 : i64, n = 64 : i64, {{.*}}prefill = {k = 64 : i64, {{.*}}mr = 6 : i64, {{.*}}source = "target avx2; tuning file {{.*}}tuning.txt:3"
// CHECK: kiln.rms_norm {{.*}}prefill = {rows = 3 : i64}
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
