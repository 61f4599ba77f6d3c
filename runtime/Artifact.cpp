//===- Artifact.cpp - The compiled model's file ---------------------------===//
//
// Part of Kiln. Layout (docs/artifact.md), every integer little-endian:
//
//   header  magic "KILNART\0" (8) | version u32 | section count u32
//   table   per section, 88 bytes: name (32, NUL-padded) | offset u64 |
//           size u64 | alignment u32 | reserved u32 (0) | SHA-256 (32)
//   bytes   each section at its offset, a multiple of its alignment; zero
//           padding between; the file ends where the last section ends
//
// Integers are encoded byte by byte rather than memcpy'd, so the format does
// not depend on the host's byte order.
//
//===----------------------------------------------------------------------===//

#include "runtime/Artifact.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <memory>
#include <openssl/evp.h>
#include <sstream>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln::runtime {

namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'A', 'R', 'T', '\0'};
constexpr size_t kHeaderBytes = 16;
constexpr size_t kNameBytes = 32;
constexpr size_t kEntryBytes = kNameBytes + 8 + 8 + 4 + 4 + 32;
/// More sections than any artifact needs; bounds the table a corrupt count
/// could claim before the file size check.
constexpr uint32_t kMaxSections = 1024;

template <typename... Parts> std::string concat(const Parts &...parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

//===----------------------------------------------------------------------===//
// Little-endian encoding
//===----------------------------------------------------------------------===//

void putLE(uint8_t *out, uint64_t value, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i)
    out[i] = static_cast<uint8_t>(value >> (8 * i));
}

uint64_t getLE(const uint8_t *in, size_t bytes) {
  uint64_t value = 0;
  for (size_t i = 0; i < bytes; ++i)
    value |= static_cast<uint64_t>(in[i]) << (8 * i);
  return value;
}

//===----------------------------------------------------------------------===//
// SHA-256 (OpenSSL EVP)
//===----------------------------------------------------------------------===//

class Sha256 {
public:
  Sha256() : ctx(EVP_MD_CTX_new()) {
    if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) != 1)
      throw ArtifactError("cannot initialise SHA-256 (OpenSSL)");
  }
  ~Sha256() { EVP_MD_CTX_free(ctx); }
  Sha256(const Sha256 &) = delete;
  Sha256 &operator=(const Sha256 &) = delete;

  void update(const void *data, size_t size) {
    if (size && EVP_DigestUpdate(ctx, data, size) != 1)
      throw ArtifactError("SHA-256 update failed (OpenSSL)");
  }
  std::array<uint8_t, 32> finish() {
    std::array<uint8_t, 32> digest{};
    unsigned int n = 0;
    if (EVP_DigestFinal_ex(ctx, digest.data(), &n) != 1 || n != digest.size())
      throw ArtifactError("SHA-256 finalisation failed (OpenSSL)");
    return digest;
  }

private:
  EVP_MD_CTX *ctx;
};

std::array<uint8_t, 32> sha256(const void *data, size_t size) {
  Sha256 hash;
  hash.update(data, size);
  return hash.finish();
}

//===----------------------------------------------------------------------===//
// Names and alignments
//===----------------------------------------------------------------------===//

bool isNameChar(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

bool isValidAlignment(uint64_t alignment) {
  return alignment != 0 && (alignment & (alignment - 1)) == 0 &&
         alignment <= kMaxSectionAlignment;
}

uint64_t alignUp(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) & ~(alignment - 1);
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

std::string errnoText() { return std::strerror(errno); }

/// An open file descriptor, closed on scope exit.
class FileDescriptor {
public:
  explicit FileDescriptor(int fd = -1) : fd(fd) {}
  ~FileDescriptor() { reset(); }
  FileDescriptor(const FileDescriptor &) = delete;
  FileDescriptor &operator=(const FileDescriptor &) = delete;
  int get() const { return fd; }
  /// Closes now; returns close()'s result (a failed close can mean lost
  /// writes on some file systems).
  int reset() {
    int rc = fd >= 0 ? ::close(fd) : 0;
    fd = -1;
    return rc;
  }

private:
  int fd;
};

void writeAll(int fd, const void *data, size_t size, const std::string &file) {
  auto *p = static_cast<const uint8_t *>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      throw ArtifactError(concat(file, ": cannot write: ", errnoText()));
    p += n;
    size -= static_cast<size_t>(n);
  }
}

void writeZeros(int fd, uint64_t count, const std::string &file) {
  static const uint8_t kZeros[65536] = {};
  while (count > 0) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(count, sizeof(kZeros)));
    writeAll(fd, kZeros, n, file);
    count -= n;
  }
}

/// Copies the file at `source` (expected to hold `expectedSize` bytes) to
/// `fd`, hashing as it goes, in chunks: the whole file is never in memory.
std::array<uint8_t, 32> streamFile(const std::string &source,
                                   uint64_t expectedSize,
                                   const std::string &section, int fd,
                                   const std::string &file) {
  FileDescriptor in(::open(source.c_str(), O_RDONLY | O_CLOEXEC));
  if (in.get() < 0)
    throw ArtifactError(concat(source, ": cannot open (for section '", section,
                               "'): ", errnoText()));
  std::vector<uint8_t> buffer(1 << 20);
  Sha256 hash;
  uint64_t copied = 0;
  for (;;) {
    ssize_t n = ::read(in.get(), buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      throw ArtifactError(concat(source, ": cannot read (for section '",
                                 section, "'): ", errnoText()));
    if (n == 0)
      break;
    copied += static_cast<uint64_t>(n);
    if (copied > expectedSize)
      break;
    hash.update(buffer.data(), static_cast<size_t>(n));
    writeAll(fd, buffer.data(), static_cast<size_t>(n), file);
  }
  if (copied != expectedSize)
    throw ArtifactError(concat(source,
                               ": changed size while being copied "
                               "into section '",
                               section, "' (expected ", expectedSize,
                               " bytes)"));
  return hash.finish();
}

/// The table entry of `info`, as stored.
void encodeEntry(const SectionInfo &info, uint8_t *out) {
  std::memset(out, 0, kEntryBytes);
  std::memcpy(out, info.name.data(), info.name.size());
  putLE(out + 32, info.offset, 8);
  putLE(out + 40, info.size, 8);
  putLE(out + 48, info.alignment, 4);
  // out + 52: reserved, zero.
  std::memcpy(out + 56, info.sha256.data(), info.sha256.size());
}

std::string directoryOf(const std::string &path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

} // namespace

void ArtifactWriter::checkNewSection(const std::string &name,
                                     uint32_t alignment) const {
  if (name.empty())
    throw std::invalid_argument("artifact section name is empty");
  if (name.size() > kMaxSectionNameLength)
    throw std::invalid_argument(concat("artifact section name '", name, "' is ",
                                       name.size(), " bytes; the limit is ",
                                       kMaxSectionNameLength));
  for (unsigned char c : name)
    if (!isNameChar(c))
      throw std::invalid_argument(concat(
          "artifact section name '", name,
          "' has a character outside [A-Za-z0-9._-] (byte ", int(c), ")"));
  if (!isValidAlignment(alignment))
    throw std::invalid_argument(
        concat("artifact section '", name, "': alignment ", alignment,
               " is not a power of two up to ", kMaxSectionAlignment));
  for (const PendingSection &s : sections)
    if (s.name == name)
      throw std::invalid_argument(
          concat("artifact section '", name, "' is added twice"));
}

void ArtifactWriter::addSection(std::string name, std::string bytes,
                                uint32_t alignment) {
  checkNewSection(name, alignment);
  sections.push_back({std::move(name), std::move(bytes), "", alignment});
}

void ArtifactWriter::addSectionFromFile(std::string name, std::string path,
                                        uint32_t alignment) {
  checkNewSection(name, alignment);
  if (path.empty())
    throw std::invalid_argument(
        concat("artifact section '", name, "': the source path is empty"));
  sections.push_back({std::move(name), "", std::move(path), alignment});
}

void ArtifactWriter::write(const std::string &path) const {
  // Lay out first: file sections are sized now and checked while copied.
  std::vector<SectionInfo> table(sections.size());
  uint64_t cursor = kHeaderBytes + kEntryBytes * sections.size();
  for (size_t i = 0; i < sections.size(); ++i) {
    const PendingSection &s = sections[i];
    uint64_t size = s.bytes.size();
    if (!s.sourcePath.empty()) {
      struct stat st;
      if (::stat(s.sourcePath.c_str(), &st) != 0)
        throw ArtifactError(concat(s.sourcePath, ": cannot read (for section '",
                                   s.name, "'): ", errnoText()));
      if (!S_ISREG(st.st_mode))
        throw ArtifactError(concat(s.sourcePath,
                                   ": not a regular file (for "
                                   "section '",
                                   s.name, "')"));
      size = static_cast<uint64_t>(st.st_size);
    }
    cursor = alignUp(cursor, s.alignment);
    table[i].name = s.name;
    table[i].offset = cursor;
    table[i].size = size;
    table[i].alignment = s.alignment;
    cursor += size;
  }

  // Write into a temporary file beside `path`: rename() is atomic only
  // within one file system, and readers never see a half-written artifact.
  std::string temp = path + ".tmp.XXXXXX";
  FileDescriptor out(::mkostemp(temp.data(), O_CLOEXEC));
  if (out.get() < 0)
    throw ArtifactError(concat(path, ": cannot create a temporary file in '",
                               directoryOf(path), "': ", errnoText()));
  try {
    // The table is written last, once the hashes are known; reserve it now.
    const uint64_t tableEnd = kHeaderBytes + kEntryBytes * sections.size();
    writeZeros(out.get(), tableEnd, path);
    uint64_t written = tableEnd;
    for (size_t i = 0; i < sections.size(); ++i) {
      const PendingSection &s = sections[i];
      writeZeros(out.get(), table[i].offset - written, path);
      if (s.sourcePath.empty()) {
        table[i].sha256 = sha256(s.bytes.data(), s.bytes.size());
        writeAll(out.get(), s.bytes.data(), s.bytes.size(), path);
      } else {
        table[i].sha256 =
            streamFile(s.sourcePath, table[i].size, s.name, out.get(), path);
      }
      written = table[i].offset + table[i].size;
    }

    std::vector<uint8_t> head(tableEnd, 0);
    std::memcpy(head.data(), kMagic, sizeof(kMagic));
    putLE(head.data() + 8, kArtifactFormatVersion, 4);
    putLE(head.data() + 12, sections.size(), 4);
    for (size_t i = 0; i < table.size(); ++i)
      encodeEntry(table[i], head.data() + kHeaderBytes + i * kEntryBytes);
    if (::lseek(out.get(), 0, SEEK_SET) != 0)
      throw ArtifactError(concat(path, ": cannot seek: ", errnoText()));
    writeAll(out.get(), head.data(), head.size(), path);

    // mkstemp creates the file 0600; an artifact is meant to be shared.
    if (::fchmod(out.get(), 0644) != 0 || ::fsync(out.get()) != 0 ||
        out.reset() != 0)
      throw ArtifactError(
          concat(path, ": cannot finish writing: ", errnoText()));
    if (::rename(temp.c_str(), path.c_str()) != 0)
      throw ArtifactError(concat(path, ": cannot rename the temporary file '",
                                 temp, "' to it: ", errnoText()));
  } catch (...) {
    out.reset();
    ::unlink(temp.c_str());
    throw;
  }
  // Make the rename itself durable; failing here loses nothing already
  // written, so it is best effort.
  FileDescriptor dir(
      ::open(directoryOf(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() >= 0)
    (void)::fsync(dir.get());
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

namespace {

/// Decodes and checks one table entry on its own (the checks that need the
/// other entries come after).
SectionInfo decodeEntry(const std::string &path, const uint8_t *in,
                        size_t index, uint64_t tableEnd, uint64_t fileSize) {
  SectionInfo info;
  const uint8_t *nul =
      static_cast<const uint8_t *>(std::memchr(in, 0, kNameBytes));
  if (!nul)
    throw ArtifactError(concat(path, ": section #", index,
                               ": the name is not NUL-terminated within ",
                               kNameBytes, " bytes (corrupt table)"));
  size_t nameLength = static_cast<size_t>(nul - in);
  if (nameLength == 0)
    throw ArtifactError(concat(path, ": section #", index,
                               " has an empty name (corrupt table)"));
  info.name.assign(reinterpret_cast<const char *>(in), nameLength);
  for (unsigned char c : info.name)
    if (!isNameChar(c))
      throw ArtifactError(concat(path, ": section #", index,
                                 ": the name has byte ", int(c),
                                 ", expected only [A-Za-z0-9._-] (corrupt "
                                 "table)"));
  for (size_t i = nameLength; i < kNameBytes; ++i)
    if (in[i] != 0)
      throw ArtifactError(concat(path, ": section '", info.name,
                                 "': the name's padding is not zero (corrupt "
                                 "table)"));
  info.offset = getLE(in + 32, 8);
  info.size = getLE(in + 40, 8);
  uint64_t alignment = getLE(in + 48, 4);
  uint64_t reserved = getLE(in + 52, 4);
  std::memcpy(info.sha256.data(), in + 56, info.sha256.size());

  const std::string where = concat(path, ": section '", info.name, "'");
  if (reserved != 0)
    throw ArtifactError(concat(where, ": reserved field is ", reserved,
                               ", expected 0 (corrupt table)"));
  if (!isValidAlignment(alignment))
    throw ArtifactError(concat(where, ": alignment ", alignment,
                               " is not a power of two up to ",
                               kMaxSectionAlignment, " (corrupt table)"));
  info.alignment = static_cast<uint32_t>(alignment);
  if (info.offset % alignment != 0)
    throw ArtifactError(concat(where, ": offset ", info.offset,
                               " is not a multiple of its alignment ",
                               alignment, " (corrupt table)"));
  if (info.offset < tableEnd)
    throw ArtifactError(concat(where, " starts at byte ", info.offset,
                               ", inside the header and section table, which "
                               "end at byte ",
                               tableEnd, " (corrupt table)"));
  if (info.size > fileSize || info.offset > fileSize - info.size)
    throw ArtifactError(
        concat(path, ": truncated: section '", info.name, "' ends at byte ",
               // Printed as a sum when it would overflow 64 bits.
               info.offset <= UINT64_MAX - info.size
                   ? std::to_string(info.offset + info.size)
                   : concat(info.offset, " + ", info.size),
               " but the file has ", fileSize, " bytes"));
  return info;
}

} // namespace

Artifact Artifact::open(const std::string &path, bool verifyHashes) {
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0)
    throw ArtifactError(concat(path, ": cannot open: ", errnoText()));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0)
    throw ArtifactError(concat(path, ": cannot stat: ", errnoText()));
  if (!S_ISREG(st.st_mode))
    throw ArtifactError(concat(path, ": not a regular file"));

  Artifact artifact;
  artifact.filePath = path;
  artifact.length = static_cast<size_t>(st.st_size);
  if (artifact.length > 0) {
    void *mapping =
        ::mmap(nullptr, artifact.length, PROT_READ, MAP_PRIVATE, fd.get(), 0);
    if (mapping == MAP_FAILED)
      throw ArtifactError(concat(path, ": cannot map: ", errnoText()));
    artifact.bytes = static_cast<const uint8_t *>(mapping);
  }
  fd.reset(); // The mapping keeps the file alive.

  // From here `artifact` owns the mapping: an exception unmaps it.
  const uint8_t *data = artifact.bytes;
  const uint64_t size = artifact.length;
  size_t magicBytes = std::min<size_t>(size, sizeof(kMagic));
  if (size == 0 || std::memcmp(data, kMagic, magicBytes) != 0)
    throw ArtifactError(concat(path, ": not a Kiln artifact (bad magic)"));
  if (size < kHeaderBytes)
    throw ArtifactError(concat(path, ": truncated: the header ends at byte ",
                               kHeaderBytes, " but the file has ", size,
                               " bytes"));
  artifact.version = static_cast<uint32_t>(getLE(data + 8, 4));
  if (artifact.version != kArtifactFormatVersion)
    throw ArtifactError(concat(path, ": format version ", artifact.version,
                               ", this Kiln reads ", kArtifactFormatVersion));
  uint32_t count = static_cast<uint32_t>(getLE(data + 12, 4));
  if (count > kMaxSections)
    throw ArtifactError(concat(path, ": the header claims ", count,
                               " sections, more than the limit of ",
                               kMaxSections, " (corrupt header)"));
  const uint64_t tableEnd = kHeaderBytes + uint64_t(count) * kEntryBytes;
  if (tableEnd > size)
    throw ArtifactError(concat(path,
                               ": truncated: the section table ends at byte ",
                               tableEnd, " but the file has ", size, " bytes"));

  std::vector<SectionInfo> &table = artifact.table;
  table.reserve(count);
  uint64_t end = tableEnd;
  for (uint32_t i = 0; i < count; ++i) {
    SectionInfo info = decodeEntry(
        path, data + kHeaderBytes + size_t(i) * kEntryBytes, i, tableEnd, size);
    for (uint32_t j = 0; j < i; ++j)
      if (table[j].name == info.name)
        throw ArtifactError(concat(path, ": sections #", j, " and #", i,
                                   " are both named '", info.name,
                                   "' (corrupt table)"));
    end = std::max(end, info.offset + info.size);
    table.push_back(std::move(info));
  }

  // Overlaps: sorted by offset (table order among equals, so messages are
  // stable), each non-empty section must end before the next begins. An
  // empty section occupies no bytes and overlaps nothing.
  std::vector<const SectionInfo *> byOffset;
  for (const SectionInfo &info : table)
    if (info.size > 0)
      byOffset.push_back(&info);
  std::sort(byOffset.begin(), byOffset.end(),
            [](const SectionInfo *a, const SectionInfo *b) {
              return a->offset != b->offset ? a->offset < b->offset : a < b;
            });
  for (size_t i = 1; i < byOffset.size(); ++i) {
    const SectionInfo &a = *byOffset[i - 1], &b = *byOffset[i];
    if (a.offset + a.size > b.offset)
      throw ArtifactError(
          concat(path, ": sections '", a.name, "' (bytes ", a.offset, "..",
                 a.offset + a.size, ") and '", b.name, "' (bytes ", b.offset,
                 "..", b.offset + b.size, ") overlap (corrupt table)"));
  }
  if (size > end)
    throw ArtifactError(concat(path, ": ", size - end,
                               " unexpected bytes after the last section, "
                               "which ends at byte ",
                               end));

  if (verifyHashes)
    for (const SectionInfo &info : table)
      artifact.verifySection(info.name);
  return artifact;
}

Artifact::~Artifact() {
  if (bytes)
    ::munmap(const_cast<uint8_t *>(bytes), length);
}

Artifact::Artifact(Artifact &&other) noexcept
    : filePath(std::move(other.filePath)), bytes(other.bytes),
      length(other.length), version(other.version),
      table(std::move(other.table)) {
  other.bytes = nullptr;
  other.length = 0;
}

Artifact &Artifact::operator=(Artifact &&other) noexcept {
  if (this != &other) {
    if (bytes)
      ::munmap(const_cast<uint8_t *>(bytes), length);
    filePath = std::move(other.filePath);
    bytes = other.bytes;
    length = other.length;
    version = other.version;
    table = std::move(other.table);
    other.bytes = nullptr;
    other.length = 0;
  }
  return *this;
}

const SectionInfo *Artifact::find(std::string_view name) const {
  for (const SectionInfo &info : table)
    if (info.name == name)
      return &info;
  return nullptr;
}

bool Artifact::hasSection(std::string_view name) const {
  return find(name) != nullptr;
}

std::string_view Artifact::section(std::string_view name) const {
  const SectionInfo *info = find(name);
  if (!info) {
    std::string names;
    for (const SectionInfo &s : table)
      names += (names.empty() ? "" : ", ") + s.name;
    throw ArtifactError(concat(path(), ": no section '", name, "' (it has ",
                               names.empty() ? "none" : names, ")"));
  }
  return std::string_view(reinterpret_cast<const char *>(bytes) + info->offset,
                          info->size);
}

void Artifact::verifySection(std::string_view name) const {
  std::string_view view = section(name);
  if (sha256(view.data(), view.size()) != find(name)->sha256)
    throw ArtifactError(
        concat(path(), ": section '", name, "' is corrupt (SHA-256 mismatch)"));
}

//===----------------------------------------------------------------------===//
// The "sources" archive
//===----------------------------------------------------------------------===//
//
//   file count u32, then per file: path length u32 | path | size u64 | bytes

namespace {

/// Why `path` may not be extracted, or an empty string when it may.
std::string badSourcePath(std::string_view path) {
  if (path.empty())
    return "the path is empty";
  if (path.front() == '/')
    return "the path is absolute";
  if (path.find('\0') != std::string_view::npos)
    return "the path contains a NUL byte";
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string_view::npos)
      slash = path.size();
    std::string_view part = path.substr(start, slash - start);
    if (part.empty() || part == "." || part == "..")
      return "the path has an empty, '.' or '..' component";
    start = slash + 1;
  }
  return "";
}

} // namespace

std::string
packSources(const std::vector<std::pair<std::string, std::string>> &files) {
  if (files.size() > UINT32_MAX)
    throw std::invalid_argument("sources archive: too many files");
  std::string out(4, '\0');
  putLE(reinterpret_cast<uint8_t *>(out.data()), files.size(), 4);
  for (size_t i = 0; i < files.size(); ++i) {
    const auto &[path, contents] = files[i];
    std::string why = badSourcePath(path);
    if (!why.empty())
      throw std::invalid_argument(
          concat("sources archive: file '", path, "': ", why));
    if (path.size() > UINT32_MAX)
      throw std::invalid_argument(
          concat("sources archive: file #", i, ": the path is too long"));
    for (size_t j = 0; j < i; ++j)
      if (files[j].first == path)
        throw std::invalid_argument(
            concat("sources archive: file '", path, "' is added twice"));
    uint8_t length[4], size[8];
    putLE(length, path.size(), 4);
    putLE(size, contents.size(), 8);
    out.append(reinterpret_cast<const char *>(length), 4);
    out.append(path);
    out.append(reinterpret_cast<const char *>(size), 8);
    out.append(contents);
  }
  return out;
}

std::vector<std::pair<std::string, std::string>>
unpackSources(std::string_view archive) {
  const std::string where = "section 'sources'";
  size_t pos = 0;
  auto take = [&](uint64_t n, const std::string &what) {
    if (n > archive.size() - pos)
      throw ArtifactError(concat(where, ": truncated: ", what, " needs ", n,
                                 " bytes at byte ", pos, " but only ",
                                 archive.size() - pos, " remain"));
    std::string_view bytes = archive.substr(pos, static_cast<size_t>(n));
    pos += static_cast<size_t>(n);
    return bytes;
  };
  auto number = [&](size_t bytes, const std::string &what) {
    return getLE(reinterpret_cast<const uint8_t *>(take(bytes, what).data()),
                 bytes);
  };

  uint64_t count = number(4, "the file count");
  // Every entry takes at least 12 bytes: a bogus count fails here rather
  // than in reserve().
  if (count > (archive.size() - pos) / 12)
    throw ArtifactError(concat(where, ": claims ", count,
                               " files but has only ", archive.size() - pos,
                               " bytes for them"));
  std::vector<std::pair<std::string, std::string>> files;
  files.reserve(static_cast<size_t>(count));
  for (uint64_t i = 0; i < count; ++i) {
    std::string entry = concat("file #", i);
    uint64_t pathLength = number(4, entry + "'s path length");
    std::string path(take(pathLength, entry + "'s path"));
    std::string why = badSourcePath(path);
    if (!why.empty())
      throw ArtifactError(concat(where, ": ", entry, " ('", path, "'): ", why));
    for (const auto &file : files)
      if (file.first == path)
        throw ArtifactError(concat(where, ": file '", path, "' appears twice"));
    uint64_t size = number(8, concat("the size of file '", path, "'"));
    std::string contents(take(size, concat("file '", path, "'")));
    files.emplace_back(std::move(path), std::move(contents));
  }
  if (pos != archive.size())
    throw ArtifactError(concat(where, ": ", archive.size() - pos,
                               " unexpected bytes after the last file"));
  return files;
}

bool hasArtifactMagic(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  char magic[sizeof(kMagic)] = {};
  in.read(magic, sizeof magic);
  return in && std::memcmp(magic, kMagic, sizeof magic) == 0;
}

} // namespace kiln::runtime
