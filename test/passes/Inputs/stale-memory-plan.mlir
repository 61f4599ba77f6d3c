// A memory plan that no longer matches its IR: the silu's buffer was planned
// at 32 bytes a token, but [T, 16] f32 is 64 (used by print-memory-plan.mlir).
module attributes {kiln.weights_source = #kiln.weights_source<gguf, "m.gguf">} {
  kiln.weight_decl @emb : tensor<8x16xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>,
                  %seq_ids: tensor<?xi32>, %logit_rows: tensor<?xi32>,
                  %cache: !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      -> (tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      attributes {kiln.step, kiln.memory_plan = #kiln.memory_plan<alignment = 64, max_tokens = 512, arena_bytes = 65536, naive_bytes = 65536>} {
    %emb = kiln.weight @emb : tensor<8x16xf32>
    %x = kiln.embedding %emb[%tokens] {kiln.buffers = [#kiln.buffer<offset = 0, bytes_fixed = 0, bytes_per_token = 64>]} : tensor<8x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %s = kiln.silu %x {kiln.buffers = [#kiln.buffer<offset = 32768, bytes_fixed = 0, bytes_per_token = 32>]} : tensor<?x16xf32>
    %logits = kiln.matmul %s, %emb {kiln.buffers = [#kiln.buffer<offset = 0, bytes_fixed = 0, bytes_per_token = 32>]} : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
    return %logits, %cache : tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>
  }
}
