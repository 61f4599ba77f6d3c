// A two-layer Llama step in the kiln dialect, shaped like TinyStories 260K
// (dim 64, 8 query heads and 4 key/value heads of size 8, feed-forward 172,
// vocabulary 512, tied classifier). Layer 0 is written with unfused ops, as an
// importer produces them; layer 1 with the fused ops the fusion passes make.
//
// The step contract (docs/step-contract.md): the function takes the step's
// tokens, their positions and sequences, the rows that need logits, and the
// KV cache; it returns those rows' logits and the updated cache.
//
// Try: kiln-opt examples/tiny-llama-step.mlir --kiln-decompose-attention

module attributes {kiln.weights_source =
    #kiln.weights_source<gguf, "tiny-llama.gguf">} {
  kiln.weight_decl @"token_embd.weight" : tensor<512x64xf32>
  kiln.weight_decl @"blk.0.attn_norm.weight" : tensor<64xf32>
  kiln.weight_decl @"blk.0.attn_q.weight" : tensor<64x64xf32>
  kiln.weight_decl @"blk.0.attn_k.weight" : tensor<32x64xf32>
  kiln.weight_decl @"blk.0.attn_v.weight" : tensor<32x64xf32>
  kiln.weight_decl @"blk.0.attn_output.weight" : tensor<64x64xf32>
  kiln.weight_decl @"blk.0.ffn_norm.weight" : tensor<64xf32>
  kiln.weight_decl @"blk.0.ffn_gate.weight" : tensor<172x64xf32>
  kiln.weight_decl @"blk.0.ffn_up.weight" : tensor<172x64xf32>
  kiln.weight_decl @"blk.0.ffn_down.weight" : tensor<64x172xf32>
  kiln.weight_decl @"blk.1.attn_norm.weight" : tensor<64xf32>
  kiln.weight_decl @"blk.1.attn_q.weight" : tensor<64x64xf32>
  kiln.weight_decl @"blk.1.attn_k.weight" : tensor<32x64xf32>
  kiln.weight_decl @"blk.1.attn_v.weight" : tensor<32x64xf32>
  kiln.weight_decl @"blk.1.attn_output.weight" : tensor<64x64xf32>
  kiln.weight_decl @"blk.1.ffn_norm.weight" : tensor<64xf32>
  kiln.weight_decl @"blk.1.ffn_gate.weight" : tensor<172x64xf32>
  kiln.weight_decl @"blk.1.ffn_up.weight" : tensor<172x64xf32>
  kiln.weight_decl @"blk.1.ffn_down.weight" : tensor<64x172xf32>
  kiln.weight_decl @"output_norm.weight" : tensor<64xf32>

  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>,
                  %seq_ids: tensor<?xi32>, %logit_rows: tensor<?xi32>,
                  %cache: !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f32>)
      -> (tensor<?x512xf32>, !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f32>)
      attributes {kiln.step} {
    %emb = kiln.weight @"token_embd.weight" : tensor<512x64xf32>
    %x0 = kiln.embedding %emb[%tokens]
        : tensor<512x64xf32>, tensor<?xi32> -> tensor<?x64xf32>

    //===--- Layer 0, unfused: attention ---===//
    %an0 = kiln.weight @"blk.0.attn_norm.weight" : tensor<64xf32>
    %h0 = kiln.rms_norm %x0, %an0 epsilon = 1.0e-05
        : tensor<?x64xf32>, tensor<64xf32>
    %wq0 = kiln.weight @"blk.0.attn_q.weight" : tensor<64x64xf32>
    %wk0 = kiln.weight @"blk.0.attn_k.weight" : tensor<32x64xf32>
    %wv0 = kiln.weight @"blk.0.attn_v.weight" : tensor<32x64xf32>
    %q0 = kiln.matmul %h0, %wq0
        : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
    %k0 = kiln.matmul %h0, %wk0
        : (tensor<?x64xf32>, tensor<32x64xf32>) -> tensor<?x32xf32>
    %v0 = kiln.matmul %h0, %wv0
        : (tensor<?x64xf32>, tensor<32x64xf32>) -> tensor<?x32xf32>
    %qh0 = kiln.reshape %q0 : tensor<?x64xf32> -> tensor<?x8x8xf32>
    %kh0 = kiln.reshape %k0 : tensor<?x32xf32> -> tensor<?x4x8xf32>
    %vh0 = kiln.reshape %v0 : tensor<?x32xf32> -> tensor<?x4x8xf32>
    %qr0 = kiln.rope %qh0, %positions layout<adjacent> theta = 1.0e+04
        : tensor<?x8x8xf32>, tensor<?xi32>
    %kr0 = kiln.rope %kh0, %positions layout<adjacent> theta = 1.0e+04
        : tensor<?x4x8xf32>, tensor<?xi32>
    %c1 = kiln.kv_append %cache[0] keys %kr0 values %vh0 seqs %seq_ids
        positions %positions : !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f32>, tensor<?x4x8xf32>, tensor<?xi32>
    %kc0, %vc0 = kiln.kv_read %c1[0] seqs %seq_ids positions %positions
        : !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f32>, tensor<?xi32> -> tensor<?x?x4x8xf32>, tensor<?x?x4x8xf32>
    %s0 = kiln.attention_scores %qr0, %kc0
        : tensor<?x8x8xf32>, tensor<?x?x4x8xf32> -> tensor<?x8x?xf32>
    %ss0 = kiln.scale %s0 by 0.35355339059327373 : tensor<?x8x?xf32>
    %m0 = kiln.attention_mask %ss0, %positions
        : tensor<?x8x?xf32>, tensor<?xi32>
    %p0 = kiln.softmax %m0 : tensor<?x8x?xf32>
    %o0 = kiln.attention_output %p0, %vc0
        : tensor<?x8x?xf32>, tensor<?x?x4x8xf32> -> tensor<?x8x8xf32>
    %of0 = kiln.reshape %o0 : tensor<?x8x8xf32> -> tensor<?x64xf32>
    %wo0 = kiln.weight @"blk.0.attn_output.weight" : tensor<64x64xf32>
    %a0 = kiln.matmul %of0, %wo0
        : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
    %x1 = kiln.add %x0, %a0 : tensor<?x64xf32>

    //===--- Layer 0, unfused: feed-forward ---===//
    %fn0 = kiln.weight @"blk.0.ffn_norm.weight" : tensor<64xf32>
    %g0 = kiln.rms_norm %x1, %fn0 epsilon = 1.0e-05
        : tensor<?x64xf32>, tensor<64xf32>
    %w10 = kiln.weight @"blk.0.ffn_gate.weight" : tensor<172x64xf32>
    %w30 = kiln.weight @"blk.0.ffn_up.weight" : tensor<172x64xf32>
    %w20 = kiln.weight @"blk.0.ffn_down.weight" : tensor<64x172xf32>
    %gate0 = kiln.matmul %g0, %w10
        : (tensor<?x64xf32>, tensor<172x64xf32>) -> tensor<?x172xf32>
    %act0 = kiln.silu %gate0 : tensor<?x172xf32>
    %up0 = kiln.matmul %g0, %w30
        : (tensor<?x64xf32>, tensor<172x64xf32>) -> tensor<?x172xf32>
    %hid0 = kiln.mul %act0, %up0 : tensor<?x172xf32>
    %down0 = kiln.matmul %hid0, %w20
        : (tensor<?x172xf32>, tensor<64x172xf32>) -> tensor<?x64xf32>
    %x2 = kiln.add %x1, %down0 : tensor<?x64xf32>

    //===--- Layer 1, fused: attention ---===//
    %an1 = kiln.weight @"blk.1.attn_norm.weight" : tensor<64xf32>
    %h1 = kiln.rms_norm %x2, %an1 epsilon = 1.0e-05
        : tensor<?x64xf32>, tensor<64xf32>
    %wq1 = kiln.weight @"blk.1.attn_q.weight" : tensor<64x64xf32>
    %wk1 = kiln.weight @"blk.1.attn_k.weight" : tensor<32x64xf32>
    %wv1 = kiln.weight @"blk.1.attn_v.weight" : tensor<32x64xf32>
    %wqkv1 = kiln.concat %wq1, %wk1, %wv1 axis = 0
        : tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>
        -> tensor<128x64xf32>
    %qkv1 = kiln.matmul %h1, %wqkv1
        : (tensor<?x64xf32>, tensor<128x64xf32>) -> tensor<?x128xf32>
    %q1, %k1, %v1 = kiln.split %qkv1 axis = 1
        : tensor<?x128xf32> -> tensor<?x64xf32>, tensor<?x32xf32>,
          tensor<?x32xf32>
    %qh1 = kiln.reshape %q1 : tensor<?x64xf32> -> tensor<?x8x8xf32>
    %kh1 = kiln.reshape %k1 : tensor<?x32xf32> -> tensor<?x4x8xf32>
    %vh1 = kiln.reshape %v1 : tensor<?x32xf32> -> tensor<?x4x8xf32>
    %qr1 = kiln.rope %qh1, %positions layout<adjacent> theta = 1.0e+04
        : tensor<?x8x8xf32>, tensor<?xi32>
    %kr1 = kiln.rope %kh1, %positions layout<adjacent> theta = 1.0e+04
        : tensor<?x4x8xf32>, tensor<?xi32>
    %c2 = kiln.kv_append %c1[1] keys %kr1 values %vh1 seqs %seq_ids
        positions %positions : !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f32>, tensor<?x4x8xf32>, tensor<?xi32>
    %o1 = kiln.attention %qr1, %c2[1] seqs %seq_ids positions %positions
        scale = 0.35355339059327373
        : tensor<?x8x8xf32>, !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f32>, tensor<?xi32>
    %of1 = kiln.reshape %o1 : tensor<?x8x8xf32> -> tensor<?x64xf32>
    %wo1 = kiln.weight @"blk.1.attn_output.weight" : tensor<64x64xf32>
    %x3 = kiln.fused_matmul %of1, %wo1 residual %x2
        : (tensor<?x64xf32>, tensor<64x64xf32>, tensor<?x64xf32>)
        -> tensor<?x64xf32>

    //===--- Layer 1, fused: feed-forward ---===//
    %fn1 = kiln.weight @"blk.1.ffn_norm.weight" : tensor<64xf32>
    %g1 = kiln.rms_norm %x3, %fn1 epsilon = 1.0e-05
        : tensor<?x64xf32>, tensor<64xf32>
    %w11 = kiln.weight @"blk.1.ffn_gate.weight" : tensor<172x64xf32>
    %w31 = kiln.weight @"blk.1.ffn_up.weight" : tensor<172x64xf32>
    %w21 = kiln.weight @"blk.1.ffn_down.weight" : tensor<64x172xf32>
    %hid1 = kiln.swiglu %g1, %w11, %w31
        : tensor<?x64xf32>, tensor<172x64xf32> -> tensor<?x172xf32>
    %x4 = kiln.fused_matmul %hid1, %w21 residual %x3
        : (tensor<?x172xf32>, tensor<64x172xf32>, tensor<?x64xf32>)
        -> tensor<?x64xf32>

    //===--- Classifier, only for the rows that need logits ---===//
    %xl = kiln.gather_rows %x4[%logit_rows]
        : tensor<?x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
    %on = kiln.weight @"output_norm.weight" : tensor<64xf32>
    %hf = kiln.rms_norm %xl, %on epsilon = 1.0e-05
        : tensor<?x64xf32>, tensor<64xf32>
    %logits = kiln.matmul %hf, %emb
        : (tensor<?x64xf32>, tensor<512x64xf32>) -> tensor<?x512xf32>
    return %logits, %c2 : tensor<?x512xf32>, !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f32>
  }
}
