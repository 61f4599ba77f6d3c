// RUN: kiln-opt %s -split-input-file --kiln-plan-memory | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-plan-memory="max-tokens=1" | FileCheck %s --check-prefix=ONE
// RUN: kiln-opt %s -split-input-file --kiln-plan-memory="context-length=8" | FileCheck %s --check-prefix=CTX

// Every activation of a step gets a buffer in one arena; buffers that are
// never live at the same time share space. Sizes are recorded as
// bytes_per_token·T + bytes_fixed; offsets are planned at max-tokens (512
// unless given), 64-byte aligned. Here [T, 16] f32 is 64 bytes a token,
// 32768 bytes at 512 tokens; logits [R, 8] f32 are 32 bytes a token.

// A chain: the embedding dies at the silu, so the relu, written after that,
// reuses its space at offset 0; the gather reuses the silu's. The logits, a
// step output, are live to the end.

// CHECK-LABEL: func @step
// CHECK-SAME: kiln.memory_plan = #kiln.memory_plan<alignment = 64, max_tokens = 512, arena_bytes = 65536, naive_bytes = 147456>
// CHECK: kiln.embedding {{.*}}kiln.buffers = [#kiln.buffer<offset = 0, bytes_fixed = 0, bytes_per_token = 64>]
// CHECK: kiln.silu {{.*}}kiln.buffers = [#kiln.buffer<offset = 32768, bytes_fixed = 0, bytes_per_token = 64>]
// CHECK: kiln.relu {{.*}}kiln.buffers = [#kiln.buffer<offset = 0, bytes_fixed = 0, bytes_per_token = 64>]
// CHECK: kiln.gather_rows {{.*}}kiln.buffers = [#kiln.buffer<offset = 32768, bytes_fixed = 0, bytes_per_token = 64>]
// CHECK: kiln.matmul {{.*}}kiln.buffers = [#kiln.buffer<offset = 0, bytes_fixed = 0, bytes_per_token = 32>]

// At one token every buffer is padded to 64 bytes: two slots suffice.
// ONE-LABEL: func @step
// ONE-SAME: kiln.memory_plan = #kiln.memory_plan<alignment = 64, max_tokens = 1, arena_bytes = 128, naive_bytes = 320>
module attributes {kiln.weights_source = #kiln.weights_source<gguf, "m.gguf">} {
  kiln.weight_decl @emb : tensor<8x16xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>,
                  %seq_ids: tensor<?xi32>, %logit_rows: tensor<?xi32>,
                  %cache: !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      -> (tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      attributes {kiln.step} {
    %emb = kiln.weight @emb : tensor<8x16xf32>
    %x = kiln.embedding %emb[%tokens] : tensor<8x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %s = kiln.silu %x : tensor<?x16xf32>
    %r = kiln.relu %s : tensor<?x16xf32>
    %g = kiln.gather_rows %r[%logit_rows] : tensor<?x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %logits = kiln.matmul %g, %emb : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
    return %logits, %cache : tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>
  }
}

// -----

// The logits are computed first, but as a step output they stay live to the
// return: the relu, written after the logits' last real use, cannot take
// their space at offset 0 (the largest buffer, [R, 32] f32, placed first).

// CHECK-LABEL: func @step_output_live_to_end
// CHECK: kiln.embedding {{.*}}offset = 65536,
// CHECK: kiln.gather_rows {{.*}}offset = 98304,
// CHECK: kiln.matmul {{.*}}#kiln.buffer<offset = 0, bytes_fixed = 0, bytes_per_token = 128>
// CHECK: kiln.silu {{.*}}offset = 98304,
// CHECK: kiln.relu {{.*}}offset = 65536,
module attributes {kiln.weights_source = #kiln.weights_source<gguf, "m.gguf">} {
  kiln.weight_decl @emb : tensor<32x16xf32>
  func.func @step_output_live_to_end(%tokens: tensor<?xi32>, %positions: tensor<?xi32>,
                  %seq_ids: tensor<?xi32>, %logit_rows: tensor<?xi32>,
                  %cache: !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      -> (tensor<?x32xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      attributes {kiln.step} {
    %emb = kiln.weight @emb : tensor<32x16xf32>
    %x = kiln.embedding %emb[%tokens] : tensor<32x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %g = kiln.gather_rows %x[%logit_rows] : tensor<?x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %logits = kiln.matmul %g, %emb : (tensor<?x16xf32>, tensor<32x16xf32>) -> tensor<?x32xf32>
    %s = kiln.silu %x : tensor<?x16xf32>
    %r = kiln.relu %s : tensor<?x16xf32>
    %k = kiln.reshape %r : tensor<?x16xf32> -> tensor<?x4x4xf32>
    %c = kiln.kv_append %cache[0] keys %k values %k seqs %seq_ids positions %positions
        : !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>, tensor<?x4x4xf32>, tensor<?xi32>
    return %logits, %c : tensor<?x32xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>
  }
}

// -----

// A reshape is a view: it records the operand whose storage it is
// (#kiln.buffer_view), and its uses keep that operand live. %x is read last through the view %k (by
// the kv_append), so the silu, written while %x is still live, does not get
// its space. The KV cache a kv_append returns is not an activation.

// CHECK-LABEL: func @reshape_is_view
// CHECK: kiln.embedding {{.*}}kiln.buffers = [#kiln.buffer<offset = 0, bytes_fixed = 0, bytes_per_token = 64>]
// CHECK: kiln.reshape {{.*}}kiln.buffers = [#kiln.buffer_view<operand = 0>]
// CHECK: kiln.silu {{.*}}kiln.buffers = [#kiln.buffer<offset = 32768, bytes_fixed = 0, bytes_per_token = 64>]
// CHECK: kiln.kv_append {{[^{]*}}: !kiln.kv_cache
module attributes {kiln.weights_source = #kiln.weights_source<gguf, "m.gguf">} {
  kiln.weight_decl @emb : tensor<8x16xf32>
  func.func @reshape_is_view(%tokens: tensor<?xi32>, %positions: tensor<?xi32>,
                  %seq_ids: tensor<?xi32>, %logit_rows: tensor<?xi32>,
                  %cache: !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      -> (tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      attributes {kiln.step} {
    %emb = kiln.weight @emb : tensor<8x16xf32>
    %x = kiln.embedding %emb[%tokens] : tensor<8x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %k = kiln.reshape %x : tensor<?x16xf32> -> tensor<?x4x4xf32>
    %v = kiln.silu %k : tensor<?x4x4xf32>
    %c = kiln.kv_append %cache[0] keys %k values %v seqs %seq_ids positions %positions
        : !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>, tensor<?x4x4xf32>, tensor<?xi32>
    %vf = kiln.reshape %v : tensor<?x4x4xf32> -> tensor<?x16xf32>
    %g = kiln.gather_rows %vf[%logit_rows] : tensor<?x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %logits = kiln.matmul %g, %emb : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
    return %logits, %c : tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>
  }
}

// -----

// A split writes one buffer per result (slices along the feature axis of a
// row-major [T, N] tensor are strided, not contiguous): one #kiln.buffer per
// result, each with its own offset. The weights packed by the concat are not
// activations and get no buffer.

// CHECK-LABEL: func @split_results
// CHECK: kiln.concat {{[^{]*}}: tensor<16x16xf32>
// CHECK: kiln.matmul {{.*}}kiln.buffers = [#kiln.buffer<offset = 0, bytes_fixed = 0, bytes_per_token = 96>]
// CHECK: kiln.split {{.*}}kiln.buffers = [#kiln.buffer<offset = 49152, bytes_fixed = 0, bytes_per_token = 64>, #kiln.buffer<offset = 81920, bytes_fixed = 0, bytes_per_token = 32>]
module attributes {kiln.weights_source = #kiln.weights_source<gguf, "m.gguf">} {
  kiln.weight_decl @emb : tensor<8x16xf32>
  kiln.weight_decl @w : tensor<16x16xf32>
  func.func @split_results(%tokens: tensor<?xi32>, %positions: tensor<?xi32>,
                  %seq_ids: tensor<?xi32>, %logit_rows: tensor<?xi32>,
                  %cache: !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      -> (tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      attributes {kiln.step} {
    %emb = kiln.weight @emb : tensor<8x16xf32>
    %w = kiln.weight @w : tensor<16x16xf32>
    %wp = kiln.concat %w, %emb axis = 0 : tensor<16x16xf32>, tensor<8x16xf32> -> tensor<24x16xf32>
    %x = kiln.embedding %emb[%tokens] : tensor<8x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %y = kiln.matmul %x, %wp : (tensor<?x16xf32>, tensor<24x16xf32>) -> tensor<?x24xf32>
    %a, %b = kiln.split %y axis = 1 : tensor<?x24xf32> -> tensor<?x16xf32>, tensor<?x8xf32>
    %ab = kiln.add %a, %a : tensor<?x16xf32>
    %g = kiln.gather_rows %ab[%logit_rows] : tensor<?x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %logits = kiln.matmul %g, %emb : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
    %lb = kiln.add %logits, %b : tensor<?x8xf32>
    return %lb, %cache : tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>
  }
}

// -----

// Sizes are affine in T. The keys and values a step reads are [T, S, 4, 4]
// with S bounded by kiln.context_length (32): 2048 bytes a token; the scores
// [T, 4, S] 512. A concat along the token axis with 2 static rows is 64
// bytes a token plus 128.

// CHECK-LABEL: func @sizes_affine_in_tokens
// CHECK-SAME: kiln.memory_plan = #kiln.memory_plan<alignment = 64, max_tokens = 512, arena_bytes = {{[0-9]+}}, naive_bytes = {{[0-9]+}}, context_length = 32>
// CHECK: kiln.kv_read {{.*}}kiln.buffers = [#kiln.buffer<offset = {{[0-9]+}}, bytes_fixed = 0, bytes_per_token = 2048>, #kiln.buffer<offset = {{[0-9]+}}, bytes_fixed = 0, bytes_per_token = 2048>]
// CHECK: kiln.attention_scores {{.*}}bytes_fixed = 0, bytes_per_token = 512>
// CHECK: kiln.attention_output {{.*}}bytes_fixed = 0, bytes_per_token = 64>
// CHECK: kiln.concat {{.*}}bytes_fixed = 128, bytes_per_token = 64>

// The context-length option overrides the step's: S <= 8.
// CTX-LABEL: func @sizes_affine_in_tokens
// CTX-SAME: kiln.memory_plan = #kiln.memory_plan<{{.*}}, context_length = 8>
// CTX: kiln.kv_read {{.*}}bytes_per_token = 512>
module attributes {kiln.weights_source = #kiln.weights_source<gguf, "m.gguf">} {
  kiln.weight_decl @emb : tensor<8x16xf32>
  kiln.weight_decl @pad : tensor<2x16xf32>
  func.func @sizes_affine_in_tokens(%tokens: tensor<?xi32>, %positions: tensor<?xi32>,
                  %seq_ids: tensor<?xi32>, %logit_rows: tensor<?xi32>,
                  %cache: !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      -> (tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      attributes {kiln.step, kiln.context_length = 32 : i64} {
    %emb = kiln.weight @emb : tensor<8x16xf32>
    %x = kiln.embedding %emb[%tokens] : tensor<8x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %q = kiln.reshape %x : tensor<?x16xf32> -> tensor<?x4x4xf32>
    %c = kiln.kv_append %cache[0] keys %q values %q seqs %seq_ids positions %positions
        : !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>, tensor<?x4x4xf32>, tensor<?xi32>
    %k, %v = kiln.kv_read %c[0] seqs %seq_ids positions %positions
        : !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>, tensor<?xi32> -> tensor<?x?x4x4xf32>, tensor<?x?x4x4xf32>
    %s = kiln.attention_scores %q, %k : tensor<?x4x4xf32>, tensor<?x?x4x4xf32> -> tensor<?x4x?xf32>
    %o = kiln.attention_output %s, %v : tensor<?x4x?xf32>, tensor<?x?x4x4xf32> -> tensor<?x4x4xf32>
    %of = kiln.reshape %o : tensor<?x4x4xf32> -> tensor<?x16xf32>
    %pad = kiln.weight @pad : tensor<2x16xf32>
    %p = kiln.concat %of, %pad axis = 0 : tensor<?x16xf32>, tensor<2x16xf32> -> tensor<?x16xf32>
    %g = kiln.gather_rows %p[%logit_rows] : tensor<?x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %logits = kiln.matmul %g, %emb : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
    return %logits, %c : tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>
  }
}
