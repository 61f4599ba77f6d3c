//===- ElementType.h - Element types of stored tensors ----------*- C++ -*-===//
//
// Part of Kiln. The element types Kiln reads from model files, their sizes,
// and exact conversion to float. Block layouts are GGUF's: Q8_0 is 32 weights
// as an f16 scale d then 32 int8 q (w = d*q, 34 bytes); Q4_0 is an f16 scale
// then 16 bytes, byte j holding q[j] in its low nibble and q[j+16] in its
// high nibble (w = d*(q-8), 18 bytes).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_FRONTENDS_FORMATS_ELEMENTTYPE_H
#define KILN_FRONTENDS_FORMATS_ELEMENTTYPE_H

#include <cstdint>
#include <optional>
#include <string>

namespace kiln::formats {

enum class ElementType { F32, F16, BF16, Q8_0, Q4_0 };

/// "f32", "f16", "bf16", "q8_0", "q4_0" (as in kiln IR).
const char *elementTypeName(ElementType type);

/// Weights per block: 1 for plain types, 32 for Q8_0 and Q4_0.
int64_t blockSize(ElementType type);

/// Bytes per block: 4, 2, 2, 34, 18.
int64_t blockBytes(ElementType type);

/// Bytes of a row of `n` elements, or nothing if `n` is not a whole number
/// of blocks or the size overflows.
std::optional<uint64_t> rowBytes(ElementType type, int64_t n);

/// IEEE half and bfloat16 to float (exact) and float to them (round to
/// nearest even; NaN stays NaN).
float halfToFloat(uint16_t h);
uint16_t floatToHalf(float f);
float bf16ToFloat(uint16_t b);
uint16_t floatToBf16(float f);

/// Converts `n` elements (a whole number of blocks) of `type` at `src`, read
/// little-endian, to floats at `dst`.
void dequantize(ElementType type, const uint8_t *src, float *dst, int64_t n);

} // namespace kiln::formats

#endif // KILN_FRONTENDS_FORMATS_ELEMENTTYPE_H
