//===- GGUF.cpp - Reading GGUF files --------------------------------------===//
//
// Part of Kiln. The reader trusts nothing in the file: every count, length,
// dimension and offset is checked against the bytes that remain before it is
// used to read or allocate anything, and every size is computed with overflow
// checks. All reads go through a bounds-checked cursor that assembles
// little-endian values byte by byte, so no load is unaligned and none leaves
// the mapping.
//
//===----------------------------------------------------------------------===//

#include "frontends/formats/GGUF.h"

#include "frontends/formats/FormatError.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>

namespace kiln::formats {

namespace {

/// GGML_MAX_DIMS: GGUF tensors have at most four dimensions.
constexpr uint32_t kMaxDims = 4;
constexpr uint64_t kDefaultAlignment = 32;
constexpr const char *kAlignmentKey = "general.alignment";

/// The smallest number of bytes one metadata entry or tensor info can take,
/// used to reject counts that could not possibly fit in the file before
/// reserving memory for them. A metadata entry is at least a key length (8),
/// a value type (4) and a one-byte value; a tensor info is at least a name
/// length (8), n_dims (4), one dimension (8), a type (4) and an offset (8).
constexpr uint64_t kMinKVBytes = 8 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;

std::string quoted(const std::string &s) { return "'" + s + "'"; }

/// ggml's names for the tensor types it defines (ggml.h, enum ggml_type), so
/// errors about unsupported ones are recognisable; gaps are retired numbers.
const char *ggmlTypeName(uint32_t type) {
  static const char *const names[] = {
      "f32",   "f16",   "q4_0",    "q4_1",     "q4_2",     "q4_3",     "q5_0",
      "q5_1",  "q8_0",  "q8_1",    "q2_k",     "q3_k",     "q4_k",     "q5_k",
      "q6_k",  "q8_k",  "iq2_xxs", "iq2_xs",   "iq3_xxs",  "iq1_s",    "iq4_nl",
      "iq3_s", "iq2_s", "iq4_xs",  "i8",       "i16",      "i32",      "i64",
      "f64",   "iq1_m", "bf16",    "q4_0_4_4", "q4_0_4_8", "q4_0_8_8", "tq1_0",
      "tq2_0", nullptr, nullptr,   nullptr,    "mxfp4"};
  if (type < sizeof(names) / sizeof(names[0]))
    return names[type];
  return nullptr;
}

std::optional<ElementType> elementTypeFromGGML(uint32_t type) {
  switch (type) {
  case 0:
    return ElementType::F32;
  case 1:
    return ElementType::F16;
  case 2:
    return ElementType::Q4_0;
  case 8:
    return ElementType::Q8_0;
  case 12:
    return ElementType::Q4_K;
  case 13:
    return ElementType::Q5_K;
  case 14:
    return ElementType::Q6_K;
  case 30:
    return ElementType::BF16;
  default:
    return std::nullopt;
  }
}

bool isInteger(GGUFType type) {
  switch (type) {
  case GGUFType::U8:
  case GGUFType::I8:
  case GGUFType::U16:
  case GGUFType::I16:
  case GGUFType::U32:
  case GGUFType::I32:
  case GGUFType::U64:
  case GGUFType::I64:
    return true;
  default:
    return false;
  }
}

bool isFloat(GGUFType type) {
  return type == GGUFType::F32 || type == GGUFType::F64;
}

bool isKnownType(uint32_t type) { return type <= 12; }

/// "string", or "array of u32" for arrays.
std::string typeDescription(const GGUFValue &value) {
  if (value.type == GGUFType::Array)
    return std::string("array of ") + ggufTypeName(value.arrayType);
  return ggufTypeName(value.type);
}

/// Shortest decimal form that reads back to the same value.
template <typename T> std::string shortestFloat(T value, int maxDigits) {
  char buffer[64];
  for (int digits = 1; digits <= maxDigits; ++digits) {
    std::snprintf(buffer, sizeof buffer, "%.*g", digits,
                  static_cast<double>(value));
    T back = static_cast<T>(std::strtod(buffer, nullptr));
    if (back == value)
      break;
  }
  return buffer;
}

std::string escaped(const std::string &s, size_t maxChars) {
  std::string out = "\"";
  size_t shown = 0;
  for (char c : s) {
    if (shown == maxChars) {
      out += "...";
      break;
    }
    unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (u < 0x20 || u == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", u);
      out += hex;
    } else {
      out += c; // Bytes >= 0x80 pass through: UTF-8 text stays readable.
    }
    ++shown;
  }
  return out + "\"";
}

std::string describeValue(const GGUFValue &value) {
  switch (value.type) {
  case GGUFType::U8:
  case GGUFType::U16:
  case GGUFType::U32:
  case GGUFType::U64:
    return std::to_string(std::get<uint64_t>(value.scalar));
  case GGUFType::I8:
  case GGUFType::I16:
  case GGUFType::I32:
  case GGUFType::I64:
    return std::to_string(std::get<int64_t>(value.scalar));
  case GGUFType::F32:
    return shortestFloat(static_cast<float>(std::get<double>(value.scalar)), 9);
  case GGUFType::F64:
    return shortestFloat(std::get<double>(value.scalar), 17);
  case GGUFType::Bool:
    return std::get<bool>(value.scalar) ? "true" : "false";
  case GGUFType::String:
    return escaped(std::get<std::string>(value.scalar), 60);
  case GGUFType::Array: {
    // Short flat arrays are shown whole; anything else by type and length,
    // so a 150k-entry vocabulary prints as one line.
    constexpr size_t kShowAll = 8;
    if (value.array.size() > kShowAll || value.arrayType == GGUFType::Array)
      return std::string("[") + ggufTypeName(value.arrayType) + " x " +
             std::to_string(value.array.size()) + "]";
    std::string out = "[";
    for (size_t i = 0; i < value.array.size(); ++i)
      out += (i ? ", " : "") + describeValue(value.array[i]);
    return out + "]";
  }
  }
  return "?";
}

//===----------------------------------------------------------------------===//
// Parser
//===----------------------------------------------------------------------===//

/// Reads the file front to back. `context` names what is being read (a key
/// or tensor) so that every error can say where it happened.
class Parser {
public:
  explicit Parser(const MappedFile &file)
      : path(file.path()), bytes(file.data()), size(file.size()) {}

  [[noreturn]] void fail(const std::string &message) const {
    throw FormatError(path,
                      context.empty() ? message : context + ": " + message);
  }

  uint64_t position() const { return pos; }
  uint64_t fileSize() const { return size; }
  uint64_t remaining() const { return size - pos; }
  void setContext(std::string c) { context = std::move(c); }

  /// Reads `n` bytes of `what`, failing if the file ends first.
  const uint8_t *take(uint64_t n, const char *what) {
    if (n > remaining()) {
      std::ostringstream os;
      os << "unexpected end of file: " << what << " at offset " << pos
         << " needs " << n << " bytes but only " << remaining()
         << " remain (file is " << size << " bytes)";
      fail(os.str());
    }
    const uint8_t *p = bytes + pos;
    pos += n;
    return p;
  }

  uint64_t readUnsigned(unsigned width, const char *what) {
    const uint8_t *p = take(width, what);
    uint64_t value = 0;
    for (unsigned i = 0; i < width; ++i)
      value |= static_cast<uint64_t>(p[i]) << (8 * i);
    return value;
  }
  uint8_t readU8(const char *what) {
    return static_cast<uint8_t>(readUnsigned(1, what));
  }
  uint32_t readU32(const char *what) {
    return static_cast<uint32_t>(readUnsigned(4, what));
  }
  uint64_t readU64(const char *what) { return readUnsigned(8, what); }

  /// Sign-extends a `width`-byte two's-complement value without signed
  /// overflow or implementation-defined conversions.
  int64_t readSigned(unsigned width, const char *what) {
    uint64_t raw = readUnsigned(width, what);
    if (width < 8) {
      uint64_t signBit = uint64_t(1) << (8 * width - 1);
      if (raw & signBit)
        return -static_cast<int64_t>((signBit << 1) - raw);
      return static_cast<int64_t>(raw);
    }
    if (raw <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return static_cast<int64_t>(raw);
    // raw - 2^64, computed as -(2^64 - raw) - 1 + 1 without overflow.
    return -static_cast<int64_t>(~raw) - 1;
  }

  std::string readString(const char *what) {
    uint64_t length = readU64(what);
    if (length > remaining()) {
      std::ostringstream os;
      os << what << ": string length " << length << " at offset " << pos - 8
         << " runs past the end of the file (" << remaining()
         << " bytes remain, file is " << size << " bytes)";
      fail(os.str());
    }
    const uint8_t *p = take(length, what);
    return std::string(reinterpret_cast<const char *>(p),
                       static_cast<size_t>(length));
  }

  GGUFValue readValue(GGUFType type, bool inArray);

private:
  const std::string &path;
  const uint8_t *bytes;
  uint64_t size;
  uint64_t pos = 0;
  std::string context;
};

/// The smallest encoding of one value of `type` (for plausibility checks of
/// array counts): a string is at least its 8-byte length, an array its
/// 4-byte type and 8-byte count.
uint64_t minValueBytes(GGUFType type) {
  switch (type) {
  case GGUFType::U8:
  case GGUFType::I8:
  case GGUFType::Bool:
    return 1;
  case GGUFType::U16:
  case GGUFType::I16:
    return 2;
  case GGUFType::U32:
  case GGUFType::I32:
  case GGUFType::F32:
    return 4;
  case GGUFType::U64:
  case GGUFType::I64:
  case GGUFType::F64:
  case GGUFType::String:
    return 8;
  case GGUFType::Array:
    return 12;
  }
  return 1;
}

GGUFValue Parser::readValue(GGUFType type, bool inArray) {
  GGUFValue value;
  value.type = type;
  switch (type) {
  case GGUFType::U8:
    value.scalar = readUnsigned(1, "u8 value");
    break;
  case GGUFType::U16:
    value.scalar = readUnsigned(2, "u16 value");
    break;
  case GGUFType::U32:
    value.scalar = readUnsigned(4, "u32 value");
    break;
  case GGUFType::U64:
    value.scalar = readUnsigned(8, "u64 value");
    break;
  case GGUFType::I8:
    value.scalar = readSigned(1, "i8 value");
    break;
  case GGUFType::I16:
    value.scalar = readSigned(2, "i16 value");
    break;
  case GGUFType::I32:
    value.scalar = readSigned(4, "i32 value");
    break;
  case GGUFType::I64:
    value.scalar = readSigned(8, "i64 value");
    break;
  case GGUFType::F32: {
    uint32_t bits = readU32("f32 value");
    float f;
    std::memcpy(&f, &bits, sizeof f);
    value.scalar = static_cast<double>(f);
    break;
  }
  case GGUFType::F64: {
    uint64_t bits = readU64("f64 value");
    double d;
    std::memcpy(&d, &bits, sizeof d);
    value.scalar = d;
    break;
  }
  case GGUFType::Bool: {
    uint8_t b = readU8("bool value");
    if (b > 1)
      fail("bool value " + std::to_string(b) + " at offset " +
           std::to_string(pos - 1) + " is neither 0 nor 1");
    value.scalar = b == 1;
    break;
  }
  case GGUFType::String:
    value.scalar = readString("string value");
    break;
  case GGUFType::Array: {
    // Nested arrays are legal in the GGUF spec but no model uses them and
    // llama.cpp rejects them too; refusing them also bounds the recursion.
    if (inArray)
      fail("nested arrays are not supported");
    uint32_t elementType = readU32("array element type");
    if (!isKnownType(elementType))
      fail("unknown array element type " + std::to_string(elementType) +
           " at offset " + std::to_string(pos - 4));
    value.arrayType = static_cast<GGUFType>(elementType);
    if (value.arrayType == GGUFType::Array)
      fail("nested arrays are not supported");
    uint64_t count = readU64("array length");
    uint64_t minBytes = minValueBytes(value.arrayType);
    if (count > remaining() / minBytes) {
      std::ostringstream os;
      os << "array of " << count << " " << ggufTypeName(value.arrayType)
         << " at offset " << pos - 12 << " cannot fit in the " << remaining()
         << " bytes left in the file";
      fail(os.str());
    }
    value.array.reserve(static_cast<size_t>(count));
    for (uint64_t i = 0; i < count; ++i)
      value.array.push_back(readValue(value.arrayType, /*inArray=*/true));
    value.scalar = uint64_t(0);
    break;
  }
  }
  return value;
}

/// Rounds `value` up to a multiple of `alignment` (a power of two), or
/// nothing on overflow.
std::optional<uint64_t> alignUp(uint64_t value, uint64_t alignment) {
  uint64_t mask = alignment - 1;
  if (value > std::numeric_limits<uint64_t>::max() - mask)
    return std::nullopt;
  return (value + mask) & ~mask;
}

} // namespace

const char *ggufTypeName(GGUFType type) {
  switch (type) {
  case GGUFType::U8:
    return "u8";
  case GGUFType::I8:
    return "i8";
  case GGUFType::U16:
    return "u16";
  case GGUFType::I16:
    return "i16";
  case GGUFType::U32:
    return "u32";
  case GGUFType::I32:
    return "i32";
  case GGUFType::F32:
    return "f32";
  case GGUFType::Bool:
    return "bool";
  case GGUFType::String:
    return "string";
  case GGUFType::Array:
    return "array";
  case GGUFType::U64:
    return "u64";
  case GGUFType::I64:
    return "i64";
  case GGUFType::F64:
    return "f64";
  }
  return "unknown";
}

//===----------------------------------------------------------------------===//
// GGUFFile
//===----------------------------------------------------------------------===//

GGUFFile GGUFFile::open(const std::string &path) {
  return read(MappedFile::open(path));
}

GGUFFile GGUFFile::read(std::shared_ptr<const MappedFile> mapped) {
  if (!mapped)
    throw FormatError("<no file>", "GGUFFile::read was given no mapping");
  GGUFFile result;
  result.file = std::move(mapped);
  Parser in(*result.file);

  // Header.
  const uint8_t *magic = in.take(4, "magic");
  if (std::memcmp(magic, "GGUF", 4) != 0) {
    char shown[32];
    std::snprintf(shown, sizeof shown, "%02x %02x %02x %02x", magic[0],
                  magic[1], magic[2], magic[3]);
    in.fail(std::string("not a GGUF file: magic bytes are ") + shown +
            ", expected \"GGUF\" (47 47 55 46)");
  }
  uint32_t version = in.readU32("version");
  if (version != 2 && version != 3) {
    std::string message = "unsupported GGUF version " +
                          std::to_string(version) +
                          " (Kiln reads versions 2 and 3)";
    uint32_t swapped = __builtin_bswap32(version);
    if (swapped == 2 || swapped == 3)
      message += "; this looks like a big-endian file, which Kiln does not "
                 "read";
    in.fail(message);
  }
  result.fileVersion = version;
  uint64_t tensorCount = in.readU64("tensor count");
  uint64_t kvCount = in.readU64("metadata count");
  if (kvCount > in.remaining() / kMinKVBytes)
    in.fail("metadata count " + std::to_string(kvCount) +
            " cannot fit in the " + std::to_string(in.remaining()) +
            " bytes after the header");
  uint64_t kvMinimum = kvCount * kMinKVBytes;
  if (tensorCount > (in.remaining() - kvMinimum) / kMinTensorInfoBytes)
    in.fail("tensor count " + std::to_string(tensorCount) +
            " cannot fit in the " + std::to_string(in.remaining()) +
            " bytes after the header");

  // Metadata.
  result.keyOrder.reserve(static_cast<size_t>(kvCount));
  for (uint64_t i = 0; i < kvCount; ++i) {
    in.setContext("metadata entry " + std::to_string(i));
    std::string key = in.readString("key");
    in.setContext("key " + quoted(key));
    if (result.metadata.count(key))
      in.fail("duplicate key");
    uint32_t type = in.readU32("value type");
    if (!isKnownType(type))
      in.fail("unknown value type " + std::to_string(type) + " at offset " +
              std::to_string(in.position() - 4));
    GGUFValue value = in.readValue(static_cast<GGUFType>(type), false);
    result.keyOrder.push_back(key);
    result.metadata.emplace(std::move(key), std::move(value));
  }

  // general.alignment: the spec makes it a u32; a power of two so that
  // rounding up is a mask.
  in.setContext("");
  if (const GGUFValue *alignment = result.find(kAlignmentKey)) {
    in.setContext(std::string("key ") + quoted(kAlignmentKey));
    if (alignment->type != GGUFType::U32)
      in.fail(std::string("expected u32, found ") +
              typeDescription(*alignment));
    uint64_t value = std::get<uint64_t>(alignment->scalar);
    if (value == 0 || (value & (value - 1)) != 0)
      in.fail("alignment " + std::to_string(value) + " is not a power of two");
    result.dataAlignment = value;
  } else {
    result.dataAlignment = kDefaultAlignment;
  }

  // Tensor infos. Offsets are relative to the data section, which starts
  // after the last info, so absolute offsets are filled in afterwards.
  std::vector<uint64_t> relativeOffsets;
  result.tensorList.reserve(static_cast<size_t>(tensorCount));
  relativeOffsets.reserve(static_cast<size_t>(tensorCount));
  for (uint64_t i = 0; i < tensorCount; ++i) {
    in.setContext("tensor info " + std::to_string(i));
    TensorInfo info;
    info.name = in.readString("tensor name");
    in.setContext("tensor " + quoted(info.name));
    if (result.tensorIndex.count(info.name))
      in.fail("duplicate tensor name");
    uint32_t nDims = in.readU32("dimension count");
    if (nDims < 1 || nDims > kMaxDims)
      in.fail("dimension count " + std::to_string(nDims) + " is outside 1.." +
              std::to_string(kMaxDims));
    // GGUF lists dimensions innermost first (ne[0] is the row length).
    std::vector<uint64_t> ne(nDims);
    uint64_t elements = 1;
    for (uint32_t d = 0; d < nDims; ++d) {
      ne[d] = in.readU64("dimension");
      if (ne[d] == 0)
        in.fail("dimension " + std::to_string(d) + " is 0");
      if (ne[d] >
          static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / elements)
        in.fail("element count overflows (dimension " + std::to_string(d) +
                " is " + std::to_string(ne[d]) + ")");
      elements *= ne[d];
    }
    uint32_t ggmlType = in.readU32("tensor type");
    std::optional<ElementType> type = elementTypeFromGGML(ggmlType);
    if (!type) {
      const char *name = ggmlTypeName(ggmlType);
      in.fail(std::string("unsupported tensor type ") +
              (name ? std::string(name) + " (ggml type " +
                          std::to_string(ggmlType) + ")"
                    : "ggml type " + std::to_string(ggmlType)) +
              "; Kiln reads f32, f16, bf16, q8_0, q4_0, q4_k, q5_k and q6_k");
    }
    info.type = *type;
    uint64_t relativeOffset = in.readU64("tensor data offset");

    std::optional<uint64_t> row =
        rowBytes(info.type, static_cast<int64_t>(ne[0]));
    if (!row)
      in.fail("row length " + std::to_string(ne[0]) + " is not a multiple of " +
              std::to_string(blockSize(info.type)) + " (the " +
              elementTypeName(info.type) + " block size)");
    uint64_t rows = elements / ne[0];
    if (*row != 0 && rows > std::numeric_limits<uint64_t>::max() / *row)
      in.fail("data size overflows");
    info.bytes = *row * rows;
    for (uint32_t d = nDims; d-- > 0;)
      info.shape.push_back(static_cast<int64_t>(ne[d]));
    if (relativeOffset % result.dataAlignment != 0)
      in.fail("data offset " + std::to_string(relativeOffset) +
              " is not a multiple of the alignment " +
              std::to_string(result.dataAlignment));

    result.tensorIndex.emplace(info.name, result.tensorList.size());
    result.tensorList.push_back(std::move(info));
    relativeOffsets.push_back(relativeOffset);
  }
  in.setContext("");

  // Data section.
  std::optional<uint64_t> dataStart =
      alignUp(in.position(), result.dataAlignment);
  for (size_t i = 0; i < result.tensorList.size(); ++i) {
    TensorInfo &info = result.tensorList[i];
    in.setContext("tensor " + quoted(info.name));
    uint64_t size = in.fileSize();
    bool fits = dataStart && relativeOffsets[i] <= size &&
                *dataStart <= size - relativeOffsets[i];
    uint64_t absolute = fits ? *dataStart + relativeOffsets[i] : 0;
    if (!fits || info.bytes > size - absolute) {
      std::ostringstream os;
      os << "data [offset ";
      if (dataStart && relativeOffsets[i] <=
                           std::numeric_limits<uint64_t>::max() - *dataStart)
        os << *dataStart + relativeOffsets[i];
      else
        os << "data section + " << relativeOffsets[i];
      os << ", " << info.bytes << " bytes] runs past the end of the file ("
         << size << " bytes)";
      in.fail(os.str());
    }
    info.offset = absolute;
  }
  return result;
}

const GGUFValue *GGUFFile::find(const std::string &key) const {
  auto it = metadata.find(key);
  return it == metadata.end() ? nullptr : &it->second;
}

namespace {

[[noreturn]] void wrongType(const std::string &path, const std::string &key,
                            const char *expected, const GGUFValue &value) {
  throw FormatError(path, "key " + quoted(key) + ": expected " + expected +
                              ", found " + typeDescription(value));
}

/// An integer value as int64_t; u64 values above INT64_MAX do not fit.
int64_t integerValue(const std::string &path, const std::string &key,
                     const GGUFValue &value) {
  if (const auto *u = std::get_if<uint64_t>(&value.scalar)) {
    if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      throw FormatError(path, "key " + quoted(key) + ": value " +
                                  std::to_string(*u) + " (" +
                                  ggufTypeName(value.type) +
                                  ") does not fit in a signed 64-bit integer");
    return static_cast<int64_t>(*u);
  }
  return std::get<int64_t>(value.scalar);
}

double numericValue(const GGUFValue &value) {
  if (isFloat(value.type))
    return std::get<double>(value.scalar);
  if (const auto *u = std::get_if<uint64_t>(&value.scalar))
    return static_cast<double>(*u);
  return static_cast<double>(std::get<int64_t>(value.scalar));
}

} // namespace

std::optional<int64_t> GGUFFile::getInt(const std::string &key) const {
  const GGUFValue *value = find(key);
  if (!value)
    return std::nullopt;
  if (!isInteger(value->type))
    wrongType(path(), key, "an integer", *value);
  return integerValue(path(), key, *value);
}

std::optional<double> GGUFFile::getFloat(const std::string &key) const {
  const GGUFValue *value = find(key);
  if (!value)
    return std::nullopt;
  if (!isInteger(value->type) && !isFloat(value->type))
    wrongType(path(), key, "a float or an integer", *value);
  return numericValue(*value);
}

std::optional<bool> GGUFFile::getBool(const std::string &key) const {
  const GGUFValue *value = find(key);
  if (!value)
    return std::nullopt;
  if (value->type != GGUFType::Bool)
    wrongType(path(), key, "bool", *value);
  return std::get<bool>(value->scalar);
}

std::optional<std::string> GGUFFile::getString(const std::string &key) const {
  const GGUFValue *value = find(key);
  if (!value)
    return std::nullopt;
  if (value->type != GGUFType::String)
    wrongType(path(), key, "string", *value);
  return std::get<std::string>(value->scalar);
}

std::optional<std::vector<std::string>>
GGUFFile::getStringArray(const std::string &key) const {
  const GGUFValue *value = find(key);
  if (!value)
    return std::nullopt;
  if (value->type != GGUFType::Array || value->arrayType != GGUFType::String)
    wrongType(path(), key, "array of string", *value);
  std::vector<std::string> out;
  out.reserve(value->array.size());
  for (const GGUFValue &element : value->array)
    out.push_back(std::get<std::string>(element.scalar));
  return out;
}

std::optional<std::vector<float>>
GGUFFile::getFloatArray(const std::string &key) const {
  const GGUFValue *value = find(key);
  if (!value)
    return std::nullopt;
  if (value->type != GGUFType::Array ||
      (!isFloat(value->arrayType) && !isInteger(value->arrayType)))
    wrongType(path(), key, "array of float or integer", *value);
  std::vector<float> out;
  out.reserve(value->array.size());
  for (const GGUFValue &element : value->array)
    out.push_back(static_cast<float>(numericValue(element)));
  return out;
}

std::optional<std::vector<int64_t>>
GGUFFile::getIntArray(const std::string &key) const {
  const GGUFValue *value = find(key);
  if (!value)
    return std::nullopt;
  if (value->type != GGUFType::Array || !isInteger(value->arrayType))
    wrongType(path(), key, "array of integer", *value);
  std::vector<int64_t> out;
  out.reserve(value->array.size());
  for (const GGUFValue &element : value->array)
    out.push_back(integerValue(path(), key, element));
  return out;
}

std::string GGUFFile::describe(const std::string &key) const {
  const GGUFValue *value = find(key);
  return value ? describeValue(*value) : "(absent)";
}

const TensorInfo *GGUFFile::findTensor(const std::string &name) const {
  auto it = tensorIndex.find(name);
  return it == tensorIndex.end() ? nullptr : &tensorList[it->second];
}

bool hasGGUFMagic(const MappedFile &file) {
  return file.size() >= 4 && std::memcmp(file.data(), "GGUF", 4) == 0;
}

} // namespace kiln::formats
