/*===- CudaStepABI.h - How the runtime calls a CUDA step ---------*- C -*-===//
 *
 * Part of Kiln. A CUDA artifact's step library (the "code" section) is host
 * code, compiled like a CPU step, that launches the step's kernels in
 * program order: kiln_cuda_step(args) computes each launch's grid from the
 * step's token count and hands the kernel's name and parameters to
 * args->launch, which the runtime implements with cuLaunchKernel on the
 * module loaded from the artifact's cubin or PTX (inside a CUDA Graph
 * capture), or with the block emulator the library also carries
 * (kiln_cuda_emulated_launch: the same kernel source compiled for the
 * host). Every pointer in the arguments is a device address; `cache`
 * itself is host memory holding device addresses, as the attention and
 * kv_append kernels take the cache description by value.
 *
 * The library also exports kiln_step_abi_version() (KILN_STEP_ABI_VERSION),
 * and a kiln_step that refuses to run (it returns 2): a CPU runtime that
 * does not know CUDA libraries fails cleanly on one.
 *
 *===----------------------------------------------------------------------===*/

#ifndef KILN_RUNTIME_CUDASTEPABI_H
#define KILN_RUNTIME_CUDASTEPABI_H

#include "StepABI.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Launches `kernel` over grid[0] x grid[1] x grid[2] blocks of `threads`
 * threads; params[i] points to parameter i's value of sizes[i] bytes (as
 * cuLaunchKernel takes them). Returns 0, or non-zero when the launch
 * failed (the launcher keeps the reason). */
typedef int32_t (*kiln_cuda_launch_fn)(void *launcher, const char *kernel,
                                       const uint32_t grid[3], uint32_t threads,
                                       void **params, const size_t *sizes,
                                       int32_t count);

typedef struct kiln_cuda_step_args {
  int64_t tokens;            /* T, at most the step's max_tokens */
  const int32_t *token_ids;  /* [T] */
  const int32_t *positions;  /* [T] */
  const int32_t *seq_ids;    /* [T] */
  int64_t rows;              /* R */
  const int32_t *logit_rows; /* [R] */
  float *logits;             /* [R, V], written */
  const uint8_t *weights;    /* the packed weights, on the device */
  uint8_t *arena;            /* activations: arena_bytes, 256-byte aligned */
  const kiln_kv_cache *cache;
  void *launcher;
  kiln_cuda_launch_fn launch;
} kiln_cuda_step_args;

/* Runs the step's launches; returns 0, 1 for arguments out of range, or
 * the failing launch's status. */
int32_t kiln_cuda_step(const kiln_cuda_step_args *args);

/* The emulator's launcher: the library's kernels compiled for the host and
 * run in codegen/cuda/kernels/DeviceHost.h's block emulator, device
 * addresses being host addresses. `launcher` is unused. */
int32_t kiln_cuda_emulated_launch(void *launcher, const char *kernel,
                                  const uint32_t grid[3], uint32_t threads,
                                  void **params, const size_t *sizes,
                                  int32_t count);
/* The emulator's last error message ("" when none). */
const char *kiln_cuda_emulated_error(void);

#ifdef __cplusplus
}
#endif

#endif /* KILN_RUNTIME_CUDASTEPABI_H */
