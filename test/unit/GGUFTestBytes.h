//===- GGUFTestBytes.h - Bytes for GGUF tests -------------------*- C++ -*-===//
//
// Part of Kiln's unit tests. Files themselves are built with Kiln's own
// writer (frontends/formats/GGUFWriter.h); this header holds what tests need
// beside it and production code does not:
//
//  - tensor data encoders (f32, f16, bf16) and llama.cpp's reference Q8_0
//    and Q4_0 quantizers, an oracle written independently of the
//    dequantizer they check (Kiln itself never quantizes);
//  - corruptions of a built file, to make the malformed variants the reader
//    must reject: patching bytes at a header field or at a position from
//    GGUFWriter::layout(), such as a tensor's offset. These stay here
//    because a production writer should never write a file whose
//    directory disagrees with its data.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TEST_UNIT_GGUFTESTBYTES_H
#define KILN_TEST_UNIT_GGUFTESTBYTES_H

#include "frontends/formats/ElementType.h"
#include "frontends/formats/GGUFWriter.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace kiln::test {

using formats::GGUFWriter;

/// Little-endian bytes of an unsigned integer.
template <typename T> std::string le(T v) { return GGUFWriter::le(v); }

inline void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out)
    throw std::runtime_error("cannot write " + path);
}

//===----------------------------------------------------------------------===//
// Tensor data
//===----------------------------------------------------------------------===//

inline uint32_t bitsOf(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

inline std::string f32Bytes(const std::vector<float> &v) {
  std::string s;
  for (float f : v)
    s += le(bitsOf(f));
  return s;
}
inline std::string f16Bytes(const std::vector<float> &v) {
  std::string s;
  for (float f : v)
    s += le(formats::floatToHalf(f));
  return s;
}
inline std::string bf16Bytes(const std::vector<float> &v) {
  std::string s;
  for (float f : v)
    s += le(formats::floatToBf16(f));
  return s;
}

/// llama.cpp's reference Q8_0 (quantize_row_q8_0_ref): d = max|x| / 127,
/// q = round(x / d). `v.size()` must be a multiple of 32.
inline std::string q8_0Bytes(const std::vector<float> &v) {
  std::string s;
  for (size_t b = 0; b + 32 <= v.size(); b += 32) {
    float amax = 0;
    for (size_t i = 0; i < 32; ++i)
      amax = std::max(amax, std::fabs(v[b + i]));
    float d = amax / 127.0f;
    float id = d != 0 ? 1.0f / d : 0.0f;
    s += le(formats::floatToHalf(d));
    for (size_t i = 0; i < 32; ++i)
      s += static_cast<char>(static_cast<int8_t>(std::lround(v[b + i] * id)) &
                             0xff);
  }
  return s;
}

/// llama.cpp's reference Q4_0 (quantize_row_q4_0_ref): d = m / -8 where m
/// is the value of largest magnitude, q = min(15, trunc(x / d + 8.5)).
inline std::string q4_0Bytes(const std::vector<float> &v) {
  std::string s;
  for (size_t b = 0; b + 32 <= v.size(); b += 32) {
    float amax = 0, max = 0;
    for (size_t i = 0; i < 32; ++i)
      if (std::fabs(v[b + i]) > amax) {
        amax = std::fabs(v[b + i]);
        max = v[b + i];
      }
    float d = max / -8.0f;
    float id = d != 0 ? 1.0f / d : 0.0f;
    s += le(formats::floatToHalf(d));
    auto q = [&](size_t i) {
      int x = static_cast<int>(v[b + i] * id + 8.5f);
      return static_cast<unsigned>(std::min(15, std::max(0, x)));
    };
    for (size_t j = 0; j < 16; ++j)
      s += static_cast<char>(q(j) | (q(j + 16) << 4));
  }
  return s;
}

//===----------------------------------------------------------------------===//
// Corruptions
//===----------------------------------------------------------------------===//

/// Overwrites `sizeof(T)` bytes at `offset` with `v`, little-endian.
template <typename T> void patch(std::string &bytes, size_t offset, T v) {
  bytes.replace(offset, sizeof(T), le(v));
}

/// The file `writer` builds with the directory offset of tensor `index`
/// replaced by `offset`, while its data stays where the layout put it.
inline std::string withTensorOffset(const GGUFWriter &writer, size_t index,
                                    uint64_t offset) {
  std::string bytes = writer.bytes();
  GGUFWriter::Layout l = writer.layout();
  // The offset is the last field of the tensor's info.
  uint64_t end = index + 1 < l.tensorInfoOffsets.size()
                     ? l.tensorInfoOffsets[index + 1]
                     : l.tensorInfoEnd;
  patch(bytes, end - sizeof(uint64_t), offset);
  return bytes;
}

} // namespace kiln::test

#endif // KILN_TEST_UNIT_GGUFTESTBYTES_H
