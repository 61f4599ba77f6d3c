// RUN: kiln-opt %s -split-input-file -verify-diagnostics

// The step contract (docs/step-contract.md), checked on functions marked
// `kiln.step`.

// expected-error @+1 {{step function @step: expected 5 arguments (tokens, positions, seq_ids, logit_rows, cache), got 4}}
func.func private @step(tensor<?xi32>, tensor<?xi32>, tensor<?xi32>,
                        !kiln.kv_cache<layers = 1, kv_heads = 1, head_dim = 2, f32>)
    -> (tensor<?x16xf32>, !kiln.kv_cache<layers = 1, kv_heads = 1, head_dim = 2, f32>)
    attributes {kiln.step}

// -----

// Batch size 1 must not be baked in: the token count is dynamic.
// expected-error @+1 {{step function @step: argument #0 (tokens) must be tensor<?xi32>, got 'tensor<1xi32>'}}
func.func private @step(tensor<1xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>,
                        !kiln.kv_cache<layers = 1, kv_heads = 1, head_dim = 2, f32>)
    -> (tensor<?x16xf32>, !kiln.kv_cache<layers = 1, kv_heads = 1, head_dim = 2, f32>)
    attributes {kiln.step}

// -----

// expected-error @+1 {{step function @step: argument #2 (seq_ids) must be tensor<?xi32>, got 'tensor<?xi64>'}}
func.func private @step(tensor<?xi32>, tensor<?xi32>, tensor<?xi64>, tensor<?xi32>,
                        !kiln.kv_cache<layers = 1, kv_heads = 1, head_dim = 2, f32>)
    -> (tensor<?x16xf32>, !kiln.kv_cache<layers = 1, kv_heads = 1, head_dim = 2, f32>)
    attributes {kiln.step}

// -----

// expected-error @+1 {{step function @step: argument #4 (cache) must be a !kiln.kv_cache, got 'tensor<?x2xf32>'}}
func.func private @step(tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>,
                        tensor<?x2xf32>)
    -> (tensor<?x16xf32>, tensor<?x2xf32>)
    attributes {kiln.step}

// -----

// expected-error @+1 {{step function @step: expected 2 results (logits, cache), got 1}}
func.func private @step(tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>,
                        !kiln.kv_cache<layers = 1, kv_heads = 1, head_dim = 2, f32>)
    -> tensor<?x16xf32>
    attributes {kiln.step}

// -----

// expected-error @+1 {{step function @step: result #0 (logits) must be tensor<?xVxf32> (or f16/bf16) with a static vocabulary size V, got 'tensor<?x?xf32>'}}
func.func private @step(tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>,
                        !kiln.kv_cache<layers = 1, kv_heads = 1, head_dim = 2, f32>)
    -> (tensor<?x?xf32>, !kiln.kv_cache<layers = 1, kv_heads = 1, head_dim = 2, f32>)
    attributes {kiln.step}

// -----

// expected-error @+1 {{step function @step: result #1 (cache) must have the cache argument's type '!kiln.kv_cache<layers = 1, kv_heads = 1, head_dim = 2, f32>', got '!kiln.kv_cache<layers = 1, kv_heads = 1, head_dim = 2, f16>'}}
func.func private @step(tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>,
                        !kiln.kv_cache<layers = 1, kv_heads = 1, head_dim = 2, f32>)
    -> (tensor<?x16xf32>, !kiln.kv_cache<layers = 1, kv_heads = 1, head_dim = 2, f16>)
    attributes {kiln.step}

// -----

// expected-error @+1 {{'kiln.step' must be a unit attribute}}
func.func private @step() attributes {kiln.step = true}

// -----

// expected-error @+1 {{'kiln.step' is only valid on a function}}
module attributes {kiln.step} {}

// -----

// expected-error @+1 {{'kiln.context_length' must be a positive integer}}
func.func private @step(tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>,
                        !kiln.kv_cache<layers = 1, kv_heads = 1, head_dim = 2, f32>)
    -> (tensor<?x16xf32>, !kiln.kv_cache<layers = 1, kv_heads = 1, head_dim = 2, f32>)
    attributes {kiln.step, kiln.context_length = 0 : i64}

// -----

// expected-error @+1 {{'kiln.context_length' is only valid on a kiln.step function}}
func.func private @not_a_step() attributes {kiln.context_length = 128 : i64}
