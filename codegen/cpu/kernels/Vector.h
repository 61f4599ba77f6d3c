//===- Vector.h - SIMD vectors and threads for the kernels -----*- C++ -*-===//
//
// Part of Kiln's CPU kernel library. What every kernel family uses: vectors
// of V floats as GCC/Clang vector extensions (one text serves every ISA; the
// compiler picks the instructions from its -m flags), loads of f32, f16 and
// bf16 weights, a vector exp, bf16 dot products, the integer dot products of
// quantized weights (vpdpbusd where the CPU has VNNI), and the runtime's
// thread pool (runtime/StepABI.h).
//
// V is KILN_VECTOR_FLOATS, which generated code defines from the target
// (docs/targets.md); without it, the widest vectors the compiler's flags
// allow.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_KERNELS_VECTOR_H
#define KILN_KERNELS_VECTOR_H

#include "StepABI.h"

#if defined(__SSE2__)
#include <immintrin.h>
#endif
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#ifndef KILN_VECTOR_FLOATS
#if defined(__AVX512F__)
#define KILN_VECTOR_FLOATS 16
#elif defined(__AVX2__)
#define KILN_VECTOR_FLOATS 8
#else
#define KILN_VECTOR_FLOATS 4
#endif
#endif

namespace kiln::kernels {

constexpr int V = KILN_VECTOR_FLOATS; // floats per vector register
typedef float vfloat __attribute__((vector_size(V * sizeof(float))));
typedef int32_t vi32 __attribute__((vector_size(V * sizeof(int32_t))));
typedef uint16_t vu16 __attribute__((vector_size(V * sizeof(uint16_t))));
typedef uint32_t vu32 __attribute__((vector_size(V * sizeof(uint32_t))));
typedef _Float16 vf16 __attribute__((vector_size(V * sizeof(_Float16))));

/// bf16 weights: the top half of an f32 (a distinct type for overloading).
struct bf16 {
  uint16_t bits;
};

// Unaligned loads and stores (memcpy compiles to one instruction).
inline vfloat vload(const float *p) {
  vfloat v;
  memcpy(&v, p, sizeof v);
  return v;
}
/// V bf16 weights, widened by a shift.
inline vfloat vload(const bf16 *p) {
  vu16 h;
  memcpy(&h, p, sizeof h);
  vu32 w = __builtin_convertvector(h, vu32) << 16;
  vfloat v;
  memcpy(&v, &w, sizeof v);
  return v;
}
/// V f16 weights, widened with one vcvtph2ps where the CPU has F16C (GCC 12
/// turns __builtin_convertvector of halves into a conversion per lane).
inline vfloat vload(const _Float16 *p) {
#if KILN_VECTOR_FLOATS == 16 && defined(__AVX512F__)
  // The zero-masked form: GCC 12's plain _mm512_cvtph_ps passes an
  // undefined vector that -Wmaybe-uninitialized reports as an error.
  return (vfloat)_mm512_maskz_cvtph_ps(__mmask16(0xffff),
                                       _mm256_loadu_si256((const __m256i *)p));
#elif KILN_VECTOR_FLOATS == 8 && defined(__F16C__)
  return (vfloat)_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
#elif KILN_VECTOR_FLOATS == 4 && defined(__F16C__)
  return (vfloat)_mm_cvtph_ps(_mm_loadl_epi64((const __m128i *)p));
#else
  vf16 h;
  memcpy(&h, p, sizeof h);
  return __builtin_convertvector(h, vfloat);
#endif
}
inline void vstore(float *p, vfloat v) { memcpy(p, &v, sizeof v); }
/// x in every lane (one vbroadcastss; not 0 + x, which would turn -0 into
/// +0 and, with contraction off, cost an add).
inline vfloat vsplat(float x) {
#if KILN_VECTOR_FLOATS == 16 && defined(__AVX512F__)
  return (vfloat)_mm512_set1_ps(x);
#elif KILN_VECTOR_FLOATS == 8 && defined(__AVX__)
  return (vfloat)_mm256_set1_ps(x);
#elif KILN_VECTOR_FLOATS == 4 && defined(__SSE__)
  return (vfloat)_mm_set1_ps(x);
#else
  vfloat v = {};
  for (int i = 0; i < V; ++i)
    v[i] = x;
  return v;
#endif
}

// Fused multiply-adds. The kernels compile with -ffp-contract=off
// (codegen/cpu/HostCompiler.cpp, test/kernels), so these are the only
// products that fuse with a sum: which ones fuse is written in the kernels,
// not left to the compiler (GCC fuses across statements, Clang within one
// expression, and each picks its own pair in a + b * c + d * e), so an
// artifact computes the same bits whichever compiler built it.

/// a * b + c, rounded once where the target has FMA (one vfmadd), else
/// rounded twice.
inline vfloat vfmadd(vfloat a, vfloat b, vfloat c) {
#if KILN_VECTOR_FLOATS == 16 && defined(__AVX512F__)
  return (vfloat)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
#elif KILN_VECTOR_FLOATS == 8 && defined(__FMA__)
  return (vfloat)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
#elif KILN_VECTOR_FLOATS == 4 && defined(__FMA__)
  return (vfloat)_mm_fmadd_ps((__m128)a, (__m128)b, (__m128)c);
#else
  return a * b + c;
#endif
}
/// a * b + c with a scalar a (broadcast; memory operands fold into the
/// vfmadd's {1toV} form).
inline vfloat vfmadd(float a, vfloat b, vfloat c) {
  return vfmadd(vsplat(a), b, c);
}
/// a * b + c for scalars, rounded once where the target has FMA.
inline float fmadd(float a, float b, float c) {
#if defined(__FMA__)
  return __builtin_fmaf(a, b, c);
#else
  return a * b + c;
#endif
}

/// 2V bf16 values packed as V lanes of (column c, column c + V): the low
/// halves shifted up are columns c, the high halves masked are c + V.
inline void vload_bf16_pair(const bf16 *p, vfloat &low, vfloat &high) {
  vu32 w;
  memcpy(&w, p, sizeof w);
  vu32 lo = w << 16, hi = w & 0xffff0000u;
  memcpy(&low, &lo, sizeof low);
  memcpy(&high, &hi, sizeof high);
}
/// Other weight types never take the pair path; this keeps it compiling.
template <typename T>
inline void vload_bf16_pair(const T *, vfloat &, vfloat &) {}

/// V 32-bit lanes of packed weights as they are (bf16 dot products read
/// them so).
template <typename T> inline vfloat vload_bits(const T *p) {
  vfloat v;
  memcpy(&v, p, sizeof v);
  return v;
}

/// f32 to bf16, rounding to nearest even (as the weight packer rounds).
inline uint16_t to_bf16(float x) {
  uint32_t bits;
  memcpy(&bits, &x, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((bits >> 16) | 0x40u); // NaN stays a (quiet) NaN
  return uint16_t((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

/// acc + w.even * x.even + w.odd * x.odd per lane: w holds V lanes of two
/// bf16 weights (k, k + 1) of one column, `pair` two bf16 activations (k,
/// k + 1). One vdpbf16ps where the CPU has it (twice the FLOPs of an f32
/// FMA); elsewhere the same sums widened to f32.
inline vfloat vdot_bf16(vfloat acc, uint32_t pair, vfloat w) {
#if defined(__AVX512BF16__) && KILN_VECTOR_FLOATS == 16
  __m512i x = _mm512_set1_epi32((int)pair);
  return (vfloat)_mm512_dpbf16_ps((__m512)acc, (__m512bh)x,
                                  (__m512bh)(__m512i)w);
#else
  vu32 bits;
  memcpy(&bits, &w, sizeof bits);
  vu32 even = bits << 16, odd = bits & 0xffff0000u;
  vfloat we, wo;
  memcpy(&we, &even, sizeof we);
  memcpy(&wo, &odd, sizeof wo);
  uint32_t xe = pair << 16, xo = pair & 0xffff0000u;
  float fe, fo;
  memcpy(&fe, &xe, sizeof fe);
  memcpy(&fo, &xo, sizeof fo);
  return vfmadd(fo, wo, vfmadd(fe, we, acc));
#endif
}

/// Rows [begin, end) of x[rows, k] as bf16 pairs: row r of y holds kp / 2
/// 32-bit lanes (x[r][2i], x[r][2i + 1]), the last one padded with zero when
/// k is odd.
inline void to_bf16_pairs(const float *x, uint16_t *y, int64_t k, int64_t kp,
                          int64_t begin, int64_t end) {
  for (int64_t r = begin; r < end; ++r) {
    for (int64_t i = 0; i < k; ++i)
      y[r * kp + i] = to_bf16(x[r * k + i]);
    for (int64_t i = k; i < kp; ++i)
      y[r * kp + i] = 0;
  }
}

/// v rounded to the nearest integer, ties to even (cvtps2dq in the default
/// rounding mode, as llama.cpp's AVX quantize_row_q8_0 rounds; AVX-512
/// states the mode, and its zero-masked form keeps GCC 12 from warning about
/// _mm512_undefined_epi32). Lanes out of int32's range give INT32_MIN.
inline vi32 vround(vfloat v) {
#if KILN_VECTOR_FLOATS == 16 && defined(__AVX512F__)
  return (vi32)_mm512_maskz_cvt_roundps_epi32(
      (__mmask16)-1, (__m512)v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#elif KILN_VECTOR_FLOATS == 8 && defined(__AVX__)
  return (vi32)_mm256_cvtps_epi32((__m256)v);
#elif KILN_VECTOR_FLOATS == 4 && defined(__SSE2__)
  return (vi32)_mm_cvtps_epi32((__m128)v);
#else
  vi32 r;
  for (int i = 0; i < V; ++i)
    r[i] = (int32_t)__builtin_rintf(v[i]);
  return r;
#endif
}

//===--- Integer dot products of quantized weights -----------------------===//
//
// Each 32-bit lane of a weight vector holds 4 byte levels (4 consecutive k
// of one column, Quant.h); x4 holds 4 signed activation levels (in
// -127..127, as Quant.h's quantizer makes them) for the same k, applied to
// every lane. The dot products add, per lane, sum_i w.byte[i] * x4.byte[i]
// to int32 accumulators:
//  - AVX-512 VNNI (V = 16) and AVX-VNNI or AVX-512 VNNI+VL (V = 8): one
//    vpdpbusd, unsigned weights times signed activations, no saturation.
//  - AVX2 and AVX-512BW without VNNI: vpmaddubsw (u8 x s8 pairs summed to
//    int16, saturating) then vpmaddwd by ones to int32. Q4_0 levels (<= 15)
//    cannot saturate: 2 * 15 * 127 per pair, and the two nibble halves of a
//    chunk summed in int16 first still only 4 * 15 * 127. Q8_0 levels (up to
//    255) could, so Q8_0 there multiplies the signed weights q = u - 128:
//    |q| (as unsigned, up to 128) times x with q's sign (in -127..127), at
//    most 2 * 128 * 127 = 32512 per pair; its Q8_DOT_OFFSET is then 0.
//  - portable: the same sums in plain vector-extension code.
// Q8_DOT_OFFSET is the level vdot_q8 treats as weight zero: the caller takes
// offset * sum(x) out of the dot product (Quant.h).
//
//===----------------------------------------------------------------------===//

#if KILN_VECTOR_FLOATS == 16 && defined(__AVX512VNNI__)
#define KILN_DOT_VNNI512 1
#elif KILN_VECTOR_FLOATS == 8 &&                                               \
    (defined(__AVXVNNI__) ||                                                   \
     (defined(__AVX512VNNI__) && defined(__AVX512VL__)))
#define KILN_DOT_VNNI256 1
#elif KILN_VECTOR_FLOATS == 16 && defined(__AVX512BW__)
#define KILN_DOT_MADD512 1
#elif KILN_VECTOR_FLOATS == 8 && defined(__AVX2__)
#define KILN_DOT_MADD256 1
#endif

#if defined(KILN_DOT_MADD512) || defined(KILN_DOT_MADD256)
constexpr int Q8_DOT_OFFSET = 0;
#else
constexpr int Q8_DOT_OFFSET = 128;
#endif

/// V lanes of 4 Q8_0 levels, prepared once per load for vdot_q8: the
/// levels as stored (u), or where vdot_q8 multiplies signed weights, |q| in
/// `a` and q in `b`.
struct vq8 {
  vu32 a, b;
};
inline vq8 vload_q8(const uint8_t *p) {
  vu32 raw;
  memcpy(&raw, p, sizeof raw);
#if defined(KILN_DOT_MADD512)
  __m512i q = _mm512_xor_si512((__m512i)raw, _mm512_set1_epi8(-128));
  return {(vu32)_mm512_abs_epi8(q), (vu32)q};
#elif defined(KILN_DOT_MADD256)
  __m256i q = _mm256_xor_si256((__m256i)raw, _mm256_set1_epi8(-128));
  return {(vu32)_mm256_abs_epi8(q), (vu32)q};
#else
  return {raw, vu32{}};
#endif
}

/// acc + per lane sum_i w.byte[i] * x4.byte[i]: with u the stored levels
/// where Q8_DOT_OFFSET is 128, with q = u - 128 where it is 0.
inline vi32 vdot_q8(vi32 acc, const vq8 &w, uint32_t x4) {
#if defined(KILN_DOT_VNNI512)
  return (vi32)_mm512_dpbusd_epi32((__m512i)acc, (__m512i)w.a,
                                   _mm512_set1_epi32((int)x4));
#elif defined(KILN_DOT_VNNI256) && defined(__AVX512VNNI__)
  return (vi32)_mm256_dpbusd_epi32((__m256i)acc, (__m256i)w.a,
                                   _mm256_set1_epi32((int)x4));
#elif defined(KILN_DOT_VNNI256)
  return (vi32)_mm256_dpbusd_avx_epi32((__m256i)acc, (__m256i)w.a,
                                       _mm256_set1_epi32((int)x4));
#elif defined(KILN_DOT_MADD512)
  // x with q's sign: -x where q < 0 (where q = 0, |q| = 0 anyway).
  __m512i x = _mm512_set1_epi32((int)x4);
  __m512i sx = _mm512_mask_sub_epi8(x, _mm512_movepi8_mask((__m512i)w.b),
                                    _mm512_setzero_si512(), x);
  __m512i pairs = _mm512_maddubs_epi16((__m512i)w.a, sx);
  return acc + (vi32)_mm512_madd_epi16(pairs, _mm512_set1_epi16(1));
#elif defined(KILN_DOT_MADD256)
  __m256i sx = _mm256_sign_epi8(_mm256_set1_epi32((int)x4), (__m256i)w.b);
  __m256i pairs = _mm256_maddubs_epi16((__m256i)w.a, sx);
  return acc + (vi32)_mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
#else
  for (int i = 0; i < 4; ++i)
    acc += (vi32)((w.a >> (8 * i)) & 0xffu) * (int32_t)(int8_t)(x4 >> (8 * i));
  return acc;
#endif
}

/// A Q4_0 block's running dot sums, per lane: int32 where the dot product
/// adds to int32 (VNNI, portable); on the vpmaddubsw paths 16-bit halves
/// (the int16 pair sums, added with vpaddw), widened once per block by
/// vq4_widen instead of once per chunk. That cannot overflow: a block is 4
/// chunks of 2 vpmaddubsw, each 16-bit sum at most 2 * 15 * 127 = 3810 in
/// magnitude, so 8 of them stay within 30480 < 32767.
typedef vi32 vq4acc;

/// acc + per lane sum_i lo.byte[i] * xlo.byte[i] + hi.byte[i] *
/// xhi.byte[i]: one Q4_0 chunk, its low and high nibbles (levels 0..15 in
/// bytes) against the activations of their k. At most 4 chunks (one block)
/// between vq4_widen calls.
inline vq4acc vdot_q4(vq4acc acc, vu32 lo, vu32 hi, uint32_t xlo,
                      uint32_t xhi) {
#if defined(KILN_DOT_VNNI512)
  __m512i a = _mm512_dpbusd_epi32((__m512i)acc, (__m512i)lo,
                                  _mm512_set1_epi32((int)xlo));
  return (vi32)_mm512_dpbusd_epi32(a, (__m512i)hi, _mm512_set1_epi32((int)xhi));
#elif defined(KILN_DOT_VNNI256) && defined(__AVX512VNNI__)
  __m256i a = _mm256_dpbusd_epi32((__m256i)acc, (__m256i)lo,
                                  _mm256_set1_epi32((int)xlo));
  return (vi32)_mm256_dpbusd_epi32(a, (__m256i)hi, _mm256_set1_epi32((int)xhi));
#elif defined(KILN_DOT_VNNI256)
  __m256i a = _mm256_dpbusd_avx_epi32((__m256i)acc, (__m256i)lo,
                                      _mm256_set1_epi32((int)xlo));
  return (vi32)_mm256_dpbusd_avx_epi32(a, (__m256i)hi,
                                       _mm256_set1_epi32((int)xhi));
#elif defined(KILN_DOT_MADD512)
  __m512i pairs = _mm512_add_epi16(
      _mm512_maddubs_epi16((__m512i)lo, _mm512_set1_epi32((int)xlo)),
      _mm512_maddubs_epi16((__m512i)hi, _mm512_set1_epi32((int)xhi)));
  return (vi32)_mm512_add_epi16((__m512i)acc, pairs);
#elif defined(KILN_DOT_MADD256)
  __m256i pairs = _mm256_add_epi16(
      _mm256_maddubs_epi16((__m256i)lo, _mm256_set1_epi32((int)xlo)),
      _mm256_maddubs_epi16((__m256i)hi, _mm256_set1_epi32((int)xhi)));
  return (vi32)_mm256_add_epi16((__m256i)acc, pairs);
#else
  for (int i = 0; i < 4; ++i)
    acc += (vi32)((lo >> (8 * i)) & 0xffu) * (int32_t)(int8_t)(xlo >> (8 * i)) +
           (vi32)((hi >> (8 * i)) & 0xffu) * (int32_t)(int8_t)(xhi >> (8 * i));
  return acc;
#endif
}

/// Whether a Q4_0 chunk's high nibbles can be multiplied where they lie,
/// as 16 * level (raw & 0xf0): where the dot product is one vpdpbusd into
/// int32 (16 * 15 * 127 per byte pair cannot overflow), so a block's high
/// sums, run on their own, come out 16 times too large and exactly so, and
/// one arithmetic shift per block replaces a shift per chunk. The
/// vpmaddubsw paths would saturate their int16 pairs (2 * 240 * 127).
#if defined(KILN_DOT_VNNI512) || defined(KILN_DOT_VNNI256)
constexpr bool Q4_HIGH_IN_PLACE = true;
#else
constexpr bool Q4_HIGH_IN_PLACE = false;
#endif

/// A block's vdot_q4 sums as int32 lanes: the two 16-bit halves added
/// (vpmaddwd by ones) on the vpmaddubsw paths, else as they are.
inline vi32 vq4_widen(vq4acc acc) {
#if defined(KILN_DOT_MADD512)
  return (vi32)_mm512_madd_epi16((__m512i)acc, _mm512_set1_epi16(1));
#elif defined(KILN_DOT_MADD256)
  return (vi32)_mm256_madd_epi16((__m256i)acc, _mm256_set1_epi16(1));
#else
  return acc;
#endif
}

//===--- Integer dot products of K-quant super-blocks --------------------===//
//
// K-quant weights (KQuant.h) carry a scale per sub-block of 16 or 32
// weights, an integer per column: so a sub-block's dot sums are run on
// their own (vdot_u8 into a vqacc), then multiplied by the columns' scales
// into int32 (vqacc_scale). On the vpmaddubsw paths a vqacc holds int16
// pair sums and vqacc_scale is one vpmaddwd against the scale in both
// 16-bit halves of each lane (vscale_lanes), so the scale costs nothing
// extra; elsewhere the sums are int32 and the scale an integer product.
// KQuant.h bounds how many vdot_u8 an int16 vqacc takes.
//
//===----------------------------------------------------------------------===//

/// Dot sums of one run of a sub-block (int16 pairs on the vpmaddubsw
/// paths, else int32).
typedef vi32 vqacc;

/// acc + per lane sum_i w.byte[i] * x4.byte[i]: unsigned weight levels
/// (at most 63) against 4 signed activation levels (-127..127).
inline vqacc vdot_u8(vqacc acc, vu32 w, uint32_t x4) {
#if defined(KILN_DOT_VNNI512)
  return (vi32)_mm512_dpbusd_epi32((__m512i)acc, (__m512i)w,
                                   _mm512_set1_epi32((int)x4));
#elif defined(KILN_DOT_VNNI256) && defined(__AVX512VNNI__)
  return (vi32)_mm256_dpbusd_epi32((__m256i)acc, (__m256i)w,
                                   _mm256_set1_epi32((int)x4));
#elif defined(KILN_DOT_VNNI256)
  return (vi32)_mm256_dpbusd_avx_epi32((__m256i)acc, (__m256i)w,
                                       _mm256_set1_epi32((int)x4));
#elif defined(KILN_DOT_MADD512)
  return (vi32)_mm512_add_epi16(
      (__m512i)acc,
      _mm512_maddubs_epi16((__m512i)w, _mm512_set1_epi32((int)x4)));
#elif defined(KILN_DOT_MADD256)
  return (vi32)_mm256_add_epi16(
      (__m256i)acc,
      _mm256_maddubs_epi16((__m256i)w, _mm256_set1_epi32((int)x4)));
#else
  for (int i = 0; i < 4; ++i)
    acc += (vi32)((w >> (8 * i)) & 0xffu) * (int32_t)(int8_t)(x4 >> (8 * i));
  return acc;
#endif
}

/// acc + per lane sum_i w.byte[i] * x4.byte[i] into int32, any unsigned
/// levels: vdot_q8's vpdpbusd on the stored bytes. Only called where
/// Q4_HIGH_IN_PLACE; elsewhere it is vdot_u8, whose int16 sums on the
/// vpmaddubsw paths would not hold these levels.
inline vi32 vdot_u8_i32(vi32 acc, vu32 w, uint32_t x4) {
#if defined(KILN_DOT_VNNI512) || defined(KILN_DOT_VNNI256)
  return vdot_q8(acc, vq8{w, vu32{}}, x4);
#else
  return vdot_u8(acc, w, x4);
#endif
}

/// Per-lane integer scales s (each within int16) in the form vqacc_scale
/// multiplies by: s in both 16-bit halves on the vpmaddubsw paths, else s.
inline vi32 vscale_lanes(vi32 s) {
#if defined(KILN_DOT_MADD512) || defined(KILN_DOT_MADD256)
  return (s & 0xffff) | (s << 16);
#else
  return s;
#endif
}

/// The run's dot sums times the lanes' scales (vscale_lanes), as int32.
inline vi32 vqacc_scale(vqacc acc, vi32 scale) {
#if defined(KILN_DOT_MADD512)
  return (vi32)_mm512_madd_epi16((__m512i)acc, (__m512i)scale);
#elif defined(KILN_DOT_MADD256)
  return (vi32)_mm256_madd_epi16((__m256i)acc, (__m256i)scale);
#else
  return acc * scale;
#endif
}

/// V lanes of 16-bit pairs from 2V bytes: lane c = (p[2c], p[2c + 1]),
/// sign- or zero-extended.
template <bool SIGNED> inline vi32 vload_byte_pairs(const uint8_t *p) {
#if KILN_VECTOR_FLOATS == 16 && defined(__AVX512BW__)
  __m256i b = _mm256_loadu_si256((const __m256i *)p);
  return (vi32)(SIGNED ? _mm512_cvtepi8_epi16(b) : _mm512_cvtepu8_epi16(b));
#elif KILN_VECTOR_FLOATS == 8 && defined(__AVX2__)
  __m128i b = _mm_loadu_si128((const __m128i *)p);
  return (vi32)(SIGNED ? _mm256_cvtepi8_epi16(b) : _mm256_cvtepu8_epi16(b));
#else
  vi32 r;
  for (int c = 0; c < V; ++c) {
    int lo = SIGNED ? int(int8_t(p[2 * c])) : int(p[2 * c]);
    int hi = SIGNED ? int(int8_t(p[2 * c + 1])) : int(p[2 * c + 1]);
    r[c] = int32_t(uint32_t(uint16_t(lo)) | (uint32_t(uint16_t(hi)) << 16));
  }
  return r;
#endif
}

/// The low and high 16-bit halves of each lane, sign-extended to int32.
inline vi32 vlow16(vi32 pairs) { return (pairs << 16) >> 16; }
inline vi32 vhigh16(vi32 pairs) { return pairs >> 16; }

/// An optimization barrier on v (as Eigen's EIGEN_OPTIMIZATION_BARRIER):
/// the compiler must hold v in a register here, as computed so far. A
/// running integer sum passed through it stays a chain: without it, GCC
/// reassociates a fully unrolled super-block's sum into one tree at the
/// end, keeping every term live until then and spilling them.
template <typename T> inline void vkeep(T &v) {
#if defined(__x86_64__) || defined(__i386__)
  __asm__("" : "+x"(v));
#elif defined(__aarch64__)
  __asm__("" : "+w"(v));
#else
  (void)v;
#endif
}

/// One half (HIGH: the high one) of each lane's int16 pair, as scales in
/// vqacc_scale's form: vscale_lanes(HIGH ? vhigh16(p) : vlow16(p)). On the
/// vpmaddubsw paths that is one byte shuffle copying the half into both.
template <bool HIGH> inline vi32 vscale_half(vi32 pairs) {
#if defined(KILN_DOT_MADD512) || defined(KILN_DOT_MADD256)
  constexpr char b0 = HIGH ? 2 : 0, b1 = HIGH ? 3 : 1;
  const __m128i dup =
      _mm_setr_epi8(b0, b1, b0, b1, b0 + 4, b1 + 4, b0 + 4, b1 + 4, b0 + 8,
                    b1 + 8, b0 + 8, b1 + 8, b0 + 12, b1 + 12, b0 + 12, b1 + 12);
#if defined(KILN_DOT_MADD512)
  return (vi32)_mm512_shuffle_epi8((__m512i)pairs, _mm512_broadcast_i32x4(dup));
#else
  return (vi32)_mm256_shuffle_epi8((__m256i)pairs,
                                   _mm256_broadcastsi128_si256(dup));
#endif
#else
  return HIGH ? vhigh16(pairs) : vlow16(pairs);
#endif
}

/// Per lane a.lo * x.lo + a.hi * x.hi for lanes of int16 pairs a and one
/// int16 pair x (vpmaddwd with x broadcast).
inline vi32 vmadd_pairs(vi32 a, uint32_t x) {
#if KILN_VECTOR_FLOATS == 16 && defined(__AVX512BW__)
  return (vi32)_mm512_madd_epi16((__m512i)a, _mm512_set1_epi32((int)x));
#elif KILN_VECTOR_FLOATS == 8 && defined(__AVX2__)
  return (vi32)_mm256_madd_epi16((__m256i)a, _mm256_set1_epi32((int)x));
#else
  return vlow16(a) * (int32_t)(int16_t)(x & 0xffffu) +
         vhigh16(a) * (int32_t)(int16_t)(x >> 16);
#endif
}

/// exp(x) for V lanes at once (Cephes' expf: Cody-Waite reduction by ln 2
/// and a degree-5 polynomial; within 2 ulp of expf for x in [-87, 88], to
/// which x is clamped). Softmax weights below e^-87 are zero to float
/// precision.
inline vfloat vexp(vfloat x) {
  x = x < -87.0f ? vsplat(-87.0f) : x;
  x = x > 88.0f ? vsplat(88.0f) : x;
  vfloat fx = vfmadd(x, vsplat(1.44269504088896341f), vsplat(0.5f));
  vfloat n = __builtin_convertvector(__builtin_convertvector(fx, vi32), vfloat);
  n = n > fx ? n - 1.0f : n; // floor
  x = vfmadd(n, vsplat(-0.693359375f), x);
  x = vfmadd(n, vsplat(2.12194440e-4f), x);
  vfloat y = vfmadd(x, vsplat(1.9875691500e-4f), vsplat(1.3981999507e-3f));
  y = vfmadd(y, x, vsplat(8.3334519073e-3f));
  y = vfmadd(y, x, vsplat(4.1665795894e-2f));
  y = vfmadd(y, x, vsplat(1.6666665459e-1f));
  y = vfmadd(y, x, vsplat(5.0000001201e-1f));
  y = vfmadd(y * x, x, x) + 1.0f;
  vi32 bits = (__builtin_convertvector(n, vi32) + 127) << 23;
  vfloat scale;
  memcpy(&scale, &bits, sizeof scale);
  return y * scale;
}

/// The largest of a vector's lanes.
inline float hmax(vfloat v) {
  float lanes[V], top = -INFINITY;
  vstore(lanes, v);
  for (int i = 0; i < V; ++i)
    top = lanes[i] > top ? lanes[i] : top;
  return top;
}
/// The sum of a vector's lanes, in lane order.
inline float hsum(vfloat v) {
  float lanes[V], total = 0.0f;
  vstore(lanes, v);
  for (int i = 0; i < V; ++i)
    total += lanes[i];
  return total;
}

/// How far ahead of a GEMM's weight stream its loops ask for cache lines:
/// while a register block reads a panel for the first time (the panels'
/// bytes are consecutive, so "ahead" is the same stream), each step asks
/// for what lies PREFETCH_AHEAD bytes past the bytes it loads, into L2
/// (prefetcht1), as the step's weight_prefetch says (the runtime decides
/// per CPU, runtime/WeightPrefetch.h):
///  - KILN_WEIGHT_PREFETCH_LINES: every line (prefetch_ahead). On a Xeon
///    the hardware streamer alone left decode loops, which compute between
///    loads, at about 70% of a plain read's bandwidth, and it stops at
///    every 4 KiB page; 16 KiB ahead measured best of 4-37 KiB
///    (bench/NOTES.md, v17). On Zen 5 it made the loops slower than none
///    (v23).
///  - KILN_WEIGHT_PREFETCH_PAGES: the first line of each 4 KiB page only
///    (prefetch_page_ahead). On Zen 5 streams read as if the hardware
///    prefetcher too stopped at every page, even within huge pages: one
///    request a page made them about 30% faster, where a request a line
///    made them slower (v24), and the 1B Q4_0 decode read at 87-92% of
///    the read probe, against 67-75% with none (v25).
constexpr int64_t PREFETCH_AHEAD = 16384;

/// The page the hardware prefetchers do not cross.
constexpr int64_t PREFETCH_PAGE = 4096;

/// Asks for the cache line at address `at` into L2 (prefetcht1 on x86):
/// for the weights no hint measured apart from the others (bench/NOTES.md
/// v21), and for the KV cache L2 measured faster than L1 (v28). On x86 the
/// instruction is volatile asm, not __builtin_prefetch: GCC treats the
/// builtin as free of side effects and deleted it from the GEMMs' one-row
/// loops and the KV cache's loop (GCC 12 at -O3; every GCC-compiled
/// artifact ran without those prefetches, bench/NOTES.md v25), and no
/// compiler removes volatile asm. The address is an integer: it may lie
/// past the end of an array, which is harmless, since prefetches never
/// fault.
inline void prefetch_line(uintptr_t at) {
#if defined(__SSE__)
  __asm__ volatile("prefetcht1 (%0)" : : "r"(at));
#else
  __builtin_prefetch(reinterpret_cast<const void *>(at), 0, 2);
#endif
}

/// Prefetches the BYTES bytes PREFETCH_AHEAD past `p` into L2. Addresses
/// past the end of the weights are harmless: prefetches never fault.
template <int64_t BYTES> inline void prefetch_ahead(const void *p) {
  uintptr_t at = reinterpret_cast<uintptr_t>(p) + uintptr_t(PREFETCH_AHEAD);
  for (int64_t line = 0; line < BYTES; line += 64)
    prefetch_line(at + uintptr_t(line));
}

/// Prefetches into L2 the first line of each 4 KiB page that starts within
/// the BYTES bytes PREFETCH_AHEAD past `p`. A loop that calls it for
/// consecutive ranges asks once for every page of its stream.
template <int64_t BYTES> inline void prefetch_page_ahead(const void *p) {
  uintptr_t at = reinterpret_cast<uintptr_t>(p) + uintptr_t(PREFETCH_AHEAD);
  uintptr_t page = (at + PREFETCH_PAGE - 1) / PREFETCH_PAGE * PREFETCH_PAGE;
  for (; page < at + uintptr_t(BYTES); page += PREFETCH_PAGE)
    prefetch_line(page);
}

/// Asks for the weights PREFETCH_AHEAD past `p` (BYTES of them) as `mode`
/// (kiln_step_args::weight_prefetch) says.
template <int64_t BYTES>
inline void prefetch_weights_ahead(int32_t mode, const void *p) {
  if (mode == KILN_WEIGHT_PREFETCH_LINES)
    prefetch_ahead<BYTES>(p);
  else if (mode == KILN_WEIGHT_PREFETCH_PAGES)
    prefetch_page_ahead<BYTES>(p);
}

/// Prefetches into L2 the cache lines [from, to) of one or two byte ranges
/// (a and b; b may be null) spread evenly over the `steps` steps of a loop,
/// which calls step(s) for s = 0, 1, ... in order and finish() at its end.
/// Default-constructed, it fetches nothing. A GEMM's taller row blocks read
/// each panel several times from cache; with this, each read fetches its
/// share of the next panel, so memory streams while the FMAs work (Gemm.h,
/// bench/NOTES.md v20).
class PrefetchSpread {
public:
  PrefetchSpread() = default;
  PrefetchSpread(const void *a, const void *b, int64_t from, int64_t to,
                 int64_t steps)
      : a_(static_cast<const char *>(a)), b_(static_cast<const char *>(b)),
        from_(from), next_(from), to_(to),
        rate_(steps > 0 ? ((to - from) << 16) / steps : 0) {}

  void step(int64_t s) {
    if (a_)
      fetch_to(from_ + (((s + 1) * rate_) >> 16));
  }
  void finish() {
    if (a_)
      fetch_to(to_);
  }

private:
  void fetch_to(int64_t upto) {
    for (; next_ < upto; ++next_) {
      prefetch_line(reinterpret_cast<uintptr_t>(a_) + 64 * next_);
      if (b_)
        prefetch_line(reinterpret_cast<uintptr_t>(b_) + 64 * next_);
    }
  }

  const char *a_ = nullptr, *b_ = nullptr;
  int64_t from_ = 0, next_ = 0, to_ = 0;
  int64_t rate_ = 0; // lines per step, 16 fraction bits
};

/// Seconds on a monotonic clock, for profiles.
inline double now() {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/// Runs body(begin, end) over [0, n) on the runtime's thread pool (in
/// chunks of one item: the items are the kernels' tasks), or inline when
/// there is one thread or one item.
template <typename Body>
inline void parallel(const kiln_step_args *a, int64_t n, const Body &body) {
  if (n <= 0)
    return;
  if (n == 1 || !a->parallel || a->parallel->threads <= 1) {
    body(int64_t(0), n);
    return;
  }
  kiln_task_fn task = [](void *ctx, int64_t begin, int64_t end) {
    (*static_cast<const Body *>(ctx))(begin, end);
  };
  a->parallel->parallel_for(a->parallel->pool, n, 1, task,
                            const_cast<Body *>(&body));
}

/// The largest position of the step plus one: S, the cached positions
/// kiln.kv_read reads for every token.
inline int64_t cached_positions(const kiln_step_args *a) {
  int64_t s = 0;
  for (int64_t t = 0; t < a->tokens; ++t)
    s = a->positions[t] + 1 > s ? a->positions[t] + 1 : s;
  return s;
}

} // namespace kiln::kernels

#endif // KILN_KERNELS_VECTOR_H
