//===- SplitMix64.h - A request's own random stream -------------*- C++ -*-===//
//
// Part of Kiln. SplitMix64 (Steele, Lea and Flood, 2014; the constants of
// Vigna's reference splitmix64.c): the n-th output is a fixed mixing
// function of seed + n * golden gamma, so a stream depends on its seed and
// on how many numbers were drawn from it, nothing else. Written out here
// rather than taken from <random>: std::uniform_real_distribution's output
// is left to each standard library, and a seed must give the same samples
// wherever Kiln runs.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SAMPLING_SPLITMIX64_H
#define KILN_RUNTIME_SAMPLING_SPLITMIX64_H

#include <cstdint>

namespace kiln::runtime {

class SplitMix64 {
public:
  explicit SplitMix64(uint64_t seed) : state(seed) {}

  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  /// Uniform in [0, 1): one of the 2^53 multiples of 2^-53 there, each
  /// equally likely (the top 53 bits of next()).
  double nextDouble() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

private:
  uint64_t state;
};

} // namespace kiln::runtime

#endif // KILN_RUNTIME_SAMPLING_SPLITMIX64_H
