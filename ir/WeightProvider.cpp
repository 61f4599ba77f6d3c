//===- WeightProvider.cpp - Where a module's weights come from ------------===//
//
// Part of Kiln. See WeightProvider.h; this file anchors its vtable.
//
//===----------------------------------------------------------------------===//

#include "ir/WeightProvider.h"

#include <stdexcept>
#include <string>

kiln::WeightProvider::~WeightProvider() = default;

const uint8_t *kiln::WeightProvider::getBlocks(llvm::StringRef name,
                                               mlir::RankedTensorType) {
  throw std::runtime_error("weight '" + name.str() +
                           "': this weight provider has no quantized blocks "
                           "to give");
}
