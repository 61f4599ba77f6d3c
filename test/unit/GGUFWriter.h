//===- GGUFWriter.h - Building GGUF files for tests -------------*- C++ -*-===//
//
// Part of Kiln's unit tests. A small GGUF v3 writer so tests can make exactly
// the file they need -- chosen metadata and tensors -- and, through the raw
// entry points and the byte positions in layout(), the malformed variants the
// reader must reject. Also holds reference Q8_0/Q4_0 quantizers (llama.cpp's
// algorithm) and little-endian byte helpers for building tensor data.
//
// Typical use:
//
//   kiln::test::GGUFWriter w;
//   w.addString("general.architecture", "llama").addU32("llama.block_count",
//   2); w.addTensor("output_norm.weight", {64}, ElementType::F32,
//               GGUFWriter::f32Bytes(values));
//   w.writeTo(path);   // or w.bytes()
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TEST_UNIT_GGUFWRITER_H
#define KILN_TEST_UNIT_GGUFWRITER_H

#include "frontends/formats/ElementType.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace kiln::test {

class GGUFWriter {
public:
  /// GGUF metadata value type numbers (as in the file).
  enum ValueType : uint32_t {
    kU8 = 0,
    kI8 = 1,
    kU16 = 2,
    kI16 = 3,
    kU32 = 4,
    kI32 = 5,
    kF32 = 6,
    kBool = 7,
    kString = 8,
    kArray = 9,
    kU64 = 10,
    kI64 = 11,
    kF64 = 12,
  };

  /// Byte positions of the fixed header fields.
  static constexpr size_t kVersionOffset = 4;
  static constexpr size_t kTensorCountOffset = 8;
  static constexpr size_t kKVCountOffset = 16;
  static constexpr size_t kHeaderBytes = 24;

  /// A tensor exactly as its info is written: dims innermost first (GGUF
  /// order), a raw ggml type number, and an optional offset that replaces
  /// the real (relative) one in the info while the data stays where the
  /// layout puts it.
  struct RawTensor {
    std::string name;
    std::vector<uint64_t> dims;
    uint32_t ggmlType = 0;
    std::string data;
    std::optional<uint64_t> offsetOverride;
  };

  /// Where things ended up in the last bytes() (absolute file offsets).
  struct Layout {
    std::vector<size_t> kvOffsets;         ///< Start of each key's length.
    std::vector<size_t> tensorInfoOffsets; ///< Start of each name's length.
    size_t tensorInfoStart = 0;
    size_t dataStart = 0;
    std::vector<size_t> tensorDataOffsets; ///< Absolute start of each data.
    size_t size = 0;
  };

  explicit GGUFWriter(uint32_t version = 3) : version(version) {}

  //===--------------------------------------------------------------------===//
  // Metadata
  //===--------------------------------------------------------------------===//

  GGUFWriter &addU8(const std::string &key, uint8_t v) {
    return addRaw(key, kU8, le(v));
  }
  GGUFWriter &addI8(const std::string &key, int8_t v) {
    return addRaw(key, kI8, le(static_cast<uint8_t>(v)));
  }
  GGUFWriter &addU16(const std::string &key, uint16_t v) {
    return addRaw(key, kU16, le(v));
  }
  GGUFWriter &addI16(const std::string &key, int16_t v) {
    return addRaw(key, kI16, le(static_cast<uint16_t>(v)));
  }
  GGUFWriter &addU32(const std::string &key, uint32_t v) {
    return addRaw(key, kU32, le(v));
  }
  GGUFWriter &addI32(const std::string &key, int32_t v) {
    return addRaw(key, kI32, le(static_cast<uint32_t>(v)));
  }
  GGUFWriter &addU64(const std::string &key, uint64_t v) {
    return addRaw(key, kU64, le(v));
  }
  GGUFWriter &addI64(const std::string &key, int64_t v) {
    return addRaw(key, kI64, le(static_cast<uint64_t>(v)));
  }
  GGUFWriter &addF32(const std::string &key, float v) {
    return addRaw(key, kF32, le(bitsOf(v)));
  }
  GGUFWriter &addF64(const std::string &key, double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    return addRaw(key, kF64, le(bits));
  }
  GGUFWriter &addBool(const std::string &key, bool v) {
    return addRaw(key, kBool, std::string(1, v ? '\1' : '\0'));
  }
  GGUFWriter &addString(const std::string &key, const std::string &v) {
    return addRaw(key, kString, str(v));
  }
  GGUFWriter &addStringArray(const std::string &key,
                             const std::vector<std::string> &v) {
    std::string payload;
    for (const std::string &s : v)
      payload += str(s);
    return addArray(key, kString, v.size(), payload);
  }
  GGUFWriter &addF32Array(const std::string &key, const std::vector<float> &v) {
    std::string payload;
    for (float f : v)
      payload += le(bitsOf(f));
    return addArray(key, kF32, v.size(), payload);
  }
  GGUFWriter &addI32Array(const std::string &key,
                          const std::vector<int32_t> &v) {
    std::string payload;
    for (int32_t i : v)
      payload += le(static_cast<uint32_t>(i));
    return addArray(key, kI32, v.size(), payload);
  }
  GGUFWriter &addU32Array(const std::string &key,
                          const std::vector<uint32_t> &v) {
    std::string payload;
    for (uint32_t i : v)
      payload += le(i);
    return addArray(key, kU32, v.size(), payload);
  }
  /// An array whose elements are already encoded in `payload` (any element
  /// type, any count: the count is not checked against the payload).
  GGUFWriter &addArray(const std::string &key, uint32_t elementType,
                       uint64_t count, const std::string &payload) {
    return addRaw(key, kArray, le(elementType) + le(count) + payload);
  }
  /// A key with any type number and an already encoded value.
  GGUFWriter &addRaw(const std::string &key, uint32_t type,
                     const std::string &encodedValue) {
    kvs.push_back(str(key) + le(type) + encodedValue);
    return *this;
  }

  /// Data alignment; also written as general.alignment (u32) unless
  /// `writeKey` is false (to test a file whose key and layout disagree).
  GGUFWriter &setAlignment(uint32_t a, bool writeKey = true) {
    alignment = a;
    if (writeKey)
      addU32("general.alignment", a);
    return *this;
  }

  //===--------------------------------------------------------------------===//
  // Tensors
  //===--------------------------------------------------------------------===//

  /// ggml's number for an element type.
  static uint32_t ggmlType(formats::ElementType type) {
    switch (type) {
    case formats::ElementType::F32:
      return 0;
    case formats::ElementType::F16:
      return 1;
    case formats::ElementType::Q4_0:
      return 2;
    case formats::ElementType::Q8_0:
      return 8;
    case formats::ElementType::BF16:
      return 30;
    }
    return 0;
  }

  /// A tensor of `shape` (outermost first, as in TensorInfo and kiln IR)
  /// whose stored bytes are `data`. The data is not checked against the
  /// shape, so a test can also describe more bytes than it stores.
  GGUFWriter &addTensor(const std::string &name,
                        const std::vector<int64_t> &shape,
                        formats::ElementType type, const std::string &data) {
    RawTensor t;
    t.name = name;
    for (auto it = shape.rbegin(); it != shape.rend(); ++it)
      t.dims.push_back(static_cast<uint64_t>(*it));
    t.ggmlType = ggmlType(type);
    t.data = data;
    return addRawTensor(std::move(t));
  }
  GGUFWriter &addRawTensor(RawTensor t) {
    tensors.push_back(std::move(t));
    return *this;
  }

  //===--------------------------------------------------------------------===//
  // Output
  //===--------------------------------------------------------------------===//

  std::string bytes() const { return build(nullptr); }
  Layout layout() const {
    Layout l;
    build(&l);
    return l;
  }
  void writeTo(const std::string &path) const { writeFile(path, bytes()); }

  static void writeFile(const std::string &path, const std::string &bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out)
      throw std::runtime_error("cannot write " + path);
  }

  //===--------------------------------------------------------------------===//
  // Encoding helpers
  //===--------------------------------------------------------------------===//

  /// Little-endian bytes of an unsigned integer.
  template <typename T> static std::string le(T v) {
    std::string s(sizeof(T), '\0');
    for (size_t i = 0; i < sizeof(T); ++i)
      s[i] = static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff);
    return s;
  }
  /// A GGUF string: u64 length, then the bytes.
  static std::string str(const std::string &s) {
    return le(static_cast<uint64_t>(s.size())) + s;
  }
  static uint32_t bitsOf(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    return bits;
  }
  /// Overwrites `sizeof(T)` bytes at `offset` (to corrupt a built file).
  template <typename T>
  static void patch(std::string &bytes, size_t offset, T v) {
    bytes.replace(offset, sizeof(T), le(v));
  }

  static std::string f32Bytes(const std::vector<float> &v) {
    std::string s;
    for (float f : v)
      s += le(bitsOf(f));
    return s;
  }
  static std::string f16Bytes(const std::vector<float> &v) {
    std::string s;
    for (float f : v)
      s += le(formats::floatToHalf(f));
    return s;
  }
  static std::string bf16Bytes(const std::vector<float> &v) {
    std::string s;
    for (float f : v)
      s += le(formats::floatToBf16(f));
    return s;
  }

  /// llama.cpp's reference Q8_0 (quantize_row_q8_0_ref): d = max|x| / 127,
  /// q = round(x / d). `v.size()` must be a multiple of 32.
  static std::string q8_0Bytes(const std::vector<float> &v) {
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
  static std::string q4_0Bytes(const std::vector<float> &v) {
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

private:
  std::string build(Layout *l) const {
    std::string out = "GGUF" + le(version) +
                      le(static_cast<uint64_t>(tensors.size())) +
                      le(static_cast<uint64_t>(kvs.size()));
    for (const std::string &kv : kvs) {
      if (l)
        l->kvOffsets.push_back(out.size());
      out += kv;
    }
    if (l)
      l->tensorInfoStart = out.size();
    // Each tensor's data starts at the next multiple of the alignment, as
    // llama.cpp lays them out (and pads after the last one too).
    std::vector<uint64_t> relative;
    uint64_t next = 0;
    for (const RawTensor &t : tensors) {
      relative.push_back(next);
      next = roundUp(next + t.data.size());
    }
    for (size_t i = 0; i < tensors.size(); ++i) {
      const RawTensor &t = tensors[i];
      if (l)
        l->tensorInfoOffsets.push_back(out.size());
      out += str(t.name) + le(static_cast<uint32_t>(t.dims.size()));
      for (uint64_t d : t.dims)
        out += le(d);
      out += le(t.ggmlType) + le(t.offsetOverride.value_or(relative[i]));
    }
    out.resize(roundUp(out.size()), '\0');
    if (l)
      l->dataStart = out.size();
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (l)
        l->tensorDataOffsets.push_back(out.size());
      out += tensors[i].data;
      out.resize(roundUp(out.size()), '\0');
    }
    if (l)
      l->size = out.size();
    return out;
  }

  size_t roundUp(size_t n) const {
    return alignment ? (n + alignment - 1) / alignment * alignment : n;
  }

  uint32_t version;
  uint32_t alignment = 32;
  std::vector<std::string> kvs;
  std::vector<RawTensor> tensors;
};

} // namespace kiln::test

#endif // KILN_TEST_UNIT_GGUFWRITER_H
