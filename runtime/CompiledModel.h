//===- CompiledModel.h - Run a compiled artifact ----------------*- C++ -*-===//
//
// Part of Kiln. Loads an artifact written by `kiln compile` (docs/artifact.md)
// without MLIR: maps the file, verifies its sections, picks the most capable
// step library this CPU has the features for (an artifact carries one per
// target it was compiled for), loads it and allocates what a step needs (the
// activation arena and a KV cache), then runs steps on a thread pool. A CPU
// library's weights are copied out of the mapped file into transparent huge
// pages where the kernel allows them (decode streams them at the read
// bandwidth there, not in the file's 4 KiB pages); elsewhere, or when asked,
// they stay in the mapped file.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_COMPILEDMODEL_H
#define KILN_RUNTIME_COMPILEDMODEL_H

#include "runtime/Artifact.h"
#include "runtime/HugePageBuffer.h"
#include "runtime/PackedWeight.h"
#include "runtime/PagedKVCache.h"
#include "runtime/StepBatch.h"
#include "runtime/StepLibrary.h"
#include "runtime/ThreadPool.h"
#include "runtime/Tokenizer.h"
#include "runtime/WeightPrefetch.h"
#include "runtime/cuda/CudaStepRunner.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln::runtime {

/// One step library of an artifact: the code compiled for one target and
/// the packed weights it reads (docs/artifact.md, "Step libraries").
struct StepLibraryManifest {
  std::string name;                     ///< the target's name: avx2, avx512
  std::string target;                   ///< target spec it was compiled for
  std::vector<std::string> cpuFeatures; ///< features the code needs
  std::string codeSection;              ///< "code", "code.avx2", ...
  std::string weightsSection;           ///< "weights", "weights.avx2", ...
  std::string weightType; ///< the panels' types: f32, bf16, q4_0+q8_0...
  /// Every packed tensor, in section order.
  std::vector<PackedWeight> weightEntries;
  int64_t maxTokens = 0, arenaBytes = 0;
  std::vector<std::string> kernels;
  /// "cpu", or "cuda": the code is a host step launching the kernels of the
  /// PTX and cubin sections below (runtime/CudaStepABI.h).
  std::string device = "cpu";
  std::string cudaArch;                 ///< sm_90
  std::string ptxSection, cubinSection; ///< "ptx", "cubin"
};

/// The manifest fields the runtime uses (docs/artifact.md).
struct ArtifactManifest {
  std::string kilnVersion;
  // The step library these fields describe: from parseManifest, the first
  // (the one in the "code" and "weights" sections); from
  // CompiledModel::manifest(), the one the model runs.
  std::string target;                   ///< target spec it was compiled for
  std::vector<std::string> cpuFeatures; ///< features the code needs
  std::string weightType; ///< the panels' types: f32, bf16, q4_0+q8_0...
  int64_t maxTokens = 0, arenaBytes = 0;
  std::vector<std::string> kernels;
  /// Every step library, least demanding first; at least one. An artifact
  /// without a "libraries" list has one, described by the fields above.
  std::vector<StepLibraryManifest> libraries;
  size_t library = 0; ///< the entry of `libraries` the fields above describe

  /// Makes the fields above describe `libraries[index]`.
  void describeLibrary(size_t index);

  int64_t vocabSize = 0, contextLength = 0, layers = 0, kvHeads = 0,
          headDim = 0;
  /// Query heads of attention (heads x head_dim is the width attention
  /// works in); 0 in artifacts that predate it.
  int64_t heads = 0;
  /// The attention's sliding window (0: none): cache blocks wholly before
  /// every future token's window are freed.
  int64_t slidingWindow = 0;
  /// The KV cache's element type: f32, f16 or bf16 (`kiln compile
  /// --kv-type`).
  std::string cacheElementType = "f32";
  bool stopsAtEos = false;
};

/// Parses the manifest section; throws ArtifactError naming the field.
ArtifactManifest parseManifest(const std::string &artifactPath,
                               std::string_view json);

/// Which step library a CPU runs: `index` is the most capable library whose
/// required features are all `available` (the one requiring the most
/// features; the first of equals), or empty when none is. `missing[i]` is
/// what library i lacks (empty when it fits).
struct StepLibraryChoice {
  std::optional<size_t> index;
  std::vector<std::vector<std::string>> missing;
};
StepLibraryChoice
chooseStepLibrary(const std::vector<std::vector<std::string>> &required,
                  const std::vector<std::string> &available);

struct CompiledModelOptions {
  int threads = 0;      ///< 0: one per core this process may use
  int maxSequences = 1; ///< sequences the KV cache's block tables hold
  /// Positions a sequence may reach (0: the manifest's context).
  int64_t contextLength = 0;
  /// Bytes of the KV cache's block pool (0: enough for every sequence to
  /// reach the context length).
  int64_t kvMemoryBytes = 0;
  /// Positions per KV cache block: a power of two of at least
  /// kMinKvBlockPositions, so a block holds whole vectors of key positions
  /// on every target (runtime/StepABI.h).
  int32_t kvBlockPositions = 16;
  bool verifyHashes = true;
  /// Copy a CPU library's packed weights into anonymous memory in
  /// transparent huge pages (runtime/HugePageBuffer.h) when the kernel's
  /// policy allows them; false, or no huge pages: read them in the mapped
  /// file, which costs no copy and shares the page cache between processes.
  bool weightsInHugePages = true;
};

/// The widest vector any target has, in floats (AVX-512): the smallest
/// KV cache block a compiled step can read.
constexpr int32_t kMinKvBlockPositions = 16;

class CompiledModel {
public:
  /// Throws ArtifactError naming the file and the problem (corrupt section,
  /// missing CPU feature, ABI mismatch...).
  static std::unique_ptr<CompiledModel>
  load(const std::string &path, const CompiledModelOptions &options = {});
  ~CompiledModel();

  const ArtifactManifest &manifest() const { return info; }
  /// The step library this model runs
  /// (manifest().libraries[manifest().library]).
  const StepLibraryManifest &stepLibrary() const {
    return info.libraries[info.library];
  }
  /// Why it runs that one, as a phrase: "the avx2 step library (this CPU
  /// lacks avx512f, avx512bw, avx512vl, avx512dq for avx512)". `kiln run`
  /// prints it when the artifact has more than one library.
  const std::string &stepLibraryChoice() const { return choice; }
  /// For a CUDA artifact, what its steps run on ("NVIDIA H200, sm_90, ..."
  /// or "the CPU block emulator"); empty for a CPU artifact.
  std::string cudaDevice() const;
  /// The packed weights the step library reads (its weights section, or
  /// the copy of it in huge pages).
  std::string_view weights() const { return weightBytes; }
  /// Whether weights() is a copy in transparent huge pages rather than the
  /// mapped file (CompiledModelOptions::weightsInHugePages).
  bool weightsInHugePages() const { return weightCopy != nullptr; }
  TokenizerSpec tokenizerSpec() const;
  const Artifact &artifact() const { return file; }
  ThreadPool &threadPool() { return *pool; }

  /// Runs one step; returns logits [R, V] row-major. A batch longer than the
  /// compiled max_tokens runs as several steps. Throws on an invalid batch.
  std::vector<float> step(const StepBatch &batch);

  /// Forgets every sequence, returning their KV blocks to the pool.
  void reset();
  /// Forgets sequence `seq`, returning its KV blocks to the pool.
  void freeSequence(int32_t seq);
  /// The paged KV cache the steps read and write.
  PagedKVCache &kvCache() { return *cache; }
  const PagedKVCache &kvCache() const { return *cache; }

  /// Profiling: while enabled, every step adds each kernel call's time to
  /// profile() (one entry per call of the step, named as the library names
  /// them).
  void setProfiling(bool enabled);
  struct ProfileEntry {
    std::string call;
    double seconds = 0;
  };
  std::vector<ProfileEntry> profile() const;

private:
  CompiledModel(Artifact file, StepLibrary library, ArtifactManifest info,
                std::string choice, const CompiledModelOptions &options);
  void runChunk(const StepBatch &batch, size_t begin, size_t end,
                std::vector<float> &logits);

  Artifact file;
  StepLibrary library;
  ArtifactManifest info;
  std::string choice;
  std::string_view weightBytes; ///< into `file`'s mapping or weightCopy
  std::unique_ptr<HugePageBuffer> weightCopy;
  std::unique_ptr<ThreadPool> pool;
  kiln_parallel parallel;
  struct FreeDeleter {
    void operator()(void *p) const;
  };
  std::unique_ptr<void, FreeDeleter> arena; ///< aligned_alloc'd
  std::unique_ptr<PagedKVCache> cache;
  /// The device a CUDA library's steps run on (null for a CPU library).
  std::unique_ptr<cuda::CudaStepRunner> cudaRunner;
  bool profiling = false;
  std::vector<double> callSeconds;
  /// kiln_step_args::weight_prefetch for this machine (WeightPrefetch.h).
  WeightPrefetch weightPrefetch = WeightPrefetch::Lines;
};

} // namespace kiln::runtime

#endif // KILN_RUNTIME_COMPILEDMODEL_H
