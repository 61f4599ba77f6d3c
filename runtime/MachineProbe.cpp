//===- MachineProbe.cpp - What this machine can do, measured --------------===//
//
// Part of Kiln. See MachineProbe.h for the method.
//
//===----------------------------------------------------------------------===//

#include "runtime/MachineProbe.h"

#include "runtime/CpuFeatures.h"
#include "runtime/HugePageBuffer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define KILN_PROBE_X86 1
#endif

namespace kiln::runtime {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

//===----------------------------------------------------------------------===//
// Triad
//===----------------------------------------------------------------------===//

/// Elements per chunk: 256 KiB of each array, big enough that the pool's
/// per-chunk cost vanishes, small enough to balance two threads or sixty.
constexpr int64_t kTriadChunk = 64 * 1024;

struct TriadArrays {
  float *a, *b, *c;
  float scalar;
};

void triadInit(void *ctx, int64_t begin, int64_t end) {
  auto *t = static_cast<TriadArrays *>(ctx);
  for (int64_t chunk = begin; chunk < end; ++chunk)
    for (int64_t i = chunk * kTriadChunk; i < (chunk + 1) * kTriadChunk; ++i) {
      t->a[i] = 0.0f;
      t->b[i] = 1.0f;
      t->c[i] = 2.0f;
    }
}

void triadRun(void *ctx, int64_t begin, int64_t end) {
  auto *t = static_cast<TriadArrays *>(ctx);
  float *__restrict a = t->a;
  const float *__restrict b = t->b;
  const float *__restrict c = t->c;
  const float s = t->scalar;
  for (int64_t i = begin * kTriadChunk; i < end * kTriadChunk; ++i)
    a[i] = b[i] + s * c[i];
}

/// Page-aligned floats, freed on scope exit.
struct FloatBuffer {
  explicit FloatBuffer(int64_t count) {
    size_t bytes = (size_t(count) * sizeof(float) + 4095) / 4096 * 4096;
    data = static_cast<float *>(std::aligned_alloc(4096, bytes));
    if (!data)
      throw std::bad_alloc();
  }
  ~FloatBuffer() { std::free(data); }
  FloatBuffer(const FloatBuffer &) = delete;
  FloatBuffer &operator=(const FloatBuffer &) = delete;
  float *data;
};

//===----------------------------------------------------------------------===//
// Read bandwidth
//===----------------------------------------------------------------------===//

/// Bytes per chunk of the read probe: the triad's chunk of one array.
constexpr int64_t kReadChunkBytes = kTriadChunk * int64_t(sizeof(float));

/// The read probe's page prefetch: how far ahead, and the page it asks for
/// the first line of (codegen/cpu/kernels/Vector.h's PREFETCH_AHEAD and
/// PREFETCH_PAGE, so the probe reads at least as well as a decode loop).
constexpr int64_t kReadPrefetchAhead = 16384, kReadPrefetchPage = 4096;

/// XOR-folds `bytes` (a multiple of 4096) from `p` (64-byte aligned) into
/// eight independent accumulators; returns the fold so no load is dead.
/// With `pages`, it first asks (prefetcht1) for the first line of the page
/// kReadPrefetchAhead past each page it reads.
using ReadLoop = uint64_t (*)(const unsigned char *p, int64_t bytes,
                              bool pages);

/// Asks for the line kReadPrefetchAhead past `p` into L2. The address is
/// formed as an integer because near the array's end it lies past it: no
/// valid pointer, but harmless to prefetch (prefetches never fault). On x86
/// it is volatile asm, as the kernels' prefetch_line (Vector.h) is: GCC may
/// delete a __builtin_prefetch as dead code, which would leave the probe
/// slower than the loops it bounds.
inline void prefetchPageAhead(const unsigned char *p) {
  uintptr_t at = reinterpret_cast<uintptr_t>(p) + kReadPrefetchAhead;
#if defined(__SSE__)
  __asm__ volatile("prefetcht1 (%0)" : : "r"(at));
#else
  __builtin_prefetch(reinterpret_cast<const void *>(at), 0, 2);
#endif
}

#ifdef KILN_PROBE_X86
__attribute__((target("avx512f"))) uint64_t
readLoopAvx512(const unsigned char *p, int64_t bytes, bool pages) {
  const __m512i *v = reinterpret_cast<const __m512i *>(p);
  __m512i acc[8];
  for (__m512i &a : acc)
    a = _mm512_setzero_si512();
  for (int64_t i = 0; i < bytes / 64; i += 8) {
    if (pages && i * 64 % kReadPrefetchPage == 0)
      prefetchPageAhead(p + i * 64);
#pragma clang loop unroll(full)
    for (int j = 0; j < 8; ++j)
      acc[j] = _mm512_xor_si512(acc[j], _mm512_load_si512(v + i + j));
  }
  for (int j = 1; j < 8; ++j)
    acc[0] = _mm512_xor_si512(acc[0], acc[j]);
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(reinterpret_cast<__m512i *>(lanes), acc[0]);
  uint64_t fold = 0;
  for (uint64_t lane : lanes)
    fold ^= lane;
  return fold;
}

__attribute__((target("avx2"))) uint64_t readLoopAvx2(const unsigned char *p,
                                                      int64_t bytes,
                                                      bool pages) {
  const __m256i *v = reinterpret_cast<const __m256i *>(p);
  __m256i acc[8];
  for (__m256i &a : acc)
    a = _mm256_setzero_si256();
  for (int64_t i = 0; i < bytes / 32; i += 8) {
    if (pages && i * 32 % kReadPrefetchPage == 0)
      prefetchPageAhead(p + i * 32);
#pragma clang loop unroll(full)
    for (int j = 0; j < 8; ++j)
      acc[j] = _mm256_xor_si256(acc[j], _mm256_load_si256(v + i + j));
  }
  for (int j = 1; j < 8; ++j)
    acc[0] = _mm256_xor_si256(acc[0], acc[j]);
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i *>(lanes), acc[0]);
  return lanes[0] ^ lanes[1] ^ lanes[2] ^ lanes[3];
}
#endif

uint64_t readLoopPortable(const unsigned char *p, int64_t bytes, bool pages) {
  const uint64_t *v = reinterpret_cast<const uint64_t *>(p);
  uint64_t acc[8] = {};
  for (int64_t i = 0; i < bytes / 8; i += 8) {
    if (pages && i * 8 % kReadPrefetchPage == 0)
      prefetchPageAhead(p + i * 8);
    for (int j = 0; j < 8; ++j)
      acc[j] ^= v[i + j];
  }
  uint64_t fold = 0;
  for (uint64_t a : acc)
    fold ^= a;
  return fold;
}

std::atomic<uint64_t> gReadSink{0};

struct ReadJob {
  unsigned char *data;
  ReadLoop loop;
  bool pages; // the loop's page prefetch
};

void readInit(void *ctx, int64_t begin, int64_t end) {
  auto *job = static_cast<ReadJob *>(ctx);
  for (int64_t chunk = begin; chunk < end; ++chunk)
    std::fill_n(job->data + chunk * kReadChunkBytes, kReadChunkBytes,
                static_cast<unsigned char>(chunk * 131 + 7));
}

void readRun(void *ctx, int64_t begin, int64_t end) {
  auto *job = static_cast<ReadJob *>(ctx);
  uint64_t fold = 0;
  for (int64_t chunk = begin; chunk < end; ++chunk)
    fold ^= job->loop(job->data + chunk * kReadChunkBytes, kReadChunkBytes,
                      job->pages);
  gReadSink.fetch_xor(fold, std::memory_order_relaxed);
}

//===----------------------------------------------------------------------===//
// FMA peak
//===----------------------------------------------------------------------===//

// Read at run time, so the compiler knows neither value. The chains
// x = x * m + a converge to a / (1 - m) without overflow or denormals.
volatile float gFmaMultiplier = 0.999999f;
volatile float gFmaAddend = 1e-6f;
volatile float gFmaSink = 0.0f;

#ifdef KILN_PROBE_X86
constexpr int kAvx512Chains = 16;
__attribute__((target("avx512f"))) float fmaChainsAvx512(int64_t iterations,
                                                         float m, float a) {
  __m512 acc[kAvx512Chains];
  for (int j = 0; j < kAvx512Chains; ++j)
    acc[j] = _mm512_set1_ps(float(j));
  const __m512 mv = _mm512_set1_ps(m), av = _mm512_set1_ps(a);
  for (int64_t it = 0; it < iterations; ++it)
#pragma clang loop unroll(full)
    for (int j = 0; j < kAvx512Chains; ++j)
      acc[j] = _mm512_fmadd_ps(acc[j], mv, av);
  __m512 sum = acc[0];
  for (int j = 1; j < kAvx512Chains; ++j)
    sum = _mm512_add_ps(sum, acc[j]);
  return _mm512_reduce_add_ps(sum);
}

// x = x + p·q + p·q per lane over bf16 pairs, p = bf16(1e-6 · 0.95...) =
// 2^-20 and q = bf16(0.999999) = 1 (both from the volatile inputs): the
// chains grow by 2^-19 a step, far from overflow.
__attribute__((target("avx512f,avx512bf16"))) float
bf16DotChains(int64_t iterations, float m, float a) {
  __m512 acc[kAvx512Chains];
  for (int j = 0; j < kAvx512Chains; ++j)
    acc[j] = _mm512_set1_ps(float(j));
  const __m512 pv = _mm512_set1_ps(a * 0.95367431640625f),
               qv = _mm512_set1_ps(m);
  const __m512bh p = _mm512_cvtne2ps_pbh(pv, pv),
                 q = _mm512_cvtne2ps_pbh(qv, qv);
  for (int64_t it = 0; it < iterations; ++it)
#pragma clang loop unroll(full)
    for (int j = 0; j < kAvx512Chains; ++j)
      acc[j] = _mm512_dpbf16_ps(acc[j], p, q);
  __m512 sum = acc[0];
  for (int j = 1; j < kAvx512Chains; ++j)
    sum = _mm512_add_ps(sum, acc[j]);
  return _mm512_reduce_add_ps(sum);
}

// x = x + u·s summed over 4 byte pairs per lane, u = s = 1 (1 + the
// volatile inputs' integer parts, both 0): the chains grow by 4 a step, far
// from wrapping in the iterations measurePeak runs.
__attribute__((target("avx512f,avx512vnni"))) float
int8DotChainsAvx512(int64_t iterations, float m, float a) {
  __m512i acc[kAvx512Chains];
  for (int j = 0; j < kAvx512Chains; ++j)
    acc[j] = _mm512_set1_epi32(j);
  const __m512i u = _mm512_set1_epi8(char(1 + int(m))),
                s = _mm512_set1_epi8(char(1 + int(a)));
  for (int64_t it = 0; it < iterations; ++it)
#pragma clang loop unroll(full)
    for (int j = 0; j < kAvx512Chains; ++j)
      acc[j] = _mm512_dpbusd_epi32(acc[j], u, s);
  __m512i sum = acc[0];
  for (int j = 1; j < kAvx512Chains; ++j)
    sum = _mm512_add_epi32(sum, acc[j]);
  return float(_mm512_reduce_add_epi32(sum));
}

constexpr int kAvx2Chains = 12; // of 16 ymm registers, 2 hold m and a

// The 256-bit AVX-VNNI form (VEX-encoded vpdpbusd), as above.
__attribute__((target("avx2,avxvnni"))) float
int8DotChainsAvxVnni(int64_t iterations, float m, float a) {
  __m256i acc[kAvx2Chains];
  for (int j = 0; j < kAvx2Chains; ++j)
    acc[j] = _mm256_set1_epi32(j);
  const __m256i u = _mm256_set1_epi8(char(1 + int(m))),
                s = _mm256_set1_epi8(char(1 + int(a)));
  for (int64_t it = 0; it < iterations; ++it)
#pragma clang loop unroll(full)
    for (int j = 0; j < kAvx2Chains; ++j)
      acc[j] = _mm256_dpbusd_avx_epi32(acc[j], u, s);
  __m256i sum = acc[0];
  for (int j = 1; j < kAvx2Chains; ++j)
    sum = _mm256_add_epi32(sum, acc[j]);
  alignas(32) int32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i *>(lanes), sum);
  int64_t total = 0;
  for (int32_t v : lanes)
    total += v;
  return float(total);
}

__attribute__((target("avx2,fma"))) float fmaChainsAvx2(int64_t iterations,
                                                        float m, float a) {
  __m256 acc[kAvx2Chains];
  for (int j = 0; j < kAvx2Chains; ++j)
    acc[j] = _mm256_set1_ps(float(j));
  const __m256 mv = _mm256_set1_ps(m), av = _mm256_set1_ps(a);
  for (int64_t it = 0; it < iterations; ++it)
#pragma clang loop unroll(full)
    for (int j = 0; j < kAvx2Chains; ++j)
      acc[j] = _mm256_fmadd_ps(acc[j], mv, av);
  __m256 sum = acc[0];
  for (int j = 1; j < kAvx2Chains; ++j)
    sum = _mm256_add_ps(sum, acc[j]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, sum);
  float total = 0;
  for (float v : lanes)
    total += v;
  return total;
}
#endif

constexpr int kScalarChains = 8;
float fmaChainsScalar(int64_t iterations, float m, float a) {
  float acc[kScalarChains];
  for (int j = 0; j < kScalarChains; ++j)
    acc[j] = float(j);
  for (int64_t it = 0; it < iterations; ++it)
    for (int j = 0; j < kScalarChains; ++j)
      acc[j] = acc[j] * m + a;
  float total = 0;
  for (float v : acc)
    total += v;
  return total;
}

struct FmaVariant {
  float (*run)(int64_t iterations, float m, float a);
  const char *isa;
  int lanes, chains;
  /// Operations per lane and instruction: an FMA's 2, a bf16 dot's 4, an
  /// int8 dot's 8 (4 byte products and their 4 additions).
  int flopsPerLane = 2;
};

/// Whether the CPU has `feature` and KILN_CPU_FEATURES (if set) allows it:
/// the override may narrow the choice (to measure an AVX2 peak on an
/// AVX-512 machine) but never widen it into SIGILL.
bool usable(const std::vector<std::string> &detected,
            const std::vector<std::string> &allowed, const char *feature) {
  auto has = [&](const std::vector<std::string> &list) {
    return std::find(list.begin(), list.end(), feature) != list.end();
  };
  return has(detected) && has(allowed);
}

FmaVariant chooseFmaVariant() {
#ifdef KILN_PROBE_X86
  std::vector<std::string> detected = detectCpuFeatures(),
                           allowed = hostCpuFeatures();
  if (usable(detected, allowed, "avx512f"))
    return {fmaChainsAvx512, "avx512f", 16, kAvx512Chains};
  if (usable(detected, allowed, "avx2") && usable(detected, allowed, "fma"))
    return {fmaChainsAvx2, "avx2+fma", 8, kAvx2Chains};
#endif
  return {fmaChainsScalar, "scalar", 1, kScalarChains};
}

/// The bf16 dot loop, where the CPU has it.
std::optional<FmaVariant> chooseBf16DotVariant() {
#ifdef KILN_PROBE_X86
  std::vector<std::string> detected = detectCpuFeatures(),
                           allowed = hostCpuFeatures();
  if (usable(detected, allowed, "avx512f") &&
      usable(detected, allowed, "avx512bf16"))
    return FmaVariant{bf16DotChains, "avx512bf16", 16, kAvx512Chains, 4};
#endif
  return std::nullopt;
}

/// The widest int8 dot loop the CPU has: vpdpbusd, 512- or 256-bit.
std::optional<FmaVariant> chooseInt8DotVariant() {
#ifdef KILN_PROBE_X86
  std::vector<std::string> detected = detectCpuFeatures(),
                           allowed = hostCpuFeatures();
  if (usable(detected, allowed, "avx512f") &&
      usable(detected, allowed, "avx512vnni"))
    return FmaVariant{int8DotChainsAvx512, "avx512vnni", 16, kAvx512Chains, 8};
  if (usable(detected, allowed, "avx2") && usable(detected, allowed, "avxvnni"))
    return FmaVariant{int8DotChainsAvxVnni, "avxvnni", 8, kAvx2Chains, 8};
#endif
  return std::nullopt;
}

/// The widest read loop the CPU runs (and KILN_CPU_FEATURES allows).
std::pair<ReadLoop, const char *> chooseReadLoop() {
#ifdef KILN_PROBE_X86
  std::vector<std::string> detected = detectCpuFeatures(),
                           allowed = hostCpuFeatures();
  if (usable(detected, allowed, "avx512f"))
    return {readLoopAvx512, "avx512f"};
  if (usable(detected, allowed, "avx2"))
    return {readLoopAvx2, "avx2"};
#endif
  return {readLoopPortable, "portable"};
}

struct FmaJob {
  FmaVariant variant;
  int64_t iterations;
  float m, a;
};

void fmaTask(void *ctx, int64_t begin, int64_t end) {
  auto *job = static_cast<FmaJob *>(ctx);
  float total = 0;
  for (int64_t chunk = begin; chunk < end; ++chunk)
    total += job->variant.run(job->iterations, job->m, job->a);
  gFmaSink = total;
}

} // namespace

BandwidthResult measureTriadBandwidth(ThreadPool &pool, int64_t arrayBytes,
                                      int repetitions) {
  int64_t chunks =
      std::max<int64_t>(1, arrayBytes / int64_t(sizeof(float)) / kTriadChunk);
  int64_t elements = chunks * kTriadChunk;
  FloatBuffer a(elements), b(elements), c(elements);
  TriadArrays arrays{a.data, b.data, c.data, 3.0f};
  // First touch by the chunks that will use the pages.
  pool.parallelFor(chunks, 1, triadInit, &arrays);

  BandwidthResult result;
  result.arrayBytes = elements * int64_t(sizeof(float));
  result.repetitions = std::max(repetitions, 1);
  double best = 0;
  for (int r = 0; r < result.repetitions; ++r) {
    Clock::time_point start = Clock::now();
    pool.parallelFor(chunks, 1, triadRun, &arrays);
    double seconds = secondsSince(start);
    if (r == 0 || seconds < best)
      best = seconds;
  }
  result.bytesPerSecond = 3.0 * double(result.arrayBytes) / best;
  return result;
}

struct ReadBandwidthProbe::State {
  explicit State(int64_t bytes) : buffer(bytes) {}
  HugePageBuffer buffer;
  ReadJob job{};
  int64_t chunks = 0;
};

ReadBandwidthProbe::ReadBandwidthProbe(ThreadPool &pool, int64_t arrayBytes)
    : pool(pool) {
  int64_t chunks = std::max<int64_t>(1, arrayBytes / kReadChunkBytes);
  state = std::make_unique<State>(chunks * kReadChunkBytes);
  auto [loop, isa] = chooseReadLoop();
  state->job = ReadJob{state->buffer.data(), loop, false};
  state->chunks = chunks;
  // First touch by the chunks that will read the pages.
  pool.parallelFor(chunks, 1, readInit, &state->job);
  pool.parallelFor(chunks, 1, readRun, &state->job); // warm-up: clocks, TLBs
  best.arrayBytes = chunks * kReadChunkBytes;
  best.isa = isa;
  best.hugePages = state->buffer.hugePages();
}

ReadBandwidthProbe::~ReadBandwidthProbe() = default;

double ReadBandwidthProbe::sample(int repetitions) {
  double fastest = 0;
  for (int r = 0; r < std::max(repetitions, 1); ++r) {
    // Each repetition is a pass without and a pass with the page prefetch.
    for (bool pages : {false, true}) {
      state->job.pages = pages;
      Clock::time_point start = Clock::now();
      pool.parallelFor(state->chunks, 1, readRun, &state->job);
      double seconds = secondsSince(start);
      if (fastest == 0 || seconds < fastest)
        fastest = seconds;
    }
    ++best.repetitions;
  }
  double bytesPerSecond = double(best.arrayBytes) / fastest;
  samples.push_back(bytesPerSecond);
  best.bytesPerSecond = std::max(best.bytesPerSecond, bytesPerSecond);
  return bytesPerSecond;
}

BandwidthResult measureReadBandwidth(ThreadPool &pool, int64_t arrayBytes,
                                     int repetitions) {
  ReadBandwidthProbe probe(pool, arrayBytes);
  probe.sample(repetitions);
  return probe.result();
}

namespace {

/// Runs `variant`'s loop on every thread of `pool` as MachineProbe.h says.
FmaPeakResult measurePeak(ThreadPool &pool, const FmaVariant &variant,
                          int64_t iterations, int repetitions) {
  // By default ~10 ms per chunk at 4 GHz with two FMA ports: 80 M FMAs,
  // `chains` of them an iteration, whatever the vector width.
  if (iterations <= 0)
    iterations = 80'000'000 / variant.chains;
  FmaJob job{variant, iterations, gFmaMultiplier, gFmaAddend};
  int64_t chunks = 4 * int64_t(pool.threads());

  FmaPeakResult result;
  result.isa = job.variant.isa;
  result.lanes = job.variant.lanes;
  result.accumulators = job.variant.chains;
  result.repetitions = std::max(repetitions, 1);
  pool.parallelFor(chunks, 1, fmaTask, &job); // warm-up: vector clocks
  double best = 0;
  for (int r = 0; r < result.repetitions; ++r) {
    Clock::time_point start = Clock::now();
    pool.parallelFor(chunks, 1, fmaTask, &job);
    double seconds = secondsSince(start);
    if (r == 0 || seconds < best)
      best = seconds;
  }
  double flops = double(variant.flopsPerLane) * double(chunks) *
                 double(job.iterations) * double(result.accumulators) *
                 double(result.lanes);
  result.flopsPerSecond = flops / best;
  return result;
}

} // namespace

FmaPeakResult measureFmaPeak(ThreadPool &pool, int64_t iterations,
                             int repetitions) {
  return measurePeak(pool, chooseFmaVariant(), iterations, repetitions);
}

FmaPeakResult measureBf16DotPeak(ThreadPool &pool, int64_t iterations,
                                 int repetitions) {
  std::optional<FmaVariant> variant = chooseBf16DotVariant();
  if (!variant)
    return {};
  return measurePeak(pool, *variant, iterations, repetitions);
}

FmaPeakResult measureInt8DotPeak(ThreadPool &pool, int64_t iterations,
                                 int repetitions) {
  std::optional<FmaVariant> variant = chooseInt8DotVariant();
  if (!variant)
    return {};
  return measurePeak(pool, *variant, iterations, repetitions);
}

int64_t lastLevelCacheBytes() {
#ifdef _SC_LEVEL3_CACHE_SIZE
  long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (l3 > 0)
    return l3;
#endif
#ifdef _SC_LEVEL2_CACHE_SIZE
  long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (l2 > 0)
    return l2;
#endif
  return 0;
}

int64_t defaultTriadBytes() {
  constexpr int64_t kMiB = 1024 * 1024;
  int64_t bytes =
      std::max<int64_t>(256 * kMiB, (4 * lastLevelCacheBytes() + 2) / 3);
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
  if (pages > 0 && pageSize > 0)
    bytes = std::min<int64_t>(bytes, int64_t(pages) * pageSize / 8);
  // Whole chunks, rounded up, so the triad does not round below 4x.
  constexpr int64_t kChunkBytes = kTriadChunk * int64_t(sizeof(float));
  return (bytes + kChunkBytes - 1) / kChunkBytes * kChunkBytes;
}

MachineProbeResult probeMachine(ThreadPool &pool,
                                const MachineProbeOptions &options) {
  MachineProbeResult result;
  result.threads = pool.threads();
  result.fmaPeak =
      measureFmaPeak(pool, options.fmaIterations, options.fmaRepetitions);
  if (options.bf16DotPeak)
    result.bf16DotPeak =
        measureBf16DotPeak(pool, options.fmaIterations, options.fmaRepetitions);
  if (options.int8DotPeak)
    result.int8DotPeak =
        measureInt8DotPeak(pool, options.fmaIterations, options.fmaRepetitions);
  int64_t bytes = options.triadArrayBytes > 0 ? options.triadArrayBytes
                                              : defaultTriadBytes();
  result.bandwidth =
      measureTriadBandwidth(pool, bytes, options.triadRepetitions);
  if (options.readBandwidth)
    result.readBandwidth = measureReadBandwidth(pool, readArrayBytes(options),
                                                options.readRepetitions);
  return result;
}

int64_t readArrayBytes(const MachineProbeOptions &options) {
  if (options.readArrayBytes > 0)
    return options.readArrayBytes;
  return 3 * (options.triadArrayBytes > 0 ? options.triadArrayBytes
                                          : defaultTriadBytes());
}

} // namespace kiln::runtime
