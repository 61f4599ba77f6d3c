// RUN: kiln-opt %s --kiln-pipeline="target=avx2 max-tokens=64 fusion=false" \
// RUN:   | FileCheck %s --implicit-check-not=kiln.fused_matmul \
// RUN:       --implicit-check-not=kiln.swiglu --implicit-check-not="kiln.attention "
// RUN: kiln-opt %s --kiln-pipeline="target=avx2 max-tokens=64" \
// RUN:   | FileCheck %s --check-prefix=FUSED

// `fusion=false` leaves out the built-in fusion passes: the model runs as
// imported, unfused, so that what fusion is worth can be measured against it.
// The rest of the pipeline still runs: every matmul is tiled, the step gets a
// memory plan, and the CPU legality check passes (every unfused op has a CPU
// kernel).

// CHECK-LABEL: func.func @step
// CHECK-SAME: kiln.memory_plan = #kiln.memory_plan<alignment = 64, max_tokens = 64, arena_bytes = {{[0-9]+}}, naive_bytes = {{[0-9]+}}, context_length = 32>
// CHECK: kiln.rms_norm {{.*}}kiln.tiles =
// CHECK: kiln.matmul {{.*}}kiln.tiles = #kiln.gemm_tiles<
// CHECK: kiln.kv_read
// CHECK: kiln.attention_scores {{.*}}kiln.buffers = [#kiln.buffer<
// CHECK: kiln.scale
// CHECK: kiln.attention_mask
// CHECK: kiln.softmax
// CHECK: kiln.attention_output
// CHECK: kiln.matmul {{.*}}kiln.tiles = #kiln.gemm_tiles<
// CHECK: kiln.add {{.*}}kiln.buffers = [#kiln.buffer<
// CHECK: kiln.silu
// CHECK: kiln.mul
// CHECK: kiln.matmul {{.*}}kiln.tiles = #kiln.gemm_tiles<
// CHECK: kiln.add
// CHECK: kiln.matmul {{.*}}kiln.tiles = #kiln.gemm_tiles<
// CHECK: return

// With fusion (the default), the same step becomes fused ops.
// FUSED-LABEL: func.func @step
// FUSED-SAME: kiln.memory_plan = #kiln.memory_plan<
// FUSED: kiln.attention {{.*}}kiln.tiles =
// FUSED: kiln.fused_matmul {{.*}} residual
// FUSED: kiln.swiglu
// FUSED-NOT: kiln.attention_scores
// FUSED: return

module attributes {kiln.weights_source = #kiln.weights_source<gguf, "m.gguf">} {
  kiln.weight_decl @emb : tensor<8x16xf32>
  kiln.weight_decl @norm : tensor<16xf32>
  kiln.weight_decl @wq : tensor<16x16xf32>
  kiln.weight_decl @wk : tensor<8x16xf32>
  kiln.weight_decl @wv : tensor<8x16xf32>
  kiln.weight_decl @wo : tensor<16x16xf32>
  kiln.weight_decl @w1 : tensor<24x16xf32>
  kiln.weight_decl @w3 : tensor<24x16xf32>
  kiln.weight_decl @w2 : tensor<16x24xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>,
                  %seq_ids: tensor<?xi32>, %logit_rows: tensor<?xi32>,
                  %cache: !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>)
      -> (tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>)
      attributes {kiln.step, kiln.context_length = 32 : i64} {
    %emb = kiln.weight @emb : tensor<8x16xf32>
    %x = kiln.embedding %emb[%tokens] : tensor<8x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %norm = kiln.weight @norm : tensor<16xf32>
    %h = kiln.rms_norm %x, %norm epsilon = 1.0e-05 : tensor<?x16xf32>, tensor<16xf32>
    %wq = kiln.weight @wq : tensor<16x16xf32>
    %wk = kiln.weight @wk : tensor<8x16xf32>
    %wv = kiln.weight @wv : tensor<8x16xf32>
    %q = kiln.matmul %h, %wq : (tensor<?x16xf32>, tensor<16x16xf32>) -> tensor<?x16xf32>
    %k = kiln.matmul %h, %wk : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
    %v = kiln.matmul %h, %wv : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
    %qh = kiln.reshape %q : tensor<?x16xf32> -> tensor<?x4x4xf32>
    %kh = kiln.reshape %k : tensor<?x8xf32> -> tensor<?x2x4xf32>
    %vh = kiln.reshape %v : tensor<?x8xf32> -> tensor<?x2x4xf32>
    %c1 = kiln.kv_append %cache[0] keys %kh values %vh seqs %seq_ids positions %positions
        : !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>, tensor<?x2x4xf32>, tensor<?xi32>
    %kc, %vc = kiln.kv_read %c1[0] seqs %seq_ids positions %positions
        : !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>, tensor<?xi32> -> tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>
    %s = kiln.attention_scores %qh, %kc : tensor<?x4x4xf32>, tensor<?x?x2x4xf32> -> tensor<?x4x?xf32>
    %ss = kiln.scale %s by 0.5 : tensor<?x4x?xf32>
    %m = kiln.attention_mask %ss, %positions : tensor<?x4x?xf32>, tensor<?xi32>
    %p = kiln.softmax %m : tensor<?x4x?xf32>
    %o = kiln.attention_output %p, %vc : tensor<?x4x?xf32>, tensor<?x?x2x4xf32> -> tensor<?x4x4xf32>
    %of = kiln.reshape %o : tensor<?x4x4xf32> -> tensor<?x16xf32>
    %wo = kiln.weight @wo : tensor<16x16xf32>
    %a = kiln.matmul %of, %wo : (tensor<?x16xf32>, tensor<16x16xf32>) -> tensor<?x16xf32>
    %x1 = kiln.add %x, %a : tensor<?x16xf32>
    %w1 = kiln.weight @w1 : tensor<24x16xf32>
    %w3 = kiln.weight @w3 : tensor<24x16xf32>
    %w2 = kiln.weight @w2 : tensor<16x24xf32>
    %g = kiln.matmul %x1, %w1 : (tensor<?x16xf32>, tensor<24x16xf32>) -> tensor<?x24xf32>
    %sg = kiln.silu %g : tensor<?x24xf32>
    %u = kiln.matmul %x1, %w3 : (tensor<?x16xf32>, tensor<24x16xf32>) -> tensor<?x24xf32>
    %hid = kiln.mul %sg, %u : tensor<?x24xf32>
    %d = kiln.matmul %hid, %w2 : (tensor<?x24xf32>, tensor<16x24xf32>) -> tensor<?x16xf32>
    %x2 = kiln.add %x1, %d : tensor<?x16xf32>
    %logits = kiln.matmul %x2, %emb : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
    return %logits, %c1 : tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>
  }
}
