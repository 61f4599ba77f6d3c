// RUN: kiln-opt %s -split-input-file -verify-diagnostics

// kiln.tiles is one of three typed attributes (ir/KilnAttrs.td); a
// dictionary (the form before them) is not.

func.func @tiles_not_typed(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{'kiln.tiles' must be a #kiln.gemm_tiles, #kiln.attention_tiles or #kiln.rows_tiles, not {kind = "rows"}}}
  %y = kiln.silu %x {kiln.tiles = {kind = "rows"}} : tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

// Every size is positive.
func.func @gemm_size_zero(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+2 {{GEMM tile size 'mr' must be positive, not 0}}
  // expected-error @+1 {{failed to parse Kiln_GemmTilesAttr parameter 'decode'}}
  %y = kiln.silu %x {kiln.tiles = #kiln.gemm_tiles<decode = <m = 1, n = 16, k = 16, mr = 0, nr = 16>, prefill = <m = 8, n = 16, k = 16, mr = 6, nr = 16>, prefill_from = 6, source = "test">} : tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

// Both phases read one packed layout: one nr.
func.func @gemm_nr_differs(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{decode nr (8) and prefill nr (16) differ: both phases read one packed layout}}
  %y = kiln.silu %x {kiln.tiles = #kiln.gemm_tiles<decode = <m = 1, n = 16, k = 16, mr = 1, nr = 8>, prefill = <m = 8, n = 16, k = 16, mr = 6, nr = 16>, prefill_from = 6, source = "test">} : tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

// Batch invariance: both phases split a row's reduction alike (one k).
func.func @gemm_k_differs(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{decode k (8) and prefill k (16) differ: a row's sums would depend on the batch}}
  %y = kiln.silu %x {kiln.tiles = #kiln.gemm_tiles<decode = <m = 1, n = 16, k = 8, mr = 1, nr = 16>, prefill = <m = 8, n = 16, k = 16, mr = 6, nr = 16>, prefill_from = 6, source = "test">} : tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

// Batch invariance: one online-softmax block size (one kv).
func.func @attention_kv_differs(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{decode kv (16) and prefill kv (32) differ: a token's softmax would depend on the batch}}
  %y = kiln.silu %x {kiln.tiles = #kiln.attention_tiles<decode = <q = 1, kv = 16>, prefill = <q = 4, kv = 32>, prefill_from = 2, source = "test">} : tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

func.func @attention_kv_negative(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+2 {{attention tile size 'kv' must be positive, not -3}}
  // expected-error @+1 {{failed to parse Kiln_AttentionTilesAttr parameter 'decode'}}
  %y = kiln.silu %x {kiln.tiles = #kiln.attention_tiles<decode = <q = 1, kv = -3>, prefill = <q = 4, kv = 8>, prefill_from = 2, source = "test">} : tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

func.func @rows_prefill_from_zero(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{prefill_from must be positive, not 0}}
  %y = kiln.silu %x {kiln.tiles = #kiln.rows_tiles<decode = <rows = 1>, prefill = <rows = 4>, prefill_from = 0, source = "test">} : tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}
