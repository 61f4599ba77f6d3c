//===- GemmInstances.h - The GEMMs kiln-kernel-bench times ------*- C++ -*-===//
//
// Part of Kiln's kernel microbenchmark. GemmInstances.cpp, compiled for the
// host (-march=native, as `kiln compile` builds a step library for it),
// instantiates codegen/cpu/kernels/Gemm.h with the shapes of the synthetic
// models' largest GEMMs and the tiles the tiling pass chooses for the
// host's vector width; KernelBench.cpp, compiled without those flags, sees
// only this header.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_BENCH_KERNELS_GEMMINSTANCES_H
#define KILN_BENCH_KERNELS_GEMMINSTANCES_H

#include "runtime/StepABI.h"

#include <cstdint>
#include <vector>

namespace kiln::kernel_bench {

/// One GEMM: y[rows, n] = x[rows, k] · W[n, k]ᵀ (swiglu: silu(x·Gᵀ) * x·Uᵀ,
/// two weights of this shape).
struct GemmInstance {
  const char *name;    // "q4_0 2048x5632 (llama-1b down)"
  int64_t n, k;        // the weight's shape
  bool swiglu;         // two weights
  int64_t weightBytes; // packed bytes of one weight
  int nr, mr;          // the register block
  /// Scratch bytes run needs for `rows` rows.
  int64_t (*scratchBytes)(int64_t rows);
  /// Makes one weight's bytes, already random floats in [-1, 1), valid
  /// packed data: the quantized formats' block scales become 2^-4 (their
  /// levels may be any bytes); floats stay as they are.
  void (*prepare)(void *w);
  /// The kernel: Gemm<C>::run.
  void (*run)(const kiln_step_args *a, int64_t rows, const float *x,
              float *scratch, const void *w, const void *w2, float *y);
};

/// Every instance, in a fixed order.
const std::vector<GemmInstance> &gemmInstances();

/// The features GemmInstances.cpp was compiled for ("V=16 avx512f
/// avx512vnni ..."), to name in the report.
const char *compiledFeatures();

} // namespace kiln::kernel_bench

#endif // KILN_BENCH_KERNELS_GEMMINSTANCES_H
