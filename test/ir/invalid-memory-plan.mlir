// RUN: kiln-opt %s -split-input-file -verify-diagnostics

// The memory plan's attributes (written by --kiln-plan-memory, read by code
// generation; docs/passes/memory-planning.md) are typed: #kiln.buffer,
// #kiln.buffer_view and #kiln.memory_plan (ir/KilnAttrs.td) verify their
// fields, and the dialect checks them against the op and the step's plan
// (ir/MemoryPlanAttrs.cpp).

//===----------------------------------------------------------------------===//
// kiln.buffers
//===----------------------------------------------------------------------===//

func.func @buffers_not_an_array(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{'kiln.buffers' must be an array with one entry per result, not #kiln.buffer<offset = 0, bytes_fixed = 0, bytes_per_token = 64>}}
  %y = kiln.silu %x {kiln.buffers = #kiln.buffer<offset = 0, bytes_fixed = 0, bytes_per_token = 64>} : tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

func.func @buffers_per_result(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{'kiln.buffers' has 2 entries, but the op has 1 result: it needs one entry per result}}
  %y = kiln.silu %x {kiln.buffers = [#kiln.buffer<offset = 0, bytes_fixed = 0, bytes_per_token = 64>, unit]} : tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

// A dictionary (the form before the typed attributes) is not an entry.
func.func @buffers_dictionary(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{'kiln.buffers' entry #0 must be a #kiln.buffer, a #kiln.buffer_view or unit (no storage), not {offset = 0 : i64}}}
  %y = kiln.silu %x {kiln.buffers = [{offset = 0 : i64}]} : tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

// Offsets and sizes are non-negative: a size never shrinks as T grows.
func.func @buffer_offset_negative(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{buffer 'offset' must be non-negative, not -64}}
  %y = kiln.silu %x {kiln.buffers = [#kiln.buffer<offset = -64, bytes_fixed = 0, bytes_per_token = 64>]} : tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

func.func @buffer_bytes_fixed_negative(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{buffer 'bytes_fixed' must be non-negative, not -8}}
  %y = kiln.silu %x {kiln.buffers = [#kiln.buffer<offset = 0, bytes_fixed = -8, bytes_per_token = 64>]} : tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

func.func @buffer_bytes_per_token_negative(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{buffer 'bytes_per_token' must be non-negative, not -64}}
  %y = kiln.silu %x {kiln.buffers = [#kiln.buffer<offset = 0, bytes_fixed = 128, bytes_per_token = -64>]} : tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

// The KV cache is the runtime's: it has no buffer in the arena.
func.func @buffer_not_a_tensor(%cache: !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>,
                               %k: tensor<?x4x4xf32>, %p: tensor<?xi32>)
    -> !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32> {
  // expected-error @+1 {{'kiln.buffers' entry #0 is a buffer, but result #0 has type '!kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>', which is not a ranked tensor}}
  %c = kiln.kv_append %cache[0] keys %k values %k seqs %p positions %p {kiln.buffers = [#kiln.buffer<offset = 0, bytes_fixed = 0, bytes_per_token = 64>]}
      : !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>, tensor<?x4x4xf32>, tensor<?xi32>
  return %c : !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>
}

// -----

func.func @view_operand_negative(%x: tensor<?x16xf32>) -> tensor<?x4x4xf32> {
  // expected-error @+1 {{buffer view 'operand' must be non-negative, not -1}}
  %y = kiln.reshape %x {kiln.buffers = [#kiln.buffer_view<operand = -1>]} : tensor<?x16xf32> -> tensor<?x4x4xf32>
  return %y : tensor<?x4x4xf32>
}

// -----

func.func @view_operand_missing(%x: tensor<?x16xf32>) -> tensor<?x4x4xf32> {
  // expected-error @+1 {{'kiln.buffers' entry #0 is a view of operand #1, but the op has 1 operand}}
  %y = kiln.reshape %x {kiln.buffers = [#kiln.buffer_view<operand = 1>]} : tensor<?x16xf32> -> tensor<?x4x4xf32>
  return %y : tensor<?x4x4xf32>
}

// -----

func.func @view_of_not_a_tensor(%cache: !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>,
                                %k: tensor<?x4x4xf32>, %p: tensor<?xi32>)
    -> !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32> {
  // expected-error @+1 {{'kiln.buffers' entry #0 is a view of operand #0, which has type '!kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>', not a ranked tensor}}
  %c = kiln.kv_append %cache[0] keys %k values %k seqs %p positions %p {kiln.buffers = [#kiln.buffer_view<operand = 0>]}
      : !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>, tensor<?x4x4xf32>, tensor<?xi32>
  return %c : !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>
}

// -----

// Under a step with a plan, a buffer sits at an offset aligned to the plan's
// alignment...
module attributes {kiln.weights_source = #kiln.weights_source<gguf, "m.gguf">} {
  kiln.weight_decl @emb : tensor<8x16xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>,
                  %seq_ids: tensor<?xi32>, %logit_rows: tensor<?xi32>,
                  %cache: !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      -> (tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      attributes {kiln.step, kiln.memory_plan = #kiln.memory_plan<alignment = 64, max_tokens = 16, arena_bytes = 2048, naive_bytes = 2048>} {
    %emb = kiln.weight @emb : tensor<8x16xf32>
    // expected-error @+1 {{'kiln.buffers' entry #0: offset 32 is not a multiple of the memory plan's alignment (64)}}
    %x = kiln.embedding %emb[%tokens] {kiln.buffers = [#kiln.buffer<offset = 32, bytes_fixed = 0, bytes_per_token = 64>]} : tensor<8x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %g = kiln.gather_rows %x[%logit_rows] : tensor<?x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %logits = kiln.matmul %g, %emb : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
    return %logits, %cache : tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>
  }
}

// -----

// ... and ends inside the arena at max_tokens: [T, 16] f32 at 16 tokens is
// 1024 bytes, from 1024 to 2048, past an arena of 1536.
module attributes {kiln.weights_source = #kiln.weights_source<gguf, "m.gguf">} {
  kiln.weight_decl @emb : tensor<8x16xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>,
                  %seq_ids: tensor<?xi32>, %logit_rows: tensor<?xi32>,
                  %cache: !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      -> (tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      attributes {kiln.step, kiln.memory_plan = #kiln.memory_plan<alignment = 64, max_tokens = 16, arena_bytes = 1536, naive_bytes = 2048>} {
    %emb = kiln.weight @emb : tensor<8x16xf32>
    // expected-error @+1 {{'kiln.buffers' entry #0: the buffer ends at byte 2048 at 16 tokens, past the memory plan's arena_bytes (1536)}}
    %x = kiln.embedding %emb[%tokens] {kiln.buffers = [#kiln.buffer<offset = 1024, bytes_fixed = 0, bytes_per_token = 64>]} : tensor<8x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %g = kiln.gather_rows %x[%logit_rows] : tensor<?x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %logits = kiln.matmul %g, %emb : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
    return %logits, %cache : tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>
  }
}

// -----

// A size that overflows is not inside the arena either.
module attributes {kiln.weights_source = #kiln.weights_source<gguf, "m.gguf">} {
  kiln.weight_decl @emb : tensor<8x16xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>,
                  %seq_ids: tensor<?xi32>, %logit_rows: tensor<?xi32>,
                  %cache: !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      -> (tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>)
      attributes {kiln.step, kiln.memory_plan = #kiln.memory_plan<alignment = 64, max_tokens = 16, arena_bytes = 1536, naive_bytes = 2048>} {
    %emb = kiln.weight @emb : tensor<8x16xf32>
    // expected-error @+1 {{'kiln.buffers' entry #0: the buffer's end at 16 tokens does not fit in 64 bits}}
    %x = kiln.embedding %emb[%tokens] {kiln.buffers = [#kiln.buffer<offset = 0, bytes_fixed = 0, bytes_per_token = 1152921504606846976>]} : tensor<8x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %g = kiln.gather_rows %x[%logit_rows] : tensor<?x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %logits = kiln.matmul %g, %emb : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
    return %logits, %cache : tensor<?x8xf32>, !kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 4, f32>
  }
}

// -----

//===----------------------------------------------------------------------===//
// kiln.memory_plan
//===----------------------------------------------------------------------===//

// expected-error @+1 {{'kiln.memory_plan' must be a #kiln.memory_plan, not {arena_bytes = 0 : i64}}}
func.func @plan_not_typed(%x: tensor<?x16xf32>) -> tensor<?x16xf32>
    attributes {kiln.memory_plan = {arena_bytes = 0 : i64}} {
  return %x : tensor<?x16xf32>
}

// -----

// expected-error @+1 {{'kiln.memory_plan' is only valid on a kiln.step function}}
func.func @plan_on_a_step_only(%x: tensor<?x16xf32>) -> tensor<?x16xf32>
    attributes {kiln.memory_plan = #kiln.memory_plan<alignment = 64, max_tokens = 16, arena_bytes = 0, naive_bytes = 0>} {
  return %x : tensor<?x16xf32>
}

// -----

// Offsets are multiples of the alignment and buffers are padded to it.
// expected-error @+2 {{memory plan 'alignment' must be a power of two, not 48}}
func.func @plan_alignment_not_power_of_two(%x: tensor<?x16xf32>) -> tensor<?x16xf32>
    attributes {kiln.memory_plan = #kiln.memory_plan<alignment = 48, max_tokens = 16, arena_bytes = 0, naive_bytes = 0>} {
  return %x : tensor<?x16xf32>
}

// -----

// expected-error @+2 {{memory plan 'alignment' must be a power of two, not 0}}
func.func @plan_alignment_zero(%x: tensor<?x16xf32>) -> tensor<?x16xf32>
    attributes {kiln.memory_plan = #kiln.memory_plan<alignment = 0, max_tokens = 16, arena_bytes = 0, naive_bytes = 0>} {
  return %x : tensor<?x16xf32>
}

// -----

// expected-error @+2 {{memory plan 'max_tokens' must be positive, not 0}}
func.func @plan_max_tokens_zero(%x: tensor<?x16xf32>) -> tensor<?x16xf32>
    attributes {kiln.memory_plan = #kiln.memory_plan<alignment = 64, max_tokens = 0, arena_bytes = 0, naive_bytes = 0>} {
  return %x : tensor<?x16xf32>
}

// -----

// expected-error @+2 {{memory plan 'arena_bytes' must be non-negative, not -64}}
func.func @plan_arena_negative(%x: tensor<?x16xf32>) -> tensor<?x16xf32>
    attributes {kiln.memory_plan = #kiln.memory_plan<alignment = 64, max_tokens = 16, arena_bytes = -64, naive_bytes = 0>} {
  return %x : tensor<?x16xf32>
}

// -----

// expected-error @+2 {{memory plan 'naive_bytes' must be non-negative, not -1}}
func.func @plan_naive_negative(%x: tensor<?x16xf32>) -> tensor<?x16xf32>
    attributes {kiln.memory_plan = #kiln.memory_plan<alignment = 64, max_tokens = 16, arena_bytes = 0, naive_bytes = -1>} {
  return %x : tensor<?x16xf32>
}

// -----

// A step without a cache bound leaves context_length out rather than 0.
// expected-error @+2 {{memory plan 'context_length' must be positive (or left out), not 0}}
func.func @plan_context_length_zero(%x: tensor<?x16xf32>) -> tensor<?x16xf32>
    attributes {kiln.memory_plan = #kiln.memory_plan<alignment = 64, max_tokens = 16, arena_bytes = 0, naive_bytes = 0, context_length = 0>} {
  return %x : tensor<?x16xf32>
}
