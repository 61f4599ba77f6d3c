// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-check-cpu-legality | FileCheck %s

// What the CPU code generator cannot compile is an error on the op, saying
// what the CPU backend expects; everything else passes unchanged.

// An unfused step, as an importer writes it: every op has a CPU kernel (or
// is a weight, a concat of weights or a view), activations and the KV cache
// are f32. Nothing is reported and nothing changes.

// CHECK-LABEL: func.func @unfused_step
// CHECK: kiln.embedding
// CHECK: kiln.rms_norm
// CHECK: kiln.concat
// CHECK: kiln.matmul
// CHECK: kiln.split
// CHECK: kiln.rope
// CHECK: kiln.kv_append
// CHECK: kiln.kv_read
// CHECK: kiln.attention_scores
// CHECK: kiln.scale
// CHECK: kiln.attention_mask
// CHECK: kiln.softmax
// CHECK: kiln.attention_output
// CHECK: kiln.transpose
// CHECK: kiln.reshape
// CHECK: kiln.add
// CHECK: kiln.layer_norm
// CHECK: kiln.silu
// CHECK: kiln.mul
// CHECK: kiln.gelu
// CHECK: kiln.relu
// CHECK: kiln.gather_rows
// CHECK: return
module attributes {kiln.weights_source = #kiln.weights_source<gguf, "m.gguf">} {
  kiln.weight_decl @emb : tensor<8x16xf32>
  kiln.weight_decl @norm : tensor<16xf32>
  kiln.weight_decl @bias : tensor<16xf32>
  kiln.weight_decl @wq : tensor<16x16xbf16>
  kiln.weight_decl @wk : tensor<8x16xbf16>
  kiln.weight_decl @wv : tensor<8x16xbf16>
  kiln.weight_decl @wo : tensor<16x16xf32>
  kiln.weight_decl @w1 : tensor<24x16xf32>
  kiln.weight_decl @w3 : tensor<24x16xf32>
  kiln.weight_decl @w2 : tensor<16x24xf32>
  func.func @unfused_step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>,
                          %seq_ids: tensor<?xi32>, %logit_rows: tensor<?xi32>,
                          %cache: !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>)
      -> (tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>)
      attributes {kiln.step} {
    %emb = kiln.weight @emb : tensor<8x16xf32>
    %x = kiln.embedding %emb[%tokens] : tensor<8x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %norm = kiln.weight @norm : tensor<16xf32>
    %h = kiln.rms_norm %x, %norm epsilon = 1.0e-05 : tensor<?x16xf32>, tensor<16xf32>
    // bf16 weights are fine: they are converted when packed.
    %wq = kiln.weight @wq : tensor<16x16xbf16>
    %wk = kiln.weight @wk : tensor<8x16xbf16>
    %wv = kiln.weight @wv : tensor<8x16xbf16>
    %wqkv = kiln.concat %wq, %wk, %wv axis = 0
        : tensor<16x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16> -> tensor<32x16xbf16>
    %qkv = kiln.matmul %h, %wqkv : (tensor<?x16xf32>, tensor<32x16xbf16>) -> tensor<?x32xf32>
    %q, %k, %v = kiln.split %qkv axis = 1
        : tensor<?x32xf32> -> tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>
    %qh = kiln.reshape %q : tensor<?x16xf32> -> tensor<?x4x4xf32>
    %kh = kiln.reshape %k : tensor<?x8xf32> -> tensor<?x2x4xf32>
    %vh = kiln.reshape %v : tensor<?x8xf32> -> tensor<?x2x4xf32>
    %qr = kiln.rope %qh, %positions layout<halves> theta = 1.0e+04 : tensor<?x4x4xf32>, tensor<?xi32>
    %kr = kiln.rope %kh, %positions layout<halves> theta = 1.0e+04 : tensor<?x2x4xf32>, tensor<?xi32>
    %c1 = kiln.kv_append %cache[0] keys %kr values %vh seqs %seq_ids positions %positions
        : !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>, tensor<?x2x4xf32>, tensor<?xi32>
    %kc, %vc = kiln.kv_read %c1[0] seqs %seq_ids positions %positions
        : !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>, tensor<?xi32> -> tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>
    %s = kiln.attention_scores %qr, %kc : tensor<?x4x4xf32>, tensor<?x?x2x4xf32> -> tensor<?x4x?xf32>
    %ss = kiln.scale %s by 0.5 : tensor<?x4x?xf32>
    %m = kiln.attention_mask %ss, %positions : tensor<?x4x?xf32>, tensor<?xi32>
    %p = kiln.softmax %m : tensor<?x4x?xf32>
    %o = kiln.attention_output %p, %vc : tensor<?x4x?xf32>, tensor<?x?x2x4xf32> -> tensor<?x4x4xf32>
    %ot = kiln.transpose %o permutation = [0, 2, 1] : tensor<?x4x4xf32> -> tensor<?x4x4xf32>
    %of = kiln.reshape %ot : tensor<?x4x4xf32> -> tensor<?x16xf32>
    %wo = kiln.weight @wo : tensor<16x16xf32>
    %a = kiln.matmul %of, %wo : (tensor<?x16xf32>, tensor<16x16xf32>) -> tensor<?x16xf32>
    %x1 = kiln.add %x, %a : tensor<?x16xf32>
    %bias = kiln.weight @bias : tensor<16xf32>
    %ln = kiln.layer_norm %x1, %norm, %bias epsilon = 1.0e-05
        : tensor<?x16xf32>, tensor<16xf32>, tensor<16xf32>
    %w1 = kiln.weight @w1 : tensor<24x16xf32>
    %w3 = kiln.weight @w3 : tensor<24x16xf32>
    %w2 = kiln.weight @w2 : tensor<16x24xf32>
    %g = kiln.matmul %ln, %w1 : (tensor<?x16xf32>, tensor<24x16xf32>) -> tensor<?x24xf32>
    %sg = kiln.silu %g : tensor<?x24xf32>
    %u = kiln.matmul %ln, %w3 : (tensor<?x16xf32>, tensor<24x16xf32>) -> tensor<?x24xf32>
    %hid = kiln.mul %sg, %u : tensor<?x24xf32>
    %ge = kiln.gelu %hid tanh : tensor<?x24xf32>
    %r = kiln.relu %ge : tensor<?x24xf32>
    %d = kiln.matmul %r, %w2 : (tensor<?x24xf32>, tensor<16x24xf32>) -> tensor<?x16xf32>
    %x2 = kiln.add %x1, %d : tensor<?x16xf32>
    %xl = kiln.gather_rows %x2[%logit_rows] : tensor<?x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %logits = kiln.matmul %xl, %emb : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
    return %logits, %c1 : tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>
  }
}

// -----

// The fused ops have CPU kernels too.

// CHECK-LABEL: func.func @fused_step
// CHECK: kiln.fused_matmul
// CHECK: kiln.kv_append
// CHECK: kiln.attention
// CHECK: kiln.fused_matmul
// CHECK: kiln.swiglu
// CHECK: kiln.fused_matmul
// CHECK: return
module attributes {kiln.weights_source = #kiln.weights_source<gguf, "m.gguf">} {
  kiln.weight_decl @emb : tensor<8x16xf32>
  kiln.weight_decl @norm : tensor<16xf32>
  kiln.weight_decl @bias : tensor<16xf32>
  kiln.weight_decl @wqkv : tensor<32x16xf16>
  kiln.weight_decl @wo : tensor<16x16xf32>
  kiln.weight_decl @w1 : tensor<24x16xf32>
  kiln.weight_decl @w3 : tensor<24x16xf32>
  kiln.weight_decl @w2 : tensor<16x24xf32>
  func.func @fused_step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>,
                        %seq_ids: tensor<?xi32>, %logit_rows: tensor<?xi32>,
                        %cache: !kiln.kv_cache<layers = 1, kv_heads = 1, head_dim = 8, f32>)
      -> (tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 1, head_dim = 8, f32>)
      attributes {kiln.step} {
    %emb = kiln.weight @emb : tensor<8x16xf32>
    %x = kiln.embedding %emb[%tokens] : tensor<8x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %norm = kiln.weight @norm : tensor<16xf32>
    %wqkv = kiln.weight @wqkv : tensor<32x16xf16>
    %qkv = kiln.fused_matmul %x rms_norm(%norm, epsilon = 1.0e-05), %wqkv
        : (tensor<?x16xf32>, tensor<32x16xf16>, tensor<16xf32>) -> tensor<?x32xf32>
    %q, %k, %v = kiln.split %qkv axis = 1
        : tensor<?x32xf32> -> tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>
    %qh = kiln.reshape %q : tensor<?x16xf32> -> tensor<?x2x8xf32>
    %kh = kiln.reshape %k : tensor<?x8xf32> -> tensor<?x1x8xf32>
    %vh = kiln.reshape %v : tensor<?x8xf32> -> tensor<?x1x8xf32>
    %c1 = kiln.kv_append %cache[0] keys %kh values %vh seqs %seq_ids positions %positions
        : !kiln.kv_cache<layers = 1, kv_heads = 1, head_dim = 8, f32>, tensor<?x1x8xf32>, tensor<?xi32>
    %o = kiln.attention %qh, %c1[0] seqs %seq_ids positions %positions scale = 0.35
        : tensor<?x2x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 1, head_dim = 8, f32>, tensor<?xi32>
    %of = kiln.reshape %o : tensor<?x2x8xf32> -> tensor<?x16xf32>
    %wo = kiln.weight @wo : tensor<16x16xf32>
    %x1 = kiln.fused_matmul %of, %wo residual %x
        : (tensor<?x16xf32>, tensor<16x16xf32>, tensor<?x16xf32>) -> tensor<?x16xf32>
    %w1 = kiln.weight @w1 : tensor<24x16xf32>
    %w3 = kiln.weight @w3 : tensor<24x16xf32>
    %hid = kiln.swiglu %x1 rms_norm(%norm : tensor<16xf32>, epsilon = 1.0e-05), %w1, %w3
        : tensor<?x16xf32>, tensor<24x16xf32> -> tensor<?x24xf32>
    %w2 = kiln.weight @w2 : tensor<16x24xf32>
    %bias = kiln.weight @bias : tensor<16xf32>
    %x2 = kiln.fused_matmul %hid, %w2 bias %bias activation<gelu> residual %x1
        : (tensor<?x24xf32>, tensor<16x24xf32>, tensor<16xf32>, tensor<?x16xf32>) -> tensor<?x16xf32>
    %logits = kiln.matmul %x2, %emb : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
    return %logits, %c1 : tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 1, head_dim = 8, f32>
  }
}

// -----

// Functions that are not steps are not compiled for the CPU: not checked.

// CHECK-LABEL: func.func @not_a_step
// CHECK: arith.addf
func.func @not_a_step(%x: tensor<?x16xbf16>) -> tensor<?x16xbf16> {
  %y = arith.addf %x, %x : tensor<?x16xbf16>
  return %y : tensor<?x16xbf16>
}

// -----

// Activations are never concatenated at run time: only weights, packed at
// compile time.
module attributes {kiln.weights_source = #kiln.weights_source<gguf, "m.gguf">} {
  kiln.weight_decl @emb : tensor<8x16xf32>
  kiln.weight_decl @w : tensor<8x32xf32>
  func.func @no_lower_concat_of_activations(%tokens: tensor<?xi32>, %positions: tensor<?xi32>,
                                            %seq_ids: tensor<?xi32>, %logit_rows: tensor<?xi32>,
                                            %cache: !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      -> (tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      attributes {kiln.step} {
    %emb = kiln.weight @emb : tensor<8x16xf32>
    %x = kiln.embedding %emb[%tokens] : tensor<8x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %s = kiln.silu %x : tensor<?x16xf32>
    // expected-error @+1 {{'kiln.concat' op input #0 is not a weight: a concat of activations has no CPU kernel (the CPU backend concatenates weights only, packing them at compile time)}}
    %xs = kiln.concat %x, %s axis = 1 : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x32xf32>
    %w = kiln.weight @w : tensor<8x32xf32>
    %logits = kiln.matmul %xs, %w : (tensor<?x32xf32>, tensor<8x32xf32>) -> tensor<?x8xf32>
    return %logits, %cache : tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>
  }
}

// -----

// The weight packer lays concatenated weights out row after row: along axis
// 0 only.
module attributes {kiln.weights_source = #kiln.weights_source<gguf, "m.gguf">} {
  kiln.weight_decl @emb : tensor<8x16xf32>
  kiln.weight_decl @wa : tensor<8x16xf32>
  kiln.weight_decl @wb : tensor<8x16xf32>
  func.func @no_lower_concat_of_weights_along_axis_1(%tokens: tensor<?xi32>, %positions: tensor<?xi32>,
                                                     %seq_ids: tensor<?xi32>, %logit_rows: tensor<?xi32>,
                                                     %cache: !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      -> (tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      attributes {kiln.step} {
    %emb = kiln.weight @emb : tensor<8x16xf32>
    %x = kiln.embedding %emb[%tokens] : tensor<8x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %wa = kiln.weight @wa : tensor<8x16xf32>
    %wb = kiln.weight @wb : tensor<8x16xf32>
    // expected-error @+1 {{'kiln.concat' op concatenates weights along axis 1: the CPU backend packs weights concatenated along axis 0 only (whole rows)}}
    %w = kiln.concat %wa, %wb axis = 1 : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x32xf32>
    %xx = kiln.reshape %x : tensor<?x16xf32> -> tensor<?x16xf32>
    %logits = kiln.matmul %xx, %emb : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
    return %logits, %cache : tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>
  }
}

// -----

// The CPU kernels read and write f32 activations; bf16 weights are fine (the
// packer converts them), a bf16 activation is not.
module attributes {kiln.weights_source = #kiln.weights_source<gguf, "m.gguf">} {
  kiln.weight_decl @emb : tensor<8x64xbf16>
  kiln.weight_decl @emb32 : tensor<8x64xf32>
  func.func @no_lower_bf16_activation(%tokens: tensor<?xi32>, %positions: tensor<?xi32>,
                                      %seq_ids: tensor<?xi32>, %logit_rows: tensor<?xi32>,
                                      %cache: !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      -> (tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      attributes {kiln.step} {
    %emb = kiln.weight @emb : tensor<8x64xbf16>
    // expected-error @+1 {{'kiln.embedding' op result #0 has type 'tensor<?x64xbf16>': the CPU kernels compute activations in f32, not bf16}}
    %x = kiln.embedding %emb[%tokens] : tensor<8x64xbf16>, tensor<?xi32> -> tensor<?x64xbf16>
    // expected-error @+1 {{'kiln.add' op result #0 has type 'tensor<?x64xbf16>': the CPU kernels compute activations in f32, not bf16}}
    %y = kiln.add %x, %x : tensor<?x64xbf16>
    %emb32 = kiln.weight @emb32 : tensor<8x64xf32>
    %x32 = kiln.embedding %emb32[%tokens] : tensor<8x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
    %logits = kiln.matmul %x32, %emb32 : (tensor<?x64xf32>, tensor<8x64xf32>) -> tensor<?x8xf32>
    return %logits, %cache : tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>
  }
}

// -----

// The CPU kernels keep an f32 KV cache: every op that reads or writes an f16
// one is reported.
module attributes {kiln.weights_source = #kiln.weights_source<gguf, "m.gguf">} {
  kiln.weight_decl @emb : tensor<8x16xf32>
  func.func @no_lower_f16_kv_cache(%tokens: tensor<?xi32>, %positions: tensor<?xi32>,
                                   %seq_ids: tensor<?xi32>, %logit_rows: tensor<?xi32>,
                                   %cache: !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f16>)
      -> (tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f16>)
      attributes {kiln.step} {
    %emb = kiln.weight @emb : tensor<8x16xf32>
    %x = kiln.embedding %emb[%tokens] : tensor<8x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %xh = kiln.reshape %x : tensor<?x16xf32> -> tensor<?x4x4xf32>
    // expected-error @+1 {{'kiln.kv_append' op reads or writes '!kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f16>': the CPU kernels keep an f32 KV cache, not f16}}
    %c1 = kiln.kv_append %cache[0] keys %xh values %xh seqs %seq_ids positions %positions
        : !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f16>, tensor<?x4x4xf32>, tensor<?xi32>
    // expected-error @+1 {{'kiln.kv_read' op reads or writes '!kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f16>': the CPU kernels keep an f32 KV cache, not f16}}
    %k, %v = kiln.kv_read %c1[0] seqs %seq_ids positions %positions
        : !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f16>, tensor<?xi32> -> tensor<?x?x4x4xf32>, tensor<?x?x4x4xf32>
    // expected-error @+1 {{'kiln.attention' op reads or writes '!kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f16>': the CPU kernels keep an f32 KV cache, not f16}}
    %o = kiln.attention %xh, %c1[0] seqs %seq_ids positions %positions scale = 0.5
        : tensor<?x4x4xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f16>, tensor<?xi32>
    %of = kiln.reshape %o : tensor<?x4x4xf32> -> tensor<?x16xf32>
    %logits = kiln.matmul %of, %emb : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
    return %logits, %c1 : tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f16>
  }
}

// -----

// The embedding kernel copies rows of the packed weights: a table computed at
// run time is not one.
module attributes {kiln.weights_source = #kiln.weights_source<gguf, "m.gguf">} {
  kiln.weight_decl @emb : tensor<8x16xf32>
  func.func @no_lower_embedding_of_activation(%tokens: tensor<?xi32>, %positions: tensor<?xi32>,
                                              %seq_ids: tensor<?xi32>, %logit_rows: tensor<?xi32>,
                                              %cache: !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      -> (tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      attributes {kiln.step} {
    %emb = kiln.weight @emb : tensor<8x16xf32>
    // expected-error @+1 {{'kiln.scale' op computes from weights only}}
    %table = kiln.scale %emb by 4.0 : tensor<8x16xf32>
    // expected-error @+1 {{'kiln.embedding' op table must be a weight (kiln.weight, or a kiln.concat of weights), not a computed activation: the CPU embedding kernel reads its rows from the weights packed at compile time}}
    %x = kiln.embedding %table[%tokens] : tensor<8x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %logits = kiln.matmul %x, %emb : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
    return %logits, %cache : tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>
  }
}

// -----

// Kernels run on each step's activations: an op computed from weights alone
// (here a transpose of a weight) would have to run at compile time.
module attributes {kiln.weights_source = #kiln.weights_source<gguf, "m.gguf">} {
  kiln.weight_decl @emb : tensor<8x16xf32>
  kiln.weight_decl @w : tensor<16x8xf32>
  func.func @no_lower_weights_only(%tokens: tensor<?xi32>, %positions: tensor<?xi32>,
                                   %seq_ids: tensor<?xi32>, %logit_rows: tensor<?xi32>,
                                   %cache: !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      -> (tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      attributes {kiln.step} {
    %emb = kiln.weight @emb : tensor<8x16xf32>
    %w = kiln.weight @w : tensor<16x8xf32>
    // expected-error @+1 {{'kiln.transpose' op computes from weights only: the CPU backend runs kernels on each step's activations and does not evaluate ops at compile time (fold the computation into the weights)}}
    %wt = kiln.transpose %w permutation = [1, 0] : tensor<16x8xf32> -> tensor<8x16xf32>
    %x = kiln.embedding %emb[%tokens] : tensor<8x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %logits = kiln.matmul %x, %wt : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
    return %logits, %cache : tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>
  }
}

// -----

// Only kiln ops have CPU kernels: an op of another dialect in a step (here
// arith and tensor ops) is rejected, whatever it computes.
module attributes {kiln.weights_source = #kiln.weights_source<gguf, "m.gguf">} {
  kiln.weight_decl @emb : tensor<8x16xf32>
  func.func @no_lower_arith_op(%tokens: tensor<?xi32>, %positions: tensor<?xi32>,
                               %seq_ids: tensor<?xi32>, %logit_rows: tensor<?xi32>,
                               %cache: !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      -> (tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      attributes {kiln.step} {
    %emb = kiln.weight @emb : tensor<8x16xf32>
    %x = kiln.embedding %emb[%tokens] : tensor<8x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    // expected-error @+1 {{'arith.addf' op has no CPU kernel: the CPU backend compiles the kiln ops of a step and its func.return only}}
    %y = arith.addf %x, %x : tensor<?x16xf32>
    // expected-error @+1 {{'tensor.cast' op has no CPU kernel: the CPU backend compiles the kiln ops of a step and its func.return only}}
    %z = tensor.cast %y : tensor<?x16xf32> to tensor<?x16xf32>
    %logits = kiln.matmul %z, %emb : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
    return %logits, %cache : tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>
  }
}
