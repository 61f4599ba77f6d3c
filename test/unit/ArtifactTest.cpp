//===- ArtifactTest.cpp - Artifact files, CPU features, step libraries ----===//
//
// Part of Kiln's unit tests. Links only kiln_runtime (no MLIR). Corrupt
// artifacts are made by editing a good one's bytes at the offsets
// docs/artifact.md documents; every corruption must be an ArtifactError that
// names what is wrong, never a crash.
//
//===----------------------------------------------------------------------===//

#include "runtime/Artifact.h"
#include "ScopedEnv.h"
#include "runtime/CompiledModel.h"
#include "runtime/CpuFeatures.h"
#include "runtime/HugePageBuffer.h"
#include "runtime/StepLibrary.h"
#include "runtime/TokenizerSpecJson.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <sstream>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>

using namespace kiln::runtime;
using kiln::test::ScopedEnv;

namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

// The documented layout (docs/artifact.md).
constexpr size_t kHeader = 16, kEntry = 88;
constexpr size_t kOffsetField = 32, kSizeField = 40, kAlignField = 48,
                 kReservedField = 52;

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void putLE(std::string &bytes, size_t at, uint64_t value, size_t width) {
  for (size_t i = 0; i < width; ++i)
    bytes[at + i] = static_cast<char>(value >> (8 * i));
}

uint64_t getLE(const std::string &bytes, size_t at, size_t width) {
  uint64_t value = 0;
  for (size_t i = 0; i < width; ++i)
    value |= uint64_t(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  return value;
}

std::vector<std::string> listDir(const std::string &dir) {
  std::vector<std::string> names;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d))
      if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, ".."))
        names.push_back(e->d_name);
    closedir(d);
  }
  return names;
}

/// The message of the ArtifactError `f` throws, or "" when it throws none.
/// Any other exception fails the test.
std::string artifactErrorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const ArtifactError &e) {
    return e.what();
  }
  return "";
}

/// A scratch directory, removed with its files.
class ArtifactFiles : public ::testing::Test {
protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "kiln-artifact-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir = tmpl;
  }
  void TearDown() override {
    for (const std::string &name : listDir(dir))
      unlink((dir + "/" + name).c_str());
    rmdir(dir.c_str());
  }
  std::string file(const std::string &name) const { return dir + "/" + name; }

  /// A 10000-byte weights file; its bytes are not all alike, so a shifted
  /// read would be noticed.
  std::string weightsBytes() const {
    std::string bytes(10000, '\0');
    for (size_t i = 0; i < bytes.size(); ++i)
      bytes[i] = static_cast<char>((i * 131 + 7) % 251);
    return bytes;
  }

  /// Writes the artifact used by most tests and returns its path.
  std::string writeGoodArtifact() {
    writeFile(file("weights.bin"), weightsBytes());
    ArtifactWriter writer;
    writer.addSection("manifest", R"({"model": "tiny"})");
    writer.addSection("code", std::string(300, 'c'), 16);
    writer.addSectionFromFile("weights", file("weights.bin"), kPageAlignment);
    writer.addSection("tokenizer", R"({"tokens": []})");
    writer.addSection("sources", packSources({{"kernels/a.cpp", "int a;"}}));
    std::string path = file("model.kiln");
    writer.write(path);
    return path;
  }

  std::string dir;
};

//===----------------------------------------------------------------------===//
// Writing and reading
//===----------------------------------------------------------------------===//

TEST_F(ArtifactFiles, RoundTripsSectionsAtTheirAlignment) {
  std::string path = writeGoodArtifact();
  Artifact artifact = Artifact::open(path);
  EXPECT_EQ(artifact.path(), path);
  EXPECT_EQ(artifact.formatVersion(), kArtifactFormatVersion);
  EXPECT_EQ(artifact.section("manifest"), R"({"model": "tiny"})");
  EXPECT_EQ(artifact.section("code"), std::string(300, 'c'));
  EXPECT_EQ(artifact.section("weights"), weightsBytes());
  EXPECT_EQ(artifact.section("tokenizer"), R"({"tokens": []})");
  EXPECT_EQ(unpackSources(artifact.section("sources")),
            (std::vector<std::pair<std::string, std::string>>{
                {"kernels/a.cpp", "int a;"}}));
  EXPECT_TRUE(artifact.hasSection("weights"));
  EXPECT_FALSE(artifact.hasSection("weight"));

  // The table is in the order sections were added, each at its alignment.
  const std::vector<SectionInfo> &table = artifact.sections();
  ASSERT_EQ(table.size(), 5u);
  const char *names[] = {"manifest", "code", "weights", "tokenizer", "sources"};
  const uint32_t alignments[] = {64, 16, 4096, 64, 64};
  for (size_t i = 0; i < table.size(); ++i) {
    EXPECT_EQ(table[i].name, names[i]);
    EXPECT_EQ(table[i].alignment, alignments[i]);
    EXPECT_EQ(table[i].offset % table[i].alignment, 0u) << names[i];
    EXPECT_GE(table[i].offset, kHeader + 5 * kEntry);
  }
  // Weights are read in place: page-aligned in the file and so in memory.
  EXPECT_EQ(table[2].offset % 4096, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(artifact.section("weights").data()) %
                4096,
            0u);
  // The file ends where the last section does, and nothing else is left.
  EXPECT_EQ(artifact.size(), table.back().offset + table.back().size);
  EXPECT_EQ(readFile(path).size(), artifact.size());
  EXPECT_EQ(listDir(dir).size(), 2u); // weights.bin, model.kiln
}

TEST_F(ArtifactFiles, EmptyArtifactsAndSections) {
  ArtifactWriter none;
  none.write(file("none.kiln"));
  EXPECT_TRUE(Artifact::open(file("none.kiln")).sections().empty());

  ArtifactWriter writer;
  writer.addSection("a", "");
  writer.addSection("b", "x", 1);
  writer.addSection("c", "", 4096);
  writer.write(file("empty.kiln"));
  Artifact artifact = Artifact::open(file("empty.kiln"));
  EXPECT_EQ(artifact.section("a"), "");
  EXPECT_EQ(artifact.section("b"), "x");
  EXPECT_EQ(artifact.section("c"), "");
}

TEST_F(ArtifactFiles, RewritingReplacesTheFile) {
  std::string path = writeGoodArtifact();
  ArtifactWriter writer;
  writer.addSection("manifest", "{}");
  writer.write(path);
  Artifact artifact = Artifact::open(path);
  EXPECT_EQ(artifact.sections().size(), 1u);
  EXPECT_EQ(artifact.section("manifest"), "{}");
}

TEST_F(ArtifactFiles, MovedArtifactKeepsItsMapping) {
  Artifact a = Artifact::open(writeGoodArtifact());
  Artifact b = std::move(a);
  EXPECT_EQ(b.section("code"), std::string(300, 'c'));
  a = std::move(b);
  EXPECT_EQ(a.section("manifest"), R"({"model": "tiny"})");
}

TEST_F(ArtifactFiles, MissingSectionNamesTheFileAndListsTheSections) {
  std::string path = writeGoodArtifact();
  Artifact artifact = Artifact::open(path);
  EXPECT_EQ(artifactErrorOf([&] { artifact.section("kernels"); }),
            path + ": no section 'kernels' (it has manifest, code, weights, "
                   "tokenizer, sources)");
}

TEST(ArtifactWriter, RejectsBadNamesAndAlignments) {
  ArtifactWriter writer;
  writer.addSection("manifest", "{}");
  EXPECT_THROW(writer.addSection("manifest", "{}"), std::invalid_argument);
  EXPECT_THROW(writer.addSection("", "x"), std::invalid_argument);
  EXPECT_THROW(writer.addSection(std::string(32, 'n'), "x"),
               std::invalid_argument);
  EXPECT_NO_THROW(writer.addSection(std::string(31, 'n'), "x"));
  EXPECT_THROW(writer.addSection("with space", "x"), std::invalid_argument);
  EXPECT_THROW(writer.addSection("a", "x", 0), std::invalid_argument);
  EXPECT_THROW(writer.addSection("a", "x", 48), std::invalid_argument);
  EXPECT_THROW(writer.addSection("a", "x", 1u << 31), std::invalid_argument);
  EXPECT_THROW(writer.addSectionFromFile("a", "", 64), std::invalid_argument);
}

TEST_F(ArtifactFiles, MissingSourceFileLeavesNothingBehind) {
  std::string path = writeGoodArtifact();
  std::string before = readFile(path);
  ArtifactWriter writer;
  writer.addSection("manifest", "{}");
  writer.addSectionFromFile("weights", file("nope.bin"), 4096);
  std::string error = artifactErrorOf([&] { writer.write(path); });
  EXPECT_NE(error.find("nope.bin"), std::string::npos) << error;
  EXPECT_NE(error.find("section 'weights'"), std::string::npos) << error;
  EXPECT_EQ(readFile(path), before);
  EXPECT_EQ(listDir(dir).size(), 2u);
}

TEST_F(ArtifactFiles, UnwritableDirectoryIsAnError) {
  ArtifactWriter writer;
  writer.addSection("manifest", "{}");
  std::string path = file("no-such-dir/model.kiln");
  std::string error = artifactErrorOf([&] { writer.write(path); });
  EXPECT_NE(error.find(path), std::string::npos) << error;
}

//===----------------------------------------------------------------------===//
// Corruption
//===----------------------------------------------------------------------===//

TEST_F(ArtifactFiles, FlippedByteInEachSectionIsNamed) {
  std::string path = writeGoodArtifact();
  const std::string good = readFile(path);
  std::vector<SectionInfo> table = Artifact::open(path).sections();
  for (const SectionInfo &info : table) {
    for (uint64_t at : {info.offset, info.offset + info.size / 2,
                        info.offset + info.size - 1}) {
      std::string bad = good;
      bad[at] ^= 0x01;
      writeFile(path, bad);
      EXPECT_EQ(artifactErrorOf([&] { Artifact::open(path); }),
                path + ": section '" + info.name +
                    "' is corrupt (SHA-256 mismatch)")
          << "byte " << at;
      // Without the check the file opens; verifySection finds it later.
      Artifact unchecked = Artifact::open(path, /*verifyHashes=*/false);
      EXPECT_NE(artifactErrorOf([&] { unchecked.verifySection(info.name); }),
                "");
    }
  }
}

TEST_F(ArtifactFiles, TruncationIsNamed) {
  std::string path = writeGoodArtifact();
  const std::string good = readFile(path);
  std::vector<SectionInfo> table = Artifact::open(path).sections();

  writeFile(path, "");
  EXPECT_EQ(artifactErrorOf([&] { Artifact::open(path); }),
            path + ": not a Kiln artifact (bad magic)");
  for (size_t cut : {4, 15}) {
    writeFile(path, good.substr(0, cut));
    EXPECT_EQ(artifactErrorOf([&] { Artifact::open(path); }),
              path +
                  ": truncated: the header ends at byte 16 but the file "
                  "has " +
                  std::to_string(cut) + " bytes");
  }
  for (size_t cut : {size_t(16), kHeader + kEntry * 5 - 1}) {
    writeFile(path, good.substr(0, cut));
    EXPECT_EQ(artifactErrorOf([&] { Artifact::open(path); }),
              path + ": truncated: the section table ends at byte " +
                  std::to_string(kHeader + 5 * kEntry) + " but the file has " +
                  std::to_string(cut) + " bytes");
  }
  // Inside each section, and in the padding just before it.
  for (const SectionInfo &info : table) {
    for (uint64_t cut : {info.offset - 1, info.offset + info.size / 2,
                         info.offset + info.size - 1}) {
      writeFile(path, good.substr(0, cut));
      EXPECT_EQ(artifactErrorOf([&] { Artifact::open(path); }),
                path + ": truncated: section '" + info.name +
                    "' ends at byte " +
                    std::to_string(info.offset + info.size) +
                    " but the file has " + std::to_string(cut) + " bytes");
    }
  }
}

TEST_F(ArtifactFiles, BadMagicAndVersion) {
  std::string path = writeGoodArtifact();
  const std::string good = readFile(path);

  std::string bad = good;
  bad[0] = 'k';
  writeFile(path, bad);
  EXPECT_EQ(artifactErrorOf([&] { Artifact::open(path); }),
            path + ": not a Kiln artifact (bad magic)");
  writeFile(path, "{\"this\": \"is JSON\"}");
  EXPECT_EQ(artifactErrorOf([&] { Artifact::open(path); }),
            path + ": not a Kiln artifact (bad magic)");

  bad = good;
  putLE(bad, 8, 7, 4);
  writeFile(path, bad);
  EXPECT_EQ(artifactErrorOf([&] { Artifact::open(path); }),
            path + ": format version 7, this Kiln reads 1");
}

TEST_F(ArtifactFiles, InconsistentTablesAreNamed) {
  std::string path = writeGoodArtifact();
  const std::string good = readFile(path);
  auto entry = [](size_t i) { return kHeader + i * kEntry; };
  auto openError = [&](const std::string &bytes) {
    writeFile(path, bytes);
    return artifactErrorOf([&] { Artifact::open(path); });
  };
  auto contains = [](const std::string &haystack, const std::string &needle) {
    return haystack.find(needle) != std::string::npos;
  };

  // 'tokenizer' moved onto 'manifest' (both 64-aligned).
  std::string bad = good;
  putLE(bad, entry(3) + kOffsetField, getLE(good, entry(0) + kOffsetField, 8),
        8);
  std::string error = openError(bad);
  EXPECT_TRUE(contains(error, "sections 'manifest'") &&
              contains(error, "'tokenizer'") && contains(error, "overlap"))
      << error;

  // 'code' grown into 'weights'.
  bad = good;
  putLE(bad, entry(1) + kSizeField, 5000, 8);
  error = openError(bad);
  EXPECT_TRUE(contains(error, "'code'") && contains(error, "'weights'") &&
              contains(error, "overlap"))
      << error;

  // Two sections named 'code'.
  bad = good;
  std::memcpy(&bad[entry(0)], "code\0\0\0\0\0", 9);
  error = openError(bad);
  EXPECT_TRUE(contains(error, "both named 'code'")) << error;

  // Misaligned, inside the table, past the end, overflowing.
  bad = good;
  putLE(bad, entry(2) + kOffsetField,
        getLE(good, entry(2) + kOffsetField, 8) + 64, 8);
  EXPECT_TRUE(contains(openError(bad), "section 'weights': offset"));
  bad = good;
  putLE(bad, entry(0) + kOffsetField, 64, 8);
  EXPECT_TRUE(contains(openError(bad), "section 'manifest' starts at byte 64, "
                                       "inside the header and section table"));
  bad = good;
  putLE(bad, entry(4) + kSizeField, std::numeric_limits<uint64_t>::max(), 8);
  EXPECT_TRUE(contains(openError(bad), "truncated: section 'sources' ends at"));

  // Alignment not a power of two; reserved bits set; name unterminated.
  bad = good;
  putLE(bad, entry(1) + kAlignField, 24, 4);
  EXPECT_TRUE(contains(openError(bad), "section 'code': alignment 24"));
  bad = good;
  putLE(bad, entry(1) + kReservedField, 1, 4);
  EXPECT_TRUE(contains(openError(bad), "section 'code': reserved field"));
  bad = good;
  std::memset(&bad[entry(1)], 'x', 32);
  EXPECT_TRUE(contains(openError(bad), "section #1: the name"));

  // A section count no file could hold; bytes after the last section.
  bad = good;
  putLE(bad, 12, 1u << 20, 4);
  EXPECT_TRUE(contains(openError(bad), "1048576 sections"));
  EXPECT_TRUE(contains(openError(good + "junk"),
                       "4 unexpected bytes after the last section"));
}

TEST_F(ArtifactFiles, EveryHeaderAndTableByteIsChecked) {
  // Each byte of the header and table, inverted: always an error, never a
  // crash and never an artifact that opens.
  std::string path = writeGoodArtifact();
  const std::string good = readFile(path);
  for (size_t at = 0; at < kHeader + 5 * kEntry; ++at) {
    std::string bad = good;
    bad[at] ^= static_cast<char>(0xff);
    writeFile(path, bad);
    EXPECT_NE(artifactErrorOf([&] { Artifact::open(path); }), "")
        << "byte " << at;
  }
}

//===----------------------------------------------------------------------===//
// The "sources" archive
//===----------------------------------------------------------------------===//

TEST(ArtifactSources, RoundTripsAndRejectsEveryTruncation) {
  std::vector<std::pair<std::string, std::string>> files = {
      {"kernels/matmul_0.cpp", "void f() {}\n"},
      {"StepABI.h", std::string("\0binary\xff", 8)},
      {"empty.txt", ""}};
  std::string archive = packSources(files);
  EXPECT_EQ(unpackSources(archive), files);
  EXPECT_TRUE(unpackSources(packSources({})).empty());
  for (size_t cut = 0; cut < archive.size(); ++cut)
    EXPECT_NE(artifactErrorOf([&] { unpackSources(archive.substr(0, cut)); }),
              "")
        << "cut at " << cut;
  EXPECT_NE(artifactErrorOf([&] { unpackSources(archive + "x"); }), "");
  std::string huge = archive;
  putLE(huge, 0, 0xffffffffu, 4);
  EXPECT_NE(artifactErrorOf([&] { unpackSources(huge); }), "");
}

TEST(ArtifactSources, PathsCannotLeaveTheDirectory) {
  for (const char *path :
       {"", "/etc/passwd", "../x", "a/../../x", "a//b", "./a", "a/"}) {
    EXPECT_THROW(packSources({{path, "x"}}), std::invalid_argument) << path;
    // The same path in an archive written by hand.
    std::string archive(4, '\0'), length(4, '\0'), size(8, '\0');
    putLE(archive, 0, 1, 4);
    putLE(length, 0, std::strlen(path), 4);
    putLE(size, 0, 1, 8);
    archive += length + path + size + "x";
    std::string error = artifactErrorOf([&] { unpackSources(archive); });
    EXPECT_NE(error.find("section 'sources'"), std::string::npos) << path;
  }
  EXPECT_THROW(packSources({{"a", "1"}, {"a", "2"}}), std::invalid_argument);
}

//===----------------------------------------------------------------------===//
// CPU features
//===----------------------------------------------------------------------===//

using Features = std::vector<std::string>;

TEST(CpuFeatures, EnvironmentOverridesDetection) {
  {
    ScopedEnv env(kCpuFeaturesEnv, "avx2,fma");
    EXPECT_EQ(hostCpuFeatures(), (Features{"avx2", "fma"}));
    EXPECT_EQ(missingCpuFeatures({"avx2", "avx512f", "fma", "avx512bw"}),
              (Features{"avx512f", "avx512bw"}));
  }
  {
    ScopedEnv env(kCpuFeaturesEnv, " avx2 , fma,,avx2 ");
    EXPECT_EQ(hostCpuFeatures(), (Features{"avx2", "fma"}));
  }
  {
    ScopedEnv env(kCpuFeaturesEnv, "none");
    EXPECT_TRUE(hostCpuFeatures().empty());
    EXPECT_EQ(missingCpuFeatures({"avx2", "avx2", "f16c"}),
              (Features{"avx2", "f16c"}));
    EXPECT_TRUE(missingCpuFeatures({}).empty());
  }
  {
    ScopedEnv env(kCpuFeaturesEnv, nullptr);
    EXPECT_EQ(hostCpuFeatures(), detectCpuFeatures());
  }
  EXPECT_EQ(missingCpuFeatures({"a", "b", "c"}, {"c", "a"}), (Features{"b"}));
}

TEST(CpuFeatures, DetectionAgreesWithTheCompiler) {
  Features detected = detectCpuFeatures();
  auto has = [&](const char *name) {
    return std::find(detected.begin(), detected.end(), name) != detected.end();
  };
  for (const std::string &name : detected)
    EXPECT_TRUE(name == "avx2" || name == "fma" || name == "f16c" ||
                name == "avx512f" || name == "avx512bw" || name == "avx512vl" ||
                name == "avx512dq" || name == "avx512bf16" ||
                name == "avx512vnni" || name == "avxvnni" ||
                name == "amx-tile" || name == "amx-bf16" || name == "amx-int8")
        << name;
  // AMX's data types come only with its tiles.
  if (has("amx-bf16") || has("amx-int8"))
    EXPECT_TRUE(has("amx-tile"));
#if defined(__x86_64__) || defined(__i386__)
  // compiler-rt reads CPUID and XCR0 independently.
  __builtin_cpu_init();
  EXPECT_EQ(has("avx2"), bool(__builtin_cpu_supports("avx2")));
  EXPECT_EQ(has("fma"), bool(__builtin_cpu_supports("fma")));
  EXPECT_EQ(has("avx512f"), bool(__builtin_cpu_supports("avx512f")));
  EXPECT_EQ(has("avx512bw"), bool(__builtin_cpu_supports("avx512bw")));
  EXPECT_EQ(has("avx512vl"), bool(__builtin_cpu_supports("avx512vl")));
  EXPECT_EQ(has("avx512dq"), bool(__builtin_cpu_supports("avx512dq")));
  EXPECT_EQ(has("avx512vnni"), bool(__builtin_cpu_supports("avx512vnni")));
  EXPECT_EQ(has("avx512bf16"), bool(__builtin_cpu_supports("avx512bf16")));
#else
  (void)has;
  EXPECT_TRUE(detected.empty());
#endif
}

//===----------------------------------------------------------------------===//
// Step libraries
//===----------------------------------------------------------------------===//

int32_t runStep(const StepLibrary &library, float &logit) {
  int32_t token = 1, position = 0, seq = 0, row = 0;
  kiln_step_args args{};
  args.tokens = 1;
  args.token_ids = &token;
  args.positions = &position;
  args.seq_ids = &seq;
  args.rows = 1;
  args.logit_rows = &row;
  args.logits = &logit;
  return library.step(args);
}

TEST_F(ArtifactFiles, StepLibraryLoadsFromBytesAndLeavesNoFile) {
  const std::string code = readFile(KILN_TEST_STEP_LIBRARY);
  ASSERT_FALSE(code.empty());
  std::optional<std::string> oldTmp;
  if (const char *t = std::getenv("TMPDIR"))
    oldTmp = t;
  setenv("TMPDIR", dir.c_str(), 1);
  {
    StepLibrary library = StepLibrary::load(code, "model.kiln");
    EXPECT_EQ(library.abiVersion(), KILN_STEP_ABI_VERSION);
    float logit = 0;
    EXPECT_EQ(runStep(library, logit), 0);
    EXPECT_EQ(logit, 42.0f);
    StepLibrary moved = std::move(library);
    logit = 0;
    EXPECT_EQ(runStep(moved, logit), 0);
    EXPECT_EQ(logit, 42.0f);
  }
  EXPECT_TRUE(listDir(dir).empty());
  if (oldTmp)
    setenv("TMPDIR", oldTmp->c_str(), 1);
  else
    unsetenv("TMPDIR");
}

TEST_F(ArtifactFiles, StepLibraryFromAnArtifact) {
  ArtifactWriter writer;
  writer.addSectionFromFile("code", KILN_TEST_STEP_LIBRARY, 4096);
  writer.write(file("model.kiln"));
  Artifact artifact = Artifact::open(file("model.kiln"));
  StepLibrary library = StepLibrary::load(artifact);
  float logit = 0;
  EXPECT_EQ(runStep(library, logit), 0);
  EXPECT_EQ(logit, 42.0f);
}

TEST(StepLibrary, RefusesAnotherAbiVersion) {
  const std::string good = readFile(KILN_TEST_STEP_LIBRARY);
  const std::string future = readFile(KILN_TEST_STEP_LIBRARY_V999);
  const std::string expected =
      "model.kiln: section 'code': the step library has ABI version 999, "
      "this Kiln runs version " +
      std::to_string(KILN_STEP_ABI_VERSION) +
      "; compile the model again with this Kiln";
  EXPECT_EQ(artifactErrorOf([&] { StepLibrary::load(future, "model.kiln"); }),
            expected);
  // With a good library loaded, and after one was unloaded (it stays mapped:
  // it is nodelete), the new bytes are what gets loaded.
  {
    StepLibrary loaded = StepLibrary::load(good, "a.kiln");
    EXPECT_EQ(artifactErrorOf([&] { StepLibrary::load(future, "model.kiln"); }),
              expected);
  }
  for (int i = 0; i < 3; ++i) {
    {
      StepLibrary::load(good, "a.kiln");
    }
    EXPECT_EQ(artifactErrorOf([&] { StepLibrary::load(future, "model.kiln"); }),
              expected);
  }
}

TEST(StepLibrary, BytesThatAreNotALibraryAreAnError) {
  std::string error = artifactErrorOf(
      [&] { StepLibrary::load("definitely not ELF", "model.kiln"); });
  EXPECT_EQ(error.rfind("model.kiln: section 'code' cannot be loaded as a "
                        "shared library: ",
                        0),
            0u)
      << error;
  EXPECT_EQ(artifactErrorOf([&] { StepLibrary::load("", "model.kiln"); }),
            "model.kiln: section 'code' is empty; expected a shared library");
}

//===----------------------------------------------------------------------===//
// Choosing among step libraries
//===----------------------------------------------------------------------===//

const std::vector<std::string> kAvx2 = {"avx2", "fma", "f16c"};
const std::vector<std::string> kAvx512 = {
    "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512dq"};
const std::vector<std::string> kAvx512Bf16 = {
    "avx2",     "fma",      "f16c",     "avx512f",
    "avx512bw", "avx512vl", "avx512dq", "avx512bf16"};

TEST(ChooseStepLibrary, PicksTheMostCapableThatFits) {
  // portable, avx2, avx512, avx512+bf16: what `kiln compile --target
  // portable,avx2,avx512,avx512+bf16` stores.
  std::vector<std::vector<std::string>> libs = {
      {}, kAvx2, kAvx512, kAvx512Bf16};
  EXPECT_EQ(chooseStepLibrary(libs, {}).index, 0u);
  EXPECT_EQ(chooseStepLibrary(libs, {"fma", "f16c"}).index, 0u);
  EXPECT_EQ(chooseStepLibrary(libs, kAvx2).index, 1u);
  // avx2 without f16c (a hypervisor hiding it) runs portable code.
  EXPECT_EQ(chooseStepLibrary(libs, {"avx2", "fma"}).index, 0u);
  EXPECT_EQ(chooseStepLibrary(libs, kAvx512).index, 2u);
  std::vector<std::string> all = kAvx512Bf16;
  all.push_back("avx512vnni");
  EXPECT_EQ(chooseStepLibrary(libs, all).index, 3u);
  // The order of the features and of the libraries does not matter.
  EXPECT_EQ(chooseStepLibrary(libs, {"f16c", "avx512dq", "fma", "avx512vl",
                                     "avx512bw", "avx2", "avx512f"})
                .index,
            2u);
  std::vector<std::vector<std::string>> reversed(libs.rbegin(), libs.rend());
  EXPECT_EQ(chooseStepLibrary(reversed, kAvx2).index, 2u);
  EXPECT_EQ(chooseStepLibrary(reversed, kAvx512).index, 1u);
}

TEST(ChooseStepLibrary, SaysWhatEachLibraryLacks) {
  StepLibraryChoice choice = chooseStepLibrary({{}, kAvx2, kAvx512}, kAvx2);
  ASSERT_EQ(choice.missing.size(), 3u);
  EXPECT_TRUE(choice.missing[0].empty());
  EXPECT_TRUE(choice.missing[1].empty());
  EXPECT_EQ(choice.missing[2],
            (std::vector<std::string>{"avx512f", "avx512bw", "avx512vl",
                                      "avx512dq"}));
}

TEST(ChooseStepLibrary, NoneFits) {
  StepLibraryChoice choice =
      chooseStepLibrary({kAvx512, kAvx512Bf16}, {"avx2", "fma", "f16c"});
  EXPECT_FALSE(choice.index);
  ASSERT_EQ(choice.missing.size(), 2u);
  EXPECT_EQ(choice.missing[1].back(), "avx512bf16");
  EXPECT_FALSE(chooseStepLibrary({}, kAvx512).index);
}

TEST(ChooseStepLibrary, EqualsGoToTheFirst) {
  // avx512+bf16 and avx512+vnni need as much; neither is more capable.
  std::vector<std::string> vnni = kAvx512;
  vnni.push_back("avx512vnni");
  std::vector<std::string> both = vnni;
  both.push_back("avx512bf16");
  EXPECT_EQ(chooseStepLibrary({kAvx512Bf16, vnni}, both).index, 0u);
  EXPECT_EQ(chooseStepLibrary({vnni, kAvx512Bf16}, both).index, 0u);
  EXPECT_EQ(chooseStepLibrary({kAvx512Bf16, vnni}, vnni).index, 1u);
}

/// A manifest in the layout WriteArtifact writes, with one entry of
/// "libraries" per (name, cpu features, code section, weights section).
std::string manifestWithLibraries(
    const std::vector<std::tuple<std::string, std::vector<std::string>,
                                 std::string, std::string>> &libraries) {
  auto strings = [](const std::vector<std::string> &items) {
    std::string list;
    for (const std::string &item : items)
      list += (list.empty() ? "\"" : ", \"") + item + "\"";
    return "[" + list + "]";
  };
  auto library = [&](const std::string &name,
                     const std::vector<std::string> &features) {
    return R"("target": {"spec": ")" + name + R"(,cores=4", "cpu_features": )" +
           strings(features) +
           R"(}, "weights": {"type": "f32", "bytes": 8, "entries": []},
           "step": {"max_tokens": 8, "arena_bytes": 64, "kernels": ["k_)" +
           name + R"("]})";
  };
  std::string list;
  for (const auto &[name, features, code, weights] : libraries)
    list += std::string(list.empty() ? "" : ", ") + R"({"name": ")" + name +
            R"(", "sections": {"code": ")" + code + R"(", "weights": ")" +
            weights + R"("}, )" + library(name, features) + "}";
  const auto &first = libraries.front();
  return R"({"kiln": {"version": "0.1.0"},
    "model": {"vocab_size": 4, "context_length": 8, "stops_at_eos": false},
    "cache": {"layers": 1, "kv_heads": 1, "head_dim": 2}, )" +
         library(std::get<0>(first), std::get<1>(first)) +
         R"(, "libraries": [)" + list + "]}";
}

/// An artifact with three step libraries (portable, avx2, avx512: each the
/// test step library) and two weights sections, avx2's shared by avx512.
TEST_F(ArtifactFiles, LoadRunsTheBestStepLibrary) {
  std::string code = readFile(KILN_TEST_STEP_LIBRARY);
  ArtifactWriter writer;
  writer.addSection("manifest",
                    manifestWithLibraries(
                        {{"portable", {}, "code", "weights"},
                         {"avx2", kAvx2, "code.avx2", "weights.avx2"},
                         {"avx512", kAvx512, "code.avx512", "weights.avx2"}}));
  writer.addSection("code", code);
  writer.addSection("weights", "portable", kPageAlignment);
  writer.addSection("code.avx2", code);
  writer.addSection("weights.avx2", "avx2 and avx512", kPageAlignment);
  writer.addSection("code.avx512", code);
  writer.addSection("tokenizer", R"({"format": "kiln-tokenizer", "version": 1,
      "model": "byte_level_bpe", "tokens": ["a", "b", "c", "d"]})");
  writer.write(file("model.kiln"));

  struct Case {
    const char *cpu, *library, *weights, *choice;
  };
  for (const Case &c : std::vector<Case>{
           {"none", "portable", "portable",
            "the portable step library (this CPU lacks avx2, fma, f16c for "
            "avx2; avx2, fma, f16c, avx512f, avx512bw, avx512vl, avx512dq for "
            "avx512)"},
           {"avx2,fma,f16c", "avx2", "avx2 and avx512",
            "the avx2 step library (this CPU lacks avx512f, avx512bw, "
            "avx512vl, avx512dq for avx512)"},
           {"avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16",
            "avx512", "avx2 and avx512",
            "the avx512 step library, the most capable of its 3"}}) {
    SCOPED_TRACE(c.cpu);
    ScopedEnv cpu(kCpuFeaturesEnv, c.cpu);
    CompiledModelOptions options;
    options.threads = 1;
    std::unique_ptr<CompiledModel> model =
        CompiledModel::load(file("model.kiln"), options);
    EXPECT_EQ(model->stepLibrary().name, c.library);
    EXPECT_EQ(model->manifest().target, std::string(c.library) + ",cores=4");
    EXPECT_EQ(model->manifest().kernels,
              std::vector<std::string>{std::string("k_") + c.library});
    EXPECT_EQ(model->manifest().libraries.size(), 3u);
    EXPECT_EQ(model->weights(), c.weights);
    EXPECT_EQ(model->stepLibraryChoice(), c.choice);
  }
}

/// A CPU library's weights are copied into transparent huge pages where the
/// kernel allows them (whole 2 MiB pages, 2 MiB aligned, outside the file's
/// mapping, the same bytes); asked not to, or without huge pages, they are
/// read in the mapping.
TEST_F(ArtifactFiles, WeightsAreCopiedIntoHugePagesOrStayMapped) {
  std::string code = readFile(KILN_TEST_STEP_LIBRARY);
  std::string weights(3 * 4096 + 5, '\0');
  for (size_t i = 0; i < weights.size(); ++i)
    weights[i] = char(i * 7 + 3);
  ArtifactWriter writer;
  writer.addSection(
      "manifest", manifestWithLibraries({{"portable", {}, "code", "weights"}}));
  writer.addSection("code", code);
  writer.addSection("weights", weights, kPageAlignment);
  writer.addSection("tokenizer", R"({"format": "kiln-tokenizer", "version": 1,
      "model": "byte_level_bpe", "tokens": ["a", "b", "c", "d"]})");
  writer.write(file("model.kiln"));

  for (bool huge : {true, false}) {
    SCOPED_TRACE(huge ? "huge pages asked for" : "mapped asked for");
    CompiledModelOptions options;
    options.threads = 1;
    options.weightsInHugePages = huge;
    std::unique_ptr<CompiledModel> model =
        CompiledModel::load(file("model.kiln"), options);
    EXPECT_EQ(model->weights(), weights);
    bool copied = huge && transparentHugePagesOnAdvice();
    EXPECT_EQ(model->weightsInHugePages(), copied);
    std::string_view mapped = model->artifact().section("weights");
    EXPECT_EQ(model->weights().data() == mapped.data(), !copied);
    if (copied)
      EXPECT_EQ(reinterpret_cast<uintptr_t>(model->weights().data()) %
                    uintptr_t(kHugePageBytes),
                0u);
  }
}

TEST(HugePageBuffer, WholeAlignedWritablePages) {
  for (int64_t bytes : {int64_t(1), kHugePageBytes, kHugePageBytes + 1}) {
    SCOPED_TRACE(bytes);
    HugePageBuffer buffer(bytes);
    EXPECT_EQ(buffer.size() % kHugePageBytes, 0);
    EXPECT_GE(buffer.size(), bytes);
    EXPECT_LT(buffer.size() - bytes, kHugePageBytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.data()) %
                  uintptr_t(kHugePageBytes),
              0u);
    EXPECT_EQ(buffer.hugePages(), transparentHugePagesOnAdvice());
    buffer.data()[0] = 1;
    buffer.data()[buffer.size() - 1] = 2;
    EXPECT_EQ(buffer.data()[0] + buffer.data()[buffer.size() - 1], 3);
  }
}

TEST_F(ArtifactFiles, LoadNamesWhatEveryLibraryLacks) {
  std::string code = readFile(KILN_TEST_STEP_LIBRARY);
  ArtifactWriter writer;
  writer.addSection(
      "manifest",
      manifestWithLibraries({{"avx2", kAvx2, "code", "weights"},
                             {"avx512", kAvx512, "code.avx512", "weights"}}));
  writer.addSection("code", code);
  writer.addSection("weights", "w", kPageAlignment);
  writer.addSection("code.avx512", code);
  writer.addSection("tokenizer", R"({"format": "kiln-tokenizer",
      "model": "byte_level_bpe", "tokens": ["a", "b", "c", "d"]})");
  writer.write(file("model.kiln"));
  ScopedEnv cpu(kCpuFeaturesEnv, "fma");
  EXPECT_EQ(artifactErrorOf([&] { CompiledModel::load(file("model.kiln")); }),
            file("model.kiln") +
                ": has step libraries for avx2, avx512, but this CPU can run "
                "none of them: it lacks avx2, f16c for avx2; avx2, f16c, "
                "avx512f, avx512bw, avx512vl, avx512dq for avx512 (recompile "
                "with --target native)");
}

TEST_F(ArtifactFiles, ManifestWithoutLibrariesIsOneLibrary) {
  // What Kiln wrote before step library lists: the top-level fields and the
  // "code" and "weights" sections.
  ArtifactManifest m =
      parseManifest("old.kiln", R"({"kiln": {"version": "0.1.0"},
    "model": {"vocab_size": 4, "context_length": 8, "stops_at_eos": true},
    "cache": {"layers": 1, "kv_heads": 1, "head_dim": 2},
    "target": {"spec": "avx2,cores=8", "cpu_features": ["avx2", "fma", "f16c"]},
    "weights": {"type": "bf16"},
    "step": {"max_tokens": 8, "arena_bytes": 64, "kernels": []}})");
  ASSERT_EQ(m.libraries.size(), 1u);
  EXPECT_EQ(m.libraries[0].name, "avx2");
  EXPECT_EQ(m.libraries[0].codeSection, "code");
  EXPECT_EQ(m.libraries[0].weightsSection, "weights");
  EXPECT_EQ(m.libraries[0].cpuFeatures, kAvx2);
  EXPECT_EQ(m.target, "avx2,cores=8");
  EXPECT_EQ(m.weightType, "bf16");
  EXPECT_EQ(artifactErrorOf([] {
              parseManifest("m.kiln", R"({"kiln": {"version": "0.1.0"},
    "model": {"vocab_size": 4, "context_length": 8, "stops_at_eos": true},
    "cache": {"layers": 1, "kv_heads": 1, "head_dim": 2},
    "target": {"spec": "avx2", "cpu_features": []}, "weights": {"type": "f32"},
    "step": {"max_tokens": 8, "arena_bytes": 64, "kernels": []},
    "libraries": [{"name": "avx2", "sections": {"code": "code"}}]})");
            }),
            "m.kiln: manifest has no 'libraries[0].target' object");
}

//===----------------------------------------------------------------------===//
// TokenizerSpec as JSON
//===----------------------------------------------------------------------===//

bool sameFloat(float a, float b) {
  return std::memcmp(&a, &b, sizeof(float)) == 0 ||
         (std::isnan(a) && std::isnan(b));
}

void expectSameSpec(const TokenizerSpec &a, const TokenizerSpec &b) {
  EXPECT_EQ(a.model, b.model);
  EXPECT_EQ(a.tokens, b.tokens);
  ASSERT_EQ(a.scores.size(), b.scores.size());
  for (size_t i = 0; i < a.scores.size(); ++i)
    EXPECT_TRUE(sameFloat(a.scores[i], b.scores[i]))
        << i << ": " << a.scores[i] << " vs " << b.scores[i];
  EXPECT_EQ(a.types, b.types);
  EXPECT_EQ(a.merges, b.merges);
  EXPECT_EQ(a.spaceSymbol, b.spaceSymbol);
  EXPECT_EQ(a.addSpacePrefix, b.addSpacePrefix);
  EXPECT_EQ(a.preTokenizer, b.preTokenizer);
  EXPECT_EQ(a.preTokenizerPatterns, b.preTokenizerPatterns);
  EXPECT_EQ(a.bosId, b.bosId);
  EXPECT_EQ(a.eosId, b.eosId);
  EXPECT_EQ(a.eotId, b.eotId);
  EXPECT_EQ(a.addBos, b.addBos);
  EXPECT_EQ(a.chatTemplate, b.chatTemplate);
}

TEST(TokenizerSpecJson, RoundTripsEveryField) {
  TokenizerSpec spec;
  spec.model = TokenizerSpec::Model::ByteLevelBPE;
  spec.tokens = {"<s>",         "</s>", "\xE2\x96\x81the", "<0x0A>",
                 "\xff\xfe",    "",     "\"quoted\"\n",    "\xC4\xA0hi",
                 "\xed\xa0\x80"}; // the last: a UTF-16 surrogate, not UTF-8
  spec.scores = {0.0f,
                 -1.0f,
                 0.1f,
                 -1e30f,
                 std::numeric_limits<float>::denorm_min(),
                 -std::numeric_limits<float>::infinity(),
                 std::numeric_limits<float>::infinity(),
                 std::numeric_limits<float>::quiet_NaN(),
                 3.4028235e38f};
  spec.types = {
      TokenType::Control,     TokenType::Control, TokenType::Normal,
      TokenType::Byte,        TokenType::Unknown, TokenType::Unused,
      TokenType::UserDefined, TokenType::Normal,  TokenType::Undefined};
  spec.merges = {"\xC4\xA0 h", "h i"};
  spec.spaceSymbol = " ";
  spec.addSpacePrefix = false;
  spec.preTokenizer = "llama-bpe";
  spec.preTokenizerPatterns = {R"((?i:'s|'t)|\p{L}+|\s+(?!\S))", "\\d{1,3}"};
  spec.bosId = 0;
  spec.eosId = 1;
  spec.eotId = 7;
  spec.addBos = false;
  spec.chatTemplate = "{% for m in messages %}<|{{ m.role }}|>\n"
                      "{{ m.content }}{% endfor %}\xff";
  std::string json = tokenizerSpecToJson(spec);
  expectSameSpec(tokenizerSpecFromJson(json), spec);
  // The JSON itself is stable: writing what was read gives the same text.
  EXPECT_EQ(tokenizerSpecToJson(tokenizerSpecFromJson(json)), json);

  TokenizerSpec defaults;
  expectSameSpec(tokenizerSpecFromJson(tokenizerSpecToJson(defaults)),
                 defaults);
  // A model without a template writes no "chat_template", so its document
  // is one an older Kiln reads.
  EXPECT_EQ(tokenizerSpecToJson(defaults).find("chat_template"),
            std::string::npos);
}

TEST(TokenizerSpecJson, MinimalDocumentTakesDefaults) {
  TokenizerSpec spec = tokenizerSpecFromJson(
      R"({"format": "kiln-tokenizer", "model": "score_merge",
          "tokens": ["a", {"hex": "FF00"}]})");
  EXPECT_EQ(spec.tokens,
            (std::vector<std::string>{"a", std::string("\xff\0", 2)}));
  expectSameSpec(spec, [] {
    TokenizerSpec d;
    d.tokens = {"a", std::string("\xff\0", 2)};
    return d;
  }());
}

TEST(TokenizerSpecJson, MalformedDocumentsNameTheField) {
  auto errorOf = [](const std::string &json) -> std::string {
    try {
      tokenizerSpecFromJson(json);
    } catch (const std::invalid_argument &e) {
      return e.what();
    }
    return "";
  };
  auto doc = [](const std::string &fields) {
    return R"({"format": "kiln-tokenizer", "model": "score_merge", )" + fields +
           "}";
  };
  EXPECT_EQ(errorOf("{\"tokens\": [").rfind("tokenizer JSON is malformed", 0),
            0u);
  EXPECT_EQ(errorOf("[1, 2]"),
            "tokenizer JSON: expected an object at the top level, got array");
  struct Case {
    std::string json, field;
  } cases[] = {
      {R"({"format": "kiln-tokenizer", "model": "score_merge"})", "tokens"},
      {R"({"model": "score_merge", "tokens": []})", "format"},
      {R"({"format": "hf", "model": "score_merge", "tokens": []})", "format"},
      {doc(R"("tokens": [], "version": 2)"), "version"},
      {R"({"format": "kiln-tokenizer", "model": "wordpiece", "tokens": []})",
       "model"},
      {doc(R"("tokens": "abc")"), "tokens"},
      {doc(R"("tokens": ["a", 5])"), "tokens[1]"},
      {doc(R"("tokens": [{"hex": "abc"}])"), "tokens[0]"},
      {doc(R"("tokens": [{"hex": "zz"}])"), "tokens[0]"},
      {doc(R"("tokens": [{"bytes": "00"}])"), "tokens[0]"},
      {doc(R"("tokens": [], "scores": [1, "x"])"), "scores[1]"},
      {doc(R"("tokens": [], "scores": [1e300])"), "scores[0]"},
      {doc(R"("tokens": [], "types": [1, 1, 9])"), "types[2]"},
      {doc(R"("tokens": [], "types": [-1])"), "types[0]"},
      {doc(R"("tokens": [], "types": [1.5])"), "types[0]"},
      {doc(R"("tokens": [], "merges": [["a", "b"]])"), "merges[0]"},
      {doc(R"("tokens": [], "bos_id": "1")"), "bos_id"},
      {doc(R"("tokens": [], "eos_id": 1.5)"), "eos_id"},
      {doc(R"("tokens": [], "eot_id": -2)"), "eot_id"},
      {doc(R"("tokens": [], "bos_id": 4294967296)"), "bos_id"},
      {doc(R"("tokens": [], "add_bos": 1)"), "add_bos"},
      {doc(R"("tokens": [], "add_space_prefix": "yes")"), "add_space_prefix"},
      {doc(R"("tokens": [], "space_symbol": null)"), "space_symbol"},
      {doc(R"("tokens": [], "pre_tokenizer_patterns": "x")"),
       "pre_tokenizer_patterns"},
      {doc(R"("tokens": [], "bos": 1)"), "bos"},
      {doc(R"("tokens": [], "chat_template": ["x"])"), "chat_template"},
  };
  for (const Case &c : cases) {
    std::string error = errorOf(c.json);
    EXPECT_EQ(error.rfind("tokenizer JSON: field '" + c.field + "': ", 0), 0u)
        << c.json << "\n  gave: " << error;
  }
}

} // namespace
