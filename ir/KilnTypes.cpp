//===- KilnTypes.cpp - Types of the kiln dialect --------------------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "ir/KilnTypes.h"

#include "ir/KilnDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace kiln;

#include "ir/KilnTypeInterfaces.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "ir/KilnTypes.cpp.inc"

void KilnDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "ir/KilnTypes.cpp.inc"
      >();
}

BlockQuantizedTypeInterface kiln::getBlockQuantizedElementType(Type type) {
  if (auto shaped = dyn_cast<ShapedType>(type))
    type = shaped.getElementType();
  return dyn_cast<BlockQuantizedTypeInterface>(type);
}

bool kiln::isActivationElementType(Type type) {
  return type.isF32() || type.isF16() || type.isBF16();
}

//===----------------------------------------------------------------------===//
// Q8_0Type / Q4_0Type / Q4_KType / Q5_KType / Q6_KType
//===----------------------------------------------------------------------===//

// Block layouts follow GGUF (ggml-common.h): Q8_0/Q4_0 an f16 scale, then the
// values; the K-quants super-blocks of 256 (KilnTypes.td).
int64_t Q8_0Type::getBlockSize() const { return 32; }
int64_t Q8_0Type::getBlockBytes() const { return 2 + 32; }
int64_t Q4_0Type::getBlockSize() const { return 32; }
int64_t Q4_0Type::getBlockBytes() const { return 2 + 16; }
int64_t Q4_KType::getBlockSize() const { return 256; }
int64_t Q4_KType::getBlockBytes() const { return 2 + 2 + 12 + 128; }
int64_t Q5_KType::getBlockSize() const { return 256; }
int64_t Q5_KType::getBlockBytes() const { return 2 + 2 + 12 + 32 + 128; }
int64_t Q6_KType::getBlockSize() const { return 256; }
int64_t Q6_KType::getBlockBytes() const { return 128 + 64 + 16 + 2; }

//===----------------------------------------------------------------------===//
// KVCacheType
//===----------------------------------------------------------------------===//

LogicalResult KVCacheType::verify(function_ref<InFlightDiagnostic()> emitError,
                                  int64_t numLayers, int64_t numKvHeads,
                                  int64_t headDim, Type elementType) {
  if (numLayers <= 0)
    return emitError() << "kv_cache: layers must be positive, got "
                       << numLayers;
  if (numKvHeads <= 0)
    return emitError() << "kv_cache: kv_heads must be positive, got "
                       << numKvHeads;
  if (headDim <= 0)
    return emitError() << "kv_cache: head_dim must be positive, got "
                       << headDim;
  if (!isActivationElementType(elementType))
    return emitError() << "kv_cache: element type must be f32, f16 or bf16, "
                          "got "
                       << elementType;
  return success();
}
