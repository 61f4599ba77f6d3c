//===- ElementType.h - Element types of stored tensors ----------*- C++ -*-===//
//
// Part of Kiln. The element types Kiln reads from model files, their sizes,
// and exact conversion to float. Block layouts are GGUF's: Q8_0 is 32 weights
// as an f16 scale d then 32 int8 q (w = d*q, 34 bytes); Q4_0 is an f16 scale
// then 16 bytes, byte j holding q[j] in its low nibble and q[j+16] in its
// high nibble (w = d*(q-8), 18 bytes).
//
// The K-quants (llama.cpp's ggml-common.h) pack 256 weights, one "super-block"
// of a row, with scales of their own per sub-block:
//
//   Q4_K (144 bytes): f16 d, f16 dmin, 12 bytes of 6-bit scales sc[j] and
//     mins m[j] for the 8 sub-blocks of 32 (unpackKScaleMin), then 128 bytes
//     of nibbles: byte 32*c + l holds weight 64*c + l in its low nibble and
//     weight 64*c + 32 + l in its high nibble (c = 0..3). A weight of
//     sub-block j with level q (0..15) is (d*sc[j])*q - (dmin*m[j]).
//   Q5_K (176 bytes): d, dmin and the 12 scale bytes as Q4_K, then 32 bytes
//     qh of fifth bits (bit 2c of byte l for weight 64*c + l, bit 2c+1 for
//     weight 64*c + 32 + l), then the 128 nibble bytes as Q4_K; levels
//     0..31, w = (d*sc[j])*q - (dmin*m[j]).
//   Q6_K (210 bytes): 128 bytes ql of low 4 bits, 64 bytes qh of high 2 bits,
//     16 int8 scales (one per 16 weights), then f16 d. In each half h (128
//     weights, ql bytes 64h.., qh bytes 32h..) weight 128h + 32*k + l (k =
//     0..3, l = 0..31) takes ql[64h + 32*(k&1) + l]'s low nibble for k < 2
//     and high nibble for k >= 2, and bits 2k..2k+1 of qh[32h + l];
//     w = (d*scale[i/16])*(q - 32).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_FRONTENDS_FORMATS_ELEMENTTYPE_H
#define KILN_FRONTENDS_FORMATS_ELEMENTTYPE_H

#include <cstdint>
#include <optional>
#include <string>

namespace kiln::formats {

enum class ElementType { F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K };

/// "f32", "f16", "bf16", "q8_0", "q4_0", "q4_k", "q5_k", "q6_k" (as in kiln
/// IR).
const char *elementTypeName(ElementType type);

/// Weights per block: 1 for plain types, 32 for Q8_0 and Q4_0, 256 for the
/// K-quants.
int64_t blockSize(ElementType type);

/// Bytes per block: 4, 2, 2, 34, 18, 144, 176, 210.
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

/// The 6-bit scale and min of sub-block `j` (0..7) of a Q4_K or Q5_K block
/// from its 12 scale bytes: for j < 4 the low 6 bits of bytes j and j + 4;
/// for j >= 4 the nibbles of byte j + 4 (scale low, min high) below the top
/// two bits of bytes j - 4 (scale) and j (min).
void unpackKScaleMin(const uint8_t *scales12, int j, uint8_t &scale,
                     uint8_t &min);

/// Converts `n` elements (a whole number of blocks) of `type` at `src`, read
/// little-endian, to floats at `dst`. The K-quants compute each weight with
/// the operations, in the order, of llama.cpp's dequantize_row_q*_K, each
/// rounded to float on its own.
void dequantize(ElementType type, const uint8_t *src, float *dst, int64_t n);

} // namespace kiln::formats

#endif // KILN_FRONTENDS_FORMATS_ELEMENTTYPE_H
