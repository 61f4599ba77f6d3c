//===- CompiledModel.h - Run a compiled artifact ----------------*- C++ -*-===//
//
// Part of Kiln. Loads an artifact written by `kiln compile` (docs/artifact.md)
// without MLIR: maps the file, verifies its sections, checks that this CPU
// has the features the code was compiled for, loads the step library and
// allocates what a step needs (the activation arena and a KV cache), then
// runs steps on a thread pool. The weights stay in the mapped file.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_COMPILEDMODEL_H
#define KILN_RUNTIME_COMPILEDMODEL_H

#include "runtime/Artifact.h"
#include "runtime/StepBatch.h"
#include "runtime/StepLibrary.h"
#include "runtime/ThreadPool.h"
#include "runtime/Tokenizer.h"

#include <memory>
#include <string>
#include <vector>

namespace kiln::runtime {

/// The manifest fields the runtime uses (docs/artifact.md).
struct ArtifactManifest {
  std::string kilnVersion;
  std::string target;                   ///< target spec it was compiled for
  std::vector<std::string> cpuFeatures; ///< features the code needs
  std::string weightType;               ///< f32, f16 or bf16
  int64_t vocabSize = 0, contextLength = 0, layers = 0, kvHeads = 0,
          headDim = 0;
  int64_t maxTokens = 0, arenaBytes = 0;
  bool stopsAtEos = false;
  std::vector<std::string> kernels;
};

/// Parses the manifest section; throws ArtifactError naming the field.
ArtifactManifest parseManifest(const std::string &artifactPath,
                               std::string_view json);

struct CompiledModelOptions {
  int threads = 0;      ///< 0: one per core this process may use
  int maxSequences = 1; ///< KV cache slots
  /// Positions per sequence in the KV cache (0: the manifest's context).
  int64_t contextLength = 0;
  bool verifyHashes = true;
};

class CompiledModel {
public:
  /// Throws ArtifactError naming the file and the problem (corrupt section,
  /// missing CPU feature, ABI mismatch...).
  static std::unique_ptr<CompiledModel>
  load(const std::string &path, const CompiledModelOptions &options = {});
  ~CompiledModel();

  const ArtifactManifest &manifest() const { return info; }
  TokenizerSpec tokenizerSpec() const;
  const Artifact &artifact() const { return file; }
  ThreadPool &threadPool() { return *pool; }

  /// Runs one step; returns logits [R, V] row-major. A batch longer than the
  /// compiled max_tokens runs as several steps. Throws on an invalid batch.
  std::vector<float> step(const StepBatch &batch);

  /// Forgets every sequence (the cache is overwritten as positions refill).
  void reset();

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
                const CompiledModelOptions &options);
  void runChunk(const StepBatch &batch, size_t begin, size_t end,
                std::vector<float> &logits);

  Artifact file;
  StepLibrary library;
  ArtifactManifest info;
  std::unique_ptr<ThreadPool> pool;
  kiln_parallel parallel;
  struct FreeDeleter {
    void operator()(void *p) const;
  };
  std::unique_ptr<void, FreeDeleter> arena; ///< aligned_alloc'd
  std::vector<float> keys, values;
  kiln_kv_cache cache;
  bool profiling = false;
  std::vector<double> callSeconds;
};

} // namespace kiln::runtime

#endif // KILN_RUNTIME_COMPILEDMODEL_H
