//===- Quant.h - Q8_0 and Q4_0 panels and quantized activations -*- C++ -*-===//
//
// Part of Kiln's CPU kernel library. What GEMMs on GGUF Q8_0 and Q4_0
// weights (Gemm.h) and embeddings read from their panels (Gather.h) share:
// the packed layout's constants and the quantization of activation rows.
//
// Panels (codegen/WeightPacker.cpp writes them; docs/quantization.md): a
// weight W[N, K], K a multiple of 32, in panels of NR rows of W (rows past N
// all-zero bytes). With BB = 34 (Q8_0) or 18 (Q4_0) and KB = K / 32, panel p
// starts at byte p * KB * NR * BB and its 32-wide block b at b * NR * BB
// within it, holding
//   - NR f16 scales d, column c's at byte 2c;
//   - then 4 groups of 4 * NR bytes (Q8_0: 8 groups), column c's 4 bytes at
//     4c within each:
//       Q8_0 group g: levels u = q + 128 (q ^ 0x80) of k = 4g .. 4g + 3, a
//         weight is d * (u - 128);
//       Q4_0 chunk p: the GGUF block's quant bytes [4p, 4p + 4) unchanged:
//         low nibbles the levels of k = 4p .. 4p + 3, high nibbles those of
//         k = 16 + 4p .. 16 + 4p + 3, a weight is d * (u - 8).
// One load of 4V bytes is then V 32-bit lanes of 4 consecutive k of one
// column each: the unsigned operand of vpdpbusd (Vector.h's vdot_q8 and
// vdot_q4), against 4 signed activation bytes broadcast to every lane.
//
// Activations are quantized per row and block of 32 as llama.cpp's
// quantize_row_q8_0 (its AVX path) does: amax = max |x|, d = amax / 127
// stored as f16 (and used as that f16's value), id = 127 / amax (0 when
// amax is 0), q = x * id rounded to nearest, ties to even, as int8. A row's
// levels depend on that row alone, so results are batch-invariant.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_KERNELS_QUANT_H
#define KILN_KERNELS_QUANT_H

#include "Vector.h"

namespace kiln::kernels {

/// The weight format of a GEMM's panels: float (wtype float, _Float16 or
/// bf16), GGUF Q8_0 / Q4_0 blocks (wtype uint8_t) in the layout above, or
/// GGUF K-quant super-blocks (wtype uint8_t) in KQuant.h's layout.
enum class Quant { None, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K };

/// Whether `q` is a K-quant (super-blocks of 256, KQuant.h).
constexpr bool is_k_quant(Quant q) {
  return q == Quant::Q4_K || q == Quant::Q5_K || q == Quant::Q6_K;
}

/// Weights per block (GGUF's QK8_0 and QK4_0).
constexpr int64_t QUANT_BLOCK = 32;

/// Bytes of one block: its f16 scale and its levels.
constexpr int64_t quant_block_bytes(Quant q) {
  return q == Quant::Q8_0 ? 34 : q == Quant::Q4_0 ? 18 : 0;
}

/// The level of weight zero (a weight is d * (u - offset)).
constexpr int quant_offset(Quant q) {
  return q == Quant::Q8_0 ? 128 : q == Quant::Q4_0 ? 8 : 0;
}

/// An f16 (IEEE half, its bits) as float.
inline float f16_to_float(uint16_t bits) {
  _Float16 h;
  memcpy(&h, &bits, sizeof h);
  return float(h);
}

/// V f16 block scales (Quant.h's layout) as floats.
inline vfloat vload_f16(const uint8_t *p) {
  return vload(reinterpret_cast<const _Float16 *>(p));
}

/// Rows [begin, end) of x[rows, k] (k a multiple of 32) quantized as
/// described above: q[rows, k] the int8 levels, and per row and block two
/// 32-bit words in `scales` (row r's block b at 2 * (r * k / 32 + b)): d,
/// the f16 scale's value, as a float, and offset * sum(q), as an int32,
/// the term that takes the weights' zero level `offset` out of a dot
/// product with unsigned levels:
///   sum_k (u_k - offset) q_k = dot(u, q) - offset * sum(q),
/// subtracted in integers, so the result is the exact signed dot product
/// whichever offset the ISA's dot product needs (a float subtraction
/// would cancel: both terms are tens of thousands of levels). offset is 0
/// where the dot product reads signed weights.
inline void quantize_rows_q8(const float *x, int8_t *q, float *scales,
                             int64_t k, int offset, int64_t begin,
                             int64_t end) {
  constexpr int B = QUANT_BLOCK, VB = B / V; // vectors per block
  static_assert(B % V == 0, "a block must be whole vectors");
  typedef int8_t vi8 __attribute__((vector_size(V)));
  const int64_t blocks = k / B;
  for (int64_t r = begin; r < end; ++r)
    for (int64_t b = 0; b < blocks; ++b) {
      const float *xb = x + r * k + b * B;
      vfloat v[VB];
      vu32 top{};
      for (int i = 0; i < VB; ++i) {
        v[i] = vload(xb + i * V);
        vu32 bits;
        memcpy(&bits, &v[i], sizeof bits);
        bits &= 0x7fffffffu; // |x|: as unsigned integers they order alike
        top = bits > top ? bits : top;
      }
      uint32_t lanes[V], amaxBits = 0;
      memcpy(lanes, &top, sizeof lanes);
      for (int i = 0; i < V; ++i)
        amaxBits = lanes[i] > amaxBits ? lanes[i] : amaxBits;
      float amax;
      memcpy(&amax, &amaxBits, sizeof amax);
      float d = float(_Float16(amax / 127.0f));
      float id = amax != 0.0f ? 127.0f / amax : 0.0f;
      vi32 sum{};
      for (int i = 0; i < VB; ++i) {
        vi32 level = vround(v[i] * id);
        sum += level;
        vi8 bytes = __builtin_convertvector(level, vi8);
        memcpy(q + r * k + b * B + i * V, &bytes, sizeof bytes);
      }
      int32_t total = 0;
      for (int i = 0; i < V; ++i)
        total += sum[i];
      float *s = scales + 2 * (r * blocks + b);
      int32_t correction = offset * total;
      s[0] = d;
      memcpy(s + 1, &correction, sizeof correction);
    }
}

} // namespace kiln::kernels

#endif // KILN_KERNELS_QUANT_H
