//===- Norms.h - Normalization kernels --------------------------*- C++ -*-===//
//
// Part of Kiln's CPU kernel library. kiln.rms_norm (also the prologue of
// fused GEMMs) and kiln.layer_norm over the last dimension of [rows, D], in
// tasks of kiln.tiles' rows. The configuration C gives D, EPSILON, HAS_BIAS
// (layer_norm), PREFILL_FROM, PREFILL_ROWS and DECODE_ROWS.
// Sums run in element order, like the reference interpreter's, so the norms
// match it to rounding whatever the vector width.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_KERNELS_NORMS_H
#define KILN_KERNELS_NORMS_H

#include "Vector.h"

namespace kiln::kernels {

/// y[r] = g * x[r] / sqrt(mean(x[r]^2) + eps) for rows [begin, end) of
/// [rows, d].
inline void rms_norm_rows(const float *x, const float *g, float *y, int64_t d,
                          float eps, int64_t begin, int64_t end) {
  for (int64_t r = begin; r < end; ++r) {
    const float *xr = x + r * d;
    float ss = 0.0f;
    for (int64_t i = 0; i < d; ++i)
      ss = fmadd(xr[i], xr[i], ss);
    ss /= (float)d;
    ss += eps;
    float s = 1.0f / sqrtf(ss);
    for (int64_t i = 0; i < d; ++i)
      y[r * d + i] = g[i] * (s * xr[i]);
  }
}

/// body(begin, end) over the rows [0, rows) in tasks of kiln.tiles' `rows`:
/// C::PREFILL_ROWS from C::PREFILL_FROM rows, else C::DECODE_ROWS.
template <class C, typename Body>
inline void row_tasks(const kiln_step_args *a, int64_t rows, const Body &body) {
  const int64_t grain =
      rows >= C::PREFILL_FROM ? C::PREFILL_ROWS : C::DECODE_ROWS;
  parallel(a, (rows + grain - 1) / grain, [&](int64_t begin, int64_t end) {
    body(begin * grain, end * grain < rows ? end * grain : rows);
  });
}

/// kiln.rms_norm of [rows, C::D] with C::EPSILON.
template <class C>
void rms_norm(const kiln_step_args *a, int64_t rows, const float *x,
              const float *g, float *y) {
  row_tasks<C>(a, rows, [&](int64_t begin, int64_t end) {
    rms_norm_rows(x, g, y, C::D, C::EPSILON, begin, end);
  });
}

/// kiln.layer_norm of [rows, C::D]: with mu the row's mean and var the mean
/// of (x - mu)^2, y = (x - mu) / sqrt(var + C::EPSILON) * g (+ b when
/// C::HAS_BIAS).
template <class C>
void layer_norm(const kiln_step_args *a, int64_t rows, const float *x,
                const float *g, const float *b, float *y) {
  constexpr int64_t D = C::D;
  row_tasks<C>(a, rows, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float *xr = x + r * D;
      float mean = 0.0f;
      for (int64_t i = 0; i < D; ++i)
        mean += xr[i];
      mean /= (float)D;
      float var = 0.0f;
      for (int64_t i = 0; i < D; ++i)
        var = fmadd(xr[i] - mean, xr[i] - mean, var);
      var /= (float)D;
      float s = 1.0f / sqrtf(var + C::EPSILON);
      for (int64_t i = 0; i < D; ++i) {
        float v = (xr[i] - mean) * s * g[i];
        y[r * D + i] = C::HAS_BIAS ? v + b[i] : v;
      }
    }
  });
}

} // namespace kiln::kernels

#endif // KILN_KERNELS_NORMS_H
