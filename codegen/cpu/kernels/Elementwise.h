//===- Elementwise.h - Element-wise and row-wise kernels --------*- C++ -*-===//
//
// Part of Kiln's CPU kernel library. The activations (as scalars for GEMM
// epilogues, and as kernels over whole tensors), kiln.scale, kiln.add,
// kiln.mul, and the row-wise kiln.softmax. Each definition is the reference
// interpreter's (ir/interpreter/Interpreter.cpp); vector paths differ from it
// by rounding only.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_KERNELS_ELEMENTWISE_H
#define KILN_KERNELS_ELEMENTWISE_H

#include "Vector.h"

namespace kiln::kernels {

/// A function of one element: the activations of kiln.silu, kiln.gelu
/// (erf and tanh forms), kiln.relu, and kiln.scale's multiplication.
enum class Unary { Identity, Silu, Gelu, GeluTanh, Relu, Scale };

inline float silu(float x) { return x / (1.0f + expf(-x)); }
inline float gelu(float x) {
  return 0.5f * x * (1.0f + erff(x / 1.4142135623730951f));
}
inline float gelu_tanh(float x) {
  const float c = 0.7978845608028654f; // sqrt(2 / pi)
  return 0.5f * x * (1.0f + tanhf(c * fmadd(0.044715f * x * x, x, x)));
}
inline float relu(float x) { return x > 0.0f ? x : 0.0f; }

/// F(x) for one element; `factor` is kiln.scale's.
template <Unary F> inline float apply(float x, float factor = 1.0f) {
  switch (F) {
  case Unary::Identity:
    return x;
  case Unary::Silu:
    return silu(x);
  case Unary::Gelu:
    return gelu(x);
  case Unary::GeluTanh:
    return gelu_tanh(x);
  case Unary::Relu:
    return relu(x);
  case Unary::Scale:
    return factor * x;
  }
  return x;
}

/// Whether F has a vector form (erf and tanh are left to the C library,
/// one element at a time).
template <Unary F> constexpr bool hasVectorForm() {
  return F != Unary::Gelu && F != Unary::GeluTanh;
}

/// F(x) for V elements (only where hasVectorForm<F>()).
template <Unary F> inline vfloat apply(vfloat x, float factor) {
  switch (F) {
  case Unary::Silu:
    return x / (1.0f + vexp(-x));
  case Unary::Relu:
    return x > 0.0f ? x : vfloat{};
  case Unary::Scale:
    return factor * x;
  default:
    return x;
  }
}

/// Elements per task of the element-wise kernels: a few pages each, so
/// tasks amortize the pool's dispatch and stay in L1/L2.
constexpr int64_t kElementsPerTask = 16384;

/// body(i, stop) over [0, n) in tasks of kElementsPerTask elements.
template <typename Body>
inline void elementwise_tasks(const kiln_step_args *a, int64_t n,
                              const Body &body) {
  parallel(a, (n + kElementsPerTask - 1) / kElementsPerTask,
           [&](int64_t begin, int64_t end) {
             int64_t stop =
                 end * kElementsPerTask < n ? end * kElementsPerTask : n;
             body(begin * kElementsPerTask, stop);
           });
}

/// y[i] = C::OP(x[i]) for i < n (C::FACTOR for kiln.scale). y may be x.
template <class C>
void unary(const kiln_step_args *a, int64_t n, const float *x, float *y) {
  constexpr Unary F = C::OP;
  const float factor = C::FACTOR;
  elementwise_tasks(a, n, [&](int64_t i, int64_t stop) {
    if constexpr (hasVectorForm<F>()) {
      for (; i + V <= stop; i += V)
        vstore(y + i, apply<F>(vload(x + i), factor));
      // The tail in the vector form too: an element's result must not
      // depend on where the step's row count puts the end (batch
      // invariance), and the vector and scalar forms round differently.
      if (i < stop) {
        float in[V] = {}, out[V];
        memcpy(in, x + i, size_t(stop - i) * sizeof(float));
        vstore(out, apply<F>(vload(in), factor));
        memcpy(y + i, out, size_t(stop - i) * sizeof(float));
      }
      return;
    }
    for (; i < stop; ++i)
      y[i] = apply<F>(x[i], factor);
  });
}

/// A function of two elements: kiln.add and kiln.mul.
enum class Binary { Add, Mul };

template <Binary F> inline float apply(float l, float r) {
  return F == Binary::Add ? l + r : l * r;
}
template <Binary F> inline vfloat apply(vfloat l, vfloat r) {
  return F == Binary::Add ? l + r : l * r;
}

/// y[i] = C::OP(l[i], r[i]) for i < n. y may be l or r.
template <class C>
void binary(const kiln_step_args *a, int64_t n, const float *l, const float *r,
            float *y) {
  constexpr Binary F = C::OP;
  elementwise_tasks(a, n, [&](int64_t i, int64_t stop) {
    for (; i + V <= stop; i += V)
      vstore(y + i, apply<F>(vload(l + i), vload(r + i)));
    for (; i < stop; ++i)
      y[i] = apply<F>(l[i], r[i]);
  });
}

/// y[r, i] = exp(x[r, i] - m) / sum_j exp(x[r, j] - m), m the row's
/// maximum, for `rows` rows of `cols` (kiln.softmax over the last
/// dimension; cols is a runtime count, e.g. the cached positions S). A -inf
/// entry (a masked position) weighs exactly 0, and a row masked entirely
/// has no distribution: it is all zeros, as in the interpreter. y may be x.
/// Every entry takes the vector form, the last vector padded with -inf, so
/// a row's result does not change when masked columns are added at its end
/// (S follows the step's largest position: batch invariance).
inline void softmax_rows(const float *x, float *y, int64_t cols, int64_t begin,
                         int64_t end) {
  // V entries from j, -inf past the row's end.
  auto entries = [cols](const float *row, int64_t j) {
    if (j + V <= cols)
      return vload(row + j);
    float padded[V];
    for (int i = 0; i < V; ++i)
      padded[i] = j + i < cols ? row[j + i] : -INFINITY;
    return vload(padded);
  };
  for (int64_t r = begin; r < end; ++r) {
    const float *xr = x + r * cols;
    float *yr = y + r * cols;
    vfloat top = vsplat(-INFINITY);
    for (int64_t j = 0; j < cols; j += V) {
      vfloat v = entries(xr, j);
      top = v > top ? v : top;
    }
    float m = hmax(top);
    if (m == -INFINITY) {
      for (int64_t j = 0; j < cols; ++j)
        yr[j] = 0.0f;
      continue;
    }
    vfloat total = vfloat{};
    for (int64_t j = 0; j < cols; j += V) {
      vfloat v = entries(xr, j);
      vfloat e = vexp(v - m);
      e = v == -INFINITY ? vfloat{} : e; // vexp clamps: make masks exact
      total += e;
      float lanes[V];
      vstore(lanes, e);
      memcpy(yr + j, lanes, size_t(j + V <= cols ? V : cols - j) * 4);
    }
    float inverse = 1.0f / hsum(total);
    for (int64_t j = 0; j < cols; ++j)
      yr[j] *= inverse;
  }
}

/// kiln.softmax of `rows` rows of `cols`, rows spread over the threads.
inline void softmax(const kiln_step_args *a, int64_t rows, int64_t cols,
                    const float *x, float *y) {
  if (cols <= 0)
    return;
  int64_t perTask = cols >= kElementsPerTask ? 1 : kElementsPerTask / cols;
  parallel(a, (rows + perTask - 1) / perTask, [&](int64_t begin, int64_t end) {
    int64_t stop = end * perTask < rows ? end * perTask : rows;
    softmax_rows(x, y, cols, begin * perTask, stop);
  });
}

} // namespace kiln::kernels

#endif // KILN_KERNELS_ELEMENTWISE_H
