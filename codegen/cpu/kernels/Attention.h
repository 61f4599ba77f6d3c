//===- Attention.h - Fused attention over the KV cache ----------*- C++ -*-===//
//
// Part of Kiln's CPU kernel library. kiln.attention: softmax(mask(scale ·
// Q·Kᵀ)) · V per token and query head over the layer's cached keys and
// values (in the runtime's paged cache: KVCache.h), with an online softmax
// over blocks of KV_BLOCK cached positions, so scores are never
// materialized. Jobs are H per block of q tokens: a prefill chunk of one
// sequence takes its rows of a head through each key block together; other
// tokens (batched decode) go one at a time, a job taking a share of them
// with every head, key blocks outermost (run and attend_token say why).
// Where every block is one token (decode of one sequence), jobs are HKV a
// token instead, each a kv head with its query heads together.
// Cache blocks lie anywhere in the pool, so a prefill chunk asks for a
// block's lines while the block before it is computed.
//
// Batch invariance: a token's output is bitwise the same whatever else the
// step holds (other sequences, a prefill chunk, the batch size). Every case
// runs the same block code (attend_block over the same key blocks in the
// same order), and a row's arithmetic depends only on its own
// position: key blocks start at multiples of KV_BLOCK (one size for both
// phases), each score is the same sequence of multiply-adds over the head
// (keys are stored transposed, so lanes are positions), masked positions
// weigh exactly zero, a block's weights are summed in vectors then across
// lanes in lane order, and values are added position by position. Rows
// grouped with others only share loads.
//
// The configuration C gives, as static constexpr members: H and HKV (query
// and key/value heads), D (head size), PREFILL_FROM (tokens from which the
// prefill tiles apply), Q_BLOCK (prefill's q), DECODE_Q (decode's), KV_BLOCK
// (both phases' kv), WINDOW (0: none) and SCALE, and the type KvElement (the
// cache's element: float, bf16 or _Float16).
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
  // Cached positions per block, in whole vectors (the runtime's cache blocks
  // hold whole vectors of positions too, so no vector straddles two).
  static constexpr int64_t KV_BLOCK = C::KV_BLOCK, KV_VECTORS = KV_BLOCK / V;
  // Query rows per job when prefilling (at most 64: the per-row state lives
  // on the stack), and tokens per job below PREFILL_FROM tokens.
  static constexpr int64_t Q_BLOCK = C::Q_BLOCK < 64 ? C::Q_BLOCK : 64;
  static constexpr int64_t DECODE_Q = C::DECODE_Q;
  static constexpr int64_t WINDOW = C::WINDOW; // 0: none
  static constexpr float SCALE = C::SCALE;
  static_assert(H % HKV == 0, "query heads must be a multiple of kv heads");
  static_assert(KV_BLOCK % V == 0 && KV_BLOCK > 0,
                "the kv tile must be whole vectors of positions");

  // Query rows a group of attend_block holds: R rows' outputs (D / V vectors
  // each) in half of the vector registers, so each value vector loaded
  // serves R rows. One row where D is not whole vectors.
  static constexpr int VECTOR_REGISTERS = V == 16 ? 32 : 16;
  static constexpr int64_t ROW_GROUP = D % V != 0                           ? 1
                                       : VECTOR_REGISTERS / 2 / (D / V) < 1 ? 1
                                       : VECTOR_REGISTERS / 2 / (D / V) > 8
                                           ? 8
                                           : VECTOR_REGISTERS / 2 / (D / V);

  /// Lane j holds j.
  static vi32 lane_index() {
    vi32 lanes;
    for (int j = 0; j < V; ++j)
      lanes[j] = j;
    return lanes;
  }

  /// The first position token `pos` sees.
  static int64_t window_start(int64_t pos) {
    return WINDOW && pos - WINDOW + 1 > 0 ? pos - WINDOW + 1 : 0;
  }

  // What attention keeps for up to ROWS rows across the key blocks: the
  // online softmax's running maximum m, sum l and output acc per row. The
  // rows are consecutive positions of one sequence in one head (a prefill
  // chunk: queries H * D apart, row r at position p0 + r) or, HEADS, the
  // query heads of one kv head for one token (queries D apart, every row at
  // p0), which read the same keys and values.
  template <int64_t ROWS, bool HEADS = false> struct RowsState {
    static constexpr int64_t Q_STRIDE = HEADS ? D : H * D;
    const float *q; // row 0's query (rows Q_STRIDE apart)
    int64_t p0;     // row 0's position
    KvRows<E> cache;
    float m[ROWS], l[ROWS], acc[ROWS][D];
    // The current block's weights per row, zero where a row sees nothing.
    float weight[ROWS][KV_BLOCK];

    RowsState() = default;
    RowsState(const float *q, int64_t p0, const KvRows<E> &cache)
        : q(q), p0(p0), cache(cache) {}
    /// Rows [0, rows) start with nothing seen; the rest are left
    /// uninitialized, as are the weights (attend_block sets what it reads).
    void start(int64_t rows) {
      for (int64_t r = 0; r < rows; ++r) {
        m[r] = -INFINITY;
        l[r] = 0.0f;
        for (int64_t i = 0; i < D; ++i)
          acc[r][i] = 0.0f;
      }
    }
    /// Row r's position.
    int64_t position(int64_t r) const { return HEADS ? p0 : p0 + r; }
    /// Row r's output, acc / l, into out (D floats).
    void finish(int64_t r, float *out) const {
      for (int64_t i = 0; i < D; ++i)
        out[i] = acc[r][i] / l[r];
    }
  };

  /// sum[r][g] = q_r · k over the head for the V positions of vector
  /// vectors[g] (G vectors of the block at s0): one multiply-add per element
  /// of the head in order, the lanes being positions.
  template <int R, int G, class State>
  static void scores(const State &st, int64_t r0, int64_t s0,
                     int64_t firstVector, vfloat (&sum)[R][KV_VECTORS]) {
    const E *column[G];
    for (int g = 0; g < G; ++g)
      column[g] = st.cache.keyColumn(s0 + (firstVector + g) * V);
    vfloat part[R][G];
    for (int r = 0; r < R; ++r)
      for (int g = 0; g < G; ++g)
        part[r][g] = vfloat{};
    for (int64_t i = 0; i < D; ++i) {
      vfloat k[G];
      for (int g = 0; g < G; ++g)
        k[g] = vload(column[g] + i * st.cache.keyStride);
      for (int r = 0; r < R; ++r) {
        float qi = st.q[(r0 + r) * State::Q_STRIDE + i];
        for (int g = 0; g < G; ++g)
          part[r][g] = vfmadd(qi, k[g], part[r][g]);
      }
    }
    for (int r = 0; r < R; ++r)
      for (int g = 0; g < G; ++g)
        sum[r][firstVector + g] = part[r][g];
  }

  /// scores<R, G> over vectors [v0, v1) of the block, G at a time (G chosen
  /// so the R x G sums stay in registers), the rest one by one.
  template <int R, class State>
  static void block_scores(const State &st, int64_t r0, int64_t s0, int64_t v0,
                           int64_t v1, vfloat (&sum)[R][KV_VECTORS]) {
    constexpr int WANT = R >= 4 ? 2 : R >= 2 ? 4 : 8;
    constexpr int G = WANT < KV_VECTORS ? WANT : int(KV_VECTORS);
    int64_t v = v0;
    for (; v + G <= v1; v += G)
      scores<R, G>(st, r0, s0, v, sum);
    for (; v < v1; ++v)
      scores<R, 1>(st, r0, s0, v, sum);
  }

  /// Rows [r0, r0 + R) against the key block at s0, whose positions
  /// [first, last] some row sees: scores, each row's online softmax, then the
  /// weighted values, each value vector loaded once for the R rows. A row
  /// that sees no position of the block is left as it was.
  template <int R, class State>
  static void attend_block(State &st, int64_t r0, int64_t s0, int64_t first,
                           int64_t last) {
    // Whole vectors covering [first, last]: inside blocks the sequence
    // holds, since cache blocks are whole vectors of positions.
    const int64_t v0 = (first - s0) / V, v1 = (last - s0) / V + 1;
    vfloat sum[R][KV_VECTORS];
    block_scores<R>(st, r0, s0, v0, v1, sum);
    int64_t lo[R], hi[R];
    for (int r = 0; r < R; ++r) {
      int64_t pos = st.position(r0 + r);
      lo[r] = window_start(pos) > first ? window_start(pos) : first;
      hi[r] = pos < last ? pos : last;
      if (lo[r] > hi[r])
        continue; // sees none of the block
      int64_t row = r0 + r;
      // Scaled scores, -inf where masked; the maximum is exact in any order.
      float *weight = st.weight[row];
      vfloat top = vsplat(-INFINITY);
      for (int64_t v = v0; v < v1; ++v) {
        vi32 offset = lane_index() + int32_t(s0 + v * V);
        vfloat x = sum[r][v] * SCALE;
        vi32 seen = (offset >= int32_t(lo[r])) & (offset <= int32_t(hi[r]));
        x = seen ? x : vsplat(-INFINITY);
        vstore(weight + v * V, x);
        top = x > top ? x : top;
      }
      float blockMax = hmax(top);
      float mNew = blockMax > st.m[row] ? blockMax : st.m[row];
      float correction = expf(st.m[row] - mNew);
      st.l[row] *= correction;
      for (int64_t i = 0; i < D; ++i)
        st.acc[row][i] *= correction;
      // Weights: masked positions weigh exactly 0; summed in vectors, then
      // across lanes in lane order.
      vfloat total = vfloat{};
      for (int64_t v = v0; v < v1; ++v) {
        vfloat x = vload(weight + v * V);
        vfloat e = x > -INFINITY ? vexp(x - mNew) : vfloat{};
        vstore(weight + v * V, e);
        total += e;
      }
      st.l[row] += hsum(total);
      st.m[row] = mNew;
    }
    // Each row adds the values of the positions it sees, in order.
    if constexpr (D % V == 0) {
      vfloat o[R][D / V]; // the R rows' outputs stay in registers
      for (int r = 0; r < R; ++r)
        for (int64_t i = 0; i < D / V; ++i)
          o[r][i] = vload(&st.acc[r0 + r][i * V]);
      for (int64_t s = first; s <= last; ++s) {
        const E *value = st.cache.value(s);
        vfloat vv[D / V];
        for (int64_t i = 0; i < D / V; ++i)
          vv[i] = vload(value + i * V);
        for (int r = 0; r < R; ++r) {
          if (s < lo[r] || s > hi[r])
            continue;
          float p = st.weight[r0 + r][s - s0];
          for (int64_t i = 0; i < D / V; ++i)
            o[r][i] = vfmadd(p, vv[i], o[r][i]);
        }
      }
      for (int r = 0; r < R; ++r)
        for (int64_t i = 0; i < D / V; ++i)
          vstore(&st.acc[r0 + r][i * V], o[r][i]);
    } else {
      for (int r = 0; r < R; ++r)
        for (int64_t s = lo[r]; s <= hi[r]; ++s) {
          const E *value = st.cache.value(s);
          float p = st.weight[r0 + r][s - s0];
          for (int64_t i = 0; i < D; ++i)
            st.acc[r0 + r][i] =
                fmadd(p, kv_to_float(value[i]), st.acc[r0 + r][i]);
        }
    }
  }

  /// Rows [t0, t1) of head h: one token, or consecutive positions of one
  /// sequence (a prefill chunk), against the key blocks they see.
  static void attend(const kiln_step_args *a, int64_t layer, const float *q,
                     float *y, int64_t h, int64_t t0, int64_t t1) {
    const int64_t rows = t1 - t0;
    RowsState<Q_BLOCK> st(
        q + (t0 * H + h) * D, a->positions[t0],
        KvRows<E>(a->cache, layer, a->seq_ids[t0], h / GROUP, D));
    st.start(rows);
    const int64_t first = window_start(st.p0), last = st.p0 + rows - 1;
    for (int64_t s0 = first / KV_BLOCK * KV_BLOCK; s0 <= last; s0 += KV_BLOCK) {
      int64_t from = s0 > first ? s0 : first;
      int64_t to = s0 + KV_BLOCK - 1 < last ? s0 + KV_BLOCK - 1 : last;
      // The next block's lines arrive while this one is computed.
      if (to < last)
        st.cache.prefetch(to + 1, to + KV_BLOCK < last ? to + KV_BLOCK : last,
                          D);
      // Rows before the block's first position see none of it.
      int64_t r = s0 - st.p0 > 0 ? s0 - st.p0 : 0;
      for (; r + ROW_GROUP <= rows; r += ROW_GROUP)
        attend_block<ROW_GROUP>(st, r, s0, from, to);
      for (; r < rows; ++r)
        attend_block<1>(st, r, s0, from, to);
    }
    for (int64_t r = 0; r < rows; ++r)
      st.finish(r, y + ((t0 + r) * H + h) * D);
  }

  /// The GROUP query heads of kv head `kv` for token t against the key
  /// block at s0, positions [from, to]: ROW_GROUP heads at a time, so each
  /// key and value vector loaded serves them all (grouped-query attention
  /// reads a kv head's cache once for its GROUP heads, not GROUP times).
  static void attend_heads(RowsState<GROUP, true> &st, int64_t s0, int64_t from,
                           int64_t to) {
    // Bounds known at compile time: GCC warns of an out-of-bounds
    // iteration in a remainder loop it cannot prove empty.
    constexpr int64_t WHOLE = GROUP / ROW_GROUP * ROW_GROUP;
    for (int64_t r = 0; r < WHOLE; r += ROW_GROUP)
      attend_block<ROW_GROUP>(st, r, s0, from, to);
    if constexpr (WHOLE < GROUP)
      for (int64_t r = WHOLE; r < GROUP; ++r)
        attend_block<1>(st, r, s0, from, to);
  }

  /// Every head of one token (decode), as HKV groups of GROUP rows. A row's
  /// arithmetic is attend's for one row, the same attend_block code over
  /// the same blocks in the same order; only which rows share a load
  /// changes. One group (`kv` >= 0: decode of a single token, a job per kv
  /// head) asks for its first block's lines before it starts and for the
  /// next block's while it computes one, as attend does. Every group (`kv` < 0:
  /// batched decode, a job per share of the tokens) makes the key blocks the
  /// outer loop and the groups the inner one, so a key block's slice of the
  /// layer (every head's keys, then every head's values, side by side in the
  /// cache) is read as two long runs, which the hardware prefetchers follow
  /// (asking for the next block's slice ahead measured no faster:
  /// bench/NOTES.md v21).
  static void attend_token(const kiln_step_args *a, int64_t layer,
                           const float *q, float *y, int64_t t, int64_t kv) {
    const int64_t pos = a->positions[t], seq = a->seq_ids[t];
    const int64_t g0 = kv < 0 ? 0 : kv, g1 = kv < 0 ? HKV : kv + 1;
    RowsState<GROUP, true> group[HKV];
    for (int64_t g = g0; g < g1; ++g) {
      group[g] = RowsState<GROUP, true>(q + (t * H + g * GROUP) * D, pos,
                                        KvRows<E>(a->cache, layer, seq, g, D));
      group[g].start(GROUP);
    }
    const int64_t first = window_start(pos);
    // The first block's lines, all asked for before its first load: a
    // layer's cache has left the caches while the other layers' weights
    // streamed through them.
    if (kv >= 0) {
      int64_t end = first / KV_BLOCK * KV_BLOCK + KV_BLOCK - 1;
      group[kv].cache.prefetch(first, end < pos ? end : pos, D);
    }
    for (int64_t s0 = first / KV_BLOCK * KV_BLOCK; s0 <= pos; s0 += KV_BLOCK) {
      int64_t from = s0 > first ? s0 : first;
      int64_t to = s0 + KV_BLOCK - 1 < pos ? s0 + KV_BLOCK - 1 : pos;
      if (kv >= 0 && to < pos)
        group[kv].cache.prefetch(to + 1,
                                 to + KV_BLOCK < pos ? to + KV_BLOCK : pos, D);
      for (int64_t g = g0; g < g1; ++g)
        attend_heads(group[g], s0, from, to);
    }
    for (int64_t g = g0; g < g1; ++g)
      for (int64_t r = 0; r < GROUP; ++r)
        group[g].finish(r, y + (t * H + g * GROUP + r) * D);
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

  /// The kernel: y = attention of the query rows q [tokens, H, D] over the
  /// layer's cached keys and values. Where every group of qBlock tokens is
  /// one token (decode of one sequence, or decode q = 1), jobs are HKV a
  /// token: a kv head and its query heads, which share every load of its
  /// keys and values. Otherwise jobs are H per group. A group that is one
  /// sequence's consecutive positions (a prefill chunk) gives each job a
  /// head: its rows share every key block. Any other group (tokens of
  /// several sequences: batched decode) gives each job a share of its
  /// tokens, every head of each (attend_token): a block holds a token's
  /// heads side by side, so the job reads each block's slice of the layer
  /// whole rather than one head's piece of every sequence's blocks.
  static void run(const kiln_step_args *a, int64_t layer, const float *q,
                  float *y) {
    const int64_t qBlock = a->tokens >= C::PREFILL_FROM ? Q_BLOCK : DECODE_Q;
    // Every group one token: a job per kv head and token.
    const bool kvJobs = qBlock == 1 || a->tokens == 1;
    const int64_t jobs = kvJobs ? HKV : H;
    parallel(a, (a->tokens + qBlock - 1) / qBlock * jobs,
             [&](int64_t begin, int64_t end) {
               for (int64_t job = begin; job < end; ++job) {
                 int64_t t0 = job / jobs * qBlock, j = job % jobs;
                 int64_t t1 = t0 + qBlock < a->tokens ? t0 + qBlock : a->tokens;
                 if (kvJobs) {
                   attend_token(a, layer, q, y, t0, j);
                   continue;
                 }
                 if (contiguous(a, t0, t1)) {
                   // At most Q_BLOCK rows at a time (a tuned decode q may
                   // be larger); splitting rows never changes a row's sums.
                   for (int64_t r0 = t0; r0 < t1; r0 += Q_BLOCK)
                     attend(a, layer, q, y, j, r0,
                            r0 + Q_BLOCK < t1 ? r0 + Q_BLOCK : t1);
                   continue;
                 }
                 const int64_t n = t1 - t0;
                 const int64_t from = t0 + n * j / H, to = t0 + n * (j + 1) / H;
                 for (int64_t t = from; t < to; ++t)
                   attend_token(a, layer, q, y, t, -1);
               }
             });
  }
};

} // namespace kiln::kernels

#endif // KILN_KERNELS_ATTENTION_H
