//===- Gather.h - Embedding, row gathers and layout copies ----*- C++ -*-===//
//
// Part of Kiln's CPU kernel library. The kernels that move rows without
// arithmetic: kiln.embedding (from a row-major table, or from a GEMM's
// packed panels, widened or dequantized to f32), kiln.gather_rows,
// kiln.split, kiln.transpose, and the KV cache's kiln.kv_append and
// kiln.kv_read (runtime/StepABI.h's kiln_kv_cache, f32).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_KERNELS_GATHER_H
#define KILN_KERNELS_GATHER_H

#include "KQuant.h"
#include "KVCache.h"
#include "Quant.h"
#include "Vector.h"

namespace kiln::kernels {

/// out[t] = table[ids[t]] for `rows` ids, rows of C::D (ids are checked by
/// the runtime before the step).
template <class C>
void embedding(const kiln_step_args *a, int64_t rows, const int32_t *ids,
               const float *table, float *out) {
  parallel(a, rows, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t)
      memcpy(out + t * C::D, table + (int64_t)ids[t] * C::D,
             C::D * sizeof(float));
  });
}

/// out[t] = W[ids[t]] for `rows` ids, rows of C::D, from W packed in the
/// panels of a GEMM with K = C::D (a tied model's classifier weight doubles
/// as its embedding table and is stored once, so), as f32: exact for f32,
/// f16 and bf16, d * (u - offset) for Q8_0 and Q4_0, GGUF's dequantization
/// for K-quants. C gives
///   D, NR           the table's row length and the panels' rows
///   QUANT           a Quant: None, Q8_0 or Q4_0 (Quant.h's layout), Q4_K,
///                   Q5_K or Q6_K (KQuant.h's)
///   wtype           float, _Float16, bf16; uint8_t for quantized panels
///   PANEL_LAYOUT    (unquantized tables only)
///                   0 plain: (n, k) at (p * D + k) * NR + c, for panel
///                   p = n / NR and column c = n % NR;
///                   1 lane pairs (bf16): within each group of 2 * LANES
///                   columns of a k row, lane l holds columns (l, l + LANES);
///                   2 k pairs (bf16): (n, k) at (p * KP + (k & ~1)) * NR +
///                   2c + (k & 1), KP = D rounded up to even
///   LANES           the vector width lane pairs were packed for (layout 1
///                   only)
/// (codegen/WeightPacker.cpp's packPanels).
template <class C>
void embedding_panels(const kiln_step_args *a, int64_t rows, const int32_t *ids,
                      const void *panels, float *out) {
  constexpr int64_t D = C::D, NR = C::NR;
  constexpr Quant QUANT = C::QUANT;
  using wtype = typename C::wtype;
  parallel(a, rows, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t n = ids[t], p = n / NR, c = n % NR;
      float *o = out + t * D;
      if constexpr (is_k_quant(QUANT)) {
        static_assert(D % QK == 0, "K-quant rows are whole super-blocks");
        constexpr int64_t SB = NR * kquant_column_bytes(QUANT), KS = D / QK;
        const uint8_t *panel =
            static_cast<const uint8_t *>(panels) + p * KS * SB;
        for (int64_t s = 0; s < KS; ++s)
          kquant_dequantize_column<QUANT, NR>(panel + s * SB, c, o + s * QK);
      } else if constexpr (QUANT != Quant::None) {
        static_assert(D % QUANT_BLOCK == 0,
                      "Q8_0 and Q4_0 rows are whole blocks of 32");
        constexpr int64_t BB = quant_block_bytes(QUANT), KB = D / QUANT_BLOCK;
        constexpr int OFF = quant_offset(QUANT);
        const uint8_t *panel =
            static_cast<const uint8_t *>(panels) + p * KB * NR * BB;
        for (int64_t b = 0; b < KB; ++b) {
          const uint8_t *block = panel + b * NR * BB;
          uint16_t scale;
          memcpy(&scale, block + 2 * c, sizeof scale);
          const float d = f16_to_float(scale);
          const uint8_t *levels = block + 2 * NR + 4 * c;
          float *ob = o + b * QUANT_BLOCK;
          if constexpr (QUANT == Quant::Q8_0) {
            for (int g = 0; g < 8; ++g)
              for (int i = 0; i < 4; ++i)
                ob[4 * g + i] = d * float(int(levels[g * 4 * NR + i]) - OFF);
          } else {
            for (int q = 0; q < 4; ++q)
              for (int i = 0; i < 4; ++i) {
                int byte = levels[q * 4 * NR + i];
                ob[4 * q + i] = d * float((byte & 15) - OFF);
                ob[16 + 4 * q + i] = d * float((byte >> 4) - OFF);
              }
          }
        }
      } else if constexpr (C::PANEL_LAYOUT == 2) {
        constexpr int64_t KP = D + (D & 1);
        const wtype *w = static_cast<const wtype *>(panels) + p * KP * NR;
        for (int64_t k = 0; k < D; ++k)
          o[k] = kv_to_float(w[(k & ~int64_t(1)) * NR + 2 * c + (k & 1)]);
      } else {
        int64_t at = c; // c's place within a k row
        if constexpr (C::PANEL_LAYOUT == 1) {
          constexpr int64_t L = C::LANES;
          int64_t l = c % (2 * L);
          at = c - l + (l < L ? 2 * l : 2 * (l - L) + 1);
        }
        const wtype *w = static_cast<const wtype *>(panels) + p * D * NR + at;
        for (int64_t k = 0; k < D; ++k)
          o[k] = kv_to_float(w[k * NR]);
      }
    }
  });
}

/// out[r] = x[rows[r]] for r < a->rows, rows of C::D: only the rows that
/// need logits go on.
template <class C>
void gather_rows(const kiln_step_args *a, const int32_t *rows, const float *x,
                 float *out) {
  for (int64_t r = 0; r < a->rows; ++r)
    memcpy(out + r * C::D, x + (int64_t)rows[r] * C::D, C::D * sizeof(float));
}

/// kiln.split of x, viewed as [outer, C::AXIS_SIZE, inner], along the
/// middle dimension: out[i] gets C::WIDTH[i] of it, in order.
template <class C>
void split(const kiln_step_args *a, int64_t outer, int64_t inner,
           const float *x, float *const *out) {
  parallel(a, outer, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      int64_t offset = 0;
      for (int64_t i = 0; i < C::PARTS; ++i) {
        int64_t chunk = C::WIDTH[i] * inner;
        memcpy(out[i] + t * chunk, x + t * C::AXIS_SIZE * inner + offset,
               chunk * sizeof(float));
        offset += chunk;
      }
    }
  });
}

/// kiln.transpose: y[i_p0, ..., i_pn] = x[i_0, ..., i_n] with C::RANK
/// dimensions, C::PERM the permutation and `dims` x's extents (runtime:
/// some are token or cached-position counts). Where the last dimension
/// stays last, whole rows are copied.
template <class C>
void transpose(const kiln_step_args *a, const int64_t *dims, const float *x,
               float *y) {
  constexpr int R = C::RANK;
  int64_t inStride[R], outDims[R];
  inStride[R - 1] = 1;
  for (int i = R - 2; i >= 0; --i)
    inStride[i] = inStride[i + 1] * dims[i + 1];
  int64_t outRows = 1;
  for (int j = 0; j < R; ++j) {
    outDims[j] = dims[C::PERM[j]];
    if (j < R - 1)
      outRows *= outDims[j];
  }
  const int64_t width = outDims[R - 1];
  const int64_t step = inStride[C::PERM[R - 1]];
  parallel(a, outRows, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      // The input offset of output row `row`'s first element.
      int64_t from = 0;
      for (int64_t j = R - 2, rest = row; j >= 0; --j) {
        from += rest % outDims[j] * inStride[C::PERM[j]];
        rest /= outDims[j];
      }
      float *yr = y + row * width;
      if (step == 1) {
        memcpy(yr, x + from, width * sizeof(float));
        continue;
      }
      for (int64_t i = 0; i < width; ++i)
        yr[i] = x[from + i * step];
    }
  });
}

/// Keys and values [a->tokens, C::HKV, C::D] of this step's tokens into the
/// cache at (layer, seq_ids[t], positions[t]).
template <class C>
void kv_append(const kiln_step_args *a, int64_t layer, const float *keys,
               const float *values) {
  using E = typename C::KvElement;
  constexpr int64_t ROW = C::HKV * C::D;
  const kiln_kv_cache *c = a->cache;
  for (int64_t t = 0; t < a->tokens; ++t) {
    int64_t seq = a->seq_ids[t], pos = a->positions[t];
    kv_store_key<E>(c, layer, seq, pos, keys + t * ROW, ROW);
    kv_store_values<E>(c, layer, seq, pos, values + t * ROW, C::HKV, C::D);
  }
}

/// kiln.kv_read: keys[t, s] and values[t, s] ([C::HKV, C::D] each) are the
/// cache's entries at (layer, seq_ids[t], s) for s < `s`. Positions past a
/// token's own, and blocks the sequence does not hold (outside a sliding
/// window), read as zeros; attention masks them.
template <class C>
void kv_read(const kiln_step_args *a, int64_t layer, int64_t s, float *keys,
             float *values) {
  using E = typename C::KvElement;
  constexpr int64_t ROW = C::HKV * C::D;
  const kiln_kv_cache *c = a->cache;
  parallel(a, a->tokens, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      int64_t seq = a->seq_ids[t], pos = a->positions[t];
      for (int64_t p = 0; p < s; ++p) {
        float *k = keys + (t * s + p) * ROW, *v = values + (t * s + p) * ROW;
        int64_t entry = seq * c->max_blocks_per_seq + p / c->block_positions;
        if (p > pos || c->block_tables[entry] < 0) {
          memset(k, 0, ROW * sizeof(float));
          memset(v, 0, ROW * sizeof(float));
          continue;
        }
        kv_load_key<E>(k, c, layer, seq, p, ROW);
        kv_load_values<E>(v, c, layer, seq, p, C::HKV, C::D);
      }
    }
  });
}

} // namespace kiln::kernels

#endif // KILN_KERNELS_GATHER_H
