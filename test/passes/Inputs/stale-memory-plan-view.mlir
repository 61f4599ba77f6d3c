// A memory plan that no longer matches its IR: the reshape, a view of the
// embedding's storage, was recorded with a buffer of its own (used by
// print-memory-plan.mlir).
module attributes {kiln.weights_source = #kiln.weights_source<gguf, "m.gguf">} {
  kiln.weight_decl @emb : tensor<8x16xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>,
                  %seq_ids: tensor<?xi32>, %logit_rows: tensor<?xi32>,
                  %cache: !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      -> (tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      attributes {kiln.step, kiln.memory_plan = #kiln.memory_plan<alignment = 64, max_tokens = 512, arena_bytes = 65536, naive_bytes = 81920>} {
    %emb = kiln.weight @emb : tensor<8x16xf32>
    %x = kiln.embedding %emb[%tokens] {kiln.buffers = [#kiln.buffer<offset = 0, bytes_fixed = 0, bytes_per_token = 64>]} : tensor<8x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %k = kiln.reshape %x {kiln.buffers = [#kiln.buffer<offset = 32768, bytes_fixed = 0, bytes_per_token = 64>]} : tensor<?x16xf32> -> tensor<?x4x4xf32>
    %c = kiln.kv_append %cache[0] keys %k values %k seqs %seq_ids positions %positions
        : !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>, tensor<?x4x4xf32>, tensor<?xi32>
    %logits = kiln.matmul %x, %emb {kiln.buffers = [#kiln.buffer<offset = 32768, bytes_fixed = 0, bytes_per_token = 32>]} : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
    return %logits, %c : tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>
  }
}
