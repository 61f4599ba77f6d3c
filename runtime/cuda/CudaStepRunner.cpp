//===- CudaStepRunner.cpp - Running a CUDA artifact's steps ---------------===//
//
// Part of Kiln. See CudaStepRunner.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaStepRunner.h"

#include "runtime/Artifact.h"
#include "runtime/CudaStepABI.h"
#include "runtime/cuda/CudaObjects.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <utility>

namespace kiln::runtime::cuda {

CudaStepRunner::~CudaStepRunner() = default;

namespace {

using StepFn = int32_t (*)(const kiln_cuda_step_args *);
using ErrorFn = const char *(*)(void);

int64_t roundUp(int64_t bytes) { return (bytes + 255) / 256 * 256; }

/// Steps of at most this many tokens replay as CUDA Graphs.
constexpr int64_t kGraphMaxTokens = 16;

/// The emulator: the step's kernels, compiled for the host into the step
/// library, run on the CPU; device addresses are host addresses, so the
/// step reads the mapped weights, the host KV cache and the caller's
/// buffers in place.
class EmulatedRunner : public CudaStepRunner {
public:
  explicit EmulatedRunner(const CudaStepInputs &in)
      : in(in), arena(static_cast<uint8_t *>(
                    std::aligned_alloc(256, size_t(roundUp(in.arenaBytes))))) {
    if (!arena)
      throw std::bad_alloc();
  }
  ~EmulatedRunner() override { std::free(arena); }

  void step(const kiln_step_args &args) override {
    kiln_cuda_step_args a{};
    a.tokens = args.tokens;
    a.token_ids = args.token_ids;
    a.positions = args.positions;
    a.seq_ids = args.seq_ids;
    a.rows = args.rows;
    a.logit_rows = args.logit_rows;
    a.logits = args.logits;
    a.weights = reinterpret_cast<const uint8_t *>(in.weights.data());
    a.arena = arena;
    a.cache = args.cache;
    a.launch = reinterpret_cast<kiln_cuda_launch_fn>(in.emulatedLaunch);
    if (int32_t status = reinterpret_cast<StepFn>(in.stepFn)(&a); status != 0)
      throw std::runtime_error(in.artifactPath +
                               ": the emulated CUDA step failed with status " +
                               std::to_string(status) + ": " +
                               reinterpret_cast<ErrorFn>(in.emulatedError)());
  }
  std::string describe() const override { return "the CPU block emulator"; }

private:
  CudaStepInputs in;
  uint8_t *arena;
};

/// A GPU through the CUDA driver.
class GpuRunner : public CudaStepRunner {
public:
  explicit GpuRunner(const CudaStepInputs &in)
      : in(in), device(driver, 0),
        module(driver, chooseImage(), in.artifactPath + " kernels"),
        stream(driver) {
    weights = DeviceBuffer(driver, in.weights.size(), "weights");
    weights.copyFromHost(in.weights.data(), in.weights.size());
    arena = DeviceBuffer(driver, size_t(roundUp(in.arenaBytes)), "arena");
    keys = DeviceBuffer(driver, size_t(in.cacheBytes / 2), "KV cache keys");
    values = DeviceBuffer(driver, size_t(in.cacheBytes / 2), "KV cache values");
    size_t tokens = size_t(in.maxTokens);
    tokenIds = DeviceBuffer(driver, tokens * 4, "token ids");
    positions = DeviceBuffer(driver, tokens * 4, "positions");
    seqIds = DeviceBuffer(driver, tokens * 4, "sequence ids");
    logitRows = DeviceBuffer(driver, tokens * 4, "logit rows");
    logits = DeviceBuffer(driver, tokens * size_t(in.vocabSize) * 4, "logits");
    graphs = std::getenv("KILN_CUDA_GRAPHS") == nullptr ||
             std::strcmp(std::getenv("KILN_CUDA_GRAPHS"), "0") != 0;
  }

  void step(const kiln_step_args &args) override {
    size_t t = size_t(args.tokens);
    tokenIds.copyFromHost(args.token_ids, t * 4);
    positions.copyFromHost(args.positions, t * 4);
    seqIds.copyFromHost(args.seq_ids, t * 4);
    logitRows.copyFromHost(args.logit_rows, size_t(args.rows) * 4);
    const kiln_kv_cache &host = *args.cache;
    size_t tableBytes =
        size_t(host.max_seqs) * size_t(host.max_blocks_per_seq) * 4;
    if (tables.size() != tableBytes)
      tables = DeviceBuffer(driver, tableBytes, "KV block tables");
    tables.copyFromHost(host.block_tables, tableBytes);
    cache = host;
    cache.keys = pointer(keys);
    cache.values = pointer(values);
    cache.block_tables = static_cast<const int32_t *>(pointer(tables));

    kiln_cuda_step_args a{};
    a.tokens = args.tokens;
    a.token_ids = static_cast<const int32_t *>(pointer(tokenIds));
    a.positions = static_cast<const int32_t *>(pointer(positions));
    a.seq_ids = static_cast<const int32_t *>(pointer(seqIds));
    a.rows = args.rows;
    a.logit_rows = static_cast<const int32_t *>(pointer(logitRows));
    a.logits = static_cast<float *>(pointer(logits));
    a.weights = static_cast<const uint8_t *>(pointer(weights));
    a.arena = static_cast<uint8_t *>(pointer(arena));
    a.cache = &cache;
    a.launcher = this;
    a.launch = &GpuRunner::launch;
    auto run = [&] {
      if (int32_t status = reinterpret_cast<StepFn>(in.stepFn)(&a); status != 0)
        throw std::runtime_error(in.artifactPath +
                                 ": the CUDA step failed with status " +
                                 std::to_string(status) + ": " + lastError);
    };
    // Graphs for decode-sized steps, where a hundred launches would cost
    // more than the work; a prefill chunk launches directly (its launch
    // cost is small beside its work, and prompt lengths vary without end).
    if (graphs && args.tokens <= kGraphMaxTokens) {
      // A replay reuses the captured parameters: every address above is
      // fixed for the runner's life (the block tables' buffer is, once
      // sized), so a (tokens, rows) shape is captured once.
      // A new shape runs once directly first: that resolves its kernels
      // (cuModuleGetFunction, which a capture must not call) and is
      // idempotent (the same keys and values appended, the same arena and
      // logits written), so the replay that follows gives the same result.
      auto key = std::make_pair(args.tokens, args.rows);
      auto it = stepGraphs.find(key);
      if (it == stepGraphs.end()) {
        run();
        it = stepGraphs.emplace(key, CudaGraph::capture(stream, run)).first;
      }
      it->second.launch(stream);
    } else {
      run();
    }
    stream.synchronize();
    logits.copyToHost(args.logits,
                      size_t(args.rows) * size_t(in.vocabSize) * 4);
  }

  std::string describe() const override {
    return device.info().describe() + " (" + imageKind + ", driver " +
           driver.versionString() + ")";
  }

private:
  static void *pointer(const DeviceBuffer &b) {
    return reinterpret_cast<void *>(b.pointer());
  }

  /// The cubin when it was compiled for this GPU's architecture, else the
  /// PTX for the driver to compile.
  std::string_view chooseImage() {
    if (device.info().architecture() == in.arch && !in.cubin.empty()) {
      imageKind = "cubin for " + in.arch;
      return in.cubin;
    }
    imageKind = "PTX for " + in.arch + ", compiled by the driver for " +
                device.info().architecture();
    return in.ptx;
  }

  static int32_t launch(void *self, const char *name, const uint32_t grid[3],
                        uint32_t threads, void **params, const size_t *,
                        int32_t) {
    auto *r = static_cast<GpuRunner *>(self);
    try {
      auto it = r->kernels.find(name);
      if (it == r->kernels.end())
        it = r->kernels.emplace(name, r->module.kernel(name)).first;
      r->stream.launch(it->second, {grid[0], grid[1], grid[2]}, {threads, 1, 1},
                       0, params);
      return 0;
    } catch (const std::exception &e) {
      r->lastError = e.what();
      return 4;
    }
  }

  CudaStepInputs in;
  CudaDriver driver;
  CudaDevice device;
  std::string imageKind;
  CudaModule module;
  CudaStream stream;
  DeviceBuffer weights, arena, keys, values, tables, tokenIds, positions,
      seqIds, logitRows, logits;
  kiln_kv_cache cache{};
  std::map<std::string, CudaKernel> kernels;
  std::map<std::pair<int64_t, int64_t>, CudaGraph> stepGraphs;
  bool graphs = true;
  std::string lastError;
};

} // namespace

std::unique_ptr<CudaStepRunner>
CudaStepRunner::create(const CudaStepInputs &in) {
  if (!in.stepFn)
    throw ArtifactError(in.artifactPath + ": its CUDA step library has no "
                                          "kiln_cuda_step");
  const char *emulate = std::getenv(kCudaEmulateEnv);
  if (emulate && std::strcmp(emulate, "1") == 0) {
    if (!in.emulatedLaunch || !in.emulatedError)
      throw ArtifactError(in.artifactPath + ": its CUDA step library carries "
                                            "no emulated kernels");
    return std::make_unique<EmulatedRunner>(in);
  }
  try {
    return std::make_unique<GpuRunner>(in);
  } catch (const CudaError &e) {
    std::string reason = e.what();
    if (!reason.empty() && reason.back() == '.')
      reason.pop_back();
    throw ArtifactError(in.artifactPath + " was compiled for a CUDA GPU (" +
                        in.arch + ") and cannot run here: " + reason +
                        ". Set " + kCudaEmulateEnv +
                        "=1 to run its kernels in the CPU block emulator "
                        "(slowly), or compile it for a CPU target.");
  }
}

} // namespace kiln::runtime::cuda
