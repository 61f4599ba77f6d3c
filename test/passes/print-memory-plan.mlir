// RUN: kiln-opt %s --kiln-plan-memory --kiln-print-memory-plan -o /dev/null | FileCheck %s --check-prefix=MAX
// RUN: kiln-opt %s --kiln-plan-memory --kiln-print-memory-plan="tokens=1" -o /dev/null | FileCheck %s --check-prefix=ONE
// RUN: not kiln-opt %s --kiln-print-memory-plan -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOPLAN
// RUN: not kiln-opt %s --kiln-plan-memory="max-tokens=16" --kiln-print-memory-plan="tokens=17" -o /dev/null 2>&1 | FileCheck %s --check-prefix=TOOMANY
// RUN: not kiln-opt %S/Inputs/stale-memory-plan.mlir --kiln-print-memory-plan -o /dev/null 2>&1 | FileCheck %s --check-prefix=STALE
// RUN: not kiln-opt %S/Inputs/stale-memory-plan-view.mlir --kiln-print-memory-plan -o /dev/null 2>&1 | FileCheck %s --check-prefix=STALE-VIEW

// --kiln-print-memory-plan prints the recorded plan: a row per buffer (the
// value as the IR printer names it, its op and location, its live range in
// op indices, its offset, its size at the token count), then the arena's
// peak, the naive sum of all buffers, their ratio and the most bytes live at
// once. [T, 16] f32 is 64 bytes a token, the logits [R, 8] f32 32.

module attributes {kiln.weights_source = #kiln.weights_source<gguf, "m.gguf">} {
  kiln.weight_decl @emb : tensor<8x16xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>,
                  %seq_ids: tensor<?xi32>, %logit_rows: tensor<?xi32>,
                  %cache: !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      -> (tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      attributes {kiln.step} {
    %emb = kiln.weight @emb : tensor<8x16xf32>
    %x = kiln.embedding %emb[%tokens] : tensor<8x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %k = kiln.reshape %x : tensor<?x16xf32> -> tensor<?x4x4xf32>
    %c = kiln.kv_append %cache[0] keys %k values %k seqs %seq_ids positions %positions
        : !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>, tensor<?x4x4xf32>, tensor<?xi32>
    %s = kiln.silu %x : tensor<?x16xf32>
    %r = kiln.relu %s : tensor<?x16xf32>
    %g = kiln.gather_rows %r[%logit_rows] : tensor<?x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %logits = kiln.matmul %g, %emb : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
    return %logits, %c : tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>
  }
}

// At 512 tokens (the default): the embedding and the relu share offset 0,
// the silu and the gather 32768; the arena is what is live at once.
// MAX: memory plan of @step at 512 tokens (offsets planned for up to 512 tokens): 5 buffers, 1 view, 9 ops
// MAX-NEXT: #  value  op                location                      live    offset  bytes
// MAX-NEXT: 0  %1     kiln.embedding    print-memory-plan.mlir:22:10  [1, 4]       0  32768
// MAX-NEXT: 1  %4     kiln.silu         print-memory-plan.mlir:26:10  [4, 5]   32768  32768
// MAX-NEXT: 2  %5     kiln.relu         print-memory-plan.mlir:27:10  [5, 6]       0  32768
// MAX-NEXT: 3  %6     kiln.gather_rows  print-memory-plan.mlir:28:10  [6, 7]   32768  32768
// MAX-NEXT: 4  %7     kiln.matmul       print-memory-plan.mlir:29:15  [7, 8]       0  16384
// MAX-NEXT: peak arena: 65536 bytes (0.06 MiB)
// MAX-NEXT: naive sum: 147456 bytes (0.14 MiB), every buffer allocated on its own
// MAX-NEXT: peak / naive: 0.444
// MAX-NEXT: live bound: 65536 bytes (0.06 MiB), the most bytes live at once
// MAX-NOT: planned for

// At 1 token the same offsets hold buffers of 64 bytes (32 for the logits):
// the peak is set by the offsets planned for 512 tokens, and a plan made for
// one token would need 128 bytes.
// ONE: memory plan of @step at 1 tokens (offsets planned for up to 512 tokens): 5 buffers, 1 view, 9 ops
// ONE-NEXT: #  value  op                location                      live    offset  bytes
// ONE-NEXT: 0  %1     kiln.embedding    print-memory-plan.mlir:22:10  [1, 4]       0     64
// ONE-NEXT: 1  %4     kiln.silu         print-memory-plan.mlir:26:10  [4, 5]   32768     64
// ONE-NEXT: 2  %5     kiln.relu         print-memory-plan.mlir:27:10  [5, 6]       0     64
// ONE-NEXT: 3  %6     kiln.gather_rows  print-memory-plan.mlir:28:10  [6, 7]   32768     64
// ONE-NEXT: 4  %7     kiln.matmul       print-memory-plan.mlir:29:15  [7, 8]       0     32
// ONE-NEXT: peak arena: 32832 bytes (0.03 MiB)
// ONE-NEXT: naive sum: 320 bytes (0.00 MiB), every buffer allocated on its own
// ONE-NEXT: peak / naive: 102.600
// ONE-NEXT: live bound: 128 bytes (0.00 MiB), the most bytes live at once
// ONE-NEXT: planned for 1 tokens: 128 bytes (0.00 MiB)

// NOPLAN: error: @step has no memory plan (kiln.memory_plan): run --kiln-plan-memory first
// TOOMANY: error: tokens=17 exceeds the 16 tokens @step was planned for; its offsets are valid only up to there
// STALE: stale-memory-plan.mlir:12:10: error: the memory plan does not match the IR here (result #0 is not planned, or was planned at another size): run --kiln-plan-memory again
// STALE-VIEW: stale-memory-plan-view.mlir:13:10: error: the memory plan does not match the IR here (result #0 is a view of operand #0, and the plan does not record it as one): run --kiln-plan-memory again
