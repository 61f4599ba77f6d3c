//===- MappedFile.cpp - A read-only memory-mapped file --------------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "frontends/formats/MappedFile.h"

#include "frontends/formats/FormatError.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln::formats {

std::shared_ptr<const MappedFile> MappedFile::open(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw FormatError(path,
                      std::string("cannot open: ") + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    int err = errno;
    ::close(fd);
    throw FormatError(path,
                      S_ISDIR(st.st_mode)
                          ? std::string("is a directory, not a file")
                          : std::string("cannot stat: ") + std::strerror(err));
  }
  size_t length = static_cast<size_t>(st.st_size);
  const uint8_t *bytes = nullptr;
  if (length > 0) {
    void *mapping = ::mmap(nullptr, length, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapping == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      throw FormatError(path, std::string("cannot map: ") + std::strerror(err));
    }
    bytes = static_cast<const uint8_t *>(mapping);
  }
  ::close(fd);
  return std::shared_ptr<const MappedFile>(
      new MappedFile(path, bytes, length, /*mapped=*/true));
}

std::shared_ptr<const MappedFile>
MappedFile::borrow(const std::string &name, const uint8_t *data, size_t size) {
  return std::shared_ptr<const MappedFile>(
      new MappedFile(name, size ? data : nullptr, size, /*mapped=*/false));
}

MappedFile::~MappedFile() {
  if (mapped && bytes)
    ::munmap(const_cast<uint8_t *>(bytes), length);
}

} // namespace kiln::formats
