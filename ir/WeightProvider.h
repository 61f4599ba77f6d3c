//===- WeightProvider.h - Where a module's weights come from ----*- C++ -*-===//
//
// Part of Kiln. The interface between kiln.weight ops and the bytes behind
// them: the reference interpreter reads weights through it, `kiln compile`
// packs them through it (codegen/WeightPacker.h), and frontends implement it
// over model files (frontends/FileWeightProvider.h). It lives in ir/, beside
// the types it names, so none of them links the interpreter for it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_WEIGHTPROVIDER_H
#define KILN_IR_WEIGHTPROVIDER_H

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace kiln {

/// Weights as float32 data, row-major in the declared shape, valid while the
/// provider lives; block-quantized weights also as their blocks.
class WeightProvider {
public:
  virtual ~WeightProvider();
  /// Throws (any std::exception) when the weight cannot be provided.
  virtual const float *getWeight(llvm::StringRef name,
                                 mlir::RankedTensorType type) = 0;
  /// The blocks of a weight whose declared element type is block-quantized
  /// (!kiln.q8_0, !kiln.q4_0), as GGUF stores them: each row's blocks in
  /// order, rows one after another. What `kiln compile` packs for kernels
  /// that read blocks in place. The default throws: a provider that only
  /// has floats cannot give blocks back.
  virtual const uint8_t *getBlocks(llvm::StringRef name,
                                   mlir::RankedTensorType type);
};

} // namespace kiln

#endif // KILN_IR_WEIGHTPROVIDER_H
