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

#define KILN_STEP_ABI_VERSION 6

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

/* The runtime's paged KV cache. Keys and values live in two pools of
 * fixed-size blocks, each block holding `block_positions` consecutive
 * positions (a power of two, a multiple of every target's vector width) of
 * one sequence for every layer: position p of sequence s is in block
 * block_tables[s * max_blocks_per_seq + p / block_positions]. Its entry is
 * kv_heads x head_dim elements of the manifest's cache element type; with
 *
 *   slot = block * block_stride + layer * layer_stride,
 *
 * element i of kv head h's part of its value row is at slot + h *
 * value_head_stride + (p % block_positions) * position_stride + i in
 * `values`, and element i of its key row (i = h * head_dim + d) at slot + i
 * * key_stride + p % block_positions in `keys`. Keys are transposed within a
 * block, so attention loads consecutive positions' element i as one vector;
 * the runtime stores each head's values head-major within a block, so one
 * head's values for a block are contiguous and stream like its keys.
 * Strides are in elements. The runtime maps every block a step writes or
 * reads before the step runs; an entry of -1 is a block the sequence does
 * not hold (not yet written, or freed as wholly outside a sliding window),
 * which the step never touches. */
typedef struct kiln_kv_cache {
  void *keys;
  void *values;
  int64_t block_stride;
  int64_t layer_stride;
  int64_t position_stride;     /* values: between consecutive positions */
  int64_t value_head_stride;   /* values: between consecutive kv heads */
  int64_t key_stride;          /* keys: between consecutive elements of a row */
  const int32_t *block_tables; /* [max_seqs, max_blocks_per_seq] */
  int32_t max_blocks_per_seq;
  int32_t block_positions;
  int32_t max_seqs;
  int32_t max_positions; /* max_blocks_per_seq * block_positions */
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
  /* How a GEMM's one-row-block (decode) loops ask, in software, for the
   * weights ahead of their loads: KILN_WEIGHT_PREFETCH_NONE, _LINES (every
   * cache line) or _PAGES (the first line of each 4 KiB page). It never
   * changes a result; which helps depends on the CPU, so the runtime
   * decides (runtime/WeightPrefetch.h). */
  int32_t weight_prefetch;
} kiln_step_args;

/* kiln_step_args::weight_prefetch. */
#define KILN_WEIGHT_PREFETCH_NONE 0
#define KILN_WEIGHT_PREFETCH_LINES 1
#define KILN_WEIGHT_PREFETCH_PAGES 2

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
