//===- Rope.h - Rotary position embedding -----------------------*- C++ -*-===//
//
// Part of Kiln's CPU kernel library. kiln.rope over [rows, H, D]: each pair
// (a, b) of a head turns by positions[t] * INV_FREQ[i]. The inverse
// frequencies are the emitter's, computed at compile time exactly as the
// reference interpreter computes them (scaling included).
//
// The configuration C gives, as static constexpr members: H, D, ADJACENT
// (pairs (2i, 2i + 1), else (i, i + D / 2)) and INV_FREQ[D / 2].
//
//===----------------------------------------------------------------------===//

#ifndef KILN_KERNELS_ROPE_H
#define KILN_KERNELS_ROPE_H

#include "Vector.h"

namespace kiln::kernels {

template <class C>
void rope(const kiln_step_args *a, int64_t rows, const int32_t *positions,
          const float *x, float *y) {
  constexpr int64_t H = C::H, D = C::D;
  static_assert(D % 2 == 0, "rope rotates pairs");
  parallel(a, rows, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t)
      for (int64_t i = 0; i < D / 2; ++i) {
        float angle = (float)positions[t] * C::INV_FREQ[i];
        float c = cosf(angle), s = sinf(angle);
        for (int64_t h = 0; h < H; ++h) {
          int64_t base = (t * H + h) * D;
          int64_t ia = base + (C::ADJACENT ? 2 * i : i);
          int64_t ib = base + (C::ADJACENT ? 2 * i + 1 : i + D / 2);
          float xa = x[ia], xb = x[ib];
          y[ia] = fmadd(xa, c, -(xb * s));
          y[ib] = fmadd(xa, s, xb * c);
        }
      }
  });
}

} // namespace kiln::kernels

#endif // KILN_KERNELS_ROPE_H
