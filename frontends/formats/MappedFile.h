//===- MappedFile.h - A read-only memory-mapped file ------------*- C++ -*-===//
//
// Part of Kiln. Weights stay in their file: readers map it once and hand out
// pointers into the mapping, never copies.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_FRONTENDS_FORMATS_MAPPEDFILE_H
#define KILN_FRONTENDS_FORMATS_MAPPEDFILE_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace kiln::formats {

class MappedFile {
public:
  /// Maps `path` read-only; throws FormatError if it cannot be opened or
  /// mapped. An empty file maps to size() == 0.
  static std::shared_ptr<const MappedFile> open(const std::string &path);

  /// Wraps bytes the caller keeps alive (fuzzers, tests) as a file named
  /// `name`; nothing is mapped or freed.
  static std::shared_ptr<const MappedFile>
  borrow(const std::string &name, const uint8_t *data, size_t size);

  ~MappedFile();
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;

  const uint8_t *data() const { return bytes; }
  size_t size() const { return length; }
  const std::string &path() const { return filePath; }

private:
  MappedFile(std::string path, const uint8_t *bytes, size_t length, bool mapped)
      : filePath(std::move(path)), bytes(bytes), length(length),
        mapped(mapped) {}

  std::string filePath;
  const uint8_t *bytes;
  size_t length;
  bool mapped; ///< Whether the destructor unmaps `bytes`.
};

} // namespace kiln::formats

#endif // KILN_FRONTENDS_FORMATS_MAPPEDFILE_H
