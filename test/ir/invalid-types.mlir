// RUN: kiln-opt %s -split-input-file -verify-diagnostics

// Types and attributes of the kiln dialect reject bad parameters with a
// message naming the parameter.

// expected-error @+1 {{kv_cache: layers must be positive, got 0}}
func.func private @no_layers(!kiln.kv_cache<layers = 0, kv_heads = 4, head_dim = 8, f32>)

// -----

// expected-error @+1 {{kv_cache: kv_heads must be positive, got -2}}
func.func private @negative_heads(!kiln.kv_cache<layers = 1, kv_heads = -2, head_dim = 8, f32>)

// -----

// expected-error @+1 {{kv_cache: head_dim must be positive, got 0}}
func.func private @no_head_dim(!kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 0, f32>)

// -----

// expected-error @+1 {{kv_cache: element type must be f32, f16 or bf16, got 'i8'}}
func.func private @integer_cache(!kiln.kv_cache<layers = 1, kv_heads = 4, head_dim = 8, i8>)

// -----

// expected-error @+1 {{rope_scaling: factor must be positive}}
func.func private @zero_factor() attributes {s = #kiln.rope_scaling<linear, factor = 0.0>}

// -----

// expected-error @+1 {{rope_scaling: linear scaling takes only a factor}}
func.func private @linear_extra() attributes {s = #kiln.rope_scaling<linear, factor = 2.0, original_context = 4096>}

// -----

// expected-error @+1 {{rope_scaling: llama3 scaling needs 0 < low_freq_factor < high_freq_factor, got 4.000000e+00 and 1.000000e+00}}
func.func private @llama3_inverted() attributes {s = #kiln.rope_scaling<llama3, factor = 8.0, low_freq_factor = 4.0, high_freq_factor = 1.0, original_context = 8192>}

// -----

// expected-error @+1 {{rope_scaling: llama3 scaling needs a positive original_context, got 0}}
func.func private @llama3_no_context() attributes {s = #kiln.rope_scaling<llama3, factor = 8.0, low_freq_factor = 1.0, high_freq_factor = 4.0>}

// -----

// expected-error @+1 {{rope_scaling: factors scaling needs freq_factors, one per rotated pair}}
func.func private @factors_missing() attributes {s = #kiln.rope_scaling<factors, factor = 1.0>}

// -----

// expected-error @+1 {{rope_scaling: freq_factors[1] must be positive and finite, got 0}}
func.func private @factors_zero() attributes {s = #kiln.rope_scaling<factors, factor = 1.0, freq_factors = [1.0, 0.0]>}

// -----

// expected-error @+1 {{rope_scaling: freq_factors[0] must be positive and finite, got -2}}
func.func private @factors_negative() attributes {s = #kiln.rope_scaling<factors, factor = 1.0, freq_factors = [-2.0, 1.0]>}

// -----

// expected-error @+1 {{rope_scaling: freq_factors[1] must be positive and finite, got INF}}
func.func private @factors_infinite() attributes {s = #kiln.rope_scaling<factors, factor = 1.0, freq_factors = [1.0, 0x7F800000]>}

// -----

// expected-error @+1 {{rope_scaling: freq_factors belong to 'factors' scaling, not 'llama3'}}
func.func private @llama3_with_factors() attributes {s = #kiln.rope_scaling<llama3, factor = 8.0, low_freq_factor = 1.0, high_freq_factor = 4.0, original_context = 8192, freq_factors = [1.0]>}

// -----

// expected-error @+1 {{rope_scaling: factors scaling takes only a factor and freq_factors}}
func.func private @factors_with_context() attributes {s = #kiln.rope_scaling<factors, factor = 1.0, original_context = 8192, freq_factors = [1.0]>}

// -----

// expected-error @+1 {{weights_source: the path is empty}}
module attributes {kiln.weights_source = #kiln.weights_source<gguf, "">} {}

// -----

// expected-error @+2 {{failed to parse Kiln_WeightsSourceAttr parameter 'format'}}
// expected-error @+1 {{invalid weights format (llama2c, gguf or safetensors) specification: onnx}}
module attributes {kiln.weights_source = #kiln.weights_source<onnx, "model.onnx">} {}

// -----

// expected-error @+1 {{'kiln.weights_source' is only valid on a module}}
func.func private @source_on_func() attributes {kiln.weights_source = #kiln.weights_source<gguf, "m.gguf">}

// -----

// expected-error @+1 {{'kiln.weights_source' must be a #kiln.weights_source<format, "path"> attribute}}
module attributes {kiln.weights_source = "m.gguf"} {}

// -----

// expected-error @+1 {{unknown kiln attribute 'kiln.fast'}}
func.func private @unknown_attr() attributes {kiln.fast}

// -----

func.func @fuse_required_not_unit(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{'kiln.fuse_required' must be a unit attribute}}
  %0 = kiln.silu %x {kiln.fuse_required = 1 : i32} : tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
