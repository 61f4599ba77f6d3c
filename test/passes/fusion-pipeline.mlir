// RUN: kiln-opt %kiln_src_root/examples/tiny-llama-step.mlir --kiln-fusion \
// RUN:   | FileCheck %s --implicit-check-not=kiln.softmax \
// RUN:       --implicit-check-not=kiln.kv_read \
// RUN:       --implicit-check-not=kiln.attention_ \
// RUN:       --implicit-check-not="kiln.attention " \
// RUN:       --implicit-check-not=kiln.swiglu --implicit-check-not=kiln.silu \
// RUN:       --implicit-check-not=kiln.concat --implicit-check-not=kiln.split \
// RUN:       --implicit-check-not=kiln.rms_norm

// The whole fusion pipeline on the example step, whose layer 0 is written
// unfused and layer 1 fused: afterwards both layers look the same, with one
// Q/K/V projection, one kiln.attention and one kiln.swiglu each, and no
// attention pieces left. Every rms_norm is a prologue of the matmul it feeds.

// CHECK-LABEL: func.func @step
// Layer 0.
// CHECK: %[[W0:.+]] = kiln.concat %{{.*}}, %{{.*}}, %{{.*}} axis = 0 : tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32> -> tensor<128x64xf32>
// CHECK-NEXT: %[[QKV0:.+]] = kiln.fused_matmul %{{.*}} rms_norm(%{{.*}}, epsilon = 1.000000e-05), %[[W0]]
// CHECK-NEXT: kiln.split %[[QKV0]] axis = 1
// CHECK: kiln.attention %{{.*}}, %{{.*}}[0] seqs
// CHECK: kiln.swiglu %{{.*}} rms_norm(
// Layer 1.
// CHECK: %[[W1:.+]] = kiln.concat %{{.*}}, %{{.*}}, %{{.*}} axis = 0
// CHECK-NEXT: %[[QKV1:.+]] = kiln.fused_matmul %{{.*}} rms_norm(%{{.*}}), %[[W1]]
// CHECK-NEXT: kiln.split %[[QKV1]] axis = 1
// CHECK: kiln.attention %{{.*}}, %{{.*}}[1] seqs
// CHECK: kiln.swiglu %{{.*}} rms_norm(
// Classifier.
// CHECK: kiln.fused_matmul %{{.*}} rms_norm(%{{.*}}), %{{.*}} : (tensor<?x64xf32>, tensor<512x64xf32>, tensor<64xf32>) -> tensor<?x512xf32>
// CHECK: return
