/*===- StepABI.h - The C ABI of a compiled step -------------------*- C -*-===//
 *
 * Part of Kiln. The seam between the code `kiln compile` generates (compiled
 * into the artifact's shared library) and the runtime that loads it. It is
 * the step contract (docs/step-contract.md) in C: plain structs and one
 * entry point, so that generated code needs nothing but this header and the
 * runtime needs no MLIR. Code generation copies this file next to the
 * kernels it emits.
 *
 * Change it rarely and on purpose: bump KILN_STEP_ABI_VERSION, which the
 * runtime checks against the library's kiln_step_abi_version().
 *
 *===----------------------------------------------------------------------===*/

#ifndef KILN_RUNTIME_STEPABI_H
#define KILN_RUNTIME_STEPABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_STEP_ABI_VERSION 1

/* A chunk of parallel work: fn(ctx, begin, end) handles [begin, end). */
typedef void (*kiln_task_fn)(void *ctx, int64_t begin, int64_t end);

/* The runtime's thread pool, as generated code sees it. */
typedef struct kiln_parallel {
  void *pool;
  /* Runs fn over [0, n) in chunks of at most `grain` items on every thread
   * of the pool (the caller's included) and returns when all are done. */
  void (*parallel_for)(void *pool, int64_t n, int64_t grain, kiln_task_fn fn,
                       void *ctx);
  int32_t threads;
} kiln_parallel;

/* The runtime's KV cache: per layer, sequence and position, kv_heads x
 * head_dim elements of the manifest's cache element type, for keys and for
 * values. Strides are in elements. A paged cache replaces this struct (and
 * bumps the ABI version); the IR does not change. */
typedef struct kiln_kv_cache {
  void *keys;
  void *values;
  int64_t layer_stride;
  int64_t seq_stride;
  int64_t position_stride;
  int32_t max_seqs;
  int32_t max_positions;
} kiln_kv_cache;

/* One step: the arguments of the step function, the buffers it uses and
 * where its result goes. */
typedef struct kiln_step_args {
  int64_t tokens;            /* T */
  const int32_t *token_ids;  /* [T] */
  const int32_t *positions;  /* [T] */
  const int32_t *seq_ids;    /* [T] */
  int64_t rows;              /* R */
  const int32_t *logit_rows; /* [R] */
  float *logits;             /* [R, V], written */
  const uint8_t *weights;    /* the artifact's packed weights (mmapped) */
  uint8_t *arena;            /* activations: the manifest's arena_bytes,
                                64-byte aligned */
  kiln_kv_cache *cache;
  const kiln_parallel *parallel;
  /* Optional profile: when non-null, kiln_step adds the wall time of its
   * i-th kernel call to call_seconds[i], for i < kiln_step_call_count(). */
  double *call_seconds;
} kiln_step_args;

/* Entry points every compiled step library exports. kiln_step returns 0 on
 * success; T must not exceed the manifest's max_tokens. */
int32_t kiln_step_abi_version(void);
int32_t kiln_step(const kiln_step_args *args);
/* The kernel calls of a step, for profiles: how many, and what the i-th is
 * ("k03_gemm: kiln.fused_matmul at loc(...)"). */
int32_t kiln_step_call_count(void);
const char *kiln_step_call_name(int32_t i);

#ifdef __cplusplus
}
#endif

#endif /* KILN_RUNTIME_STEPABI_H */
