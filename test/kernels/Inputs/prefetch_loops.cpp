// The loops the GEMMs and the KV cache prefetch in, reduced: each asks for
// lines as the kernels do while the loop computes something. Compiled to
// assembly by prefetch-kept.test with every compiler Kiln may hand kernels
// to, which must keep each prefetch.

#include "kernels/Vector.h"

using namespace kiln::kernels;

// A one-row GEMM loop: a panel block of 576 bytes a step, asking as the
// step's weight_prefetch says.
int64_t weights_ahead(int32_t mode, const uint8_t *w, int64_t blocks) {
  int64_t sum = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    prefetch_weights_ahead<576>(mode, w + b * 576);
    sum += w[b * 576];
  }
  return sum;
}

// The taller blocks' share of the next panel, spread over a loop.
int64_t spread(const uint8_t *next, const uint8_t *w, int64_t steps) {
  PrefetchSpread fetch(next, nullptr, 0, 64, steps);
  int64_t sum = 0;
  for (int64_t s = 0; s < steps; ++s) {
    fetch.step(s);
    sum += w[s];
  }
  fetch.finish();
  return sum;
}

// A loop of prefetches alone, as the KV cache's is: free of side effects
// as far as a compiler knows, so the easiest to delete.
void lines_only(const uint8_t *p, int64_t lines) {
  for (int64_t i = 0; i < lines; ++i)
    prefetch_line(reinterpret_cast<uintptr_t>(p) + 64 * i);
}
