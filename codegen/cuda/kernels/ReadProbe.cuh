//===- ReadProbe.cuh - The device's read bandwidth, measured -----*- C++
//-*-===//
//
// Part of Kiln's CUDA kernel library. Not part of any step: the kernel the
// GPU check (test/gpu/run.sh, kiln-gpu-bench bandwidth) times to measure
// the memory read bandwidth that decode is bounded by, on the same device
// and in the same run as the model benchmarks.
//
// Each thread reads 16-byte chunks (ld.global.nc.v4, as the GEMV reads its
// weights) in a grid-stride loop, so a warp reads 512 contiguous bytes per
// step and every chunk is read exactly once; it XORs their words and writes
// the result, one word per thread, so no load is dead code. The XOR of all
// outputs is the XOR of every word of the buffer: what the tests check.
//
// Launch: any block size, any grid; out holds grid * block words.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CUDA_READ_PROBE_CUH
#define KILN_CUDA_READ_PROBE_CUH

#include "Device.cuh"

namespace kiln::cuda {

/// Reads chunks 16-byte chunks of `data` (16-byte aligned) once.
KILN_DEVICE void read_probe(u32 *out, const void *data, i64 chunks) {
  i64 first = i64(block_x()) * block_size() + thread_index();
  i64 stride = i64(grid_x()) * block_size();
  const Bytes16 *chunk = static_cast<const Bytes16 *>(data);
  u32 x = 0;
  for (i64 i = first; i < chunks; i += stride) {
    Bytes16 b = load16(chunk + i);
    x ^= b.word[0] ^ b.word[1] ^ b.word[2] ^ b.word[3];
  }
  out[first] = x;
}

} // namespace kiln::cuda

#endif // KILN_CUDA_READ_PROBE_CUH
