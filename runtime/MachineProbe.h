//===- MachineProbe.h - What this machine can do, measured ------*- C++ -*-===//
//
// Part of Kiln. A benchmark figure means little on its own: 80 tokens/s is
// excellent on one machine and poor on the next. `kiln bench` therefore
// measures the two limits a Transformer step runs into, in the same run and
// on the same ThreadPool as the model, and quotes each result as a fraction
// of them:
//
//  - Memory bandwidth (decode reads every weight once per token). A
//    STREAM-like triad a[i] = b[i] + s * c[i] over three float arrays far
//    larger than the caches: by default each array is at least 256 MiB and
//    the three together at least 4x the last-level cache. The pool runs it
//    in chunks of 64 Ki elements (every thread, the caller's included); the
//    arrays are first touched by the same chunks, so pages sit near the
//    threads that use them. Best of N repetitions. Bytes are counted as
//    STREAM counts them: 12 per element (two 4-byte reads, one 4-byte
//    write). The write-allocate read of a[i] that a cache without
//    non-temporal stores also performs is NOT counted, so the traffic the
//    memory really carries is up to 4/3 of the figure.
//
//  - FP32 FMA peak (prefill is GEMM-bound). Every thread runs a loop of
//    independent FMA chains held in vector registers: 16 __m512
//    accumulators with AVX-512F, 12 __m256 with AVX2+FMA (enough chains to
//    cover an FMA latency of 4-5 cycles on two FMA ports), 8 scalars
//    otherwise. Each variant is compiled with a target attribute and chosen
//    at run time from runtime/CpuFeatures.h (the features CPUID reports, and
//    that KILN_CPU_FEATURES does not take away). A warm-up run brings the
//    cores to their vector clock first; then best of N. Counted as 2 FLOP
//    per FMA lane. The compiler cannot fold the loop away: the multiplier
//    and addend are read from volatile variables, FMAs are not reassociated
//    (no fast-math), and the accumulators' sum is returned and stored.
//
//  - bf16 dot-product peak, where the CPU has AVX512_BF16 (the rate of
//    kernels compiled with bf16 weights for a +bf16 target). The same loop
//    with 16 chains of vdpbf16ps, each lane adding two bf16 products: 4
//    FLOP per lane and instruction.
//
// No MLIR, no LLVM: this is part of kiln_runtime.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_MACHINEPROBE_H
#define KILN_RUNTIME_MACHINEPROBE_H

#include "runtime/ThreadPool.h"

#include <cstdint>
#include <string>

namespace kiln::runtime {

struct MachineProbeOptions {
  /// Bytes of each of the three triad arrays; 0 picks defaultTriadBytes().
  /// Tests pass a small size.
  int64_t triadArrayBytes = 0;
  int triadRepetitions = 5;
  /// FMA loop iterations per chunk (one FMA per accumulator each); 0 picks
  /// about 10 ms of work per chunk on a 4 GHz core.
  int64_t fmaIterations = 0;
  int fmaRepetitions = 3;
  /// Also measure the bf16 dot-product peak (where the CPU has it): `kiln
  /// bench` asks for it when an artifact's GEMMs use bf16 dot products.
  bool bf16DotPeak = false;
};

struct BandwidthResult {
  double bytesPerSecond = 0; ///< best repetition, STREAM's byte count
  int64_t arrayBytes = 0;    ///< bytes of each of the three arrays
  int repetitions = 0;
};

struct FmaPeakResult {
  double flopsPerSecond = 0; ///< best repetition, all threads together
  std::string isa;           ///< "avx512f", "avx2+fma" or "scalar"
  int lanes = 0;             ///< floats per vector
  int accumulators = 0;      ///< independent chains per thread
  int repetitions = 0;
};

struct MachineProbeResult {
  int threads = 0;
  BandwidthResult bandwidth;
  FmaPeakResult fmaPeak;
  /// flopsPerSecond 0 (and isa empty) unless asked for, and where the CPU
  /// has no bf16 dot products or KILN_CPU_FEATURES hides them.
  FmaPeakResult bf16DotPeak;
};

/// Measures the limits on `pool`'s threads (the bf16 dot peak if asked).
MachineProbeResult probeMachine(ThreadPool &pool,
                                const MachineProbeOptions &options = {});

/// The triad described above, with three arrays of `arrayBytes` each
/// (rounded down to whole chunks of 256 KiB, at least one).
BandwidthResult measureTriadBandwidth(ThreadPool &pool, int64_t arrayBytes,
                                      int repetitions);

/// The FMA loop described above, `iterations` per chunk (0: about 10 ms of
/// work on a 4 GHz core), four chunks per thread (so a thread that starts late
/// does not leave the others idle at the end of a run).
FmaPeakResult measureFmaPeak(ThreadPool &pool, int64_t iterations,
                             int repetitions);

/// The vdpbf16ps loop described above, as measureFmaPeak runs its loop;
/// an empty result where the CPU cannot run it.
FmaPeakResult measureBf16DotPeak(ThreadPool &pool, int64_t iterations,
                                 int repetitions);

/// The last-level cache in bytes as the C library reports it, or 0.
int64_t lastLevelCacheBytes();

/// max(256 MiB, 4/3 of the last-level cache) in whole triad chunks, so
/// that the three arrays hold at least 4x the cache; at most an eighth of
/// physical memory.
int64_t defaultTriadBytes();

} // namespace kiln::runtime

#endif // KILN_RUNTIME_MACHINEPROBE_H
