//===- Attention.h - Fused attention over the KV cache ----------*- C++ -*-===//
//
// Part of Kiln's CPU kernel library. kiln.attention: softmax(mask(scale ·
// Q·Kᵀ)) · V per token and query head over the layer's cached keys and
// values (in the runtime's paged cache: KVCache.h), with an online
// softmax over blocks of cached positions, so scores are never
// materialized. Jobs are (block of q tokens, head). Tokens
// of a job that are not one sequence's consecutive positions (decode, steps
// that mix sequences) run one (token, head) at a time over blocks of
// DECODE_KV_BLOCK positions; a prefill chunk of one sequence runs its rows of
// a head together over blocks of PREFILL_KV_BLOCK, each key block transposed
// once and groups of rows sharing every key and value load.
//
// The configuration C gives, as static constexpr members: H and HKV (query
// and key/value heads), D (head size), PREFILL_FROM (tokens from which the
// prefill tiles apply), Q_BLOCK and PREFILL_KV_BLOCK (prefill's q and kv),
// DECODE_Q and DECODE_KV_BLOCK (decode's), WINDOW (0: none) and SCALE, and
// the type KvElement (the cache's element: float, bf16 or _Float16).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_KERNELS_ATTENTION_H
#define KILN_KERNELS_ATTENTION_H

#include "KVCache.h"
#include "Vector.h"

namespace kiln::kernels {

template <class C> struct Attention {
  static constexpr int64_t H = C::H, HKV = C::HKV, D = C::D, GROUP = H / HKV;
  using E = typename C::KvElement; // the cache's element type
  // Cached positions per block: prefill chunks (attend_rows) and single
  // tokens (attend_token) each have their own.
  static constexpr int64_t KV_BLOCK = C::PREFILL_KV_BLOCK,
                           DECODE_KV_BLOCK = C::DECODE_KV_BLOCK;
  // Query rows per block when prefilling (at most 64: the per-row state lives
  // on the stack).
  static constexpr int64_t Q_BLOCK = C::Q_BLOCK < 64 ? C::Q_BLOCK : 64;
  // Tokens per job below PREFILL_FROM tokens (decode: kiln.tiles' q).
  static constexpr int64_t DECODE_Q = C::DECODE_Q;
  static constexpr int64_t WINDOW = C::WINDOW; // 0: none
  static constexpr float SCALE = C::SCALE;
  // A key block, transposed, padded to whole vectors.
  static constexpr int64_t KV_VECTORS = (KV_BLOCK + V - 1) / V,
                           KV_PADDED = KV_VECTORS * V,
                           DECODE_KV_PADDED = (DECODE_KV_BLOCK + V - 1) / V * V;
  static_assert(H % HKV == 0, "query heads must be a multiple of kv heads");

  // q · k over one head: in vectors when the head size allows (the sum's
  // order then differs from the interpreter's by rounding only).
  static float dot(const float *a, const E *b) {
    if constexpr (D % V == 0) {
      vfloat sum = vfloat{};
      for (int64_t i = 0; i < D; i += V)
        sum += vload(a + i) * vload(b + i);
      float lanes[V], total = 0.0f;
      vstore(lanes, sum);
      for (int i = 0; i < V; ++i)
        total += lanes[i];
      return total;
    } else {
      float total = 0.0f;
      for (int64_t i = 0; i < D; ++i)
        total += a[i] * kv_to_float(b[i]);
      return total;
    }
  }

  struct Args {
    const kiln_step_args *a;
    int64_t layer;
    const float *q; // [T, H, D]
    float *y;       // [T, H, D]
    int64_t qBlock; // tokens per job
  };

  // One token and one head against its sequence's cache (decode, and tokens
  // of batches that mix sequences).
  static void attend_token(const Args &g, int64_t t, int64_t h) {
    const kiln_kv_cache *c = g.a->cache;
    {
      int64_t kvh = h / GROUP;
      int64_t pos = g.a->positions[t];
      int64_t lo = WINDOW && pos - WINDOW + 1 > 0 ? pos - WINDOW + 1 : 0;
      const float *q = g.q + (t * H + h) * D;
      const KvRows<E> rows(c, g.layer, g.a->seq_ids[t], kvh, D);
      float m = -INFINITY, l = 0.0f, acc[D],
            score[DECODE_KV_PADDED]; // whole vectors: the vector loop stays in
                                     // bounds
      for (int64_t i = 0; i < D; ++i)
        acc[i] = 0.0f;
      for (int64_t s0 = lo; s0 <= pos; s0 += DECODE_KV_BLOCK) {
        int64_t s1 =
            s0 + DECODE_KV_BLOCK <= pos + 1 ? s0 + DECODE_KV_BLOCK : pos + 1;
        float blockMax = -INFINITY;
        for (int64_t s = s0; s < s1; ++s) {
          score[s - s0] = dot(q, rows.key(s)) * SCALE;
          blockMax = score[s - s0] > blockMax ? score[s - s0] : blockMax;
        }
        // Online softmax: rescale what was summed so far to the new maximum.
        float mNew = blockMax > m ? blockMax : m;
        float correction = expf(m - mNew);
        l *= correction;
        for (int64_t i = 0; i < D; ++i)
          acc[i] *= correction;
        // The block's weights, V at a time, the tail one by one.
        int64_t n = s1 - s0, j = 0;
        for (; j + V <= n; j += V)
          vstore(score + j, vexp(vload(score + j) - mNew));
        for (; j < n; ++j)
          score[j] = expf(score[j] - mNew);
        for (int64_t s = s0; s < s1; ++s) {
          float p = score[s - s0];
          l += p;
          const E *v = rows.value(s);
          for (int64_t i = 0; i < D; ++i)
            acc[i] += p * kv_to_float(v[i]);
        }
        m = mNew;
      }
      float *y = g.y + (t * H + h) * D;
      for (int64_t i = 0; i < D; ++i)
        y[i] = acc[i] / l;
    }
  }

  // Whether tokens [t0, t1) are one sequence at consecutive positions (a
  // prefill chunk): then they share every block of cached keys and values.
  static bool contiguous(const kiln_step_args *a, int64_t t0, int64_t t1) {
    for (int64_t t = t0 + 1; t < t1; ++t)
      if (a->seq_ids[t] != a->seq_ids[t0] ||
          a->positions[t] != a->positions[t - 1] + 1)
        return false;
    return true;
  }

  // Query rows a register block of attend_rows holds: R rows' outputs (D / V
  // vectors each) in half of the vector registers, so each key and value
  // vector loaded serves R rows. One row where D is not whole vectors.
  static constexpr int VECTOR_REGISTERS = V == 16 ? 32 : 16;
  static constexpr int64_t ROW_GROUP = D % V != 0                           ? 1
                                       : VECTOR_REGISTERS / 2 / (D / V) < 1 ? 1
                                       : VECTOR_REGISTERS / 2 / (D / V) > 8
                                           ? 8
                                           : VECTOR_REGISTERS / 2 / (D / V);

  // What attend_rows keeps for its Q_BLOCK rows over the key blocks.
  struct RowsState {
    const float *q; // row 0's query (rows H * D apart)
    int64_t p0;     // row 0's position
    // The current key block's values, a row pointer per position (the block
    // may span blocks of the paged cache).
    const E *values[KV_PADDED];
    float m[Q_BLOCK], l[Q_BLOCK], acc[Q_BLOCK][D];
    float kt[D][KV_PADDED]; // the key block, transposed, zero past its end
  };

  // Rows [r0, r0 + R) against the key block at s0 of n positions: their
  // scores as R outer products over kt (each kt vector loaded once for the R
  // rows), each row's online softmax, then the weighted values with each
  // value vector loaded once for the R rows. A row that sees no position of
  // the block is left as it was.
  template <int R>
  static void attend_block(RowsState &st, int64_t r0, int64_t s0, int64_t n) {
    bool sees[R];
    float score[R][KV_PADDED];
    vfloat sum[R][KV_VECTORS];
    for (int r = 0; r < R; ++r) {
      int64_t pos = st.p0 + r0 + r;
      int64_t lo = WINDOW && pos - WINDOW + 1 > 0 ? pos - WINDOW + 1 : 0;
      sees[r] = s0 <= pos && s0 + n > lo;
      for (int64_t j = 0; j < KV_VECTORS; ++j)
        sum[r][j] = vfloat{};
    }
    for (int64_t i = 0; i < D; ++i) {
      vfloat k[KV_VECTORS];
      for (int64_t j = 0; j < KV_VECTORS; ++j)
        k[j] = vload(&st.kt[i][j * V]);
      for (int r = 0; r < R; ++r) {
        float qi = st.q[(r0 + r) * H * D + i];
        for (int64_t j = 0; j < KV_VECTORS; ++j)
          sum[r][j] += qi * k[j];
      }
    }
    for (int r = 0; r < R; ++r) {
      if (!sees[r])
        continue;
      int64_t row = r0 + r, pos = st.p0 + row;
      int64_t lo = WINDOW && pos - WINDOW + 1 > 0 ? pos - WINDOW + 1 : 0;
      float *sc = score[r];
      for (int64_t j = 0; j < KV_VECTORS; ++j)
        vstore(sc + j * V, sum[r][j] * SCALE);
      // A row that sees the whole block (all but the diagonal block of a
      // causal prefill) needs no mask: its maximum and sum are taken in
      // vectors.
      bool whole = n == KV_PADDED && s0 + n - 1 <= pos && s0 >= lo;
      float blockMax = -INFINITY;
      if (whole) {
        vfloat top = vload(sc);
        for (int64_t j = 1; j < KV_VECTORS; ++j) {
          vfloat x = vload(sc + j * V);
          top = x > top ? x : top;
        }
        blockMax = hmax(top);
      } else {
        for (int64_t j = 0; j < n; ++j) {
          int64_t s = s0 + j;
          if (s > pos || s < lo)
            sc[j] = -INFINITY;
          else if (sc[j] > blockMax)
            blockMax = sc[j];
        }
      }
      float mNew = blockMax > st.m[row] ? blockMax : st.m[row];
      float correction = expf(st.m[row] - mNew);
      st.l[row] *= correction;
      for (int64_t i = 0; i < D; ++i)
        st.acc[row][i] *= correction;
      vfloat total = vfloat{};
      for (int64_t j = 0; j < KV_VECTORS; ++j) {
        vfloat e = vexp(vload(sc + j * V) - mNew);
        vstore(sc + j * V, e);
        total += e;
      }
      if (whole) {
        st.l[row] += hsum(total);
      } else {
        // Masked positions weigh exactly 0 (vexp clamps below e^-87).
        for (int64_t j = 0; j < n; ++j) {
          int64_t s = s0 + j;
          if (s > pos || s < lo)
            sc[j] = 0.0f;
          else
            st.l[row] += sc[j];
        }
      }
      st.m[row] = mNew;
    }
    if constexpr (D % V == 0) {
      // The R rows' outputs stay in registers over the block.
      vfloat o[R][D / V];
      for (int r = 0; r < R; ++r)
        for (int64_t i = 0; i < D / V; ++i)
          o[r][i] = vload(&st.acc[r0 + r][i * V]);
      for (int64_t j = 0; j < n; ++j) {
        const E *v = st.values[j];
        vfloat vv[D / V];
        for (int64_t i = 0; i < D / V; ++i)
          vv[i] = vload(v + i * V);
        for (int r = 0; r < R; ++r) {
          if (!sees[r])
            continue;
          float p = score[r][j];
          for (int64_t i = 0; i < D / V; ++i)
            o[r][i] += p * vv[i];
        }
      }
      for (int r = 0; r < R; ++r)
        for (int64_t i = 0; i < D / V; ++i)
          vstore(&st.acc[r0 + r][i * V], o[r][i]);
    } else {
      for (int r = 0; r < R; ++r) {
        if (!sees[r])
          continue;
        for (int64_t j = 0; j < n; ++j) {
          float p = score[r][j];
          const E *v = st.values[j];
          for (int64_t i = 0; i < D; ++i)
            st.acc[r0 + r][i] += p * kv_to_float(v[i]);
        }
      }
    }
  }

  // Rows [t0, t1) of one head (one sequence, consecutive positions) against
  // blocks of KV_BLOCK cached positions: each key block is transposed once,
  // then groups of ROW_GROUP rows go through it together (attend_block).
  static void attend_rows(const Args &g, int64_t h, int64_t t0, int64_t t1) {
    const kiln_kv_cache *c = g.a->cache;
    const int64_t kvh = h / GROUP, rows = t1 - t0;
    const int64_t p0 = g.a->positions[t0], last = p0 + rows - 1;
    const KvRows<E> cached(c, g.layer, g.a->seq_ids[t0], kvh, D);
    RowsState st;
    st.q = g.q + (t0 * H + h) * D;
    st.p0 = p0;
    for (int64_t r = 0; r < rows; ++r) {
      st.m[r] = -INFINITY;
      st.l[r] = 0.0f;
      for (int64_t i = 0; i < D; ++i)
        st.acc[r][i] = 0.0f;
    }
    int64_t first = WINDOW && p0 - WINDOW + 1 > 0 ? p0 - WINDOW + 1 : 0;
    for (int64_t s0 = first; s0 <= last; s0 += KV_BLOCK) {
      int64_t n = last + 1 - s0 < KV_BLOCK ? last + 1 - s0 : KV_BLOCK;
      for (int64_t j = 0; j < KV_PADDED; ++j) {
        if (j >= n) { // padding past the block's last position
          for (int64_t i = 0; i < D; ++i)
            st.kt[i][j] = 0.0f;
          continue;
        }
        const E *k = cached.key(s0 + j);
        for (int64_t i = 0; i < D; ++i)
          st.kt[i][j] = kv_to_float(k[i]);
        st.values[j] = cached.value(s0 + j);
      }
      // Rows before the block's first position (s0 - p0) see none of it.
      int64_t r = s0 - p0 > 0 ? s0 - p0 : 0;
      for (; r + ROW_GROUP <= rows; r += ROW_GROUP)
        attend_block<ROW_GROUP>(st, r, s0, n);
      for (; r < rows; ++r)
        attend_block<1>(st, r, s0, n);
    }
    for (int64_t r = 0; r < rows; ++r) {
      float *y = g.y + ((t0 + r) * H + h) * D;
      for (int64_t i = 0; i < D; ++i)
        y[i] = st.acc[r][i] / st.l[r];
    }
  }

  // Jobs [begin, end) of (block of q tokens, head).
  static void jobs(const Args &g, int64_t begin, int64_t end) {
    for (int64_t job = begin; job < end; ++job) {
      int64_t t0 = job / H * g.qBlock, h = job % H;
      int64_t t1 = t0 + g.qBlock < g.a->tokens ? t0 + g.qBlock : g.a->tokens;
      if (t1 - t0 > 1 && contiguous(g.a, t0, t1)) {
        attend_rows(g, h, t0, t1);
        continue;
      }
      for (int64_t t = t0; t < t1; ++t)
        attend_token(g, t, h);
    }
  }

  /// The kernel: y = attention of the query rows q [tokens, H, D] over the
  /// layer's cached keys and values.
  static void run(const kiln_step_args *a, int64_t layer, const float *q,
                  float *y) {
    Args g{a, layer, q, y, a->tokens >= C::PREFILL_FROM ? Q_BLOCK : DECODE_Q};
    parallel(a, (a->tokens + g.qBlock - 1) / g.qBlock * H,
             [&](int64_t begin, int64_t end) { jobs(g, begin, end); });
  }
};

} // namespace kiln::kernels

#endif // KILN_KERNELS_ATTENTION_H
