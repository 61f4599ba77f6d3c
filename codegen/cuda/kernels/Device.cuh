//===- Device.cuh - What CUDA kernels may ask of the device ------*- C++
//-*-===//
//
// Part of Kiln's CUDA kernel library. Every kernel in codegen/cuda/kernels/
// is written against this header alone: thread and block indices, block
// barriers, warp shuffles and votes, 16-byte global loads, shared arrays,
// f16/bf16 conversions and the tensor-core mma of shape m16n8k16 with its
// fragments. It has two implementations:
//
//  - on the GPU (NVRTC or nvcc: __CUDACC__ or __CUDACC_RTC__), thin inline
//    wrappers over CUDA's builtins and inline PTX;
//  - on the host (DeviceHost.h), an emulator that runs the same kernel
//    source on the CPU, the threads of a block as fibers interleaved in a
//    random order between barriers and warp operations, so the kernels are
//    checked against the reference without a GPU (test/cuda/).
//
// Only the fragment layouts are written here once for both: which elements
// of a 16x16 A tile, a 16x8 B tile and a 16x8 C tile each lane holds, as
// the PTX ISA's tables for mma.m16n8k16 give them. The host's mma decodes
// the registers of all 32 lanes by those same tables, independently, so a
// kernel that loads a fragment wrongly computes a wrong product there too.
//
// Kernels use 1-D thread blocks whose size is a multiple of the warp size,
// and every lane of a warp reaches each warp operation (the full-mask
// *_sync forms); the emulator reports a kernel that does not.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CUDA_DEVICE_CUH
#define KILN_CUDA_DEVICE_CUH

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define KILN_CUDA_ON_DEVICE 1
#endif

namespace kiln::cuda {

using u16 = unsigned short;
using u32 = unsigned int;
using i64 = long long;

/// 16-bit floating-point elements as their bits: IEEE binary16 and bfloat16.
/// Kernels widen them to f32 (exact) and round f32 to them to nearest even.
struct f16 {
  u16 bits;
};
struct bf16 {
  u16 bits;
};

/// Sixteen bytes of global memory: what one 128-bit load brings.
struct alignas(16) Bytes16 {
  u32 word[4];
};

constexpr int kWarpSize = 32;

/// The registers of one lane's share of an m16n8k16 mma: A (16x16, row
/// major) is four 32-bit registers of two 16-bit elements, B (16x8, column
/// major) two, C and D (16x8 f32) four floats.
struct MmaA {
  u32 reg[4];
};
struct MmaB {
  u32 reg[2];
};
struct MmaC {
  float reg[4];
};

} // namespace kiln::cuda

#ifdef KILN_CUDA_ON_DEVICE

#define KILN_DEVICE __device__ __forceinline__
/// A kernel's entry point, launched with `threads` threads per block, at
/// least 512 threads resident per SM (so at most 128 registers a thread).
/// The second bound matters: with the first alone ptxas aims at full
/// occupancy and spills rather than use its registers.
#define KILN_KERNEL(threads)                                                   \
  extern "C" __global__ void __launch_bounds__(                                \
      threads, (threads) < 512 ? 512 / (threads) : 1)
/// A block's shared array of n elements of T, 16-byte aligned (n constant).
#define KILN_SHARED(T, name, n) __shared__ __align__(16) T name[n]
/// On the host, makes a kernel launchable by name; nothing on the device,
/// where the driver finds kernels in the module.
#define KILN_REGISTER_KERNEL(name) static_assert(true, "")
/// Unrolls the next loop (constant trip count): register arrays indexed in
/// a loop that stays a loop would live in local memory.
#define KILN_UNROLL _Pragma("unroll")
/// A constant table the kernels of a module read (rope's frequencies).
#define KILN_CONSTANT __device__ const

namespace kiln::cuda {

KILN_DEVICE int thread_index() { return threadIdx.x; }
KILN_DEVICE int block_size() { return blockDim.x; }
KILN_DEVICE int block_x() { return blockIdx.x; }
KILN_DEVICE int block_y() { return blockIdx.y; }
KILN_DEVICE int block_z() { return blockIdx.z; }
KILN_DEVICE int grid_x() { return gridDim.x; }
KILN_DEVICE int grid_y() { return gridDim.y; }
KILN_DEVICE int grid_z() { return gridDim.z; }

KILN_DEVICE void sync_block() { __syncthreads(); }
KILN_DEVICE void sync_warp() { __syncwarp(); }

KILN_DEVICE float shfl_xor(float v, int laneMask) {
  return __shfl_xor_sync(0xffffffffu, v, laneMask);
}
KILN_DEVICE int shfl_xor(int v, int laneMask) {
  return __shfl_xor_sync(0xffffffffu, v, laneMask);
}
KILN_DEVICE float shfl(float v, int srcLane) {
  return __shfl_sync(0xffffffffu, v, srcLane);
}
KILN_DEVICE u32 ballot(bool p) { return __ballot_sync(0xffffffffu, p); }

/// 16 bytes from global memory that no kernel writes while it runs (the
/// read-only path: ld.global.nc.v4). `p` is 16-byte aligned.
KILN_DEVICE Bytes16 load16(const void *p) {
  uint4 v = __ldg(reinterpret_cast<const uint4 *>(p));
  return Bytes16{{v.x, v.y, v.z, v.w}};
}

KILN_DEVICE float as_float(u32 bits) { return __uint_as_float(bits); }
KILN_DEVICE float to_float(float x) { return x; }
KILN_DEVICE float to_float(f16 x) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x.bits));
  return f;
}
KILN_DEVICE float to_float(bf16 x) {
  return __uint_as_float(u32(x.bits) << 16);
}
KILN_DEVICE float half_bits_to_float(u16 bits, f16) {
  return to_float(f16{bits});
}
KILN_DEVICE float half_bits_to_float(u16 bits, bf16) {
  return to_float(bf16{bits});
}
KILN_DEVICE u16 to_bits(float x, f16) {
  u16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
  return h;
}
KILN_DEVICE u16 to_bits(float x, bf16) {
  u16 h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(x));
  return h;
}

KILN_DEVICE float exp_f32(float x) { return expf(x); }
KILN_DEVICE float sqrt_f32(float x) { return sqrtf(x); }
KILN_DEVICE float sin_f32(float x) { return sinf(x); }
KILN_DEVICE float cos_f32(float x) { return cosf(x); }
KILN_DEVICE float max_f32(float a, float b) { return fmaxf(a, b); }
KILN_DEVICE float neg_inf() { return __int_as_float(0xff800000); }

/// D = A * B + C on the tensor cores, f32 accumulation.
KILN_DEVICE void mma_16x8x16(MmaC &d, const MmaA &a, const MmaB &b, f16) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d.reg[0]), "+f"(d.reg[1]), "+f"(d.reg[2]), "+f"(d.reg[3])
               : "r"(a.reg[0]), "r"(a.reg[1]), "r"(a.reg[2]), "r"(a.reg[3]),
                 "r"(b.reg[0]), "r"(b.reg[1]));
}
KILN_DEVICE void mma_16x8x16(MmaC &d, const MmaA &a, const MmaB &b, bf16) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d.reg[0]), "+f"(d.reg[1]), "+f"(d.reg[2]), "+f"(d.reg[3])
               : "r"(a.reg[0]), "r"(a.reg[1]), "r"(a.reg[2]), "r"(a.reg[3]),
                 "r"(b.reg[0]), "r"(b.reg[1]));
}

} // namespace kiln::cuda

#else // the host

#include "DeviceHost.h"

#endif

namespace kiln::cuda {

KILN_DEVICE int lane_index() { return thread_index() & (kWarpSize - 1); }
KILN_DEVICE int warp_index() { return thread_index() / kWarpSize; }

/// The sum over the warp, in every lane (a butterfly: each lane adds the
/// same values in the same order, so all lanes agree bit for bit).
KILN_DEVICE float warp_sum(float v) {
  for (int m = kWarpSize / 2; m > 0; m /= 2)
    v += shfl_xor(v, m);
  return v;
}
KILN_DEVICE float warp_max(float v) {
  for (int m = kWarpSize / 2; m > 0; m /= 2)
    v = max_f32(v, shfl_xor(v, m));
  return v;
}

//===--- mma.m16n8k16 fragments (PTX ISA, "Matrix Fragments for mma") -----===//
//
// With g = lane / 4 and t = lane % 4:
//  A (16x16): reg 0 = row g, columns 2t, 2t+1; reg 1 = row g+8, same
//             columns; reg 2 = row g, columns 2t+8, 2t+9; reg 3 = row g+8,
//             columns 2t+8, 2t+9.
//  B (16x8):  reg 0 = rows (k) 2t, 2t+1 of column g; reg 1 = rows 2t+8, 2t+9.
//  C (16x8):  reg 0, 1 = row g, columns 2t, 2t+1; reg 2, 3 = row g+8.
// The lower 16 bits of a register hold the element with the lower index.

/// A's fragment from a 16x16 tile of 16-bit elements at `tile`, rows `ld`
/// elements apart (4-byte aligned: ld even).
KILN_DEVICE void mma_load_a(MmaA &a, const u16 *tile, int ld) {
  int g = lane_index() / 4, t = lane_index() % 4;
  const u16 *p = tile + g * ld + 2 * t;
  a.reg[0] = *reinterpret_cast<const u32 *>(p);
  a.reg[1] = *reinterpret_cast<const u32 *>(p + 8 * ld);
  a.reg[2] = *reinterpret_cast<const u32 *>(p + 8);
  a.reg[3] = *reinterpret_cast<const u32 *>(p + 8 * ld + 8);
}

/// B's fragment from an 8x16 tile stored column by column of B: row n of
/// `tile` holds B's column n, its 16 k elements contiguous (so a weight
/// matrix W[n][k] is B = Wᵀ as it lies), rows `ld` elements apart.
KILN_DEVICE void mma_load_b(MmaB &b, const u16 *tile, int ld) {
  int g = lane_index() / 4, t = lane_index() % 4;
  const u16 *p = tile + g * ld + 2 * t;
  b.reg[0] = *reinterpret_cast<const u32 *>(p);
  b.reg[1] = *reinterpret_cast<const u32 *>(p + 8);
}

/// The tile coordinates of this lane's C register `i` (0..3).
KILN_DEVICE int mma_c_row(int i) { return lane_index() / 4 + (i >= 2 ? 8 : 0); }
KILN_DEVICE int mma_c_col(int i) { return 2 * (lane_index() % 4) + (i & 1); }

} // namespace kiln::cuda

#endif // KILN_CUDA_DEVICE_CUH
