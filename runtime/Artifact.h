//===- Artifact.h - The compiled model's file -------------------*- C++ -*-===//
//
// Part of Kiln. An artifact is the one file `kiln compile` writes and the
// runtime loads: named sections ("manifest", "code", "weights", "tokenizer",
// "sources") behind a fixed header and a table that gives each section's
// offset, size, alignment and SHA-256. The layout is in docs/artifact.md.
//
// The runtime never sees IR, so this file is the only thing it knows about a
// compiled model. No MLIR or LLVM here.
//
// The reader maps the file once and hands out views into the mapping: weights
// (aligned to 4096 in the file) are read in place, never copied.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_ARTIFACT_H
#define KILN_RUNTIME_ARTIFACT_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::runtime {

/// A problem reading or writing an artifact. The message names the file, the
/// section at fault when there is one, and what was expected:
/// "model.kiln: section 'weights' is corrupt (SHA-256 mismatch)".
class ArtifactError : public std::runtime_error {
public:
  explicit ArtifactError(const std::string &message)
      : std::runtime_error(message) {}
};

/// The format version this Kiln writes and the only one it reads.
constexpr uint32_t kArtifactFormatVersion = 1;
/// Section names are at most this many bytes (the table stores 32 with a NUL).
constexpr size_t kMaxSectionNameLength = 31;
/// Sections may be aligned to any power of two up to this (1 GiB).
constexpr uint32_t kMaxSectionAlignment = 1u << 30;
/// Alignment of sections read in place through the mapping (weights): the
/// page size, so the mapping's pages are the file's pages.
constexpr uint32_t kPageAlignment = 4096;

/// The section names the code generator writes.
namespace section {
constexpr const char *kManifest = "manifest";   ///< JSON text.
constexpr const char *kCode = "code";           ///< The step's shared library.
constexpr const char *kWeights = "weights";     ///< Packed weights.
constexpr const char *kTokenizer = "tokenizer"; ///< TokenizerSpec as JSON.
constexpr const char *kSources = "sources";     ///< packSources() archive.
} // namespace section

/// Whether the file at `path` starts with an artifact's magic (to tell an
/// artifact from a model file; Artifact::open validates the rest). False
/// when it cannot be read.
bool hasArtifactMagic(const std::string &path);

/// One entry of the section table.
struct SectionInfo {
  std::string name;
  uint64_t offset = 0; ///< From the start of the file.
  uint64_t size = 0;
  uint32_t alignment = 1;
  std::array<uint8_t, 32> sha256{};
};

/// Collects sections and writes them as one artifact file.
class ArtifactWriter {
public:
  /// Adds a section holding `bytes`. Throws std::invalid_argument if the name
  /// is empty, longer than kMaxSectionNameLength, uses characters other than
  /// [A-Za-z0-9._-] or is already taken, or the alignment is not a power of
  /// two up to kMaxSectionAlignment.
  void addSection(std::string name, std::string bytes, uint32_t alignment = 64);

  /// Adds a section whose bytes are the file at `path`, read when write()
  /// runs and streamed (weights can be gigabytes). Same checks as addSection.
  void addSectionFromFile(std::string name, std::string path,
                          uint32_t alignment);

  /// Writes the artifact to `path` atomically: a temporary file in the same
  /// directory, renamed over `path` once complete. Throws ArtifactError on
  /// I/O failure (or a source file that cannot be read or changes size while
  /// it is copied); `path` is then left as it was.
  void write(const std::string &path) const;

private:
  struct PendingSection {
    std::string name;
    std::string bytes;      ///< When sourcePath is empty.
    std::string sourcePath; ///< A file to stream, or empty.
    uint32_t alignment;
  };
  void checkNewSection(const std::string &name, uint32_t alignment) const;

  std::vector<PendingSection> sections;
};

/// A validated artifact, mapped read-only. Move-only; views returned by
/// section() live as long as the Artifact.
class Artifact {
public:
  /// Maps `path` (MAP_PRIVATE, read-only) and validates the header and the
  /// section table: magic, version, bounds, alignment, overlaps, duplicate
  /// names. With `verifyHashes`, also checks every section's SHA-256 (which
  /// reads every byte once). Throws ArtifactError.
  static Artifact open(const std::string &path, bool verifyHashes = true);

  ~Artifact();
  Artifact(Artifact &&other) noexcept;
  Artifact &operator=(Artifact &&other) noexcept;
  Artifact(const Artifact &) = delete;
  Artifact &operator=(const Artifact &) = delete;

  /// The bytes of section `name`; throws ArtifactError naming the file, the
  /// section and the sections there are when it has none by that name.
  std::string_view section(std::string_view name) const;
  bool hasSection(std::string_view name) const;
  /// The table, in file order.
  const std::vector<SectionInfo> &sections() const { return table; }

  /// Recomputes the SHA-256 of section `name` and throws ArtifactError if it
  /// differs from the table's (for callers that opened without verifying).
  void verifySection(std::string_view name) const;

  const std::string &path() const { return filePath; }
  uint32_t formatVersion() const { return version; }
  /// The whole mapped file.
  const uint8_t *data() const { return bytes; }
  size_t size() const { return length; }

private:
  Artifact() = default;
  const SectionInfo *find(std::string_view name) const;

  std::string filePath;
  const uint8_t *bytes = nullptr;
  size_t length = 0;
  uint32_t version = 0;
  std::vector<SectionInfo> table;
};

/// The "sources" section: kernel sources as (relative path, contents) pairs,
/// in a length-prefixed archive (docs/artifact.md). Paths must be relative,
/// non-empty and free of "." and ".." components, so extracting them cannot
/// leave the target directory; packSources throws std::invalid_argument and
/// unpackSources throws ArtifactError otherwise.
std::string
packSources(const std::vector<std::pair<std::string, std::string>> &files);
std::vector<std::pair<std::string, std::string>>
unpackSources(std::string_view archive);

} // namespace kiln::runtime

#endif // KILN_RUNTIME_ARTIFACT_H
