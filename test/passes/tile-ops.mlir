// RUN: kiln-opt %s -split-input-file --kiln-tile=target=avx2 | FileCheck %s --check-prefix=AVX2
// RUN: kiln-opt %s -split-input-file --kiln-tile=target=avx512 | FileCheck %s --check-prefix=AVX512
// RUN: kiln-opt %s -split-input-file --kiln-tile=target=portable | FileCheck %s --check-prefix=PORTABLE
// RUN: kiln-opt %s -split-input-file --kiln-tile=target=cuda:sm_90 | FileCheck %s --check-prefix=SM90
// RUN: kiln-opt %s -split-input-file --kiln-tile="target=cuda:sm_90 weight-type=bf16" | FileCheck %s --check-prefix=SM90-BF16
// RUN: kiln-opt %s -split-input-file --kiln-tile="target=avx2,cores=2 prefill-tokens=64" | FileCheck %s --check-prefix=SMALL
// RUN: not kiln-opt %s -split-input-file --kiln-tile="target=avx2 weight-type=q8_0" 2>&1 | FileCheck %s --check-prefix=BAD-TYPE

// BAD-TYPE: error: kiln-tile: weight-type must be f32, f16 or bf16 (or empty: each weight's own type), not 'q8_0'

// Tiles for several targets and shapes that are not multiples of the tiles
// (N = 172, K = 100), computed as docs/passes/tiling.md says. Worked example,
// avx2 (16 ymm registers of 8 floats; L1d 32 KiB, L2 512 KiB, L3 32 MiB over
// 8 cores) and f32 weights:
//  - register block: 6 x 16 (12 accumulators, 2 weight loads, 1 broadcast);
//  - k: a quarter of L2, 128 KiB / (16·4 + 6·4 bytes per k) = 1489 -> 1488,
//    but K = 100;
//  - m: 256 KiB / (100·4) = 655 -> 654 rows, capped at 512 tokens -> 516;
//  - n: N split over 8 cores: ceil(172 / 8) = 22 -> 32 (a multiple of nr);
//  - decode n: 4 tasks per core: ceil(172 / 32) = 6 -> 16.

// AVX2:      module attributes {kiln.target = "avx2,cores=8,l1d=32KiB,l2=512KiB,l3=32MiB"}
// AVX2-LABEL: func @matmul_odd
// AVX2: kiln.matmul {{.*}}kiln.tiles = #kiln.gemm_tiles<decode = <m = 6, n = 16, k = 100, mr = 6, nr = 16>, prefill = <m = 516, n = 32, k = 100, mr = 6, nr = 16>, prefill_from = 6, source = "target avx2">
// AVX512-LABEL: func @matmul_odd
// AVX512: kiln.matmul {{.*}}decode = <m = 6, n = 64, k = 100, mr = 6, nr = 64>{{.*}}prefill = <m = 516, n = 64, k = 100, mr = 6, nr = 64>{{.*}}prefill_from = 6
// PORTABLE-LABEL: func @matmul_odd
// PORTABLE: kiln.matmul {{.*}}prefill = <m = 516, n = 48, k = 100, mr = 6, nr = 8>
// sm_90 (132 SMs), f32 weights on the CUDA cores: no candidate tile covers
// the SMs (64 x 64: ceil(512 / 64) * ceil(172 / 64) = 24 blocks), so the
// smallest, 16 x 16 threads of 4 x 4; decode is the GEMV below 16 rows.
// SM90-LABEL: func @matmul_odd
// SM90: kiln.matmul {{.*}}decode = <m = 4, n = 4, k = 16, mr = 1, nr = 4>, prefill = <m = 64, n = 64, k = 16, mr = 4, nr = 4>, prefill_from = 16
// bf16 weights (kiln compile --dtype bf16) on the tensor cores: warps of
// 32 x 32, k steps of 64.
// SM90-BF16-LABEL: func @matmul_odd
// SM90-BF16: kiln.matmul {{.*}}prefill = <m = 64, n = 64, k = 64, mr = 32, nr = 32>
// SMALL-LABEL: func @matmul_odd
// SMALL: kiln.matmul {{.*}}decode = <m = 6, n = 32, k = 100, mr = 6, {{.*}}prefill = <m = 66, n = 96, k = 100, mr = 6,
func.func @matmul_odd(%x: tensor<?x100xf32>, %w: tensor<172x100xf32>) -> tensor<?x172xf32> {
  %y = kiln.matmul %x, %w : (tensor<?x100xf32>, tensor<172x100xf32>) -> tensor<?x172xf32>
  return %y : tensor<?x172xf32>
}

// -----

// swiglu streams two weight panels: the register block halves its width
// (avx2 6 x 8: 12 accumulators, 2 loads, 1 broadcast), and f16 weights take
// half the bytes per k.

// AVX2-LABEL: func @swiglu_f16
// AVX2: kiln.swiglu {{.*}}prefill = <m = 516, n = 40, k = 100, mr = 6, nr = 8>
// AVX512-LABEL: func @swiglu_f16
// AVX512: kiln.swiglu {{.*}}prefill = <m = 516, n = 32, k = 100, mr = 6, nr = 32>
// PORTABLE-LABEL: func @swiglu_f16
// PORTABLE: kiln.swiglu {{.*}}prefill = <m = 516, n = 76, k = 100, mr = 6, nr = 4>
// sm_90: n halves for the two weights (64 x 32, one warp tile of 32 x 32
// per weight).
// SM90-LABEL: func @swiglu_f16
// SM90: kiln.swiglu {{.*}}prefill = <m = 64, n = 32, k = 64, mr = 32, nr = 32>
func.func @swiglu_f16(%x: tensor<?x100xf32>, %w1: tensor<300x100xf16>, %w3: tensor<300x100xf16>) -> tensor<?x300xf32> {
  %h = kiln.swiglu %x, %w1, %w3 : tensor<?x100xf32>, tensor<300x100xf16> -> tensor<?x300xf32>
  return %h : tensor<?x300xf32>
}

// -----

// A large q8_0 matmul: K blocks hold whole 32-weight blocks, and a decode
// GEMV splits K as prefill does (batch invariance).

// AVX2-LABEL: func @matmul_q8_0
// AVX2: kiln.matmul {{.*}}decode = <m = 6, n = 128, k = 2048, mr = 6, nr = 16>{{.*}}prefill = <m = 30, n = 512, k = 2048, mr = 6, nr = 16>
// AVX512-LABEL: func @matmul_q8_0
// AVX512: kiln.matmul {{.*}}decode = <{{.*}}k = 4096, {{.*}}prefill = <m = 60, n = 128, k = 4096, mr = 6, nr = 64>
// sm_90: 128 x 64 tiles give ceil(512 / 128) * (4096 / 64) = 256 blocks,
// enough for 132 SMs; as bf16 on the tensor cores, 128 x 128 gives 128
// blocks, too few, so 128 x 64 there too, in warps of 64 x 32.
// SM90-LABEL: func @matmul_q8_0
// SM90: kiln.matmul {{.*}}prefill = <m = 128, n = 64, k = 16, mr = 8, nr = 4>
// SM90-BF16-LABEL: func @matmul_q8_0
// SM90-BF16: kiln.matmul {{.*}}prefill = <m = 128, n = 64, k = 64, mr = 64, nr = 32>
func.func @matmul_q8_0(%x: tensor<?x4096xf32>, %w: tensor<4096x4096x!kiln.q8_0>) -> tensor<?x4096xf32> {
  %y = kiln.matmul %x, %w : (tensor<?x4096xf32>, tensor<4096x4096x!kiln.q8_0>) -> tensor<?x4096xf32>
  return %y : tensor<?x4096xf32>
}

// -----

// Norms are tiled by rows, attention by query rows and cached positions:
// avx2 keeps a block of keys and one of values in half of L1,
// 16 KiB / (2·64·4) = 32 positions; CPU prefill takes q = 64 query rows
// (the kernel's limit, at most prefill-tokens). sm_90 runs a warp per
// (token, head): q = 1; decode splits a token's positions in chunks of kv so
// that its 4 heads make 8 warps per SM: 8·132 / 4 = 264 splits of the
// 512-position context (prefill-tokens, no context here) -> 2 positions,
// raised to the 64 that outweigh a split's partial result.

// AVX2-LABEL: func @step
// AVX2: kiln.rms_norm {{.*}}kiln.tiles = #kiln.rows_tiles<decode = <rows = 1>, prefill = <rows = 64>, prefill_from = 2
// AVX2: kiln.attention {{.*}}kiln.tiles = #kiln.attention_tiles<decode = <q = 1, kv = 32>, prefill = <q = 64, kv = 32>
// AVX512-LABEL: func @step
// AVX512: kiln.attention {{.*}}decode = <q = 1, kv = 48>
// SM90-LABEL: func @step
// SM90: kiln.attention {{.*}}kiln.tiles = #kiln.attention_tiles<decode = <q = 1, kv = 64>, prefill = <q = 1, kv = 64>, prefill_from = 8
func.func @step(%ids: tensor<?xi32>, %pos: tensor<?xi32>, %seq: tensor<?xi32>, %rows: tensor<?xi32>,
                %c: !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 64, f32>,
                %x: tensor<?x64xf32>, %g: tensor<64xf32>, %q: tensor<?x4x64xf32>)
    -> (tensor<?x64xf32>, tensor<?x4x64xf32>) {
  %n = kiln.rms_norm %x, %g epsilon = 1.0e-05 : tensor<?x64xf32>, tensor<64xf32>
  %o = kiln.attention %q, %c[0] seqs %seq positions %pos scale = 0.125
      : tensor<?x4x64xf32>, !kiln.kv_cache<layers = 1, kv_heads = 2, head_dim = 64, f32>, tensor<?xi32>
  return %n, %o : tensor<?x64xf32>, tensor<?x4x64xf32>
}
