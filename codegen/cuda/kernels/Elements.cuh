//===- Elements.cuh - Weight and cache elements as f32 -----------*- C++
//-*-===//
//
// Part of Kiln's CUDA kernel library. Reading and writing the element types
// of weights and of the KV cache (f32, f16, bf16) as f32, one at a time and
// as the 16 bytes of a vector load.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CUDA_ELEMENTS_CUH
#define KILN_CUDA_ELEMENTS_CUH

#include "Device.cuh"

namespace kiln::cuda {

template <class E> struct ElementTraits;
template <> struct ElementTraits<float> {
  static constexpr int kPerBytes16 = 4;
};
template <> struct ElementTraits<f16> {
  static constexpr int kPerBytes16 = 8;
};
template <> struct ElementTraits<bf16> {
  static constexpr int kPerBytes16 = 8;
};

KILN_DEVICE float load_float(const float *p) { return *p; }
KILN_DEVICE float load_float(const f16 *p) { return to_float(*p); }
KILN_DEVICE float load_float(const bf16 *p) { return to_float(*p); }

KILN_DEVICE void store_float(float *p, float v) { *p = v; }
KILN_DEVICE void store_float(f16 *p, float v) { p->bits = to_bits(v, f16{}); }
KILN_DEVICE void store_float(bf16 *p, float v) { p->bits = to_bits(v, bf16{}); }

/// The elements of a 16-byte load as f32, in memory order.
KILN_DEVICE void unpack(const Bytes16 &b, float (&out)[4], float) {
  for (int i = 0; i < 4; ++i)
    out[i] = as_float(b.word[i]);
}
template <class Half>
KILN_DEVICE void unpack(const Bytes16 &b, float (&out)[8], Half) {
  for (int i = 0; i < 4; ++i) {
    out[2 * i] = half_bits_to_float(u16(b.word[i] & 0xffffu), Half{});
    out[2 * i + 1] = half_bits_to_float(u16(b.word[i] >> 16), Half{});
  }
}

KILN_DEVICE bool is_aligned16(const void *p) {
  return (reinterpret_cast<unsigned long long>(p) & 15) == 0;
}

} // namespace kiln::cuda

#endif // KILN_CUDA_ELEMENTS_CUH
