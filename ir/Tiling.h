//===- Tiling.h - The kiln.tiles attribute ----------------------*- C++ -*-===//
//
// Part of Kiln. `kiln.tiles` is the seam between tiling (passes/TileOps.cpp)
// and code generation: the only way loop structure travels from passes to
// kernels. It is a discardable attribute on a compute op, so the IR stays at
// graph level and the reference interpreter ignores it:
//
//   kiln.tiles = #kiln.gemm_tiles<
//     decode = <m = 6, n = 64, k = 768, mr = 6, nr = 16>,   // #kiln.gemm_phase
//     prefill = <m = 96, n = 512, k = 184, mr = 6, nr = 16>,
//     prefill_from = 6,                  // T at which `prefill` applies
//     source = "target avx2">            // and "tuning file F:LINE"s
//
// Three typed attributes (ir/KilnAttrs.td), one per kind of op, verify
// their sizes: #kiln.gemm_tiles (m tokens, n outputs, k reduction, mr x nr
// the register block), #kiln.attention_tiles (q query rows, kv cached
// positions) and #kiln.rows_tiles (rows per task). Each kind's loop order and
// parallel loop are fixed, and code generation reads every size
// (docs/passes/tiling.md says how they are chosen and where each is read).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_TILING_H
#define KILN_IR_TILING_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringRef.h"

#include <optional>

namespace kiln {

inline constexpr llvm::StringLiteral kTilesAttrName = "kiln.tiles";
/// The module attribute naming the target the module was tiled for: its
/// canonical spec (docs/targets.md), which parses back to the same target.
inline constexpr llvm::StringLiteral kTargetAttrName = "kiln.target";

/// The sizes each kind of tiling names, in a fixed order.
llvm::ArrayRef<llvm::StringLiteral> tileSizeNames(llvm::StringRef kind);

/// Checks that a kiln.tiles value is one of the typed tiles attributes
/// (which verify their own sizes).
mlir::LogicalResult verifyTilesAttr(mlir::Operation *op, mlir::Attribute attr);

/// The size `name` of `phase` ("decode" or "prefill") recorded on `op`.
std::optional<int64_t> getTileSize(mlir::Operation *op, llvm::StringRef phase,
                                   llvm::StringRef name);

/// The token (row) count from which `op`'s prefill sizes apply.
std::optional<int64_t> getPrefillFrom(mlir::Operation *op);

} // namespace kiln

#endif // KILN_IR_TILING_H
