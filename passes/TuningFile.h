//===- TuningFile.h - Tile overrides from a text file -----------*- C++ -*-===//
//
// Part of Kiln. A tuning file overrides the tile sizes --kiln-tile chooses,
// keyed by op kind and shape (docs/passes/tiling.md, "Tuning files"):
//
//   # op     [shape key=value ...]  :  phase    size=value ...
//   matmul   n=512 k=64             :  prefill  mr=4 nr=16 k=32
//   matmul                          :  decode   n=128
//   swiglu   n=172                  :  prefill  k=32
//   attention head_dim=8            :  decode   kv=16
//   norm     d=64                   :  prefill  rows=4
//
// A line applies to every op of its kind whose shape has all the listed
// values; matching lines apply in file order, so a later line wins.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_TUNINGFILE_H
#define KILN_PASSES_TUNINGFILE_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <string>

namespace kiln {

struct TuningEntry {
  std::string kind;               ///< matmul, swiglu, attention, norm
  llvm::StringMap<int64_t> shape; ///< the shape values it requires
  std::string phase;              ///< decode or prefill
  llvm::SmallVector<std::pair<std::string, int64_t>> sizes; ///< overrides
  std::string location; ///< "FILE:LINE", for kiln.tiles source
};

/// The shape keys and tile sizes a kind accepts.
llvm::ArrayRef<llvm::StringLiteral> tuningShapeKeys(llvm::StringRef kind);
llvm::ArrayRef<llvm::StringLiteral> tuningSizeNames(llvm::StringRef kind);

/// Parses the tuning file text `text` read from `path`; errors name the file,
/// the line and what was expected there.
llvm::Expected<llvm::SmallVector<TuningEntry>>
parseTuningFile(llvm::StringRef path, llvm::StringRef text);

/// Registers `--kiln-tuning-file=FILE`, the tuning file --kiln-tile reads
/// when its own `tuning-file` option is empty (kiln-opt calls this).
void registerTilingCLOptions();

/// Reads and parses the tuning file at `path`.
llvm::Expected<llvm::SmallVector<TuningEntry>>
loadTuningFile(llvm::StringRef path);

} // namespace kiln

#endif // KILN_PASSES_TUNINGFILE_H
