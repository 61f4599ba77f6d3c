//===- Tiling.cpp - The kiln.tiles attribute ------------------------------===//
//
// Part of Kiln. See Tiling.h.
//
//===----------------------------------------------------------------------===//

#include "ir/Tiling.h"

#include "ir/KilnAttrs.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

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

LogicalResult verifyTilesAttr(Operation *op, Attribute attr) {
  // The attributes verify their own sizes; here, that it is one of them.
  if (isa<GemmTilesAttr, AttentionTilesAttr, RowsTilesAttr>(attr))
    return success();
  return op->emitError() << "'" << kTilesAttrName
                         << "' must be a #kiln.gemm_tiles, "
                            "#kiln.attention_tiles or #kiln.rows_tiles, not "
                         << attr;
}

/// The size `name` of one phase.
static std::optional<int64_t> phaseSize(Attribute phase, StringRef name) {
  return llvm::TypeSwitch<Attribute, std::optional<int64_t>>(phase)
      .Case([&](GemmPhaseAttr p) -> std::optional<int64_t> {
        if (name == "m")
          return p.getM();
        if (name == "n")
          return p.getN();
        if (name == "k")
          return p.getK();
        if (name == "mr")
          return p.getMr();
        if (name == "nr")
          return p.getNr();
        return std::nullopt;
      })
      .Case([&](AttentionPhaseAttr p) -> std::optional<int64_t> {
        if (name == "q")
          return p.getQ();
        if (name == "kv")
          return p.getKv();
        return std::nullopt;
      })
      .Case([&](RowsPhaseAttr p) -> std::optional<int64_t> {
        if (name == "rows")
          return p.getRows();
        return std::nullopt;
      })
      .Default([](Attribute) { return std::nullopt; });
}

std::optional<int64_t> getTileSize(Operation *op, StringRef phase,
                                   StringRef name) {
  Attribute tiles = op->getAttr(kTilesAttrName);
  auto pick = [&](auto t) -> Attribute {
    return phase == "decode" ? Attribute(t.getDecode())
                             : Attribute(t.getPrefill());
  };
  Attribute chosen =
      llvm::TypeSwitch<Attribute, Attribute>(tiles)
          .Case<GemmTilesAttr, AttentionTilesAttr, RowsTilesAttr>(pick)
          .Default([](Attribute) { return Attribute(); });
  return chosen ? phaseSize(chosen, name) : std::nullopt;
}

std::optional<int64_t> getPrefillFrom(Operation *op) {
  return llvm::TypeSwitch<Attribute, std::optional<int64_t>>(
             op->getAttr(kTilesAttrName))
      .Case<GemmTilesAttr, AttentionTilesAttr, RowsTilesAttr>(
          [](auto t) -> std::optional<int64_t> { return t.getPrefillFrom(); })
      .Default([](Attribute) { return std::nullopt; });
}

} // namespace kiln
