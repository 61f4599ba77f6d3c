//===- Gemm.h - GEMM and GEMV with prologue and epilogue --------*- C++ -*-===//
//
// Part of Kiln's CPU kernel library. kiln.matmul, kiln.fused_matmul and
// kiln.swiglu: y[M, N] = act(norm(x)[M, K] · W[N, K]ᵀ + b) + r, the rms_norm
// prologue, bias, activation and residual each optional; for swiglu two
// weights (gate and up) and the epilogue silu(g) * u. Every k block but
// the last leaves partial sums in y (swiglu: the gate's in y, the up
// projection's in scratch), so any k block of kiln.tiles works.
//
// W is packed in panels of NR rows (codegen/WeightPacker.h): panel p holds
// columns [p * NR, p * NR + NR) of y, k-major, so a register block of MR
// rows by NR columns reads NR contiguous weights per k. Decode (few rows)
// and prefill (at least PREFILL_FROM rows) take their blocks from kiln.tiles.
//
// The configuration C gives, as static constexpr members:
//   N, K            the weight's shape [N, K]
//   NR, MR          the prefill register block (NR a multiple of V)
//   DECODE_MR       the decode register block's rows
//   PREFILL_FROM    rows from which the prefill blocks apply
//   PREFILL_M, PREFILL_N, PREFILL_K, DECODE_M, DECODE_N, DECODE_K
//                   the blocks (N blocks are whole panels: the tasks)
//
// The loops are n (split over threads), k, m (Goto/BLIS: a block of
// weights stays in cache while the input rows stream through it), then the
// register blocks. Weights stream from memory once, prefetched: a single
// register block of rows (decode) asks for what lies PREFETCH_AHEAD past
// the lines it loads, every line or each page's first, as the step's
// weight_prefetch says (the runtime decides per CPU:
// runtime/WeightPrefetch.h); taller m blocks read each panel
// block several times from cache, and each of those reads fetches its share of
// the next panel block into L2, so memory works during all of them (mBlock).
//   SWIGLU, HAS_BIAS, HAS_RESIDUAL, HAS_PROLOGUE          the fused parts
//   ACTIVATION      a Unary (Identity, Silu, Gelu, GeluTanh, Relu)
//   EPSILON         the prologue's rms_norm epsilon
//   BF16_PAIRS      bf16 panels loaded as lane pairs (columns c, c + V)
//   BF16_DOT        bf16 panels of k pairs multiplied with vdpbf16ps
//   QUANT           a Quant: None, Q8_0 / Q4_0 panels (Quant.h's layout),
//                   or Q4_K / Q5_K / Q6_K panels (KQuant.h's)
//   wtype           the packed element: float, _Float16 or bf16; uint8_t
//                   for quantized panels (then BF16_PAIRS = BF16_DOT =
//                   false)
//   AMX             multiply in AMX tiles (Amx.h) where the format has a
//                   tile path: bf16 k pairs (BF16_DOT), Q8_0 and Q4_0
//
// Q8_0 and Q4_0 (K a multiple of 32): the rows of x, after the prologue,
// are quantized once to int8 per block of 32 (Quant.h), and each block of
// the register block is an integer dot product of levels (vpdpbusd where
// the CPU has VNNI; Vector.h) scaled into f32 accumulators:
//   acc = fma(d_w, d_x * float(dot(u, q) - c), acc),  c = offset * sum(q),
// which is sum_k d_w (u_k - offset) * d_x q_k, the weights' zero level
// taken out in integers once per row and block rather than per weight, so
// every ISA's path computes the same signed dot product exactly. k blocks
// are rounded up to whole blocks of 32.
//
// K-quants (K a multiple of 256): the rows are quantized per super-block of
// 256 as llama.cpp's Q8_K (KQuant.h), and each super-block of the register
// block is KQuant.h's exact integer dot product with the sub-blocks' scales
// and mins, then two float products. k blocks are whole super-blocks.
//
// AMX (a target with amx-bf16 / amx-int8): blocks of 16 rows x 16 columns
// of y in tiles, the panels read as B tiles where they are one (bf16 k
// pairs), or copied to signed levels per block (Q8_0, Q4_0). A row's
// arithmetic must not depend on the rows beside it (batch invariance), so:
//   - Q8_0 / Q4_0 use tiles for prefill only: a block's integer dot product
//     (TDPBSSD) is exact, and the scaling after it is the vector path's
//     expression, so a row's result is bitwise the vector path's;
//   - bf16 uses tiles for every row count, decode included: TDPBF16PS
//     rounds differently from vdpbf16ps, so the two must not mix.
// K-quants keep their vector loops (their sub-blocks of 16 and 32 with
// 6-bit scales would need a tile store per sub-block).
//
// Scratch (scratch_bytes; the code generator mirrors this formula), each
// part 64-byte aligned, in this order:
//   HAS_PROLOGUE    rows * K * 4          the normalized rows
//   BF16_DOT        rows * KP * 2         the rows as bf16 pairs
//   QUANT           rows * K              the rows' int8 levels, then
//                   rows * (K / 32) * 8   per block d (float), c (int32),
//                                         or for K-quants
//                   rows * (K / 256) * 52 per super-block KQuant.h's record
//   SWIGLU          rows * N * 4          the up projection's partial sums
//
//===----------------------------------------------------------------------===//

#ifndef KILN_KERNELS_GEMM_H
#define KILN_KERNELS_GEMM_H

#include "Amx.h"
#include "Elementwise.h"
#include "KQuant.h"
#include "Norms.h"
#include "Quant.h"
#include "Vector.h"

namespace kiln::kernels {

/// Whether weights of format `quant` (bf16 k pairs when `bf16_dot`) in
/// panels of `nr` columns have a tile path (C::AMX may be set).
constexpr bool amx_tile_path(Quant quant, bool bf16_dot, int64_t nr) {
  return nr % 16 == 0 &&
         (bf16_dot || quant == Quant::Q8_0 || quant == Quant::Q4_0);
}

template <class A, class B> constexpr bool same_type = false;
template <class A> constexpr bool same_type<A, A> = true;

template <class C> struct Gemm {
  static constexpr int64_t N = C::N, K = C::K;
  static constexpr int NR = C::NR, NV = NR / V, MR = C::MR;
  // The tallest register block either phase uses.
  static constexpr int MAX_MR = MR > C::DECODE_MR ? MR : C::DECODE_MR;
  static constexpr int64_t PANELS = (N + NR - 1) / NR;
  static constexpr bool SWIGLU = C::SWIGLU, BF16_DOT = C::BF16_DOT;
  // bf16 dot products: panels hold weight pairs (k, k + 1) of each column
  // in one 32-bit lane, and the rows of x are rounded to bf16 pairs once,
  // so each step of the register block covers two k.
  static constexpr int64_t KP = BF16_DOT ? K + (K & 1) : K;
  static constexpr Quant QUANT = C::QUANT;
  static constexpr bool QUANTIZED = QUANT != Quant::None;
  static constexpr bool KQUANT = is_k_quant(QUANT);
  // Quantized: k per block (32, or a K-quant's super-block of 256), blocks
  // per row of W, bytes per column and block, bytes per panel's block, and
  // the level the Q8_0 / Q4_0 dot products treat as weight zero.
  static constexpr int64_t QB = KQUANT ? QK : QUANT_BLOCK;
  static constexpr int64_t KB = K / QB;
  static constexpr int64_t BB =
      KQUANT ? kquant_column_bytes(QUANT) : quant_block_bytes(QUANT);
  // Bytes per row and block of the quantized activations' scales.
  static constexpr int64_t XS_BYTES = KQUANT ? KQ_RECORD * 4 : 8;
  static constexpr int64_t PANEL_BLOCK = NR * BB;
  static constexpr int OFFSET =
      QUANT == Quant::Q8_0 ? Q8_DOT_OFFSET : quant_offset(QUANT);
  using wtype = typename C::wtype;
  static_assert(QUANTIZED == same_type<wtype, uint8_t>,
                "quantized panels are bytes (wtype uint8_t), and only they");
  static_assert(!QUANTIZED || K % QB == 0,
                "quantized weights are whole blocks along K (32, or 256 for "
                "K-quants)");
  static_assert(!QUANTIZED || (!C::BF16_PAIRS && !BF16_DOT),
                "quantized panels have no bf16 layouts");
  static_assert(NR % V == 0, "NR must be whole vectors");
  static_assert(MR >= 1 && C::DECODE_MR >= 1,
                "register blocks must have at least one row");
  static_assert(!C::BF16_PAIRS || NV % 2 == 0,
                "bf16 lane pairs need an even number of vectors per panel");
  // AMX: tiles of 16 columns (TN), the panel's column groups of the gate
  // (and up) projection are the C tiles, up to 6 at once (tiles 2..7; A is
  // tile 0, B tile 1).
  static constexpr bool AMX_INT8 =
      C::AMX && (QUANT == Quant::Q8_0 || QUANT == Quant::Q4_0);
  static constexpr bool AMX_BF16 = C::AMX && BF16_DOT;
  static constexpr int TN = 16, TM = amx::ROWS, GROUPS = NR / TN,
                       JOBS = (SWIGLU ? 2 : 1) * GROUPS, BATCH = 6;
  static_assert(!C::AMX || amx::AVAILABLE,
                "AMX configurations need -mamx-tile (or KILN_AMX_EMULATE)");
  static_assert(!C::AMX || amx_tile_path(QUANT, BF16_DOT, NR),
                "AMX tiles multiply bf16 k pairs or Q8_0 / Q4_0 levels, 16 "
                "columns of a panel at a time");

  struct Args {
    const float *x;        // [rows, K], normalized when HAS_PROLOGUE
    const uint16_t *xb;    // [rows, KP] x as bf16 pairs (BF16_DOT)
    const int8_t *xq;      // [rows, K] x's levels (QUANT)
    const float *xs;       // [rows, KB, 2] their d and offset term (QUANT)
    const wtype *w, *w2;   // packed panels (w2: swiglu's up projection)
    const float *bias;     // [N]
    const float *residual; // [rows, N]
    float *y;              // [rows, N]
    float *up;             // [rows, N] swiglu's partial up sums (k blocks)
    int64_t rows, kBlock, panelsPerTask, mBlock, mr;
    bool amx;         // this call multiplies in tiles
    bool panelMajor;  // decode: a panel's k blocks before the next panel
    int32_t prefetch; // how `own` blocks prefetch (KILN_WEIGHT_PREFETCH_*)
  };

  /// What a register block prefetches while it computes. `own`: it is the
  /// first to read its weights, from memory, so it asks for what lies
  /// PREFETCH_AHEAD past them as the step's weight_prefetch says
  /// (KILN_WEIGHT_PREFETCH_*: none, lines, pages; Vector.h). `next`, `next2`:
  /// the panel block this thread multiplies next (w, w2; null: none), `bytes`
  /// long, of which this block fetches share `share` of `shares` (mBlock).
  struct Fetch {
    int32_t own = KILN_WEIGHT_PREFETCH_NONE;
    const uint8_t *next = nullptr, *next2 = nullptr;
    int64_t bytes = 0;
    int share = 0, shares = 1;

    /// This block's share of the next panel block, over `steps` steps.
    PrefetchSpread spread(int64_t steps) const {
      if (!next)
        return PrefetchSpread();
      const int64_t lines = (bytes + 63) / 64;
      return PrefetchSpread(next, next2, share * lines / shares,
                            (share + 1) * lines / shares, steps);
    }
  };

  /// Where panel `panel`'s k block [k0, k0 + kl) starts in w (and w2), in
  /// bytes, and how long it is.
  static void panel_block_bytes(int64_t panel, int64_t k0, int64_t kl,
                                int64_t &at, int64_t &bytes) {
    if constexpr (QUANTIZED) {
      at = (panel * KB + k0 / QB) * PANEL_BLOCK;
      bytes = kl / QB * PANEL_BLOCK;
    } else {
      at = (panel * KP + k0) * NR * int64_t(sizeof(wtype));
      bytes = kl * NR * int64_t(sizeof(wtype));
    }
  }

  /// Bytes of scratch `run` needs for `rows` rows: the normalized rows
  /// (HAS_PROLOGUE), the rows as bf16 pairs (BF16_DOT), the rows' levels
  /// and block scales (QUANT), swiglu's partial up sums; each part 64-byte
  /// aligned (the formula at the top of this file).
  static constexpr int64_t scratch_bytes(int64_t rows) {
    auto aligned = [](int64_t bytes) { return (bytes + 63) / 64 * 64; };
    return (C::HAS_PROLOGUE ? aligned(rows * K * 4) : 0) +
           (BF16_DOT ? aligned(rows * KP * 2) : 0) +
           (QUANTIZED ? aligned(rows * K) + aligned(rows * KB * XS_BYTES) : 0) +
           (SWIGLU ? aligned(rows * N * 4) : 0);
  }

  /// Vectors of columns the quantized register block of M rows works on at
  /// once (a divisor of NV): as many as keep its int32 dot sums, its f32
  /// sums and a load of weights per vector in the registers (32 with
  /// AVX-512, else 16) with two to spare; failing that, its dot sums alone.
  template <int M> static constexpr int quant_vectors() {
    constexpr int REGS = V == 16 ? 32 : 16, S = SWIGLU ? 2 : 1;
    for (int q = NV; q > 1; --q)
      if (NV % q == 0 && S * q * (2 * M + 1) + 2 <= REGS)
        return q;
    for (int q = NV; q > 1; --q)
      if (NV % q == 0 && S * q * (M + 1) + 2 <= REGS)
        return q;
    return 1;
  }

  /// The quantized register block: rows [m0, m0 + M) x the panel's columns,
  /// blocks of 32 k in [k0, k0 + kl), into acc (acc2: swiglu's up),
  /// prefetching as `f` says.
  template <int M>
  static void quant_block(const Args &g, int64_t m0, int64_t panel, int64_t k0,
                          int64_t kl, const Fetch &f, vfloat (&acc)[M][NV],
                          vfloat (&acc2)[SWIGLU ? M : 1][NV]) {
    constexpr int Q = quant_vectors<M>(), S2 = SWIGLU ? Q : 1;
    const int64_t b0 = k0 / QUANT_BLOCK, nb = kl / QUANT_BLOCK;
    PrefetchSpread spread = f.spread(NV / Q * nb);
    const uint8_t *w = g.w + (panel * KB + b0) * PANEL_BLOCK;
    const uint8_t *w2 = SWIGLU ? g.w2 + (panel * KB + b0) * PANEL_BLOCK : w;
    const int8_t *xq = g.xq + m0 * K + k0;
    const float *xs = g.xs + 2 * (m0 * KB + b0);
    for (int j0 = 0; j0 < NV; j0 += Q) {
      // These columns' sums, in locals: acc could alias xs for all the
      // compiler knows, which would store them at every block.
      vfloat sum[M][Q], sum2[SWIGLU ? M : 1][S2];
      for (int i = 0; i < M; ++i)
        for (int j = 0; j < Q; ++j) {
          sum[i][j] = acc[i][j0 + j];
          if (SWIGLU)
            sum2[i][j] = acc2[i][j0 + j];
        }
      for (int64_t b = 0; b < nb; ++b) {
        if (j0 == 0) {
          prefetch_weights_ahead<PANEL_BLOCK>(f.own, w + b * PANEL_BLOCK);
          if (SWIGLU)
            prefetch_weights_ahead<PANEL_BLOCK>(f.own, w2 + b * PANEL_BLOCK);
        }
        spread.step(j0 / Q * nb + b);
        // The levels: NR scales, then groups of 4 * NR bytes.
        const uint8_t *wb = w + b * PANEL_BLOCK + 2 * NR + 4 * j0 * V;
        const uint8_t *wb2 = w2 + b * PANEL_BLOCK + 2 * NR + 4 * j0 * V;
        const int8_t *xb = xq + b * QUANT_BLOCK;
        vi32 dot[M][Q], dot2[SWIGLU ? M : 1][S2];
        for (int i = 0; i < M; ++i)
          for (int j = 0; j < Q; ++j) {
            dot[i][j] = vi32{};
            if (SWIGLU)
              dot2[i][j] = vi32{};
          }
        if constexpr (QUANT == Quant::Q8_0) {
          for (int grp = 0; grp < 8; ++grp) {
            vq8 u[Q], u2[S2];
            for (int j = 0; j < Q; ++j) {
              u[j] = vload_q8(wb + grp * 4 * NR + 4 * j * V);
              if (SWIGLU)
                u2[j] = vload_q8(wb2 + grp * 4 * NR + 4 * j * V);
            }
            for (int i = 0; i < M; ++i) {
              uint32_t x4; // k = 4 grp .. 4 grp + 3 of row i
              memcpy(&x4, xb + i * K + 4 * grp, sizeof x4);
              for (int j = 0; j < Q; ++j) {
                dot[i][j] = vdot_q8(dot[i][j], u[j], x4);
                if (SWIGLU)
                  dot2[i][j] = vdot_q8(dot2[i][j], u2[j], x4);
              }
            }
          }
        } else if constexpr (M == 1 && Q4_HIGH_IN_PLACE) {
          // One row: unpacking is per weight byte and the dot products are
          // too, so the shift per chunk is a third of the integer work. The
          // high nibbles are multiplied in place (16 * level) into sums of
          // their own, shifted back once per block (Vector.h).
          vi32 dhi[Q], dhi2[S2];
          for (int j = 0; j < Q; ++j) {
            dhi[j] = vi32{};
            if (SWIGLU)
              dhi2[j] = vi32{};
          }
          for (int p = 0; p < 4; ++p) {
            uint32_t xlo, xhi;
            memcpy(&xlo, xb + 4 * p, sizeof xlo);
            memcpy(&xhi, xb + 16 + 4 * p, sizeof xhi);
            for (int j = 0; j < Q; ++j) {
              vu32 raw;
              memcpy(&raw, wb + p * 4 * NR + 4 * j * V, sizeof raw);
              dot[0][j] = vdot_u8_i32(dot[0][j], raw & 0x0f0f0f0fu, xlo);
              dhi[j] = vdot_u8_i32(dhi[j], raw & 0xf0f0f0f0u, xhi);
              if (SWIGLU) {
                memcpy(&raw, wb2 + p * 4 * NR + 4 * j * V, sizeof raw);
                dot2[0][j] = vdot_u8_i32(dot2[0][j], raw & 0x0f0f0f0fu, xlo);
                dhi2[j] = vdot_u8_i32(dhi2[j], raw & 0xf0f0f0f0u, xhi);
              }
            }
          }
          for (int j = 0; j < Q; ++j) {
            dot[0][j] += dhi[j] >> 4;
            if (SWIGLU)
              dot2[0][j] += dhi2[j] >> 4;
          }
        } else {
          vq4acc d4[M][Q], d42[SWIGLU ? M : 1][S2];
          for (int i = 0; i < M; ++i)
            for (int j = 0; j < Q; ++j) {
              d4[i][j] = vq4acc{};
              if (SWIGLU)
                d42[i][j] = vq4acc{};
            }
          for (int p = 0; p < 4; ++p) {
            // Chunk p: low nibbles are k = 4p.., high nibbles k = 16 + 4p..
            vu32 lo[Q], hi[Q], lo2[S2], hi2[S2];
            for (int j = 0; j < Q; ++j) {
              vu32 raw;
              memcpy(&raw, wb + p * 4 * NR + 4 * j * V, sizeof raw);
              lo[j] = raw & 0x0f0f0f0fu;
              hi[j] = (raw >> 4) & 0x0f0f0f0fu;
              if (SWIGLU) {
                memcpy(&raw, wb2 + p * 4 * NR + 4 * j * V, sizeof raw);
                lo2[j] = raw & 0x0f0f0f0fu;
                hi2[j] = (raw >> 4) & 0x0f0f0f0fu;
              }
            }
            for (int i = 0; i < M; ++i) {
              uint32_t xlo, xhi;
              memcpy(&xlo, xb + i * K + 4 * p, sizeof xlo);
              memcpy(&xhi, xb + i * K + 16 + 4 * p, sizeof xhi);
              for (int j = 0; j < Q; ++j) {
                d4[i][j] = vdot_q4(d4[i][j], lo[j], hi[j], xlo, xhi);
                if (SWIGLU)
                  d42[i][j] = vdot_q4(d42[i][j], lo2[j], hi2[j], xlo, xhi);
              }
            }
          }
          for (int i = 0; i < M; ++i)
            for (int j = 0; j < Q; ++j) {
              dot[i][j] = vq4_widen(d4[i][j]);
              if (SWIGLU)
                dot2[i][j] = vq4_widen(d42[i][j]);
            }
        }
        // The weights' scales, then per row its d and offset term.
        vfloat dw[Q], dw2[S2];
        for (int j = 0; j < Q; ++j) {
          dw[j] = vload_f16(w + b * PANEL_BLOCK + 2 * (j0 + j) * V);
          if (SWIGLU)
            dw2[j] = vload_f16(w2 + b * PANEL_BLOCK + 2 * (j0 + j) * V);
        }
        for (int i = 0; i < M; ++i) {
          // The exact signed dot product (Quant.h), then the two scales.
          float dx = xs[2 * (i * KB + b)];
          int32_t c;
          memcpy(&c, xs + 2 * (i * KB + b) + 1, sizeof c);
          for (int j = 0; j < Q; ++j) {
            sum[i][j] = vfmadd(
                dw[j], dx * __builtin_convertvector(dot[i][j] - c, vfloat),
                sum[i][j]);
            if (SWIGLU)
              sum2[i][j] = vfmadd(
                  dw2[j], dx * __builtin_convertvector(dot2[i][j] - c, vfloat),
                  sum2[i][j]);
          }
        }
      }
      for (int i = 0; i < M; ++i)
        for (int j = 0; j < Q; ++j) {
          acc[i][j0 + j] = sum[i][j];
          if (SWIGLU)
            acc2[i][j0 + j] = sum2[i][j];
        }
    }
    spread.finish();
  }

  /// Vectors of columns a K-quant register block of M rows works on at
  /// once (a divisor of NV): as many as keep, per row and vector, the int32
  /// sums and the runs' sums (2, or 4 for Q6_K) in the registers with the
  /// scales and two to spare; else 1.
  template <int M> static constexpr int kquant_vectors() {
    constexpr int REGS = V == 16 ? 32 : 16;
    constexpr int RUNS = QUANT == Quant::Q6_K ? 4 : 2;
    for (int q = NV; q > 1; --q)
      if (NV % q == 0 && q * (M * (RUNS + 1) + 2) + 2 <= REGS)
        return q;
    return 1;
  }

  /// The K-quant register block: rows [m0, m0 + M) x the panel's columns,
  /// super-blocks in [k0, k0 + kl), into acc (acc2: swiglu's up),
  /// prefetching as `f` says.
  template <int M>
  static void kquant_block(const Args &g, int64_t m0, int64_t panel, int64_t k0,
                           int64_t kl, const Fetch &f, vfloat (&acc)[M][NV],
                           vfloat (&acc2)[SWIGLU ? M : 1][NV]) {
    constexpr int Q = kquant_vectors<M>();
    const int64_t s0 = k0 / QK, ns = kl / QK;
    PrefetchSpread spread = f.spread(NV / Q * ns);
    const int32_t *rec =
        reinterpret_cast<const int32_t *>(g.xs) + (m0 * KB + s0) * KQ_RECORD;
    const int8_t *xq = g.xq + m0 * K + k0;
    for (int j0 = 0; j0 < NV; j0 += Q) {
      vfloat sum[M][Q], sum2[M][Q];
      for (int i = 0; i < M; ++i)
        for (int j = 0; j < Q; ++j) {
          sum[i][j] = acc[i][j0 + j];
          sum2[i][j] = SWIGLU ? acc2[SWIGLU ? i : 0][j0 + j] : vfloat{};
        }
      for (int64_t s = 0; s < ns; ++s) {
        const int64_t at = (panel * KB + s0 + s) * PANEL_BLOCK;
        if (j0 == 0) {
          prefetch_weights_ahead<PANEL_BLOCK>(f.own, g.w + at);
          if (SWIGLU)
            prefetch_weights_ahead<PANEL_BLOCK>(f.own, g.w2 + at);
        }
        spread.step(j0 / Q * ns + s);
        kquant_superblock<QUANT, NR, M, Q>(g.w + at, j0, xq + s * QK, K,
                                           rec + s * KQ_RECORD, KB * KQ_RECORD,
                                           sum);
        if constexpr (SWIGLU)
          kquant_superblock<QUANT, NR, M, Q>(g.w2 + at, j0, xq + s * QK, K,
                                             rec + s * KQ_RECORD,
                                             KB * KQ_RECORD, sum2);
      }
      for (int i = 0; i < M; ++i)
        for (int j = 0; j < Q; ++j) {
          acc[i][j0 + j] = sum[i][j];
          if constexpr (SWIGLU)
            acc2[i][j0 + j] = sum2[i][j];
        }
    }
    spread.finish();
  }

  /// Calls f(TileId<T>{}) for tile T = 2 + job (the C tiles).
  template <int T> struct TileId {
    static constexpr int value = T;
  };
  template <class F> static void with_c_tile(int job, const F &f) {
    switch (job) {
    case 0:
      return f(TileId<2>{});
    case 1:
      return f(TileId<3>{});
    case 2:
      return f(TileId<4>{});
    case 3:
      return f(TileId<5>{});
    case 4:
      return f(TileId<6>{});
    default:
      return f(TileId<7>{});
    }
  }

  /// Shapes the tiles for blocks of `rows` rows (LDTILECFG zeroes them, so
  /// only between blocks); `configured` is the thread's current shape.
  static void amx_configure(int rows, int &configured) {
    if (rows == configured)
      return;
    amx::Config c;
    const int aBytes = AMX_BF16 ? amx::ROW_BYTES : int(QUANT_BLOCK);
    c.rows[0] = uint8_t(rows), c.colsb[0] = uint16_t(aBytes); // A
    c.rows[1] = uint8_t(aBytes / 4), c.colsb[1] = 4 * TN;     // B
    for (int t = 2; t < amx::TILES; ++t)
      c.rows[t] = uint8_t(rows), c.colsb[t] = 4 * TN; // C
    amx::configure(c);
    configured = rows;
  }

  /// Writes rows [m, m + r) of a tile block's sums (sums[i][c], sums2:
  /// swiglu's up) through the epilogue, a row at a time: its arithmetic is
  /// per element, the same as for a register block.
  static void amx_epilogue(const Args &g, int64_t m, int r, int64_t panel,
                           bool first, bool last, const float (*sums)[NR],
                           const float (*sums2)[NR]) {
    for (int i = 0; i < r; ++i) {
      vfloat acc[1][NV], acc2[1][NV];
      for (int j = 0; j < NV; ++j) {
        acc[0][j] = vload(sums[i] + j * V);
        acc2[0][j] = SWIGLU ? vload(sums2[i] + j * V) : vfloat{};
      }
      epilogue<1>(g, m + i, panel, first, last, acc, acc2);
    }
  }

  /// bf16 in tiles: rows [m, m + r) x the panel, k in [k0, k0 + kl) (k0
  /// even). Each step of 16 k pairs loads A once and multiplies it with
  /// every column group's B; a step past the end of the rows' pairs reads
  /// them through a zero-padded copy.
  static void amx_bf16_block(const Args &g, int64_t m, int r, int64_t panel,
                             int64_t k0, int64_t kl, bool first, bool last) {
    alignas(64) float sums[TM][NR], sums2[SWIGLU ? TM : 1][NR];
    alignas(64) uint16_t aPad[TM][32], bPad[TM][32];
    const int64_t pairs = (kl + 1) / 2;
    for (int j0 = 0; j0 < JOBS; j0 += BATCH) {
      const int jobs = JOBS - j0 < BATCH ? JOBS - j0 : BATCH;
      for (int j = 0; j < jobs; ++j)
        with_c_tile(j, [](auto t) { amx::zero<decltype(t)::value>(); });
      for (int64_t p = 0; p < pairs; p += TM) {
        const int np = pairs - p < TM ? int(pairs - p) : TM;
        const uint16_t *xa = g.xb + m * KP + k0 + 2 * p;
        if (np == TM) {
          amx::load<0>(xa, KP * 2);
        } else {
          memset(aPad, 0, sizeof aPad);
          for (int i = 0; i < r; ++i)
            memcpy(aPad[i], xa + i * KP, 4 * np);
          amx::load<0>(aPad, sizeof aPad[0]);
        }
        for (int j = 0; j < jobs; ++j) {
          const int job = j0 + j;
          const wtype *w = job < GROUPS ? g.w : g.w2;
          const wtype *wb =
              w + (panel * KP + k0 + 2 * p) * NR + 2 * TN * (job % GROUPS);
          if (np == TM) {
            amx::load<1>(wb, 4 * NR);
          } else {
            memset(bPad, 0, sizeof bPad);
            for (int q = 0; q < np; ++q)
              memcpy(bPad[q], wb + 2 * q * NR, sizeof bPad[q]);
            amx::load<1>(bPad, sizeof bPad[0]);
          }
          with_c_tile(
              j, [](auto t) { amx::dot_bf16<decltype(t)::value, 0, 1>(); });
        }
      }
      for (int j = 0; j < jobs; ++j) {
        const int job = j0 + j;
        float *to =
            job < GROUPS ? &sums[0][TN * job] : &sums2[0][TN * (job - GROUPS)];
        with_c_tile(j, [&](auto t) {
          amx::store<decltype(t)::value>(to, sizeof sums[0]);
        });
      }
    }
    amx_epilogue(g, m, r, panel, first, last, sums, sums2);
  }

  /// One block of 32 of column group `group` of a Q8_0 / Q4_0 panel as
  /// signed levels in the B tile's layout: 8 rows of 4 k x 16 columns.
  static void amx_signed_levels(const uint8_t *block, int group,
                                int8_t (&b)[8][4 * TN]) {
    typedef int8_t v64 __attribute__((vector_size(4 * TN)));
    const uint8_t *levels = block + 2 * NR + 4 * TN * group;
    for (int row = 0; row < (QUANT == Quant::Q8_0 ? 8 : 4); ++row) {
      v64 raw;
      memcpy(&raw, levels + row * 4 * NR, sizeof raw);
      if constexpr (QUANT == Quant::Q8_0) {
        v64 q = raw ^ int8_t(-128); // u - 128
        memcpy(b[row], &q, sizeof q);
      } else {
        // Chunk `row`: low nibbles k = 4 row.., high nibbles k = 16 + 4 row..
        v64 lo = (raw & 15) - 8, hi = ((raw >> 4) & 15) - 8;
        memcpy(b[row], &lo, sizeof lo);
        memcpy(b[4 + row], &hi, sizeof hi);
      }
    }
  }

  /// Q8_0 / Q4_0 in tiles: rows [m, m + r) x the panel, blocks of 32 in
  /// [k0, k0 + kl). Per block and column group, the exact signed dot
  /// product (TDPBSSD), then the vector path's scaling:
  ///   sum = fma(d_w, d_x * float(dot), sum).
  static void amx_quant_block(const Args &g, int64_t m, int r, int64_t panel,
                              int64_t k0, int64_t kl, bool first, bool last) {
    alignas(64) float sums[TM][NR], sums2[SWIGLU ? TM : 1][NR];
    alignas(64) int8_t b[8][4 * TN];
    alignas(64) int32_t dots[TM][TN];
    memset(sums, 0, sizeof sums);
    memset(sums2, 0, sizeof sums2);
    const int64_t b0 = k0 / QUANT_BLOCK, nb = kl / QUANT_BLOCK;
    for (int64_t blk = b0; blk < b0 + nb; ++blk) {
      amx::load<0>(g.xq + m * K + blk * QUANT_BLOCK, K);
      for (int job = 0; job < JOBS; ++job) {
        const int group = job % GROUPS;
        const uint8_t *block =
            (job < GROUPS ? g.w : g.w2) + (panel * KB + blk) * PANEL_BLOCK;
        amx_signed_levels(block, group, b);
        amx::load<1>(b, sizeof b[0]);
        amx::zero<2>();
        amx::dot_s8s8<2, 0, 1>();
        amx::store<2>(dots, sizeof dots[0]);
        float(*to)[NR] = job < GROUPS ? sums : sums2;
        for (int j = 0; j < TN / V; ++j) {
          const vfloat dw = vload_f16(block + 2 * (TN * group + j * V));
          for (int i = 0; i < r; ++i) {
            const float dx = g.xs[2 * ((m + i) * KB + blk)];
            vi32 dot;
            memcpy(&dot, &dots[i][j * V], sizeof dot);
            float *s = &to[i][TN * group + j * V];
            vstore(s, vfmadd(dw, dx * __builtin_convertvector(dot, vfloat),
                             vload(s)));
          }
        }
      }
    }
    amx_epilogue(g, m, r, panel, first, last, sums, sums2);
  }

  /// Rows [m0, m0 + M) x the columns of one panel, reduction [k0, k0 + kl):
  /// the register block. `first` starts from the bias, later k blocks add
  /// to y; `last` applies the epilogue. It prefetches as `f` says.
  template <int M>
  static void block(const Args &g, int64_t m0, int64_t panel, int64_t k0,
                    int64_t kl, bool first, bool last, const Fetch &f) {
    vfloat acc[M][NV], acc2[SWIGLU ? M : 1][NV];
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < NV; ++j) {
        acc[i][j] = vfloat{};
        if (SWIGLU)
          acc2[i][j] = vfloat{};
      }
    if constexpr (KQUANT) {
      kquant_block<M>(g, m0, panel, k0, kl, f, acc, acc2);
    } else if constexpr (QUANTIZED) {
      quant_block<M>(g, m0, panel, k0, kl, f, acc, acc2);
    } else if constexpr (BF16_DOT) {
      const wtype *w = g.w + (panel * KP + k0) * NR;
      const wtype *w2 = SWIGLU ? g.w2 + (panel * KP + k0) * NR : nullptr;
      // k0 is even; past an odd K the pair's second half is zero in both.
      const uint16_t *xb = g.xb + m0 * KP + k0;
      PrefetchSpread spread = f.spread((kl + 1) / 2);
      for (int64_t k = 0; k < kl; k += 2) {
        spread.step(k / 2);
        prefetch_weights_ahead<2 * NR * sizeof(wtype)>(f.own, w + k * NR);
        if (SWIGLU)
          prefetch_weights_ahead<2 * NR * sizeof(wtype)>(f.own, w2 + k * NR);
        vfloat b[NV], b2[SWIGLU ? NV : 1];
        for (int j = 0; j < NV; ++j) {
          b[j] = vload_bits(w + k * NR + 2 * j * V);
          if (SWIGLU)
            b2[j] = vload_bits(w2 + k * NR + 2 * j * V);
        }
        for (int i = 0; i < M; ++i) {
          uint32_t pair;
          memcpy(&pair, xb + i * KP + k, sizeof pair);
          for (int j = 0; j < NV; ++j) {
            acc[i][j] = vdot_bf16(acc[i][j], pair, b[j]);
            if (SWIGLU)
              acc2[i][j] = vdot_bf16(acc2[i][j], pair, b2[j]);
          }
        }
      }
      spread.finish();
    } else {
      const wtype *w = g.w + (panel * KP + k0) * NR;
      const wtype *w2 = SWIGLU ? g.w2 + (panel * KP + k0) * NR : nullptr;
      const float *x = g.x + m0 * K + k0;
      PrefetchSpread spread = f.spread(kl);
      for (int64_t k = 0; k < kl; ++k) {
        spread.step(k);
        prefetch_weights_ahead<NR * sizeof(wtype)>(f.own, w + k * NR);
        if (SWIGLU)
          prefetch_weights_ahead<NR * sizeof(wtype)>(f.own, w2 + k * NR);
        vfloat b[NV], b2[SWIGLU ? NV : 1];
        if constexpr (C::BF16_PAIRS) {
          // 2V bf16 weights in one load, lanes holding columns (c, c + V).
          for (int j = 0; j + 1 < NV; j += 2) {
            vload_bf16_pair(w + k * NR + j * V, b[j], b[j + 1]);
            if (SWIGLU)
              vload_bf16_pair(w2 + k * NR + j * V, b2[j], b2[j + 1]);
          }
        } else {
          for (int j = 0; j < NV; ++j) {
            b[j] = vload(w + k * NR + j * V);
            if (SWIGLU)
              b2[j] = vload(w2 + k * NR + j * V);
          }
        }
        for (int i = 0; i < M; ++i) {
          // One vbroadcastss (or an embedded {1toV} broadcast) per row
          // and step.
          const vfloat xi = vsplat(x[i * K + k]);
          for (int j = 0; j < NV; ++j) {
            acc[i][j] = vfmadd(xi, b[j], acc[i][j]);
            if (SWIGLU)
              acc2[i][j] = vfmadd(xi, b2[j], acc2[i][j]);
          }
        }
      }
      spread.finish();
    }
    epilogue<M>(g, m0, panel, first, last, acc, acc2);
  }

  /// Writes a register block's sums: bias or the earlier k blocks' partial
  /// sums, then on the last k block the activation and the residual.
  template <int M>
  static void epilogue(const Args &g, int64_t m0, int64_t panel, bool first,
                       bool last, vfloat (&acc)[M][NV],
                       vfloat (&acc2)[SWIGLU ? M : 1][NV]) {
    constexpr Unary ACT = C::ACTIVATION;
    const int64_t n0 = panel * NR;
    const int64_t cols = N - n0 < NR ? N - n0 : NR;
    if (cols == NR && (SWIGLU || ACT == Unary::Identity)) {
      // A whole panel: the epilogue in vectors.
      for (int i = 0; i < M; ++i) {
        float *y = g.y + (m0 + i) * N + n0;
        for (int j = 0; j < NV; ++j) {
          vfloat v = acc[i][j];
          if (SWIGLU) {
            float *up = g.up + (m0 + i) * N + n0 + j * V;
            vfloat u = acc2[i][j];
            if (!first) {
              v += vload(y + j * V);
              u += vload(up);
            }
            if (!last) {
              vstore(up, u); // partial sums until the last k block
            } else {
              v = v / (1.0f + vexp(-v)) * u; // silu(g) * u
            }
          } else {
            if (!first)
              v += vload(y + j * V);
            else if (C::HAS_BIAS)
              v += vload(g.bias + n0 + j * V);
            if (last && C::HAS_RESIDUAL)
              v += vload(g.residual + (m0 + i) * N + n0 + j * V);
          }
          vstore(y + j * V, v);
        }
      }
      return;
    }
    for (int i = 0; i < M; ++i) {
      float out[NR], out2[SWIGLU ? NR : 1];
      for (int j = 0; j < NV; ++j) {
        vstore(out + j * V, acc[i][j]);
        if (SWIGLU)
          vstore(out2 + j * V, acc2[i][j]);
      }
      float *y = g.y + (m0 + i) * N + n0;
      for (int64_t c = 0; c < cols; ++c) {
        float v = out[c];
        if (SWIGLU) {
          float &up = g.up[(m0 + i) * N + n0 + c];
          float u = out2[c];
          if (!first) {
            v += y[c];
            u += up;
          }
          if (!last)
            up = u;
          else
            v = silu(v) * u;
        } else {
          v += first ? (C::HAS_BIAS ? g.bias[n0 + c] : 0.0f) : y[c];
          if (last) {
            v = apply<ACT>(v);
            if (C::HAS_RESIDUAL)
              v += g.residual[(m0 + i) * N + n0 + c];
          }
        }
        y[c] = v;
      }
    }
  }

  /// block<rows> for 1 <= rows <= M, chosen at run time.
  template <int M>
  static void dispatch(const Args &g, int rows, int64_t m0, int64_t panel,
                       int64_t k0, int64_t kl, bool first, bool last,
                       const Fetch &f) {
    if constexpr (M > 1)
      if (rows < M)
        return dispatch<M - 1>(g, rows, m0, panel, k0, kl, first, last, f);
    block<M>(g, m0, panel, k0, kl, first, last, f);
  }

  /// The register blocks (or tile blocks) of rows [m0, m1) x panels
  /// [p0, p1) for one k block; `tiles`: the thread's tile shape.
  static void mBlock(const Args &g, int64_t m0, int64_t m1, int64_t p0,
                     int64_t p1, int64_t k0, int64_t kl, int &tiles) {
    bool first = k0 == 0, last = k0 + kl == K;
    if constexpr (C::AMX) {
      if (g.amx) {
        for (int64_t p = p0; p < p1; ++p)
          for (int64_t m = m0; m < m1; m += TM) {
            int r = m1 - m < TM ? int(m1 - m) : TM;
            amx_configure(r, tiles);
            if constexpr (AMX_BF16)
              amx_bf16_block(g, m, r, p, k0, kl, first, last);
            else
              amx_quant_block(g, m, r, p, k0, kl, first, last);
          }
        return;
      }
    }
    (void)tiles;
    // Only the first m block reads the weights from memory. With one
    // register block of rows (decode), that block streams each panel block
    // itself, prefetching ahead. With several, each reads the panel block
    // from cache (the first one, from memory in a task's first panel) and
    // fetches its share of the next panel block this thread multiplies, so
    // memory streams while the FMAs work rather than only while the first
    // register block reads (bench/NOTES.md v20).
    const int shares = int((m1 - m0 + g.mr - 1) / g.mr);
    const bool spread = m0 == 0 && shares > 1;
    for (int64_t p = p0; p < p1; ++p) {
      Fetch f;
      f.shares = shares;
      // Next: the next panel, else (when no m block of these panels
      // follows) the first panel's next k block, else nothing.
      int64_t np = p + 1, nk0 = k0, nkl = kl;
      bool hasNext = np < p1;
      if (!hasNext && m1 == g.rows && k0 + kl < K) {
        np = p0;
        nk0 = k0 + kl;
        nkl = K - nk0 < g.kBlock ? K - nk0 : g.kBlock;
        hasNext = true;
      }
      if (spread && hasNext) {
        int64_t at;
        panel_block_bytes(np, nk0, nkl, at, f.bytes);
        f.next = reinterpret_cast<const uint8_t *>(g.w) + at;
        if (SWIGLU)
          f.next2 = reinterpret_cast<const uint8_t *>(g.w2) + at;
      }
      for (int64_t m = m0; m < m1; m += g.mr, ++f.share) {
        int rows = m1 - m < g.mr ? int(m1 - m) : int(g.mr);
        f.own = m0 == 0 && m == m0 && (shares == 1 || p == p0)
                    ? g.prefetch
                    : KILN_WEIGHT_PREFETCH_NONE;
        dispatch<MAX_MR>(g, rows, m, p, k0, kl, first, last, f);
      }
    }
  }

  /// Tasks [begin, end): each a group of panels (the parallel n loop), then
  /// k blocks, then m blocks, register blocks innermost. Decode swaps the
  /// panels and k blocks: its rows are one register block, which reads each
  /// panel block once, so taking a panel's k blocks one after another makes
  /// a task one run of consecutive bytes (panels are whole K, one after
  /// another) that the prefetches ahead follow across k blocks and panels,
  /// where k blocks outermost restart the stream at every panel. A panel's
  /// k blocks are summed in the same order either way, so a row's result
  /// is the same (batch invariance).
  static void tasks(const Args &g, int64_t begin, int64_t end) {
    int tiles = 0; // rows the AMX tiles are shaped for; 0: not configured
    for (int64_t t = begin; t < end; ++t) {
      int64_t p0 = t * g.panelsPerTask;
      int64_t p1 =
          p0 + g.panelsPerTask < PANELS ? p0 + g.panelsPerTask : PANELS;
      // Decode takes the task's panels one at a time, prefill all at once.
      const int64_t group = g.panelMajor ? 1 : p1 - p0;
      for (int64_t q0 = p0; q0 < p1; q0 += group)
        for (int64_t k0 = 0; k0 < K; k0 += g.kBlock)
          for (int64_t m0 = 0; m0 < g.rows; m0 += g.mBlock)
            mBlock(g, m0, m0 + g.mBlock < g.rows ? m0 + g.mBlock : g.rows, q0,
                   q0 + group, k0, K - k0 < g.kBlock ? K - k0 : g.kBlock,
                   tiles);
    }
    if constexpr (C::AMX)
      if (tiles)
        amx::release();
  }

  /// The kernel: y = epilogue(prologue(x) · Wᵀ) for `rows` rows, with
  /// scratch_bytes(rows) of `scratch`.
  static void run(const kiln_step_args *a, int64_t rows, const float *x,
                  const float *norm_weight, float *scratch, const void *w,
                  const void *w2, const float *bias, const float *residual,
                  float *y) {
    if (C::HAS_PROLOGUE) {
      parallel(a, rows, [&](int64_t begin, int64_t end) {
        rms_norm_rows(x, norm_weight, scratch, K, C::EPSILON, begin, end);
      });
      x = scratch;
    }
    auto aligned = [](int64_t bytes) { return (bytes + 63) / 64 * 64; };
    uint8_t *next = reinterpret_cast<uint8_t *>(scratch) +
                    (C::HAS_PROLOGUE ? aligned(rows * K * 4) : 0);
    uint16_t *xb = nullptr;
    if (BF16_DOT) {
      xb = reinterpret_cast<uint16_t *>(next);
      next += aligned(rows * KP * 2);
      parallel(a, rows, [&](int64_t begin, int64_t end) {
        to_bf16_pairs(x, xb, K, KP, begin, end);
      });
    }
    int8_t *xq = nullptr;
    float *xs = nullptr;
    if (QUANTIZED) {
      xq = reinterpret_cast<int8_t *>(next);
      next += aligned(rows * K);
      xs = reinterpret_cast<float *>(next);
      next += aligned(rows * KB * XS_BYTES);
      parallel(a, rows, [&](int64_t begin, int64_t end) {
        if constexpr (KQUANT)
          quantize_rows_q8k(x, xq, reinterpret_cast<int32_t *>(xs), K, begin,
                            end);
        else
          quantize_rows_q8(x, xq, xs, K, OFFSET, begin, end);
      });
    }
    bool prefill = rows >= C::PREFILL_FROM;
    Args g{};
    g.x = x;
    g.xb = xb;
    g.xq = xq;
    g.xs = xs;
    g.w = static_cast<const wtype *>(w);
    g.w2 = static_cast<const wtype *>(w2);
    g.bias = bias;
    g.residual = residual;
    g.y = y;
    g.up = SWIGLU ? reinterpret_cast<float *>(next) : nullptr;
    g.rows = rows;
    g.kBlock = prefill ? C::PREFILL_K : C::DECODE_K;
    if (BF16_DOT)
      g.kBlock += g.kBlock & 1; // whole pairs
    if (QUANTIZED) // whole blocks (of 32, or K-quant super-blocks of 256)
      g.kBlock = (g.kBlock + QB - 1) / QB * QB;
    g.panelsPerTask = (prefill ? C::PREFILL_N : C::DECODE_N) / NR;
    if (g.panelsPerTask < 1)
      g.panelsPerTask = 1;
    g.mBlock = prefill ? C::PREFILL_M : C::DECODE_M;
    g.mr = prefill ? MR : C::DECODE_MR;
    g.amx = AMX_BF16 || (AMX_INT8 && prefill);
    // One m block of one register block (decode, prefill_from = mr): no
    // panel block is read twice, so nothing is gained by k blocks outermost.
    g.panelMajor = g.rows <= g.mBlock && g.rows <= g.mr && !g.amx;
    // K-quant loops compute at about half memory's rate; on Zen 5 they
    // measured faster with a prefetch of every line than with none, where
    // the others measured slower (bench/NOTES.md v23), so they take lines
    // on every CPU (pages have not been measured for them).
    g.prefetch = KQUANT ? KILN_WEIGHT_PREFETCH_LINES : a->weight_prefetch;
    int64_t count = (PANELS + g.panelsPerTask - 1) / g.panelsPerTask;
    parallel(a, count,
             [&](int64_t begin, int64_t end) { tasks(g, begin, end); });
  }
};

} // namespace kiln::kernels

#endif // KILN_KERNELS_GEMM_H
