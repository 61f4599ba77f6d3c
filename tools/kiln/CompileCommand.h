//===- CompileCommand.h - kiln compile ---------------------------*- C++
//-*-===//
//
// Part of Kiln's command line. `kiln compile MODEL -o OUT` runs the default
// pipeline for a target, generates and compiles the kernels, packs the
// weights once and writes one artifact (docs/artifact.md). A cache keyed by
// the inputs makes an unchanged recompile instant.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_COMPILECOMMAND_H
#define KILN_TOOLS_KILN_COMPILECOMMAND_H

#include <cstdint>
#include <string>

namespace kiln {

struct CompileOptions {
  std::string model;
  std::string output;
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
};

struct CompileResult {
  std::string artifact;
  bool fromCache = false;
  double seconds = 0;
};

/// Compiles `options.model`; throws std::exception with a message naming the
/// file, op or tool on failure.
CompileResult compileModel(const CompileOptions &options);

/// The artifact for MODEL in the compile cache, compiling it on a miss
/// (`kiln run MODEL`).
std::string compiledArtifactFor(const CompileOptions &options);

} // namespace kiln

#endif // KILN_TOOLS_KILN_COMPILECOMMAND_H
