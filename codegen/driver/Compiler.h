//===- Compiler.h - Kiln's compiler as a library ----------------*- C++ -*-===//
//
// Part of Kiln's compiler driver. compileModel() is everything between a
// model file and an artifact: it imports the model (frontends/), runs the
// pipeline for each target (passes/), generates and compiles the kernels
// (codegen/) and writes one artifact (docs/artifact.md) with a step library
// per target. A cache keyed by the inputs (CompileCache.h) makes an unchanged
// recompile instant. `kiln compile`, `kiln run MODEL` and `kiln demo` are thin
// callers; so can any program be.
//
// The driver is the one part of codegen/ that reaches frontends/: it ties the
// layers together and is itself used only by tools/ and tests.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_DRIVER_COMPILER_H
#define KILN_CODEGEN_DRIVER_COMPILER_H

#include "passes/target/TargetDescription.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kiln {

struct LoadedModel;

struct CompileOptions {
  std::string model;
  std::string output;
  /// One target spec, or several separated by commas (portable,avx2,avx512;
  /// a ",key=value" override belongs to the target before it).
  std::string target = "native";
  /// The type every matrix is packed as (f32, f16, bf16), or empty: each
  /// keeps the model file's type (bf16 stays bf16, Q8_0/Q4_0 blocks stay
  /// blocks, read in place by integer dot-product kernels).
  std::string dtype;
  /// "q8_0" or "q4_0": quantize the matrices of an f32/f16/bf16 model at
  /// compile time as `llama-quantize --pure` does (formats/Quantize.h:
  /// llama.cpp's reference blocks, 1-D tensors kept), or empty. The blocks
  /// are stored and read in place; with `dtype` they are widened to it.
  std::string quantize;
  /// How the KV cache stores keys and values: f32, f16 or bf16.
  std::string kvType = "f32";
  std::string tokenizer;
  /// A Jinja chat template file stored in place of the model's (or of
  /// Kiln's default when the model has none), or empty.
  std::string chatTemplate;
  std::string fusionRules;
  std::string tuningFile;
  bool explainFusion = false;
  bool fusion = true; ///< false: --no-fusion (the model as imported)
  int64_t maxTokens = 512;
  int64_t context = 0; ///< KV positions; 0: the model's context length
  bool useCache = true;
  /// Where to write the generated sources (one subdirectory per target when
  /// there are several), or empty. With it, `output` may be empty.
  std::string emitSource;
  /// Called as each stage starts ("importing m.gguf", "avx2: compiling 12
  /// kernels"), with the number of the stage and how many there are.
  std::function<void(int stage, int stages, const std::string &what)> progress;
  /// Called with each notice worth telling the user (e.g. that quantized
  /// weights are widened); the compile goes on.
  std::function<void(const std::string &message)> notice;
};

struct CompileResult {
  std::string artifact;             ///< empty when only sources were asked for
  std::vector<std::string> targets; ///< the targets' names, as compiled
  size_t sourcesWritten = 0;        ///< files written under emitSource
  bool fromCache = false;
  double seconds = 0;
};

/// Splits a --target list into target specs: "portable,avx2,cores=4,avx512"
/// gives "portable", "avx2,cores=4" and "avx512".
std::vector<std::string> splitTargetList(const std::string &list);

/// The targets of a --target list: CPU targets, no two needing the same CPU
/// features (the runtime could not choose between their libraries). Throws
/// std::runtime_error naming the spec at fault.
std::vector<target::TargetDescription>
parseCompileTargets(const std::string &list);

/// Compiles `options.model`; throws std::exception with a message naming the
/// file, op or tool on failure.
CompileResult compileModel(const CompileOptions &options);

/// The artifact for `options.model` in the compile cache, compiling it on a
/// miss (`kiln run MODEL`). `options.output` is ignored.
std::string compiledArtifactFor(const CompileOptions &options);

/// Writes the generated sources an artifact carries (its "sources" section,
/// each library's subdirectory included) under `dir`; returns how many files
/// it wrote. Throws naming the artifact or file at fault.
size_t extractSources(const std::string &artifact, const std::string &dir);

/// Runs Kiln's fusion passes (`builtin`) and then the user rules of
/// `rulesFile` (when not empty) on `model`'s module in place: `kiln run
/// --fusion` and `--fusion-rules` experiments in the interpreter.
void fuseLoadedModel(LoadedModel &model, bool builtin, bool explain,
                     const std::string &rulesFile);

} // namespace kiln

#endif // KILN_CODEGEN_DRIVER_COMPILER_H
