//===- WeightPacker.h - Weights in the layout kernels read ------*- C++ -*-===//
//
// Part of Kiln. `kiln compile` packs every weight once, at compile time, into
// the layout its kernel reads, and writes them to one blob that the runtime
// mmaps in place (no repacking at load):
//
//  - GEMM weights W[N, K] (matmul, fused_matmul, swiglu's gate and up) as
//    panels of `nr` rows interleaved along K: panel p holds rows
//    [p·nr, p·nr + nr) as K groups of nr consecutive values, rows past N
//    zero. A micro-kernel step then loads nr weights as whole vectors.
//  - Everything else (embedding tables, norm weights, biases) row-major.
//
// Weights packed by kiln.concat (the QKV rule's packed projection) are
// concatenated here, once. Element type: f32, or f16 / bf16 for GEMM panels
// (--dtype), rounded to nearest even.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_WEIGHTPACKER_H
#define KILN_CODEGEN_WEIGHTPACKER_H

#include "ir/WeightProvider.h"
#include "runtime/PackedWeight.h"

#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <cstdint>
#include <fstream>
#include <string>

namespace kiln::codegen {

enum class PackedType { F32, F16, BF16 };

/// How the values of one k row of a panel are ordered.
enum class PanelLayout {
  /// Columns in order: nr values of k, then nr values of k + 1, ...
  Plain,
  /// bf16 only, nr a multiple of 2L for L lanes: each group of 2L columns is
  /// stored as L 32-bit lanes holding columns (c, c + L), so one load widens
  /// to two f32 vectors with a shift and a mask.
  LanePairs,
  /// bf16 only: k rows in pairs (k, k + 1), each column's two values in one
  /// 32-bit lane, K padded with zero to even: the operand order of bf16 dot
  /// products (vdpbf16ps).
  KPairs,
};

llvm::StringRef packedTypeName(PackedType type);
/// Bytes of one element.
int64_t packedTypeBytes(PackedType type);

/// Writes packed weights to a file as they are requested; remembers where
/// each went so a weight read by several kernels the same way is stored
/// once.
class WeightPacker {
public:
  WeightPacker(WeightProvider &provider, const std::string &path);

  /// Offset of `weight` (a kiln.weight, or a kiln.concat of them along axis
  /// 0) packed in panels of `nr` rows, as `type`, laid out as `layout` says
  /// (`lanes`: the kernel's vector width in floats, for LanePairs).
  int64_t packPanels(mlir::Value weight, int64_t nr, PackedType type,
                     PanelLayout layout = PanelLayout::Plain,
                     int64_t lanes = 0);
  /// Offset of `weight` row-major as f32.
  int64_t packPlain(mlir::Value weight);

  /// Flushes and closes the file; returns its size.
  int64_t finish();

  /// What was packed, for the manifest, in section order.
  const std::vector<runtime::PackedWeight> &entries() const {
    return described;
  }

private:
  /// The f32 values of `weight`, row-major (concatenating kiln.concat
  /// pieces). Throws on anything else.
  std::vector<float> read(mlir::Value weight, std::string &name);
  int64_t append(const void *data, int64_t bytes);

  WeightProvider &provider;
  std::ofstream out;
  std::string path;
  int64_t size = 0;
  llvm::StringMap<int64_t> packed; // key -> offset
  std::vector<runtime::PackedWeight> described;
};

} // namespace kiln::codegen

#endif // KILN_CODEGEN_WEIGHTPACKER_H
