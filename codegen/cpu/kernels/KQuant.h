//===- KQuant.h - K-quant panels and Q8_K activations -----------*- C++ -*-===//
//
// Part of Kiln's CPU kernel library. GGUF's K-quants (Q4_K, Q5_K, Q6_K) read
// in place: their panel layout, the quantization of activation rows per
// super-block of 256 (llama.cpp's Q8_K), the dot product of one panel
// super-block with M rows (Gemm.h's register block), and one column
// dequantized (Gather.h's embedding).
//
// Panels (codegen/WeightPacker.cpp writes them; docs/artifact.md): a weight
// W[N, K], K a multiple of 256, in panels of NR rows of W (rows past N all
// zero bytes); panel p, super-block s starts at byte (p * K / 256 + s) * NR *
// COLUMN_BYTES. Within it, column c's parts at these offsets (each part a
// run over the panel's NR columns):
//
//   Q4_K (148 bytes a column, GGUF's 144 plus the unpacked scales):
//     0        f16 d at 2c                   a weight of sub-block j (32 k)
//     2 NR     f16 dmin at 2c                is d * sc[j] * q - dmin * m[j]
//     4 NR     pairs t = 0..3: (sc[2t], sc[2t + 1]) at t * 2NR + 2c
//     12 NR    pairs t = 0..3: (m[2t], m[2t + 1]) likewise
//     20 NR    32 groups G = 8 c64 + g: GGUF's qs[32 c64 + 4g .. + 4] at
//              G * 4NR + 4c: low nibbles are k = 64 c64 + 4g .. + 4 (of
//              sub-block 2 c64), high nibbles k = 64 c64 + 32 + 4g .. + 4
//              (of sub-block 2 c64 + 1)
//   Q5_K (180 bytes): Q4_K's parts to 20 NR, then
//     20 NR    8 groups g: GGUF's qh[4g .. + 4] at g * 4NR + 4c (bit j of
//              qh[l] is the fifth bit of weight l of sub-block j)
//     52 NR    the nibbles as Q4_K's
//   Q6_K (210 bytes, GGUF's size; sub-blocks of 16 k, w = d * sc[j] * (q -
//   32)):
//     0        f16 d at 2c
//     2 NR     pairs t = 0..7: (sc[2t], sc[2t + 1]) (int8) at t * 2NR + 2c
//     18 NR    48 slots of groups, slot z at z * 4NR + 4c: GGUF's 32 groups
//              ql[4t .. + 4] and 16 groups qh[4u .. + 4] in the order the
//              dot product reads them (q6k_ql_slot, q6k_qh_slot): per half
//              n of the super-block, ql group 16n + g and qh group 8n + g
//              alternating (g = 0..7), then ql groups 16n + 8 .. 16n + 15.
//              A super-block is then read from start to end, and a panel
//              as one stream, which the hardware prefetcher follows (GGUF's
//              order, three streams of four cache lines, it did not: Q6_K
//              decode ran at 40% of the read bandwidth).
//
// A load of 4V bytes of a group is then V lanes of 4 consecutive k of one
// column, the unsigned operand of a dot product against 4 activation bytes
// broadcast (Vector.h's vdot_u8), as for Q8_0 and Q4_0 (Quant.h).
//
// Activations: per row and super-block of 256, as llama.cpp's
// quantize_row_q8_K_ref: amax = max |x| and m the first x that reaches it;
// iscale = -127 / m, q = min(127, round(iscale * x)) (ties to even), d =
// 1 / iscale. A row's levels depend on that row alone, so results are
// batch-invariant. Beside the levels, per row and super-block a record of
// KQ_RECORD 32-bit words: d (float); the 16 sums of 16 levels as 8 int16
// pairs; the 8 sums of 32 as 4 pairs (the mins' and offsets' operand of
// vpmaddwd).
//
// The super-block's dot product per column, exact in integers, then two
// float products:
//   Q4_K/Q5_K: d_x * (d * sum_j sc[j] dot_j - dmin * sum_j m[j] bsum32_j)
//   Q6_K:      d_x * d * sum_j sc[j] (dot_j - 32 bsum16_j)
// with dot_j the unsigned levels' dot product with the activations'.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_KERNELS_KQUANT_H
#define KILN_KERNELS_KQUANT_H

#include "Quant.h"
#include "Vector.h"

namespace kiln::kernels {

/// Weights per super-block (GGUF's QK_K).
constexpr int64_t QK = 256;
/// 32-bit words per row and super-block of quantized activations.
constexpr int64_t KQ_RECORD = 13;

/// Q6_K's slot (above) of GGUF's ql group t (bytes 4t .. 4t + 3), t < 32.
constexpr int64_t q6k_ql_slot(int64_t t) {
  return 24 * (t / 16) + (t % 16 < 8 ? 2 * (t % 16) : 8 + t % 16);
}
/// Q6_K's slot of GGUF's qh group u, u < 16.
constexpr int64_t q6k_qh_slot(int64_t u) {
  return 24 * (u / 8) + 2 * (u % 8) + 1;
}

/// Bytes of one column's super-block in the panels.
constexpr int64_t kquant_column_bytes(Quant q) {
  return q == Quant::Q4_K ? 148 : q == Quant::Q5_K ? 180 : 210;
}

/// Rows [begin, end) of x[rows, k] (k a multiple of 256) quantized as
/// described above: levels q[rows, k], records rec[rows, k / 256,
/// KQ_RECORD].
inline void quantize_rows_q8k(const float *x, int8_t *q, int32_t *rec,
                              int64_t k, int64_t begin, int64_t end) {
  const int64_t blocks = k / QK;
  for (int64_t r = begin; r < end; ++r)
    for (int64_t s = 0; s < blocks; ++s) {
      const float *xs = x + r * k + s * QK;
      int8_t *qs = q + r * k + s * QK;
      int32_t *out = rec + (r * blocks + s) * KQ_RECORD;
      float amax = 0.0f, top = 0.0f;
      for (int64_t j = 0; j < QK; ++j) {
        float ax = fabsf(xs[j]);
        if (ax > amax) {
          amax = ax;
          top = xs[j];
        }
      }
      float d = 0.0f;
      if (amax == 0.0f) {
        memset(qs, 0, QK);
      } else {
        const float iscale = -127.0f / top;
        for (int64_t j = 0; j < QK; j += V) {
          vi32 level = vround(vload(xs + j) * iscale);
          level = level > 127 ? 127 : level;
          for (int i = 0; i < V; ++i)
            qs[j + i] = int8_t(level[i]);
        }
        d = 1.0f / iscale;
      }
      memcpy(out, &d, sizeof d);
      int32_t sum16[16];
      for (int b = 0; b < 16; ++b) {
        sum16[b] = 0;
        for (int i = 0; i < 16; ++i)
          sum16[b] += qs[16 * b + i];
      }
      auto pair = [](int32_t lo, int32_t hi) {
        return int32_t(uint32_t(uint16_t(lo)) | (uint32_t(uint16_t(hi)) << 16));
      };
      for (int t = 0; t < 8; ++t)
        out[1 + t] = pair(sum16[2 * t], sum16[2 * t + 1]);
      for (int t = 0; t < 4; ++t)
        out[9 + t] = pair(sum16[4 * t] + sum16[4 * t + 1],
                          sum16[4 * t + 2] + sum16[4 * t + 3]);
    }
}

/// sum[i][j] += the dot products of rows i < M (levels xq + i * K, records
/// rec + i * recStride, this super-block's) with vectors j0 .. j0 + Q of
/// columns of the panel super-block `sb` (NR columns).
template <Quant QT, int64_t NR, int M, int Q>
inline void kquant_superblock(const uint8_t *sb, int j0, const int8_t *xq,
                              int64_t K, const int32_t *rec, int64_t recStride,
                              vfloat (&sum)[M][Q]) {
  // Levels of 4 k of row i at k0.
  auto x4 = [&](int i, int64_t k0) {
    uint32_t v;
    memcpy(&v, xq + i * K + k0, sizeof v);
    return v;
  };
  auto load = [](const uint8_t *p) {
    vu32 v;
    memcpy(&v, p, sizeof v);
    return v;
  };
  // How many vdot_u8 a vqacc takes before its scale is applied: an int16
  // vpmaddubsw pair sum is at most 2 * qmax * 127 (qmax 15, 31, 63), and
  // 8, 4 or 2 of them stay within 32767; int32 sums take a sub-block.
#if defined(KILN_DOT_MADD512) || defined(KILN_DOT_MADD256)
  constexpr int RUN = QT == Quant::Q4_K ? 8 : QT == Quant::Q5_K ? 4 : 2;
#else
  constexpr int RUN = QT == Quant::Q6_K ? 4 : 8;
#endif
  for (int j = 0; j < Q; ++j) {
    const int64_t lane = 4 * (j0 + j) * V; // the vector's first column, x4
    const int64_t pair = 2 * (j0 + j) * V; // x2
    vi32 dot[M];
    for (int i = 0; i < M; ++i)
      dot[i] = vi32{};
    if constexpr (QT == Quant::Q4_K || QT == Quant::Q5_K) {
      constexpr int64_t QS = QT == Quant::Q4_K ? 20 * NR : 52 * NR;
      for (int c64 = 0; c64 < 4; ++c64) {
        // Sub-blocks 2 c64 (low nibbles) and 2 c64 + 1 (high nibbles).
        vi32 scales =
            vload_byte_pairs<false>(sb + 4 * NR + c64 * 2 * NR + pair);
        vi32 scLo = vscale_half<false>(scales),
             scHi = vscale_half<true>(scales);
        vqacc lo[M], hi[M];
        for (int i = 0; i < M; ++i)
          lo[i] = hi[i] = vqacc{};
        for (int g = 0; g < 8; ++g) {
          vu32 raw = load(sb + QS + (8 * c64 + g) * 4 * NR + lane);
          vu32 wlo = raw & 0x0f0f0f0fu, whi = (raw >> 4) & 0x0f0f0f0fu;
          if constexpr (QT == Quant::Q5_K) {
            vu32 h = load(sb + 20 * NR + g * 4 * NR + lane);
            wlo |= ((h >> (2 * c64)) & 0x01010101u) << 4;
            whi |= ((h >> (2 * c64 + 1)) & 0x01010101u) << 4;
          }
          for (int i = 0; i < M; ++i) {
            lo[i] = vdot_u8(lo[i], wlo, x4(i, 64 * c64 + 4 * g));
            hi[i] = vdot_u8(hi[i], whi, x4(i, 64 * c64 + 32 + 4 * g));
            vkeep(lo[i]);
            vkeep(hi[i]);
          }
          if ((g + 1) % RUN == 0)
            for (int i = 0; i < M; ++i) {
              dot[i] += vqacc_scale(lo[i], scLo) + vqacc_scale(hi[i], scHi);
              vkeep(dot[i]);
              lo[i] = hi[i] = vqacc{};
            }
        }
      }
      // The mins: sum_j m[j] * bsum32_j, two sub-blocks a vpmaddwd.
      vi32 mins[4];
      for (int t = 0; t < 4; ++t)
        mins[t] = vload_byte_pairs<false>(sb + 12 * NR + t * 2 * NR + pair);
      vfloat d = vload_f16(sb + 2 * (j0 + j) * V);
      vfloat dmin = vload_f16(sb + 2 * NR + 2 * (j0 + j) * V);
      for (int i = 0; i < M; ++i) {
        const int32_t *r = rec + i * recStride;
        vi32 m{};
        for (int t = 0; t < 4; ++t)
          m += vmadd_pairs(mins[t], uint32_t(r[9 + t]));
        float dx;
        memcpy(&dx, r, sizeof dx);
        sum[i][j] = vfmadd(
            -(dmin * dx), __builtin_convertvector(m, vfloat),
            vfmadd(d * dx, __builtin_convertvector(dot[i], vfloat), sum[i][j]));
      }
    } else {
      static_assert(QT == Quant::Q6_K, "a K-quant");
      constexpr int64_t SLOTS = 18 * NR; // the slots of groups
      // Runs s and s + 2 (k = 128 n + 32 s + 4g and 64 further) take the
      // two nibbles of the same ql bytes and the bit pairs s and s + 2 of
      // the same qh bytes: they are done together, in halves of 4 groups
      // (sub-blocks 8n + 2s + half and 8n + 2s + 4 + half). Their scales are
      // loaded where they are used, and the zero level's sum taken there
      // too, so no scale stays live across the loop (the full unrolling
      // would otherwise hoist all 16 and spill them).
      vi32 offset[M];
      for (int i = 0; i < M; ++i)
        offset[i] = vi32{};
#pragma GCC unroll 2
      for (int n = 0; n < 2; ++n)
#pragma GCC unroll 2
        for (int s = 0; s < 2; ++s) {
          const int tA = 4 * n + s, tB = tA + 2; // scale pairs of the runs
          const vi32 pA =
              vload_byte_pairs<true>(sb + 2 * NR + tA * 2 * NR + pair);
          const vi32 pB =
              vload_byte_pairs<true>(sb + 2 * NR + tB * 2 * NR + pair);
          for (int i = 0; i < M; ++i) {
            const int32_t *r = rec + i * recStride;
            offset[i] += vmadd_pairs(pA, uint32_t(r[1 + tA])) +
                         vmadd_pairs(pB, uint32_t(r[1 + tB]));
            vkeep(offset[i]);
          }
          // With more than two rows the two runs' accumulators would not
          // fit the registers: each run then reads the groups itself.
          constexpr int PARTS = M <= 2 ? 1 : 2;
#pragma GCC unroll 2
          for (int half = 0; half < 2; ++half)
#pragma GCC unroll 2
            for (int part = 0; part < PARTS; ++part) {
              const bool runA = PARTS == 1 || part == 0,
                         runB = !runA || PARTS == 1;
              const vi32 scA =
                  half ? vscale_half<true>(pA) : vscale_half<false>(pA);
              const vi32 scB =
                  half ? vscale_half<true>(pB) : vscale_half<false>(pB);
              vqacc a[M], b[M];
              for (int i = 0; i < M; ++i)
                a[i] = b[i] = vqacc{};
#pragma GCC unroll 4
              for (int g = 4 * half; g < 4 * half + 4; ++g) {
                vu32 q = load(sb + SLOTS +
                              q6k_ql_slot(16 * n + 8 * s + g) * 4 * NR + lane);
                vu32 h =
                    load(sb + SLOTS + q6k_qh_slot(8 * n + g) * 4 * NR + lane) >>
                    (2 * s);
                const int64_t k = 128 * n + 32 * s + 4 * g;
                if (runA) {
                  vu32 w = (q & 0x0f0f0f0fu) | ((h & 0x03030303u) << 4);
                  for (int i = 0; i < M; ++i)
                    a[i] = vdot_u8(a[i], w, x4(i, k));
                }
                if (runB) {
                  vu32 w = ((q >> 4) & 0x0f0f0f0fu) | (h & 0x30303030u);
                  for (int i = 0; i < M; ++i)
                    b[i] = vdot_u8(b[i], w, x4(i, k + 64));
                }
                if ((g + 1) % RUN == 0)
                  for (int i = 0; i < M; ++i) {
                    if (runA)
                      dot[i] += vqacc_scale(a[i], scA);
                    if (runB)
                      dot[i] += vqacc_scale(b[i], scB);
                    vkeep(dot[i]);
                    a[i] = b[i] = vqacc{};
                  }
              }
            }
        }
      // The zero level: 32 * sum_j sc[j] * bsum16_j.
      vfloat d = vload_f16(sb + 2 * (j0 + j) * V);
      for (int i = 0; i < M; ++i) {
        const int32_t *r = rec + i * recStride;
        float dx;
        memcpy(&dx, r, sizeof dx);
        sum[i][j] = vfmadd(
            d * dx, __builtin_convertvector(dot[i] - 32 * offset[i], vfloat),
            sum[i][j]);
      }
    }
  }
}

/// Column c's 256 weights of the panel super-block `sb` (NR columns) as
/// floats, computed as GGUF's dequantization does (d * sc first).
template <Quant QT, int64_t NR>
inline void kquant_dequantize_column(const uint8_t *sb, int64_t c, float *out) {
  uint16_t bits;
  memcpy(&bits, sb + 2 * c, sizeof bits);
  const float d = f16_to_float(bits);
  if constexpr (QT == Quant::Q4_K || QT == Quant::Q5_K) {
    memcpy(&bits, sb + 2 * NR + 2 * c, sizeof bits);
    const float dmin = f16_to_float(bits);
    constexpr int64_t QS = QT == Quant::Q4_K ? 20 * NR : 52 * NR;
    for (int j = 0; j < 8; ++j) {
      const int64_t t = j / 2, half = j % 2;
      const float d1 = d * float(sb[4 * NR + t * 2 * NR + 2 * c + half]);
      const float m1 = dmin * float(sb[12 * NR + t * 2 * NR + 2 * c + half]);
      const int c64 = j / 2, shift = 4 * (j % 2);
      for (int l = 0; l < 32; ++l) {
        const int g = l / 4, i = l % 4;
        int q = (sb[QS + (8 * c64 + g) * 4 * NR + 4 * c + i] >> shift) & 15;
        if constexpr (QT == Quant::Q5_K)
          q |= ((sb[20 * NR + g * 4 * NR + 4 * c + i] >> j) & 1) << 4;
        out[32 * j + l] = fmadd(d1, float(q), -m1);
      }
    }
  } else {
    constexpr int64_t SLOTS = 18 * NR; // the slots of groups
    for (int k = 0; k < 256; ++k) {
      // GGUF's order: k = 128 n + 32 s + l, s picking the nibble and bits.
      const int n = k / 128, s = (k % 128) / 32, l = k % 32;
      const int qlByte = 64 * n + (s % 2) * 32 + l, qhByte = 32 * n + l;
      const int ql =
          sb[SLOTS + q6k_ql_slot(qlByte / 4) * 4 * NR + 4 * c + qlByte % 4];
      const int qh =
          sb[SLOTS + q6k_qh_slot(qhByte / 4) * 4 * NR + 4 * c + qhByte % 4];
      const int q =
          ((s < 2 ? ql : ql >> 4) & 15) | (((qh >> (2 * s)) & 3) << 4);
      const int j = k / 16;
      const float scale =
          float(int8_t(sb[2 * NR + (j / 2) * 2 * NR + 2 * c + j % 2]));
      out[k] = d * scale * float(q - 32);
    }
  }
}

} // namespace kiln::kernels

#endif // KILN_KERNELS_KQUANT_H
