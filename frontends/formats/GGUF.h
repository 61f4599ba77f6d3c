//===- GGUF.h - Reading GGUF files ------------------------------*- C++ -*-===//
//
// Part of Kiln. A validating reader of GGUF v2/v3 files (metadata and tensor
// directory); tensor data stays in the memory-mapped file. Every malformed
// input -- truncation, bad magic or version, absurd counts, strings or arrays
// running past the end, unknown value types, tensor offsets that are
// unaligned or past the end, unsupported tensor types -- throws FormatError
// naming the file and the key or tensor at fault. Never reads out of bounds.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_FRONTENDS_FORMATS_GGUF_H
#define KILN_FRONTENDS_FORMATS_GGUF_H

#include "frontends/formats/MappedFile.h"
#include "frontends/formats/TensorInfo.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace kiln::formats {

/// GGUF metadata value types (the numbers are the file's).
enum class GGUFType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};
const char *ggufTypeName(GGUFType type);

/// One metadata value. Integers are widened to int64_t/uint64_t and floats to
/// double; `type` remembers the type in the file. An array holds its
/// elements (all of `arrayType`) in `array`.
struct GGUFValue {
  GGUFType type = GGUFType::U8;
  GGUFType arrayType = GGUFType::U8; ///< Element type when type == Array.
  std::variant<uint64_t, int64_t, double, bool, std::string> scalar;
  std::vector<GGUFValue> array;
};

/// Whether `file` starts with GGUF's magic bytes (used to tell formats
/// apart; GGUFFile::read validates the rest).
bool hasGGUFMagic(const MappedFile &file);

class GGUFFile {
public:
  /// Maps and parses `path`.
  static GGUFFile open(const std::string &path);
  /// Parses an already mapped file.
  static GGUFFile read(std::shared_ptr<const MappedFile> file);

  const std::string &path() const { return file->path(); }
  uint32_t version() const { return fileVersion; }
  /// Data alignment (general.alignment, default 32).
  uint64_t alignment() const { return dataAlignment; }

  /// Metadata keys in file order, and their values.
  const std::vector<std::string> &keys() const { return keyOrder; }
  const GGUFValue *find(const std::string &key) const;

  /// Typed access. Each returns nothing when the key is absent and throws
  /// FormatError naming the key when it has an incompatible type (getInt
  /// accepts any integer type, getFloat any integer or float type).
  std::optional<int64_t> getInt(const std::string &key) const;
  std::optional<double> getFloat(const std::string &key) const;
  std::optional<bool> getBool(const std::string &key) const;
  std::optional<std::string> getString(const std::string &key) const;
  std::optional<std::vector<std::string>>
  getStringArray(const std::string &key) const;
  std::optional<std::vector<float>> getFloatArray(const std::string &key) const;
  std::optional<std::vector<int64_t>> getIntArray(const std::string &key) const;

  /// A short printable form of a value for `kiln inspect` (long arrays are
  /// summarized by type and length).
  std::string describe(const std::string &key) const;

  const std::vector<TensorInfo> &tensors() const { return tensorList; }
  const TensorInfo *findTensor(const std::string &name) const;
  /// First byte of a tensor's data (inside the mapping).
  const uint8_t *data(const TensorInfo &tensor) const {
    return file->data() + tensor.offset;
  }
  const std::shared_ptr<const MappedFile> &mapping() const { return file; }

private:
  std::shared_ptr<const MappedFile> file;
  uint32_t fileVersion = 0;
  uint64_t dataAlignment = 32;
  std::vector<std::string> keyOrder;
  std::map<std::string, GGUFValue> metadata;
  std::vector<TensorInfo> tensorList;
  std::map<std::string, size_t> tensorIndex;
};

} // namespace kiln::formats

#endif // KILN_FRONTENDS_FORMATS_GGUF_H
