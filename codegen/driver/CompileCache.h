//===- CompileCache.h - Where compiled artifacts are kept -------*- C++ -*-===//
//
// Part of Kiln's compiler driver. Compiling a model takes seconds to minutes;
// running it again should not. The cache keeps each artifact under a key
// that changes whenever anything it was compiled from changes: Kiln's version
// and executable, the options, and the identity (path, size, modification
// time) of every input file. File identity rather than a hash of the contents
// keeps a lookup instant on multi-gigabyte models; touching a file is enough
// to recompile it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_DRIVER_COMPILECACHE_H
#define KILN_CODEGEN_DRIVER_COMPILECACHE_H

#include "codegen/driver/Compiler.h"

#include <filesystem>
#include <string>
#include <vector>

namespace kiln {

/// The cache's directory: $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else
/// ~/.cache/kiln, else a directory under the system's temporary directory.
std::filesystem::path compileCacheDirectory();

/// The key of the artifact `options` compiles for `targets`: 24 hex digits.
/// Only what changes the artifact counts (not `output`, `emitSource`,
/// `useCache`, `explainFusion` or the callbacks).
std::string
compileCacheKey(const CompileOptions &options,
                const std::vector<target::TargetDescription> &targets);

/// The cached artifact's path for `options` (it may not exist yet); creates
/// the cache directory.
std::filesystem::path
compileCachePath(const CompileOptions &options,
                 const std::vector<target::TargetDescription> &targets);

} // namespace kiln

#endif // KILN_CODEGEN_DRIVER_COMPILECACHE_H
