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

/// The loop names an `order` may use for `kind`: the blocked sizes that are
/// loops (not the register block), plus "head" for attention.
static bool isLoopName(StringRef kind, StringRef name) {
  if (kind == "gemm")
    return name == "m" || name == "n" || name == "k";
  if (kind == "attention")
    return name == "head" || name == "q" || name == "kv";
  return kind == "rows" && name == "rows";
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
  auto order = dict.getAs<ArrayAttr>("order");
  if (!order || order.empty())
    return error() << "'order' must list the blocked loops, outermost first";
  for (Attribute loop : order) {
    auto name = dyn_cast<StringAttr>(loop);
    if (!name || !isLoopName(kind, name.getValue()))
      return error() << "'order' holds " << loop << ", not a " << kind
                     << " loop";
  }
  auto parallel = dict.getAs<StringAttr>("parallel");
  if (!parallel || !llvm::is_contained(order.getValue(), Attribute(parallel)))
    return error() << "'parallel' must name a loop of 'order'";
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
