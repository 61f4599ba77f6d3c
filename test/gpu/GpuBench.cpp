//===- GpuBench.cpp - kiln-gpu-bench: bandwidth and model timings ---------===//
//
// Part of Kiln's GPU check (test/gpu/run.sh). MLIR-free: the runtime, the
// CUDA driver it opens, and NVRTC for the probe kernel.
//
//   kiln-gpu-bench bandwidth [--gib N] [--repeats R]
//     The device's read bandwidth: ReadProbe.cuh (the kernel library's
//     probe, 16-byte loads as the GEMV's) over an N GiB buffer (default 4,
//     far beyond the L2), best of R timed passes (default 20). This is the
//     limit decode is measured against: a pass reads every byte once, as a
//     decode step reads every weight once.
//
//   kiln-gpu-bench model ARTIFACT [--prompt P] [--decode D]
//     Prefill of one P-token prompt (default 512, best of 3) and D greedy
//     decode steps after it (default 128), random token ids, one sequence;
//     and the bytes a decode step must read (every GEMM weight, one
//     embedding row, the norms), for the limit.
//
// Each prints one line of JSON on stdout. Timings include what a user's
// step includes: the logits' copy back to the host.
//
//===----------------------------------------------------------------------===//

#include "codegen/cuda/CudaKernelLibrary.h"
#include "codegen/cuda/Nvrtc.h"
#include "runtime/CompiledModel.h"
#include "runtime/StepBatch.h"
#include "runtime/cuda/CudaObjects.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>
#include <string>

namespace rc = kiln::runtime::cuda;
using kiln::runtime::CompiledModel;
using kiln::runtime::StepBatch;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// The value of `--name VALUE` in argv[first...], or `fallback`.
double option(int argc, char **argv, int first, const char *name,
              double fallback) {
  for (int i = first; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0)
      return std::atof(argv[i + 1]);
  return fallback;
}

int bandwidth(int argc, char **argv) {
  double gib = option(argc, argv, 2, "--gib", 4);
  int repeats = int(option(argc, argv, 2, "--repeats", 20));
  rc::CudaDriver driver;
  rc::CudaDevice device(driver, 0);
  kiln::codegen::cuda::NvrtcOptions nvrtc;
  nvrtc.arch = device.info().architecture();
  for (const auto &file : kiln::codegen::cuda::cudaKernelLibrary())
    nvrtc.headers.push_back({file.name, file.text});
  const char *source =
      "#include \"ReadProbe.cuh\"\nusing namespace kiln::cuda;\n"
      "KILN_KERNEL(256) probe(u32 *out, const void *data, i64 chunks) {\n"
      "  read_probe(out, data, chunks);\n}\n";
  auto compiled =
      kiln::codegen::cuda::compileWithNvrtc(source, "probe.cu", nvrtc);
  rc::CudaModule module(
      driver, std::string_view(compiled.cubin.data(), compiled.cubin.size()),
      "probe.cu");
  rc::CudaKernel kernel = module.kernel("probe");

  size_t bytes = size_t(gib * (1ull << 30)) / 16 * 16;
  int64_t chunks = int64_t(bytes / 16);
  // Enough resident warps to keep every SM's loads in flight: 8 blocks of
  // 256 threads per SM, each thread looping over its share.
  unsigned blocks = 8 * unsigned(device.info().smCount);
  rc::DeviceBuffer data(driver, bytes, "probe data");
  data.fill(0x5a);
  rc::DeviceBuffer out(driver, size_t(blocks) * 256 * 4, "probe output");
  rc::CudaStream stream(driver);
  rc::CUdeviceptr dataPointer = data.pointer(), outPointer = out.pointer();
  void *params[] = {&outPointer, &dataPointer, &chunks};
  auto pass = [&] {
    stream.launch(kernel, {blocks, 1, 1}, {256, 1, 1}, 0, params);
  };
  pass(); // the first launch loads the module's code
  stream.synchronize();
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    auto start = Clock::now();
    pass();
    stream.synchronize();
    best = std::min(best, since(start));
  }
  std::printf("{\"device\": \"%s\", \"bytes\": %zu, \"repeats\": %d, "
              "\"best_seconds\": %.6f, \"read_gb_per_second\": %.1f}\n",
              device.info().describe().c_str(), bytes, repeats, best,
              double(bytes) / best / 1e9);
  return 0;
}

int model(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: kiln-gpu-bench model ARTIFACT [--prompt P] "
                         "[--decode D]\n");
    return 2;
  }
  int prompt = int(option(argc, argv, 3, "--prompt", 512));
  int decode = int(option(argc, argv, 3, "--decode", 128));
  kiln::runtime::CompiledModelOptions options;
  options.contextLength = prompt + decode + 1;
  auto m = CompiledModel::load(argv[2], options);
  const auto &info = m->manifest();
  if (prompt > info.maxTokens)
    throw std::runtime_error("--prompt " + std::to_string(prompt) +
                             ": the artifact's steps take at most " +
                             std::to_string(info.maxTokens) + " tokens");
  std::mt19937 random(7);
  std::uniform_int_distribution<int32_t> token(0, int32_t(info.vocabSize) - 1);
  std::vector<int32_t> ids(prompt + decode);
  for (int32_t &id : ids)
    id = token(random);
  auto prefill = [&] {
    StepBatch batch;
    for (int i = 0; i < prompt; ++i)
      batch.addToken(0, ids[i], i, i == prompt - 1);
    return m->step(batch);
  };
  auto decodeStep = [&](int i) {
    StepBatch batch;
    batch.addToken(0, ids[prompt + i], prompt + i, true);
    m->step(batch);
  };
  // Warm-up: module loads, the first direct runs, the decode graph.
  prefill();
  for (int i = 0; i < 4; ++i)
    decodeStep(i);
  double prefillSeconds = 1e30;
  for (int r = 0; r < 3; ++r) {
    m->reset();
    auto start = Clock::now();
    prefill();
    prefillSeconds = std::min(prefillSeconds, since(start));
  }
  auto start = Clock::now();
  for (int i = 0; i < decode; ++i)
    decodeStep(i);
  double decodeSeconds = since(start);

  // What one decode step reads: every GEMM weight, one row of the
  // embedding table, every other row-major weight (norms) whole.
  int64_t stepBytes = 0;
  for (const auto &w : m->stepLibrary().weightEntries)
    stepBytes += w.layout == "rows" && w.rows == info.vocabSize
                     ? w.bytes / std::max<int64_t>(w.rows, 1)
                     : w.bytes;
  std::printf(
      "{\"artifact\": \"%s\", \"device\": \"%s\", \"weights\": \"%s\", "
      "\"prompt_tokens\": %d, \"decode_tokens\": %d, "
      "\"prefill_tokens_per_second\": %.1f, "
      "\"decode_tokens_per_second\": %.1f, \"decode_step_bytes\": %lld}\n",
      argv[2], m->cudaDevice().c_str(), m->stepLibrary().weightType.c_str(),
      prompt, decode, prompt / prefillSeconds, decode / decodeSeconds,
      static_cast<long long>(stepBytes));
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  try {
    if (argc >= 2 && std::strcmp(argv[1], "bandwidth") == 0)
      return bandwidth(argc, argv);
    if (argc >= 2 && std::strcmp(argv[1], "model") == 0)
      return model(argc, argv);
    std::fprintf(stderr, "usage: kiln-gpu-bench bandwidth [--gib N] "
                         "[--repeats R]\n       kiln-gpu-bench model "
                         "ARTIFACT [--prompt P] [--decode D]\n");
    return 2;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "kiln-gpu-bench: %s\n", e.what());
    return 1;
  }
}
