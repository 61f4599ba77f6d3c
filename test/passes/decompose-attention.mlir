// RUN: kiln-opt %s -split-input-file --kiln-decompose-attention | FileCheck %s

// kiln.attention becomes the unfused chain it is defined as.

// CHECK-LABEL: func @causal_gqa
// CHECK-SAME: (%[[Q:[a-zA-Z0-9]+]]: tensor<?x8x8xf32>, %[[C:[a-zA-Z0-9]+]]: !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f16>, %[[SEQ:[a-zA-Z0-9]+]]: tensor<?xi32>, %[[POS:[a-zA-Z0-9]+]]: tensor<?xi32>)
// CHECK: %[[K:.+]], %[[V:.+]] = kiln.kv_read %[[C]][1] seqs %[[SEQ]] positions %[[POS]] : {{.*}} -> tensor<?x?x4x8xf32>, tensor<?x?x4x8xf32>
// CHECK: %[[S:.+]] = kiln.attention_scores %[[Q]], %[[K]] : tensor<?x8x8xf32>, tensor<?x?x4x8xf32> -> tensor<?x8x?xf32>
// CHECK: %[[SS:.+]] = kiln.scale %[[S]] by 0.35355339059327373
// CHECK: %[[M:.+]] = kiln.attention_mask %[[SS]], %[[POS]] : tensor<?x8x?xf32>, tensor<?xi32>
// CHECK: %[[P:.+]] = kiln.softmax %[[M]]
// CHECK: %[[O:.+]] = kiln.attention_output %[[P]], %[[V]] : tensor<?x8x?xf32>, tensor<?x?x4x8xf32> -> tensor<?x8x8xf32>
// CHECK-NOT: kiln.attention %
// CHECK: return %[[O]]
func.func @causal_gqa(%q: tensor<?x8x8xf32>,
                      %c: !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f16>,
                      %seq: tensor<?xi32>, %pos: tensor<?xi32>) -> tensor<?x8x8xf32> {
  %o = kiln.attention %q, %c[1] seqs %seq positions %pos scale = 0.35355339059327373
      : tensor<?x8x8xf32>, !kiln.kv_cache<layers = 2, kv_heads = 4, head_dim = 8, f16>, tensor<?xi32>
  return %o : tensor<?x8x8xf32>
}

// -----

// The sliding window moves to the mask; static token counts are kept.
// CHECK-LABEL: func @sliding_window
// CHECK: kiln.kv_read {{.*}} -> tensor<3x?x2x16xf32>, tensor<3x?x2x16xf32>
// CHECK: kiln.attention_scores {{.*}} -> tensor<3x4x?xf32>
// CHECK: kiln.attention_mask %{{.*}}, %{{.*}} window = 4096 : tensor<3x4x?xf32>, tensor<3xi32>
// CHECK: kiln.attention_output {{.*}} -> tensor<3x4x16xf32>
func.func @sliding_window(%q: tensor<3x4x16xf32>,
                          %c: !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 16, f32>,
                          %seq: tensor<3xi32>, %pos: tensor<3xi32>) -> tensor<3x4x16xf32> {
  %o = kiln.attention %q, %c[0] seqs %seq positions %pos scale = 0.25 window = 4096
      : tensor<3x4x16xf32>, !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 16, f32>, tensor<3xi32>
  return %o : tensor<3x4x16xf32>
}

// -----

// Nothing else changes.
// CHECK-LABEL: func @no_attention
// CHECK-NEXT: kiln.softmax
// CHECK-NEXT: return
func.func @no_attention(%s: tensor<?x8x?xf32>) -> tensor<?x8x?xf32> {
  %p = kiln.softmax %s : tensor<?x8x?xf32>
  return %p : tensor<?x8x?xf32>
}
