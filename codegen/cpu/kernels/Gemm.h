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
// register blocks.
//   SWIGLU, HAS_BIAS, HAS_RESIDUAL, HAS_PROLOGUE          the fused parts
//   ACTIVATION      a Unary (Identity, Silu, Gelu, GeluTanh, Relu)
//   EPSILON         the prologue's rms_norm epsilon
//   BF16_PAIRS      bf16 panels loaded as lane pairs (columns c, c + V)
//   BF16_DOT        bf16 panels of k pairs multiplied with vdpbf16ps
//   wtype           the packed element: float, _Float16 or bf16
//
//===----------------------------------------------------------------------===//

#ifndef KILN_KERNELS_GEMM_H
#define KILN_KERNELS_GEMM_H

#include "Elementwise.h"
#include "Norms.h"
#include "Vector.h"

namespace kiln::kernels {

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
  using wtype = typename C::wtype;
  static_assert(NR % V == 0, "NR must be whole vectors");
  static_assert(MR >= 1 && C::DECODE_MR >= 1,
                "register blocks must have at least one row");
  static_assert(!C::BF16_PAIRS || NV % 2 == 0,
                "bf16 lane pairs need an even number of vectors per panel");

  struct Args {
    const float *x;        // [rows, K], normalized when HAS_PROLOGUE
    const uint16_t *xb;    // [rows, KP] x as bf16 pairs (BF16_DOT)
    const wtype *w, *w2;   // packed panels (w2: swiglu's up projection)
    const float *bias;     // [N]
    const float *residual; // [rows, N]
    float *y;              // [rows, N]
    float *up;             // [rows, N] swiglu's partial up sums (k blocks)
    int64_t rows, kBlock, panelsPerTask, mBlock, mr;
  };

  /// Bytes of scratch `run` needs for `rows` rows: the normalized rows
  /// (HAS_PROLOGUE), the rows as bf16 pairs (BF16_DOT), swiglu's partial up
  /// sums; each part 64-byte aligned.
  static constexpr int64_t scratch_bytes(int64_t rows) {
    auto aligned = [](int64_t bytes) { return (bytes + 63) / 64 * 64; };
    return (C::HAS_PROLOGUE ? aligned(rows * K * 4) : 0) +
           (BF16_DOT ? aligned(rows * KP * 2) : 0) +
           (SWIGLU ? aligned(rows * N * 4) : 0);
  }

  /// Rows [m0, m0 + M) x the columns of one panel, reduction [k0, k0 + kl):
  /// the register block. `first` starts from the bias, later k blocks add
  /// to y; `last` applies the epilogue.
  template <int M>
  static void block(const Args &g, int64_t m0, int64_t panel, int64_t k0,
                    int64_t kl, bool first, bool last) {
    vfloat acc[M][NV], acc2[SWIGLU ? M : 1][NV];
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < NV; ++j) {
        acc[i][j] = vfloat{};
        if (SWIGLU)
          acc2[i][j] = vfloat{};
      }
    const wtype *w = g.w + (panel * KP + k0) * NR;
    const wtype *w2 = SWIGLU ? g.w2 + (panel * KP + k0) * NR : nullptr;
    if constexpr (BF16_DOT) {
      // k0 is even; past an odd K the pair's second half is zero in both.
      const uint16_t *xb = g.xb + m0 * KP + k0;
      for (int64_t k = 0; k < kl; k += 2) {
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
    } else {
      const float *x = g.x + m0 * K + k0;
      for (int64_t k = 0; k < kl; ++k) {
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
          // A scalar times a vector broadcasts: one vbroadcastss (or an
          // embedded {1toV} broadcast) per row and step.
          float xi = x[i * K + k];
          for (int j = 0; j < NV; ++j) {
            acc[i][j] += xi * b[j];
            if (SWIGLU)
              acc2[i][j] += xi * b2[j];
          }
        }
      }
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
                       int64_t k0, int64_t kl, bool first, bool last) {
    if constexpr (M > 1)
      if (rows < M)
        return dispatch<M - 1>(g, rows, m0, panel, k0, kl, first, last);
    block<M>(g, m0, panel, k0, kl, first, last);
  }

  /// The register blocks of rows [m0, m1) x panels [p0, p1) for one k
  /// block.
  static void mBlock(const Args &g, int64_t m0, int64_t m1, int64_t p0,
                     int64_t p1, int64_t k0, int64_t kl) {
    bool first = k0 == 0, last = k0 + kl == K;
    for (int64_t p = p0; p < p1; ++p)
      for (int64_t m = m0; m < m1; m += g.mr) {
        int rows = m1 - m < g.mr ? int(m1 - m) : int(g.mr);
        dispatch<MAX_MR>(g, rows, m, p, k0, kl, first, last);
      }
  }

  /// Tasks [begin, end): each a group of panels (the parallel n loop), then
  /// k blocks, then m blocks, register blocks innermost.
  static void tasks(const Args &g, int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      int64_t p0 = t * g.panelsPerTask;
      int64_t p1 =
          p0 + g.panelsPerTask < PANELS ? p0 + g.panelsPerTask : PANELS;
      for (int64_t k0 = 0; k0 < K; k0 += g.kBlock)
        for (int64_t m0 = 0; m0 < g.rows; m0 += g.mBlock)
          mBlock(g, m0, m0 + g.mBlock < g.rows ? m0 + g.mBlock : g.rows, p0, p1,
                 k0, K - k0 < g.kBlock ? K - k0 : g.kBlock);
    }
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
    bool prefill = rows >= C::PREFILL_FROM;
    Args g{};
    g.x = x;
    g.xb = xb;
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
    g.panelsPerTask = (prefill ? C::PREFILL_N : C::DECODE_N) / NR;
    if (g.panelsPerTask < 1)
      g.panelsPerTask = 1;
    g.mBlock = prefill ? C::PREFILL_M : C::DECODE_M;
    g.mr = prefill ? MR : C::DECODE_MR;
    int64_t count = (PANELS + g.panelsPerTask - 1) / g.panelsPerTask;
    parallel(a, count,
             [&](int64_t begin, int64_t end) { tasks(g, begin, end); });
  }
};

} // namespace kiln::kernels

#endif // KILN_KERNELS_GEMM_H
