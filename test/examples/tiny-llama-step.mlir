// The example model of examples/ parses, verifies (including the step
// contract), and prints back to text that parses again.
// RUN: kiln-opt %kiln_src_root/examples/tiny-llama-step.mlir > %t.mlir
// RUN: kiln-opt %t.mlir | FileCheck %s
// After decomposing the fused attention of layer 1, both layers read the
// cache the same way:
// RUN: kiln-opt %kiln_src_root/examples/tiny-llama-step.mlir --kiln-decompose-attention \
// RUN:   | FileCheck %s --check-prefix=DECOMPOSED

// CHECK: module attributes {kiln.weights_source = #kiln.weights_source<gguf, "tiny-llama.gguf">}
// CHECK: kiln.weight_decl @token_embd.weight : tensor<512x64xf32>
// CHECK-COUNT-18: kiln.weight_decl @blk.
// CHECK: kiln.weight_decl @output_norm.weight : tensor<64xf32>
// CHECK: func.func @step
// CHECK-SAME: attributes {kiln.step}
// CHECK-COUNT-2: kiln.kv_append
// CHECK: kiln.attention %
// CHECK: kiln.swiglu
// CHECK: kiln.gather_rows
// CHECK: return

// DECOMPOSED-COUNT-2: kiln.kv_read
// DECOMPOSED-NOT: kiln.attention %
