//===- KernelBench.cpp - kiln-kernel-bench: the GEMM kernels alone --------===//
//
// Part of Kiln's benchmarks. Times codegen/cpu/kernels/Gemm.h instantiated
// for the host (GemmInstances.cpp) outside any model, where a change to a
// loop can be measured without the noise of a whole step:
//
//   kiln-kernel-bench [--working-set-mib N] [Google Benchmark flags]
//
// Decode loops prefetch their weights in software where the runtime would
// ask them to on this CPU (runtime/WeightPrefetch.h); KILN_WEIGHT_PREFETCH=
// none|lines|pages overrides it, and the context line "weight_prefetch"
// says which.
//
// Each benchmark runs one GEMM for 1 or 16 rows (decode of one sequence, a
// batch of 16) on 1 or more threads of the runtime's ThreadPool, cycling
// through copies of its weights that fill the working set (512 MiB by
// default, more than the caches of the machines Kiln runs on), so the
// weights stream from memory as a model's do. The working set lives in
// transparent huge pages, like a loaded artifact's weights
// (runtime/HugePageBuffer.h). Counters:
//   bytes_per_second  weight bytes read per second
//   GFLOPS            2 * rows * n * k (twice for swiglu) per second
//   of_read           bytes_per_second over the read probe's
//                     (runtime/MachineProbe.h, what `kiln bench` quotes
//                     decode against): as many bytes as the working set,
//                     read by as many threads, in the same process
// The label names the register block (rows x columns).
//
// The read probe also runs as its own benchmark (read/threads:T).
//
//===----------------------------------------------------------------------===//

#include "bench/kernels/GemmInstances.h"
#include "runtime/HugePageBuffer.h"
#include "runtime/MachineProbe.h"
#include "runtime/ThreadPool.h"
#include "runtime/WeightPrefetch.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace kiln::kernel_bench {
namespace {

int64_t workingSetBytes = int64_t(512) << 20;

/// The step's weight_prefetch, as a loaded artifact's would be
/// (runtime/WeightPrefetch.h: KILN_WEIGHT_PREFETCH=none|lines|pages to
/// compare).
runtime::WeightPrefetch weightPrefetch = runtime::WeightPrefetch::Lines;

/// The working set: random floats in [-1, 1), made once.
float *workingSet() {
  static std::unique_ptr<runtime::HugePageBuffer> buffer;
  if (!buffer) {
    buffer = std::make_unique<runtime::HugePageBuffer>(workingSetBytes, true);
    float *f = reinterpret_cast<float *>(buffer->data());
    std::mt19937 rng(1);
    for (int64_t i = 0; i < workingSetBytes / 4; ++i)
      f[i] = float(int32_t(rng()) >> 8) * 0x1p-23f; // [-1, 1)
  }
  return reinterpret_cast<float *>(buffer->data());
}

runtime::ThreadPool &pool(int threads) {
  static std::map<int, std::unique_ptr<runtime::ThreadPool>> pools;
  auto &p = pools[threads];
  if (!p)
    p = std::make_unique<runtime::ThreadPool>(threads);
  return *p;
}

/// The read probe on `threads` threads: runtime/MachineProbe.h's, the one
/// `kiln bench` quotes decode against, over as many bytes as the working
/// set.
runtime::ReadBandwidthProbe &readProbe(int threads) {
  static std::map<int, std::unique_ptr<runtime::ReadBandwidthProbe>> probes;
  auto &p = probes[threads];
  if (!p)
    p = std::make_unique<runtime::ReadBandwidthProbe>(pool(threads),
                                                      workingSetBytes);
  return *p;
}

void readBenchmark(benchmark::State &state, int threads) {
  runtime::ReadBandwidthProbe &probe = readProbe(threads);
  for (auto _ : state)
    state.SetIterationTime(double(probe.result().arrayBytes) / probe.sample(1));
  state.SetBytesProcessed(int64_t(state.iterations()) *
                          probe.result().arrayBytes);
}

void gemmBenchmark(benchmark::State &state, const GemmInstance &gemm,
                   int64_t rows, int threads) {
  const int weights = gemm.swiglu ? 2 : 1;
  // Copies 2 MiB apart, as many as the working set holds (at least one).
  const int64_t stride =
      (gemm.weightBytes + (2 << 20) - 1) / (2 << 20) * (2 << 20);
  const int64_t copies =
      std::max<int64_t>(1, workingSetBytes / (stride * weights));
  if (copies * stride * weights > workingSetBytes) {
    state.SkipWithError("the working set is smaller than one copy of the "
                        "weights; raise --working-set-mib");
    return;
  }
  uint8_t *base = reinterpret_cast<uint8_t *>(workingSet());
  for (int64_t c = 0; c < copies * weights; ++c)
    gemm.prepare(base + c * stride);

  std::mt19937 rng(2);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> x(rows * gemm.k), y(rows * gemm.n);
  for (float &v : x)
    v = uniform(rng);
  std::vector<float> scratch(gemm.scratchBytes(rows) / 4 + 16);
  kiln_parallel parallel = pool(threads).abi();
  kiln_step_args args{};
  args.parallel = &parallel;
  args.weight_prefetch = int32_t(weightPrefetch);

  // The probe's best of 5 passes (and of any earlier samples).
  readProbe(threads).sample(5);
  const double probe = readProbe(threads).result().bytesPerSecond;
  int64_t c = 0;
  for (auto _ : state) {
    const uint8_t *w = base + c * weights * stride;
    gemm.run(&args, rows, x.data(), scratch.data(), w,
             gemm.swiglu ? w + stride : nullptr, y.data());
    c = (c + 1) % copies;
  }
  benchmark::DoNotOptimize(y.data());
  const double perCall = double(gemm.weightBytes) * weights;
  state.SetBytesProcessed(int64_t(double(state.iterations()) * perCall));
  state.counters["GFLOPS"] =
      benchmark::Counter(2.0 * rows * gemm.n * gemm.k * weights * 1e-9 *
                             double(state.iterations()),
                         benchmark::Counter::kIsRate);
  state.SetLabel(std::to_string(gemm.mr) + "x" + std::to_string(gemm.nr));
  state.counters["of_read"] =
      benchmark::Counter(perCall * double(state.iterations()) / probe,
                         benchmark::Counter::kIsRate);
}

} // namespace
} // namespace kiln::kernel_bench

int main(int argc, char **argv) {
  using namespace kiln::kernel_bench;
  // Our flag first; the rest are Google Benchmark's.
  std::vector<char *> rest;
  for (int i = 0; i < argc; ++i) {
    if (i > 0 && std::strcmp(argv[i], "--working-set-mib") == 0 &&
        i + 1 < argc) {
      char *end = nullptr;
      long mib = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || mib < 1 || mib > (1 << 20)) {
        std::fprintf(stderr,
                     "kiln-kernel-bench: --working-set-mib takes a whole "
                     "number of MiB from 1 to 1048576, not '%s'\n",
                     argv[i]);
        return 2;
      }
      workingSetBytes = int64_t(mib) << 20;
      continue;
    }
    rest.push_back(argv[i]);
  }
  int restCount = int(rest.size());
  benchmark::Initialize(&restCount, rest.data());
  if (benchmark::ReportUnrecognizedArguments(restCount, rest.data()))
    return 2;

  const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<int> threadCounts = {1};
  if (cores > 1)
    threadCounts.push_back(std::min(cores, 2));
  if (cores > 2)
    threadCounts.push_back(cores);
  benchmark::AddCustomContext("kernels_compiled_for", compiledFeatures());
  benchmark::AddCustomContext("working_set_mib",
                              std::to_string(workingSetBytes >> 20));
  try {
    weightPrefetch = kiln::runtime::hostWeightPrefetch();
  } catch (const std::exception &e) {
    std::fprintf(stderr, "kiln-kernel-bench: %s\n", e.what());
    return 2;
  }
  benchmark::AddCustomContext("weight_prefetch",
                              kiln::runtime::describeHostWeightPrefetch());
  for (int threads : threadCounts)
    benchmark::RegisterBenchmark(
        ("read/threads:" + std::to_string(threads)).c_str(), readBenchmark,
        threads)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  for (const GemmInstance &gemm : gemmInstances())
    for (int64_t rows : {1, 16})
      for (int threads : threadCounts)
        benchmark::RegisterBenchmark((std::string("gemm/") + gemm.name +
                                      "/rows:" + std::to_string(rows) +
                                      "/threads:" + std::to_string(threads))
                                         .c_str(),
                                     gemmBenchmark, gemm, rows, threads)
            ->UseRealTime()
            ->Unit(benchmark::kMicrosecond);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
