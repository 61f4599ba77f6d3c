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
// rounded to nearest even, or Q8_0 / Q4_0 blocks kept as the model file (or
// `--quantize`) made them, interleaved across the panel's rows
// (docs/artifact.md, "Quantized panels"): the kernels read them in place.
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

/// How a packed GEMM weight (or the KV cache, float types only) stores its
/// elements.
enum class PackedType { F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K };

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
/// Whether `type` is a block-quantized one (Q8_0, Q4_0 or a K-quant).
bool isQuantized(PackedType type);
/// Whether `type` is a K-quant (Q4_K, Q5_K, Q6_K: super-blocks of 256).
bool isKQuant(PackedType type);
/// The packed type that keeps `elementType` (an IR weight element type:
/// f32, f16, bf16, !kiln.q8_0, !kiln.q4_0, !kiln.q4_k, !kiln.q5_k,
/// !kiln.q6_k) as it is.
PackedType packedTypeOf(mlir::Type elementType);

/// Quantized panels (docs/artifact.md): per panel of nr rows and block of 32
/// columns, nr f16 scales, then the levels as unsigned bytes, 4 per row and
/// group of 4 columns: Q8_0's 8 groups hold q + 128, Q4_0's 4 chunks hold the
/// block's nibble bytes [4p, 4p + 4) as GGUF stores them.
/// K-quant panels: per panel of nr rows and super-block of 256 columns,
/// each row's scales, mins and level bytes in the layout of
/// codegen/cpu/kernels/KQuant.h (docs/artifact.md).
constexpr int64_t kQuantBlock = 32;
/// Weights of one block along a row: 32, or 256 for K-quants.
int64_t quantizedBlockSize(PackedType type);
/// Bytes of one row's block as GGUF stores it: 34 (Q8_0), 18 (Q4_0), 144
/// (Q4_K), 176 (Q5_K), 210 (Q6_K).
int64_t quantizedBlockBytes(PackedType type);
/// Bytes of one row's super-block in K-quant panels: 148, 180, 210.
int64_t kQuantPanelColumnBytes(PackedType type);

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
  /// Offset of `weight` (block-quantized, as `type`: its element type) as
  /// quantized panels of `nr` rows. Throws naming the
  /// weight when its blocks are of another type.
  int64_t packQuantizedPanels(mlir::Value weight, int64_t nr, PackedType type);
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
  /// The GGUF blocks of `weight` (a kiln.weight or a concat of them along
  /// axis 0), rows one after another; each piece must be `type`.
  std::vector<uint8_t> readBlocks(mlir::Value weight, PackedType type,
                                  std::string &name);
  /// Records a packed entry for the manifest.
  void describe(const std::string &name, const char *layout, int64_t rows,
                int64_t cols, int64_t nr, PackedType type, const char *pairs,
                int64_t offset);
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
