//===- GGUFWriter.cpp - Writing GGUF files --------------------------------===//
//
// Part of Kiln. See GGUFWriter.h; the byte layout is the one GGUF.cpp reads,
// little-endian whatever the host.
//
//===----------------------------------------------------------------------===//

#include "frontends/formats/GGUFWriter.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace kiln::formats {

namespace {

uint32_t typeNumber(GGUFType type) { return static_cast<uint32_t>(type); }

template <typename T> uint64_t bitsOf(T v) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8);
  if constexpr (sizeof(T) == 4) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    return bits;
  } else {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    return bits;
  }
}

} // namespace

std::string GGUFWriter::str(const std::string &s) {
  return le(static_cast<uint64_t>(s.size())) + s;
}

//===----------------------------------------------------------------------===//
// Metadata
//===----------------------------------------------------------------------===//

GGUFWriter &GGUFWriter::addU8(const std::string &key, uint8_t v) {
  return addEncoded(key, typeNumber(GGUFType::U8), le(v));
}
GGUFWriter &GGUFWriter::addI8(const std::string &key, int8_t v) {
  return addEncoded(key, typeNumber(GGUFType::I8), le(static_cast<uint8_t>(v)));
}
GGUFWriter &GGUFWriter::addU16(const std::string &key, uint16_t v) {
  return addEncoded(key, typeNumber(GGUFType::U16), le(v));
}
GGUFWriter &GGUFWriter::addI16(const std::string &key, int16_t v) {
  return addEncoded(key, typeNumber(GGUFType::I16),
                    le(static_cast<uint16_t>(v)));
}
GGUFWriter &GGUFWriter::addU32(const std::string &key, uint32_t v) {
  return addEncoded(key, typeNumber(GGUFType::U32), le(v));
}
GGUFWriter &GGUFWriter::addI32(const std::string &key, int32_t v) {
  return addEncoded(key, typeNumber(GGUFType::I32),
                    le(static_cast<uint32_t>(v)));
}
GGUFWriter &GGUFWriter::addU64(const std::string &key, uint64_t v) {
  return addEncoded(key, typeNumber(GGUFType::U64), le(v));
}
GGUFWriter &GGUFWriter::addI64(const std::string &key, int64_t v) {
  return addEncoded(key, typeNumber(GGUFType::I64),
                    le(static_cast<uint64_t>(v)));
}
GGUFWriter &GGUFWriter::addF32(const std::string &key, float v) {
  return addEncoded(key, typeNumber(GGUFType::F32),
                    le(static_cast<uint32_t>(bitsOf(v))));
}
GGUFWriter &GGUFWriter::addF64(const std::string &key, double v) {
  return addEncoded(key, typeNumber(GGUFType::F64), le(bitsOf(v)));
}
GGUFWriter &GGUFWriter::addBool(const std::string &key, bool v) {
  return addEncoded(key, typeNumber(GGUFType::Bool),
                    std::string(1, v ? '\1' : '\0'));
}
GGUFWriter &GGUFWriter::addString(const std::string &key,
                                  const std::string &v) {
  return addEncoded(key, typeNumber(GGUFType::String), str(v));
}

GGUFWriter &GGUFWriter::addStringArray(const std::string &key,
                                       const std::vector<std::string> &v) {
  std::string payload;
  for (const std::string &s : v)
    payload += str(s);
  return addArray(key, typeNumber(GGUFType::String), v.size(), payload);
}
GGUFWriter &GGUFWriter::addF32Array(const std::string &key,
                                    const std::vector<float> &v) {
  std::string payload;
  for (float f : v)
    payload += le(static_cast<uint32_t>(bitsOf(f)));
  return addArray(key, typeNumber(GGUFType::F32), v.size(), payload);
}
GGUFWriter &GGUFWriter::addI32Array(const std::string &key,
                                    const std::vector<int32_t> &v) {
  std::string payload;
  for (int32_t i : v)
    payload += le(static_cast<uint32_t>(i));
  return addArray(key, typeNumber(GGUFType::I32), v.size(), payload);
}
GGUFWriter &GGUFWriter::addU32Array(const std::string &key,
                                    const std::vector<uint32_t> &v) {
  std::string payload;
  for (uint32_t i : v)
    payload += le(i);
  return addArray(key, typeNumber(GGUFType::U32), v.size(), payload);
}

GGUFWriter &GGUFWriter::addArray(const std::string &key, uint32_t elementType,
                                 uint64_t count, const std::string &payload) {
  return addEncoded(key, typeNumber(GGUFType::Array),
                    le(elementType) + le(count) + payload);
}

GGUFWriter &GGUFWriter::addEncoded(const std::string &key, uint32_t type,
                                   const std::string &encodedValue) {
  kvs.push_back(str(key) + le(type) + encodedValue);
  return *this;
}

GGUFWriter &GGUFWriter::setAlignment(uint32_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    throw std::invalid_argument("GGUF alignment " + std::to_string(alignment) +
                                " is not a power of two");
  dataAlignment = alignment;
  return addU32("general.alignment", alignment);
}

//===----------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------===//

uint32_t GGUFWriter::ggmlType(ElementType type) {
  switch (type) {
  case ElementType::F32:
    return 0;
  case ElementType::F16:
    return 1;
  case ElementType::Q4_0:
    return 2;
  case ElementType::Q8_0:
    return 8;
  case ElementType::Q4_K:
    return 12;
  case ElementType::Q5_K:
    return 13;
  case ElementType::Q6_K:
    return 14;
  case ElementType::BF16:
    return 30;
  }
  return 0;
}

GGUFWriter &GGUFWriter::declareTensor(const std::string &name,
                                      const std::vector<int64_t> &shape,
                                      ElementType type, uint64_t size) {
  RawTensor t;
  t.name = name;
  for (auto d = shape.rbegin(); d != shape.rend(); ++d)
    t.dims.push_back(static_cast<uint64_t>(*d));
  t.ggmlType = ggmlType(type);
  t.size = size;
  return addRawTensor(std::move(t));
}

GGUFWriter &GGUFWriter::addTensor(const std::string &name,
                                  const std::vector<int64_t> &shape,
                                  ElementType type, std::string data) {
  declareTensor(name, shape, type, data.size());
  tensors.back().data = std::move(data);
  return *this;
}

GGUFWriter &GGUFWriter::addRawTensor(RawTensor tensor) {
  if (!tensor.data.empty())
    tensor.size = tensor.data.size();
  tensors.push_back(std::move(tensor));
  return *this;
}

//===----------------------------------------------------------------------===//
// Output
//===----------------------------------------------------------------------===//

uint64_t GGUFWriter::alignUp(uint64_t n) const {
  return (n + dataAlignment - 1) / dataAlignment * dataAlignment;
}

std::string GGUFWriter::build(Layout *l, bool withData) const {
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
  uint64_t relative = 0;
  std::vector<uint64_t> offsets;
  for (const RawTensor &t : tensors) {
    if (l)
      l->tensorInfoOffsets.push_back(out.size());
    out += str(t.name) + le(static_cast<uint32_t>(t.dims.size()));
    for (uint64_t d : t.dims)
      out += le(d);
    out += le(t.ggmlType) + le(relative);
    offsets.push_back(relative);
    relative = alignUp(relative + t.size);
  }
  if (l)
    l->tensorInfoEnd = out.size();
  out.resize(alignUp(out.size()), '\0');
  uint64_t dataStart = out.size();
  if (l) {
    l->dataStart = dataStart;
    for (uint64_t offset : offsets)
      l->tensorDataOffsets.push_back(dataStart + offset);
    l->size = dataStart + relative;
  }
  if (!withData)
    return out;
  for (const RawTensor &t : tensors) {
    if (t.data.size() != t.size)
      throw std::logic_error("GGUFWriter: tensor '" + t.name +
                             "' was declared without its data");
    out += t.data;
    out.resize(alignUp(out.size()), '\0');
  }
  return out;
}

std::string GGUFWriter::header() const { return build(nullptr, false); }

GGUFWriter::Layout GGUFWriter::layout() const {
  Layout l;
  build(&l, false);
  return l;
}

std::string GGUFWriter::bytes() const { return build(nullptr, true); }

uint64_t GGUFWriter::writeTo(const std::string &path) const {
  std::string all = bytes();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(all.data(), static_cast<std::streamsize>(all.size()));
  out.close();
  if (!out)
    throw std::runtime_error(path + ": cannot write (" + std::strerror(errno) +
                             ")");
  return all.size();
}

} // namespace kiln::formats
