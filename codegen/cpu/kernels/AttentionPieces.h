//===- AttentionPieces.h - Unfused attention --------------------*- C++ -*-===//
//
// Part of Kiln's CPU kernel library. The pieces kiln.attention is the
// fusion of, for modules compiled without fusion (`kiln compile
// --no-fusion`) and for fusion rules that leave them: kiln.attention_scores,
// kiln.attention_mask and kiln.attention_output over the [T, S, HKV, D] keys
// and values kiln.kv_read gathers (S cached positions, a runtime count).
// kiln.scale and kiln.softmax between them are Elementwise.h's.
//
// The configuration C gives, as static constexpr members: H and HKV (query
// and key/value heads; query head h reads key/value head h / (H / HKV)), D
// (head size) and, for the mask, WINDOW (0: none).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_KERNELS_ATTENTIONPIECES_H
#define KILN_KERNELS_ATTENTIONPIECES_H

#include "Vector.h"

namespace kiln::kernels {

/// The dot product of two rows of D floats: in vectors when D is whole
/// vectors (the sum's order then differs from the interpreter's by
/// rounding only).
template <int64_t D> inline float dot_row(const float *a, const float *b) {
  if constexpr (D % V == 0) {
    vfloat sum = vfloat{};
    for (int64_t i = 0; i < D; i += V)
      sum = vfmadd(vload(a + i), vload(b + i), sum);
    return hsum(sum);
  } else {
    float total = 0.0f;
    for (int64_t i = 0; i < D; ++i)
      total = fmadd(a[i], b[i], total);
    return total;
  }
}

/// scores[t, h, s] = q[t, h] · keys[t, s, h / GROUP] for `rows` tokens.
template <class C>
void attention_scores(const kiln_step_args *a, int64_t rows, int64_t s,
                      const float *q, const float *keys, float *scores) {
  constexpr int64_t H = C::H, HKV = C::HKV, D = C::D, GROUP = H / HKV;
  static_assert(H % HKV == 0, "query heads must be a multiple of kv heads");
  parallel(a, rows * H, [&](int64_t begin, int64_t end) {
    for (int64_t job = begin; job < end; ++job) {
      int64_t t = job / H, h = job % H;
      const float *qr = q + job * D;
      const float *kr = keys + (t * s * HKV + h / GROUP) * D;
      float *out = scores + job * s;
      for (int64_t p = 0; p < s; ++p)
        out[p] = dot_row<D>(qr, kr + p * HKV * D);
    }
  });
}

/// y[t, h, p] = -inf where token t does not see position p (p >
/// positions[t], or with a window W, p <= positions[t] - W), else x[t, h,
/// p]. y may be x.
template <class C>
void attention_mask(const kiln_step_args *a, int64_t rows, int64_t s,
                    const float *x, const int32_t *positions, float *y) {
  constexpr int64_t H = C::H, WINDOW = C::WINDOW;
  parallel(a, rows, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      int64_t pos = positions[t];
      int64_t lo = WINDOW && pos - WINDOW + 1 > 0 ? pos - WINDOW + 1 : 0;
      for (int64_t h = 0; h < H; ++h) {
        const float *xr = x + (t * H + h) * s;
        float *yr = y + (t * H + h) * s;
        for (int64_t p = 0; p < s; ++p)
          yr[p] = p > pos || p < lo ? -INFINITY : xr[p];
      }
    }
  });
}

/// y[t, h] = sum_p probs[t, h, p] * values[t, p, h / GROUP] for `rows`
/// tokens, rows of D accumulated in vectors where D is whole vectors.
template <class C>
void attention_output(const kiln_step_args *a, int64_t rows, int64_t s,
                      const float *probs, const float *values, float *y) {
  constexpr int64_t H = C::H, HKV = C::HKV, D = C::D, GROUP = H / HKV;
  static_assert(H % HKV == 0, "query heads must be a multiple of kv heads");
  parallel(a, rows * H, [&](int64_t begin, int64_t end) {
    for (int64_t job = begin; job < end; ++job) {
      int64_t t = job / H, h = job % H;
      const float *pr = probs + job * s;
      const float *vr = values + (t * s * HKV + h / GROUP) * D;
      float *out = y + job * D;
      if constexpr (D % V == 0) {
        vfloat acc[D / V];
        for (int64_t i = 0; i < D / V; ++i)
          acc[i] = vfloat{};
        for (int64_t p = 0; p < s; ++p)
          for (int64_t i = 0; i < D / V; ++i)
            acc[i] = vfmadd(pr[p], vload(vr + p * HKV * D + i * V), acc[i]);
        for (int64_t i = 0; i < D / V; ++i)
          vstore(out + i * V, acc[i]);
      } else {
        for (int64_t i = 0; i < D; ++i)
          out[i] = 0.0f;
        for (int64_t p = 0; p < s; ++p)
          for (int64_t i = 0; i < D; ++i)
            out[i] = fmadd(pr[p], vr[p * HKV * D + i], out[i]);
      }
    }
  });
}

} // namespace kiln::kernels

#endif // KILN_KERNELS_ATTENTIONPIECES_H
