//===- GGUFWriter.h - Writing GGUF files ------------------------*- C++ -*-===//
//
// Part of Kiln. Builds GGUF v3 (or v2) files as llama.cpp lays them out:
// the header, the metadata in the order it was added, the tensor directory
// (dimensions innermost first, offsets relative to the aligned start of the
// data), then each tensor's data aligned, with padding after the last.
// `kiln make-model` writes its synthetic models with it (SyntheticModel.h),
// and the tests build the files they read with it.
//
// Small files are built in memory (bytes(), writeTo()). Large ones stream:
// declare each tensor with its size only, write header(), then write each
// tensor's data at the offsets layout() gives.
//
// The writer encodes what it is given and checks nothing against GGUF.h's
// reader: addEncoded() and addRawTensor() take any type number, so tests
// can also describe values and tensors the reader must refuse.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_FRONTENDS_FORMATS_GGUFWRITER_H
#define KILN_FRONTENDS_FORMATS_GGUFWRITER_H

#include "frontends/formats/ElementType.h"
#include "frontends/formats/GGUF.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::formats {

class GGUFWriter {
public:
  /// A tensor as its directory entry is written.
  struct RawTensor {
    std::string name;
    /// Dimensions innermost first (GGUF order).
    std::vector<uint64_t> dims;
    /// ggml's type number (ggmlType() for Kiln's element types).
    uint32_t ggmlType = 0;
    /// Bytes of data: data.size(), or the size of data the caller streams.
    uint64_t size = 0;
    /// The data, or empty when the caller streams it.
    std::string data;
  };

  /// Where each part of the file goes (absolute file offsets).
  struct Layout {
    std::vector<uint64_t> kvOffsets;         ///< Start of each key's length.
    std::vector<uint64_t> tensorInfoOffsets; ///< Start of each name's length.
    uint64_t tensorInfoStart = 0;
    uint64_t tensorInfoEnd = 0; ///< Before the padding up to dataStart.
    uint64_t dataStart = 0;
    std::vector<uint64_t> tensorDataOffsets; ///< Start of each tensor's data.
    uint64_t size = 0;                       ///< The whole file, padded.
  };

  /// Byte positions of the fixed header fields.
  static constexpr uint64_t kVersionOffset = 4;
  static constexpr uint64_t kTensorCountOffset = 8;
  static constexpr uint64_t kKVCountOffset = 16;
  static constexpr uint64_t kHeaderBytes = 24;
  /// GGUF's default data alignment.
  static constexpr uint32_t kDefaultAlignment = 32;

  explicit GGUFWriter(uint32_t version = 3) : version(version) {}

  //===--------------------------------------------------------------------===//
  // Metadata
  //===--------------------------------------------------------------------===//

  GGUFWriter &addU8(const std::string &key, uint8_t v);
  GGUFWriter &addI8(const std::string &key, int8_t v);
  GGUFWriter &addU16(const std::string &key, uint16_t v);
  GGUFWriter &addI16(const std::string &key, int16_t v);
  GGUFWriter &addU32(const std::string &key, uint32_t v);
  GGUFWriter &addI32(const std::string &key, int32_t v);
  GGUFWriter &addU64(const std::string &key, uint64_t v);
  GGUFWriter &addI64(const std::string &key, int64_t v);
  GGUFWriter &addF32(const std::string &key, float v);
  GGUFWriter &addF64(const std::string &key, double v);
  GGUFWriter &addBool(const std::string &key, bool v);
  GGUFWriter &addString(const std::string &key, const std::string &v);
  GGUFWriter &addStringArray(const std::string &key,
                             const std::vector<std::string> &v);
  GGUFWriter &addF32Array(const std::string &key, const std::vector<float> &v);
  GGUFWriter &addI32Array(const std::string &key,
                          const std::vector<int32_t> &v);
  GGUFWriter &addU32Array(const std::string &key,
                          const std::vector<uint32_t> &v);
  /// An array of `count` elements of `elementType` (a GGUFType number)
  /// already encoded in `payload`; the count is not checked against it.
  GGUFWriter &addArray(const std::string &key, uint32_t elementType,
                       uint64_t count, const std::string &payload);
  /// A key with any type number and its value as the file holds it.
  GGUFWriter &addEncoded(const std::string &key, uint32_t type,
                         const std::string &encodedValue);

  /// Aligns tensor data to `alignment` (a power of two; throws
  /// std::invalid_argument otherwise) and records it as general.alignment.
  GGUFWriter &setAlignment(uint32_t alignment);

  //===--------------------------------------------------------------------===//
  // Tensors
  //===--------------------------------------------------------------------===//

  /// ggml's number for an element type.
  static uint32_t ggmlType(ElementType type);

  /// A tensor of `shape` (outermost first, as in TensorInfo and kiln IR)
  /// whose stored bytes are `data`. The data is not checked against the
  /// shape.
  GGUFWriter &addTensor(const std::string &name,
                        const std::vector<int64_t> &shape, ElementType type,
                        std::string data);
  /// A tensor of `shape` whose `size` bytes the caller writes itself at
  /// layout().tensorDataOffsets (see header()).
  GGUFWriter &declareTensor(const std::string &name,
                            const std::vector<int64_t> &shape, ElementType type,
                            uint64_t size);
  GGUFWriter &addRawTensor(RawTensor tensor);

  //===--------------------------------------------------------------------===//
  // Output
  //===--------------------------------------------------------------------===//

  /// Everything before the first tensor's data: header, metadata, tensor
  /// directory and the padding up to layout().dataStart.
  std::string header() const;
  Layout layout() const;
  /// The whole file; throws std::logic_error if a declared tensor has no
  /// data.
  std::string bytes() const;
  /// Writes bytes() to `path`; throws std::runtime_error naming the path
  /// when it cannot. Returns the bytes written.
  uint64_t writeTo(const std::string &path) const;

  uint32_t alignment() const { return dataAlignment; }
  /// `n` rounded up to a multiple of the alignment.
  uint64_t alignUp(uint64_t n) const;

  /// Little-endian bytes of an unsigned integer.
  template <typename T> static std::string le(T v) {
    std::string s(sizeof(T), '\0');
    for (size_t i = 0; i < sizeof(T); ++i)
      s[i] = static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff);
    return s;
  }
  /// A GGUF string: u64 length, then the bytes.
  static std::string str(const std::string &s);

private:
  std::string build(Layout *layout, bool withData) const;

  uint32_t version;
  uint32_t dataAlignment = kDefaultAlignment;
  std::vector<std::string> kvs;
  std::vector<RawTensor> tensors;
};

} // namespace kiln::formats

#endif // KILN_FRONTENDS_FORMATS_GGUFWRITER_H
