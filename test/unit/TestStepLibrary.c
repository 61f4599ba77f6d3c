/*===- TestStepLibrary.c - A minimal compiled step for the loader tests ---===//
 *
 * Part of Kiln's unit tests. The smallest library that exports the step ABI
 * (runtime/StepABI.h): kiln_step writes 42 to logits[0]. Built twice, as
 * this Kiln's ABI version and, with TEST_STEP_ABI_VERSION=999, as a library
 * from a future Kiln the runtime must refuse.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/StepABI.h"

#ifndef TEST_STEP_ABI_VERSION
#define TEST_STEP_ABI_VERSION KILN_STEP_ABI_VERSION
#endif

int32_t kiln_step_abi_version(void) { return TEST_STEP_ABI_VERSION; }

int32_t kiln_step(const kiln_step_args *args) {
  if (!args || !args->logits || args->rows < 1)
    return 1;
  args->logits[0] = 42.0f;
  return 0;
}
