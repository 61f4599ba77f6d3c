//===- Tiling.cpp - The kiln.tiles attribute ------------------------------===//
//
// Part of Kiln. See Tiling.h.
//
//===----------------------------------------------------------------------===//

#include "ir/Tiling.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace kiln {

llvm::ArrayRef<llvm::StringLiteral> tileSizeNames(llvm::StringRef kind) {
  static constexpr llvm::StringLiteral gemm[] = {"m", "n", "k", "mr", "nr"};
  static constexpr llvm::StringLiteral attention[] = {"q", "kv"};
  static constexpr llvm::StringLiteral rows[] = {"rows"};
  if (kind == "gemm")
    return gemm;
  if (kind == "attention")
    return attention;
  if (kind == "rows")
    return rows;
  return {};
}

static LogicalResult verifyPhase(Operation *op, StringRef kind,
                                 DictionaryAttr tiles, StringRef phase) {
  auto dict = tiles.getAs<DictionaryAttr>(phase);
  auto error = [&]() {
    return op->emitError() << "'" << kTilesAttrName << "' " << phase << ": ";
  };
  if (!dict)
    return error() << "missing (a dictionary of " << kind << " tile sizes)";
  for (StringRef name : tileSizeNames(kind)) {
    auto size = dict.getAs<IntegerAttr>(name);
    if (!size || size.getInt() < 1)
      return error() << "size '" << name << "' must be a positive integer";
  }
  // Nothing else: every entry is a size code generation reads (the loop
  // order and the parallel loop are fixed per kind, docs/passes/tiling.md).
  for (NamedAttribute entry : dict)
    if (!llvm::is_contained(tileSizeNames(kind), entry.getName().getValue()))
      return error() << "'" << entry.getName().getValue() << "' is not a "
                     << kind << " tile size";
  return success();
}

LogicalResult verifyTilesAttr(Operation *op, Attribute attr) {
  auto tiles = dyn_cast<DictionaryAttr>(attr);
  if (!tiles)
    return op->emitError() << "'" << kTilesAttrName << "' must be a dictionary";
  auto kind = tiles.getAs<StringAttr>("kind");
  if (!kind || tileSizeNames(kind.getValue()).empty())
    return op->emitError() << "'" << kTilesAttrName
                           << "' kind must be \"gemm\", \"attention\" or "
                              "\"rows\"";
  for (StringRef phase : {"decode", "prefill"})
    if (failed(verifyPhase(op, kind.getValue(), tiles, phase)))
      return failure();
  auto from = tiles.getAs<IntegerAttr>("prefill_from");
  if (!from || from.getInt() < 1)
    return op->emitError() << "'" << kTilesAttrName
                           << "' prefill_from must be a positive integer";
  return success();
}

std::optional<int64_t> getTileSize(Operation *op, StringRef phase,
                                   StringRef name) {
  auto tiles = op->getAttrOfType<DictionaryAttr>(kTilesAttrName);
  if (!tiles)
    return std::nullopt;
  auto dict = tiles.getAs<DictionaryAttr>(phase);
  auto size = dict ? dict.getAs<IntegerAttr>(name) : IntegerAttr();
  if (!size)
    return std::nullopt;
  return size.getInt();
}

} // namespace kiln
