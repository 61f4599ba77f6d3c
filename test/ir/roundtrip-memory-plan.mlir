// RUN: kiln-opt %s -split-input-file | FileCheck %s
// Parse -> print -> parse -> print gives the same text:
// RUN: kiln-opt %s -split-input-file > %t.once.mlir
// RUN: kiln-opt %t.once.mlir -split-input-file > %t.twice.mlir
// RUN: diff %t.once.mlir %t.twice.mlir

// The memory plan's typed attributes print as written: #kiln.buffer for a
// result with storage of its own, #kiln.buffer_view for a result that is an
// operand's storage, `unit` for a result without storage, and
// #kiln.memory_plan on the step, whose context_length is printed only when
// present.

// CHECK-LABEL: func.func @step
// CHECK-SAME: kiln.memory_plan = #kiln.memory_plan<alignment = 64, max_tokens = 512, arena_bytes = 65536, naive_bytes = 98304, context_length = 256>
// CHECK: kiln.embedding {{.*}} {kiln.buffers = [#kiln.buffer<offset = 0, bytes_fixed = 0, bytes_per_token = 64>]}
// CHECK: kiln.reshape {{.*}} {kiln.buffers = [#kiln.buffer_view<operand = 0>]}
// CHECK: kiln.silu {{.*}} {kiln.buffers = [#kiln.buffer<offset = 32768, bytes_fixed = 0, bytes_per_token = 64>]}
module attributes {kiln.weights_source = #kiln.weights_source<gguf, "m.gguf">} {
  kiln.weight_decl @emb : tensor<8x16xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>,
                  %seq_ids: tensor<?xi32>, %logit_rows: tensor<?xi32>,
                  %cache: !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      -> (tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      attributes {kiln.step, kiln.memory_plan = #kiln.memory_plan<alignment = 64, max_tokens = 512,
                                                                  arena_bytes = 65536, naive_bytes = 98304,
                                                                  context_length = 256>} {
    %emb = kiln.weight @emb : tensor<8x16xf32>
    %x = kiln.embedding %emb[%tokens] {kiln.buffers = [#kiln.buffer<offset = 0, bytes_fixed = 0, bytes_per_token = 64>]} : tensor<8x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %k = kiln.reshape %x {kiln.buffers = [#kiln.buffer_view<operand = 0>]} : tensor<?x16xf32> -> tensor<?x4x4xf32>
    %c = kiln.kv_append %cache[0] keys %k values %k seqs %seq_ids positions %positions
        : !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>, tensor<?x4x4xf32>, tensor<?xi32>
    %s = kiln.silu %x {kiln.buffers = [#kiln.buffer<offset = 32768, bytes_fixed = 0, bytes_per_token = 64>]} : tensor<?x16xf32>
    %logits = kiln.matmul %s, %emb {kiln.buffers = [#kiln.buffer<offset = 0, bytes_fixed = 0, bytes_per_token = 32>]} : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
    return %logits, %c : tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>
  }
}

// -----

// Without a cache bound the plan has no context_length; a fixed part of a
// size is printed as is, and a result without storage has a `unit` entry.

// CHECK-LABEL: func.func @step_without_context
// CHECK-SAME: kiln.memory_plan = #kiln.memory_plan<alignment = 64, max_tokens = 1, arena_bytes = 192, naive_bytes = 192>, kiln.step}
// CHECK: kiln.split {{.*}} {kiln.buffers = [#kiln.buffer<offset = 0, bytes_fixed = 128, bytes_per_token = 0>, unit]}
module attributes {kiln.weights_source = #kiln.weights_source<gguf, "m.gguf">} {
  kiln.weight_decl @emb : tensor<8x16xf32>
  func.func @step_without_context(%tokens: tensor<?xi32>, %positions: tensor<?xi32>,
                  %seq_ids: tensor<?xi32>, %logit_rows: tensor<?xi32>,
                  %cache: !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      -> (tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      attributes {kiln.step, kiln.memory_plan = #kiln.memory_plan<alignment = 64, max_tokens = 1, arena_bytes = 192, naive_bytes = 192>} {
    %emb = kiln.weight @emb : tensor<8x16xf32>
    %x = kiln.embedding %emb[%tokens] : tensor<8x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %a, %b = kiln.split %emb axis = 0 {kiln.buffers = [#kiln.buffer<offset = 0, bytes_fixed = 128, bytes_per_token = 0>, unit]} : tensor<8x16xf32> -> tensor<2x16xf32>, tensor<6x16xf32>
    %g = kiln.gather_rows %x[%logit_rows] : tensor<?x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %logits = kiln.matmul %g, %emb : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
    return %logits, %cache : tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>
  }
}
