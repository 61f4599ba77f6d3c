//===- MachineProbe.h - What this machine can do, measured ------*- C++ -*-===//
//
// Part of Kiln. A benchmark figure means little on its own: 80 tokens/s is
// excellent on one machine and poor on the next. `kiln bench` therefore
// measures the two limits a Transformer step runs into, in the same run and
// on the same ThreadPool as the model, and quotes each result as a fraction
// of them:
//
//  - Read bandwidth (decode's limit: a decode step reads every weight once
//    and writes almost nothing). Every thread streams through one array far
//    larger than the caches, the access pattern of a GEMV over packed weight
//    panels: sequential 64-byte vector loads in 256 KiB chunks, folded into
//    eight independent XOR accumulators (so neither the ALUs nor a
//    dependency chain limit it), no stores. Each repetition reads the array
//    twice: as it is, and asking in software for the first line of the
//    4 KiB page 16 KiB ahead of each page it reads, as decode GEMMs may
//    (runtime/WeightPrefetch.h). The faster pass counts, so the probe stays
//    a limit that decode does not pass: on Zen 5 the second pass read about
//    30% faster than the first (bench/NOTES.md v24). The array is backed by
//    transparent huge pages where the kernel allows them (madvise), so TLB
//    misses do not hold the probe below what a model whose weights sit in large
//    pages can reach. Vector width follows the CPU (AVX-512, AVX2, else the
//    compiler's baseline), chosen as the FMA loop's is. Best of N passes; the
//    probe can be sampled again (ReadBandwidthProbe) because a shared host's
//    bandwidth drifts. By default the array holds as many bytes as the triad's
//    three arrays together. Counted as the bytes read.
//
//  - Triad bandwidth, for comparison with STREAM figures. A
//    STREAM-like triad a[i] = b[i] + s * c[i] over three float arrays far
//    larger than the caches: by default each array is at least 256 MiB and
//    the three together at least 4x the last-level cache. The pool runs it
//    in chunks of 64 Ki elements (every thread, the caller's included); the
//    arrays are first touched by the same chunks, so pages sit near the
//    threads that use them. Best of N repetitions. Bytes are counted as
//    STREAM counts them: 12 per element (two 4-byte reads, one 4-byte
//    write). The write-allocate read of a[i] that a cache without
//    non-temporal stores also performs is NOT counted, so the traffic the
//    memory really carries is up to 4/3 of the figure. A read-only stream
//    (decode) can therefore pass the triad: it is reported, but it is not
//    decode's limit.
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
//  - int8 dot-product peak, where the CPU has AVX512_VNNI or AVX-VNNI (the
//    rate of kernels on Q8_0, Q4_0 and K-quant weights, which multiply
//    int8 activations by the weights' levels). The same loop with chains of
//    vpdpbusd, each 32-bit lane adding four byte products: 8 operations per
//    lane and instruction, counted like an FMA's 2 so that a GEMM's 2 x M x
//    N x K compares with it.
//
// No MLIR, no LLVM: this is part of kiln_runtime.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_MACHINEPROBE_H
#define KILN_RUNTIME_MACHINEPROBE_H

#include "runtime/ThreadPool.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln::runtime {

struct MachineProbeOptions {
  /// Bytes of each of the three triad arrays; 0 picks defaultTriadBytes().
  /// Tests pass a small size.
  int64_t triadArrayBytes = 0;
  int triadRepetitions = 5;
  /// Bytes of the read probe's array; 0 picks 3 x the triad array size.
  int64_t readArrayBytes = 0;
  int readRepetitions = 10;
  /// Run the read probe in probeMachine. `kiln bench` runs its own
  /// ReadBandwidthProbe instead, sampled again around each decode run.
  bool readBandwidth = true;
  /// FMA loop iterations per chunk (one FMA per accumulator each); 0 picks
  /// about 10 ms of work per chunk on a 4 GHz core.
  int64_t fmaIterations = 0;
  int fmaRepetitions = 3;
  /// Also measure the bf16 dot-product peak (where the CPU has it): `kiln
  /// bench` asks for it when an artifact's GEMMs use bf16 dot products.
  bool bf16DotPeak = false;
  /// Also measure the int8 dot-product peak (where the CPU has it): `kiln
  /// bench` asks for it when an artifact's GEMMs are mostly quantized.
  bool int8DotPeak = false;
};

struct BandwidthResult {
  double bytesPerSecond = 0; ///< best repetition (the triad: STREAM's count)
  int64_t arrayBytes = 0;    ///< bytes of each array (triad: of three)
  int repetitions = 0;
  std::string isa; ///< the read probe's loads: "avx512f", "avx2", "portable"
  /// The read probe's array was advised into transparent huge pages and the
  /// kernel's policy backs such advice.
  bool hugePages = false;
};

struct FmaPeakResult {
  double flopsPerSecond = 0; ///< best repetition, all threads together
  std::string isa;      ///< "avx512f", "avx2+fma", "scalar"; the dot loops:
                        ///< "avx512bf16", "avx512vnni", "avxvnni"
  int lanes = 0;        ///< 32-bit lanes per vector
  int accumulators = 0; ///< independent chains per thread
  int repetitions = 0;
};

struct MachineProbeResult {
  int threads = 0;
  /// Read-only streams: decode's bandwidth limit.
  BandwidthResult readBandwidth;
  /// The STREAM triad (does not count write-allocate traffic).
  BandwidthResult bandwidth;
  FmaPeakResult fmaPeak;
  /// flopsPerSecond 0 (and isa empty) unless asked for, and where the CPU
  /// has no bf16 dot products or KILN_CPU_FEATURES hides them.
  FmaPeakResult bf16DotPeak;
  /// Likewise for int8 dot products (no VNNI, or none asked for: 0).
  FmaPeakResult int8DotPeak;
};

/// Measures the limits on `pool`'s threads (the bf16 and int8 dot peaks if
/// asked).
MachineProbeResult probeMachine(ThreadPool &pool,
                                const MachineProbeOptions &options = {});

/// The triad described above, with three arrays of `arrayBytes` each
/// (rounded down to whole chunks of 256 KiB, at least one).
BandwidthResult measureTriadBandwidth(ThreadPool &pool, int64_t arrayBytes,
                                      int repetitions);

/// The read probe described above, its array kept so that it can be
/// sampled again and again: on shared hosts the bandwidth available drifts
/// within seconds (bench/NOTES.md has an example), so a probe taken a minute
/// before a decode run need not bound it. `kiln bench` samples it right before
/// and after every timed decode run, and quotes decode against the best sample.
class ReadBandwidthProbe {
public:
  /// Maps `arrayBytes` (rounded down to whole chunks of 256 KiB, at least
  /// one), touches it from the chunks that will read it, and reads it once.
  ReadBandwidthProbe(ThreadPool &pool, int64_t arrayBytes);
  ~ReadBandwidthProbe();
  ReadBandwidthProbe(const ReadBandwidthProbe &) = delete;
  ReadBandwidthProbe &operator=(const ReadBandwidthProbe &) = delete;

  /// The best of `repetitions` passes over the array, in bytes a second.
  double sample(int repetitions);
  /// The best pass of all samples so far (repetitions: passes in all).
  const BandwidthResult &result() const { return best; }
  /// Each sample's figure, in the order taken.
  const std::vector<double> &sampleBytesPerSecond() const { return samples; }

private:
  struct State;
  ThreadPool &pool;
  std::unique_ptr<State> state;
  BandwidthResult best;
  std::vector<double> samples;
};

/// One sample of a fresh ReadBandwidthProbe over `arrayBytes`.
BandwidthResult measureReadBandwidth(ThreadPool &pool, int64_t arrayBytes,
                                     int repetitions);

/// The read probe's array size for `options`: readArrayBytes, else 3x the
/// triad array size (the default one where that is 0 too).
int64_t readArrayBytes(const MachineProbeOptions &options);

/// The FMA loop described above, `iterations` per chunk (0: about 10 ms of
/// work on a 4 GHz core), four chunks per thread (so a thread that starts late
/// does not leave the others idle at the end of a run).
FmaPeakResult measureFmaPeak(ThreadPool &pool, int64_t iterations,
                             int repetitions);

/// The vdpbf16ps loop described above, as measureFmaPeak runs its loop;
/// an empty result where the CPU cannot run it.
FmaPeakResult measureBf16DotPeak(ThreadPool &pool, int64_t iterations,
                                 int repetitions);

/// The vpdpbusd loop described above (512-bit where the CPU has
/// AVX512_VNNI, else AVX-VNNI's 256-bit form), as measureFmaPeak runs its
/// loop; an empty result where the CPU cannot run either.
FmaPeakResult measureInt8DotPeak(ThreadPool &pool, int64_t iterations,
                                 int repetitions);

/// The last-level cache in bytes as the C library reports it, or 0.
int64_t lastLevelCacheBytes();

/// max(256 MiB, 4/3 of the last-level cache) in whole triad chunks, so
/// that the three arrays hold at least 4x the cache; at most an eighth of
/// physical memory.
int64_t defaultTriadBytes();

} // namespace kiln::runtime

#endif // KILN_RUNTIME_MACHINEPROBE_H
