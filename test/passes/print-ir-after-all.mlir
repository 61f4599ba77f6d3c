// kiln-opt's MLIR options work through Kiln's passes.
// RUN: kiln-opt %s --kiln-decompose-attention --canonicalize \
// RUN:   --mlir-print-ir-after-all -o /dev/null 2>&1 | FileCheck %s

// CHECK: IR Dump After DecomposeAttention (kiln-decompose-attention)
// CHECK: kiln.attention_scores
// CHECK: IR Dump After Canonicalizer (canonicalize)
func.func @f(%q: tensor<?x4x8xf32>,
             %c: !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 8, f32>,
             %s: tensor<?xi32>) -> tensor<?x4x8xf32> {
  %o = kiln.attention %q, %c[0] seqs %s positions %s scale = 0.5
      : tensor<?x4x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 8, f32>, tensor<?xi32>
  return %o : tensor<?x4x8xf32>
}
