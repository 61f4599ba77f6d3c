//===- Amx.h - AMX tiles, on the CPU or emulated ----------------*- C++ -*-===//
//
// Part of Kiln's CPU kernel library. The AMX operations Gemm.h's tile path
// uses (Intel SDM vol. 1 ch. 18, vol. 2 TILELOADD, TDPBF16PS, TDPBSSD):
// eight tile registers of up to 16 rows of 64 bytes, shaped by a 64-byte
// configuration, loaded and stored with a row stride, and two dot products
// that add into a tile C[M][N] of 32-bit lanes:
//
//   dot_bf16<C, A, B>   C.f32[m][n] += sum_k A.bf16[m][2k + i] B.bf16[k][2n +
//   i]
//                       (i = 0, then 1, each product rounded to f32 nearest
//                       even, denormal inputs and results flushed to zero)
//   dot_s8s8<C, A, B>   C.i32[m][n] += sum_k sum_i A.s8[m][4k + i] B.s8[k][4n +
//   i]
//
// B's rows are pairs (bf16) or groups of 4 (int8) along the reduction, one
// column a 32-bit lane: the layout of Kiln's bf16 k-pair panels and of its
// quantized panels' 4-byte groups (docs/artifact.md), so B tiles load from
// the panels as they are.
//
// Two implementations of one interface. Compiled with -mamx-tile (and
// -mamx-bf16 / -mamx-int8), the instructions themselves. Compiled with
// KILN_AMX_EMULATE, plain loops over thread-local tiles that follow the
// SDM's pseudocode, so the tile path's addressing, tails and data layout
// are tested on CPUs without AMX (test/kernels, the `amxemu` binary). What
// emulation cannot show: the hardware's rounding inside TDPBF16PS where the
// SDM leaves it open, and speed; the `amx` test binary checks those where
// the CPU has AMX.
//
// A thread must configure the tiles before using them and release them
// afterwards (the kernel's extended state stays small for threads that do
// not use AMX). The OS must have granted the process the tile data state:
// runtime/CpuFeatures.cpp asks Linux for it (arch_prctl) before reporting
// amx-tile.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_KERNELS_AMX_H
#define KILN_KERNELS_AMX_H

#include <stdint.h>
#include <string.h>

#if defined(__AMX_TILE__) && !defined(KILN_AMX_EMULATE)
#include <immintrin.h>
#define KILN_AMX_HARDWARE 1
#endif

#if defined(KILN_AMX_HARDWARE) || defined(KILN_AMX_EMULATE)
#define KILN_AMX 1
#endif

namespace kiln::kernels::amx {

/// Whether this build has a tile path (the instructions or their emulation).
constexpr bool AVAILABLE =
#if defined(KILN_AMX)
    true;
#else
    false;
#endif

constexpr int TILES = 8, ROWS = 16, ROW_BYTES = 64;

/// The LDTILECFG operand: palette 1, then per tile its bytes per row and
/// rows (tiles not named: 0, unused).
struct alignas(64) Config {
  uint8_t palette = 1, startRow = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(Config) == 64, "LDTILECFG reads 64 bytes");

#if defined(KILN_AMX_HARDWARE)

inline void configure(const Config &c) { _tile_loadconfig(&c); }
inline void release() { _tile_release(); }

// The intrinsics take tile numbers as literal tokens; these name them with
// template arguments ("i" operands printed without '$' by %c).
template <int T> inline void zero() {
  __asm__ volatile("tilezero %%tmm%c0" ::"i"(T));
}
template <int T> inline void load(const void *p, int64_t stride) {
  __asm__ volatile("tileloadd (%0,%1,1), %%tmm%c2" ::"r"(p), "r"(stride), "i"(T)
                   : "memory");
}
template <int T> inline void store(void *p, int64_t stride) {
  __asm__ volatile("tilestored %%tmm%c2, (%0,%1,1)" ::"r"(p), "r"(stride),
                   "i"(T)
                   : "memory");
}
template <int C, int A, int B> inline void dot_bf16() {
  __asm__ volatile("tdpbf16ps %%tmm%c2, %%tmm%c1, %%tmm%c0" ::"i"(C), "i"(A),
                   "i"(B));
}
template <int C, int A, int B> inline void dot_s8s8() {
  __asm__ volatile("tdpbssd %%tmm%c2, %%tmm%c1, %%tmm%c0" ::"i"(C), "i"(A),
                   "i"(B));
}

#elif defined(KILN_AMX_EMULATE)

/// A thread's tile registers and configuration.
struct Emulated {
  Config config;
  bool configured = false;
  alignas(64) uint8_t tile[TILES][ROWS * ROW_BYTES];
};
inline Emulated &state() {
  static thread_local Emulated s;
  return s;
}

inline void configure(const Config &c) {
  Emulated &s = state();
  s.config = c;
  s.configured = true;
  memset(s.tile, 0, sizeof s.tile); // LDTILECFG zeroes the tiles
}
inline void release() { state().configured = false; }

/// The tile's storage, trapping (as the CPU faults) when it is unconfigured.
template <int T> inline uint8_t *tile_bytes() {
  static_assert(T >= 0 && T < TILES, "tile numbers are 0..7");
  Emulated &s = state();
  if (!s.configured || s.config.rows[T] == 0)
    __builtin_trap();
  return s.tile[T];
}

template <int T> inline void zero() {
  memset(tile_bytes<T>(), 0, ROWS * ROW_BYTES);
}
template <int T> inline void load(const void *p, int64_t stride) {
  uint8_t *t = tile_bytes<T>();
  const Config &c = state().config;
  memset(t, 0, ROWS * ROW_BYTES); // rows and bytes past the shape are zero
  for (int r = 0; r < c.rows[T]; ++r)
    memcpy(t + r * ROW_BYTES, static_cast<const uint8_t *>(p) + r * stride,
           c.colsb[T]);
}
template <int T> inline void store(void *p, int64_t stride) {
  const uint8_t *t = tile_bytes<T>();
  const Config &c = state().config;
  for (int r = 0; r < c.rows[T]; ++r)
    memcpy(static_cast<uint8_t *>(p) + r * stride, t + r * ROW_BYTES,
           c.colsb[T]);
}

/// f32 with denormals flushed to zero (sign kept), as DAZ and FTZ do.
inline float flush_denormal(float x) {
  uint32_t bits;
  memcpy(&bits, &x, sizeof bits);
  if ((bits & 0x7f800000u) == 0)
    bits &= 0x80000000u;
  memcpy(&x, &bits, sizeof x);
  return x;
}
inline float bf16_value(const uint8_t *p) {
  uint16_t h;
  memcpy(&h, p, sizeof h);
  uint32_t bits = uint32_t(h) << 16;
  float x;
  memcpy(&x, &bits, sizeof x);
  return flush_denormal(x);
}

/// The loops of a tile dot product: for each row m of C, each 32-bit group
/// k of A's row and each column n, lane(c, a, b) with C's lane, A's group
/// and B's group, after the shape checks the CPU makes (else it raises #UD).
template <int C, int A, int B, class Lane> inline void dot_lanes(Lane lane) {
  uint8_t *c = tile_bytes<C>();
  const uint8_t *a = tile_bytes<A>(), *b = tile_bytes<B>();
  const Config &cfg = state().config;
  if (cfg.colsb[A] / 4 != cfg.rows[B] || cfg.rows[C] != cfg.rows[A] ||
      cfg.colsb[C] != cfg.colsb[B])
    __builtin_trap();
  for (int m = 0; m < cfg.rows[C]; ++m)
    for (int k = 0; k < cfg.colsb[A] / 4; ++k)
      for (int n = 0; n < cfg.colsb[C] / 4; ++n)
        lane(c + m * ROW_BYTES + 4 * n, a + m * ROW_BYTES + 4 * k,
             b + k * ROW_BYTES + 4 * n);
}

template <int C, int A, int B> inline void dot_bf16() {
  dot_lanes<C, A, B>([](uint8_t *c, const uint8_t *a, const uint8_t *b) {
    float acc;
    memcpy(&acc, c, sizeof acc);
    for (int i = 0; i < 2; ++i) // each product of bf16s is exact in f32
      acc = flush_denormal(acc + bf16_value(a + 2 * i) * bf16_value(b + 2 * i));
    memcpy(c, &acc, sizeof acc);
  });
}

template <int C, int A, int B> inline void dot_s8s8() {
  dot_lanes<C, A, B>([](uint8_t *c, const uint8_t *a, const uint8_t *b) {
    uint32_t acc; // the CPU's sums wrap at 32 bits
    memcpy(&acc, c, sizeof acc);
    for (int i = 0; i < 4; ++i)
      acc += uint32_t(int32_t(int8_t(a[i])) * int32_t(int8_t(b[i])));
    memcpy(c, &acc, sizeof acc);
  });
}

#else

// No tile path in this build: declarations for code that AVAILABLE keeps
// from running (Gemm.h static_asserts it for AMX configurations).
inline void configure(const Config &) { __builtin_trap(); }
inline void release() { __builtin_trap(); }
template <int T> inline void zero() { __builtin_trap(); }
template <int T> inline void load(const void *, int64_t) { __builtin_trap(); }
template <int T> inline void store(void *, int64_t) { __builtin_trap(); }
template <int C, int A, int B> inline void dot_bf16() { __builtin_trap(); }
template <int C, int A, int B> inline void dot_s8s8() { __builtin_trap(); }

#endif

} // namespace kiln::kernels::amx

#endif // KILN_KERNELS_AMX_H
