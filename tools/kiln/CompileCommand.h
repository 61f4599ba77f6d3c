//===- CompileCommand.h - kiln compile --------------------------*- C++ -*-===//
//
// Part of Kiln's command line. `kiln compile MODEL -o OUT` runs the default
// pipeline for each target, generates and compiles the kernels and writes one
// artifact (docs/artifact.md) with a step library per target. A cache keyed by
// the inputs makes an unchanged recompile instant. `--emit-source DIR` writes
// the generated sources into DIR.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_COMPILECOMMAND_H
#define KILN_TOOLS_KILN_COMPILECOMMAND_H

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

struct CompileOptions {
  std::string model;
  std::string output;
  /// One target spec, or several separated by commas (portable,avx2,avx512;
  /// a ",key=value" override belongs to the target before it).
  std::string target = "native";
  std::string dtype = "f32";
  std::string tokenizer;
  std::string fusionRules;
  std::string tuningFile;
  bool explainFusion = false;
  bool fusion = true; ///< false: --no-fusion (the model as imported)
  int64_t maxTokens = 512;
  int64_t context = 0; ///< KV positions; 0: the model's context length
  bool useCache = true;
  bool quiet = false;
  /// Where to write the generated sources (one subdirectory per target when
  /// there are several), or empty. With it, `output` may be empty.
  std::string emitSource;
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

/// Compiles `options.model`; throws std::exception with a message naming the
/// file, op or tool on failure.
CompileResult compileModel(const CompileOptions &options);

/// The artifact for MODEL in the compile cache, compiling it on a miss
/// (`kiln run MODEL`).
std::string compiledArtifactFor(const CompileOptions &options);

} // namespace kiln

#endif // KILN_TOOLS_KILN_COMPILECOMMAND_H
