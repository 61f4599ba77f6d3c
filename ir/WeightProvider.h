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

namespace kiln {

/// Weights as float32 data, row-major in the declared shape, valid while the
/// provider lives.
class WeightProvider {
public:
  virtual ~WeightProvider();
  /// Throws (any std::exception) when the weight cannot be provided.
  virtual const float *getWeight(llvm::StringRef name,
                                 mlir::RankedTensorType type) = 0;
};

} // namespace kiln

#endif // KILN_IR_WEIGHTPROVIDER_H
