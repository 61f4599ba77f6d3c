//===- CompilerTest.cpp - The compiler library and its cache --------------===//
//
// Part of Kiln's unit tests. The compiler as a library (codegen/driver):
// target lists, the compile cache (what changes its key and what does not, a
// hit that compiles nothing), sources without an artifact, progress and the
// errors a caller sees. The artifact's contents are CodegenTest's concern.
//
//===----------------------------------------------------------------------===//

#include "codegen/driver/Compiler.h"
#include "codegen/driver/CompileCache.h"

#include "frontends/formats/SyntheticModel.h"
#include "runtime/CompiledModel.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace kiln;

namespace {

std::string readBytes(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

/// A scratch directory holding a tiny synthetic GGUF and the compile cache
/// ($KILN_CACHE_DIR points into it while the fixture lives).
class CompilerTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir = fs::temp_directory_path() /
          ("kiln-compiler-test-" + std::to_string(getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
    const char *old = std::getenv("KILN_CACHE_DIR");
    if (old)
      oldCacheDir = old;
    hadCacheDir = old != nullptr;
    setenv("KILN_CACHE_DIR", (dir / "cache").c_str(), 1);

    model = (dir / "tiny.gguf").string();
    formats::SyntheticModelSpec spec{formats::syntheticConfig("tiny"), 7};
    formats::writeSyntheticGGUF(spec, model);
  }
  void TearDown() override {
    if (hadCacheDir)
      setenv("KILN_CACHE_DIR", oldCacheDir.c_str(), 1);
    else
      unsetenv("KILN_CACHE_DIR");
    fs::remove_all(dir);
  }

  /// Options for the tiny model on the portable target: the cheapest
  /// compile, and one every x86-64 CPU runs.
  CompileOptions options() const {
    CompileOptions o;
    o.model = model;
    o.target = "portable";
    o.maxTokens = 16;
    return o;
  }

  fs::path dir;
  std::string model;
  std::string oldCacheDir;
  bool hadCacheDir = false;
};

std::string keyOf(const CompileOptions &o) {
  return compileCacheKey(o, parseCompileTargets(o.target));
}

} // namespace

TEST(CompilerTargets, OverridesBelongToTheTargetBeforeThem) {
  EXPECT_EQ(splitTargetList("portable,avx2,cores=4,avx512"),
            (std::vector<std::string>{"portable", "avx2,cores=4", "avx512"}));
  EXPECT_EQ(splitTargetList("native"), (std::vector<std::string>{"native"}));
}

TEST(CompilerTargets, RefusesWhatTheRuntimeCouldNotChooseBetween) {
  std::vector<target::TargetDescription> targets =
      parseCompileTargets("portable,avx2");
  ASSERT_EQ(targets.size(), 2u);
  EXPECT_EQ(targets[0].name, "portable");
  EXPECT_EQ(targets[1].name, "avx2");

  auto messageOf = [](const std::string &list) -> std::string {
    try {
      parseCompileTargets(list);
    } catch (const std::exception &e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_NE(messageOf("avx2,cores=4,avx2").find("need the same CPU features"),
            std::string::npos);
  // A CUDA target compiles alone: an artifact runs on the GPU or on CPUs.
  EXPECT_EQ(messageOf("cuda:sm_90"), "(no error)");
  EXPECT_NE(messageOf("avx2,cuda:sm_90").find("compiles alone"),
            std::string::npos);
  EXPECT_NE(messageOf("avx9").find("--target"), std::string::npos);
}

// cuda:native is device 0's architecture and SM count, asked of the CUDA
// driver (the stub's device: sm_90, 132 SMs), overrides kept; without a
// driver the error says why and what to write instead.
TEST(CompilerTargets, CudaNativeAsksTheDriver) {
  auto withDriver = [](const char *path, auto body) {
    const char *before = std::getenv("KILN_CUDA_DRIVER");
    std::string saved = before ? before : "";
    setenv("KILN_CUDA_DRIVER", path, 1);
    body();
    if (before)
      setenv("KILN_CUDA_DRIVER", saved.c_str(), 1);
    else
      unsetenv("KILN_CUDA_DRIVER");
  };
  withDriver(KILN_STUB_CUDA_DRIVER, [] {
    std::vector<target::TargetDescription> targets =
        parseCompileTargets("cuda:native,regs=128");
    ASSERT_EQ(targets.size(), 1u);
    EXPECT_EQ(targets[0].name, "cuda:sm_90");
    EXPECT_EQ(targets[0].cuda().smCount, 132u);
    EXPECT_EQ(targets[0].cuda().registersPerThread, 128u);
    EXPECT_NE(targets[0].origin.find("device 0 (cuda:native)"),
              std::string::npos)
        << targets[0].origin;
    // Not a prefix match: cuda:nativeX is no spec.
    EXPECT_THROW(parseCompileTargets("cuda:nativeX"), std::runtime_error);
  });
  withDriver("/nonexistent/libcuda.so.1", [] {
    try {
      parseCompileTargets("cuda:native");
      ADD_FAILURE() << "cuda:native without a driver compiled";
    } catch (const std::exception &e) {
      std::string message = e.what();
      EXPECT_NE(message.find("cuda:native asks the CUDA driver about device "
                             "0: CUDA driver not available"),
                std::string::npos)
          << message;
      EXPECT_NE(message.find("/nonexistent/libcuda.so.1"), std::string::npos)
          << message;
      EXPECT_NE(message.find("cuda:sm_90"), std::string::npos) << message;
    }
  });
}

TEST_F(CompilerTest, CacheKeyFollowsWhatChangesTheArtifact) {
  CompileOptions base = options();
  std::string key = keyOf(base);
  EXPECT_EQ(key.size(), 24u);
  EXPECT_EQ(keyOf(base), key) << "the key is deterministic";

  // Where the artifact and sources go, and how the compile reports itself,
  // do not change what is compiled.
  CompileOptions same = base;
  same.output = "elsewhere.kiln";
  same.emitSource = "sources";
  same.useCache = false;
  same.explainFusion = true;
  same.progress = [](int, int, const std::string &) {};
  EXPECT_EQ(keyOf(same), key);

  auto changed = [&](auto edit) {
    CompileOptions o = base;
    edit(o);
    return keyOf(o);
  };
  EXPECT_NE(changed([](CompileOptions &o) { o.dtype = "bf16"; }), key);
  EXPECT_NE(changed([](CompileOptions &o) { o.kvType = "bf16"; }), key);
  EXPECT_NE(changed([](CompileOptions &o) { o.maxTokens = 32; }), key);
  EXPECT_NE(changed([](CompileOptions &o) { o.context = 64; }), key);
  EXPECT_NE(changed([](CompileOptions &o) { o.fusion = false; }), key);
  EXPECT_NE(changed([](CompileOptions &o) { o.target = "portable,avx2"; }),
            key);
  EXPECT_NE(changed([&](CompileOptions &o) { o.tuningFile = model; }), key);

  // A rewritten model file is another model.
  fs::last_write_time(model,
                      fs::last_write_time(model) + std::chrono::seconds(5));
  EXPECT_NE(keyOf(base), key);
}

TEST_F(CompilerTest, AnUnchangedModelCompilesOnce) {
  int stagesSeen = 0, lastStage = 0, stages = 0;
  CompileOptions o = options();
  o.output = (dir / "first.kiln").string();
  o.progress = [&](int stage, int total, const std::string &what) {
    EXPECT_EQ(stage, lastStage + 1) << what;
    EXPECT_FALSE(what.empty());
    lastStage = stage;
    stages = total;
    ++stagesSeen;
  };
  CompileResult first = compileModel(o);
  EXPECT_FALSE(first.fromCache);
  EXPECT_EQ(first.artifact, o.output);
  EXPECT_EQ(first.targets, std::vector<std::string>{"portable"});
  // Importing, three stages for the one target, writing.
  EXPECT_EQ(stages, 5);
  EXPECT_EQ(lastStage, stages);
  EXPECT_EQ(stagesSeen, stages);
  fs::path cached = compileCachePath(o, parseCompileTargets(o.target));
  ASSERT_TRUE(fs::exists(cached));
  EXPECT_EQ(readBytes(cached), readBytes(o.output));

  // The second compile, to another file, is the cache's copy: no stage runs.
  stagesSeen = 0;
  o.output = (dir / "second.kiln").string();
  CompileResult second = compileModel(o);
  EXPECT_TRUE(second.fromCache);
  EXPECT_EQ(stagesSeen, 0);
  EXPECT_EQ(readBytes(o.output), readBytes(dir / "first.kiln"));

  // It is an artifact the runtime loads, for the target asked for.
  std::unique_ptr<runtime::CompiledModel> loaded =
      runtime::CompiledModel::load(o.output, {});
  EXPECT_EQ(loaded->manifest().target.rfind("portable,", 0), 0u)
      << loaded->manifest().target;

  // Without the cache, the compile runs again.
  stagesSeen = lastStage = 0;
  o.useCache = false;
  o.output = (dir / "third.kiln").string();
  EXPECT_FALSE(compileModel(o).fromCache);
  EXPECT_EQ(stagesSeen, 5);
}

TEST_F(CompilerTest, CompiledArtifactForCompilesIntoTheCacheOnce) {
  CompileOptions o = options();
  o.output = (dir / "ignored.kiln").string();
  std::string path = compiledArtifactFor(o);
  EXPECT_EQ(fs::path(path).parent_path(), dir / "cache");
  EXPECT_FALSE(fs::exists(o.output)) << "the cache's path, not `output`";
  ASSERT_TRUE(fs::exists(path));
  auto written = fs::last_write_time(path);

  int stagesSeen = 0;
  o.progress = [&](int, int, const std::string &) { ++stagesSeen; };
  EXPECT_EQ(compiledArtifactFor(o), path);
  EXPECT_EQ(stagesSeen, 0);
  EXPECT_EQ(fs::last_write_time(path), written);
}

TEST_F(CompilerTest, SourcesWithoutAnArtifact) {
  CompileOptions o = options();
  o.useCache = false;
  o.emitSource = (dir / "sources").string();
  CompileResult result = compileModel(o);
  EXPECT_TRUE(result.artifact.empty());
  EXPECT_GT(result.sourcesWritten, 3u);
  EXPECT_TRUE(fs::exists(dir / "sources" / "step.cpp"));
  EXPECT_TRUE(fs::exists(dir / "sources" / "kernels" / "Gemm.h"));
  size_t files = 0;
  for (const auto &entry : fs::recursive_directory_iterator(dir / "sources"))
    files += entry.is_regular_file();
  EXPECT_EQ(files, result.sourcesWritten);
  // No artifact is left behind: not beside the model, not in the cache.
  for (const auto &entry : fs::recursive_directory_iterator(dir))
    EXPECT_NE(entry.path().extension(), ".kiln") << entry.path();
}

TEST_F(CompilerTest, ErrorsNameWhatIsWrong) {
  auto messageOf = [](const CompileOptions &o) -> std::string {
    try {
      compileModel(o);
    } catch (const std::exception &e) {
      return e.what();
    }
    return "(no error)";
  };
  CompileOptions noOutput = options();
  EXPECT_NE(messageOf(noOutput).find("needs -o ARTIFACT, --emit-source"),
            std::string::npos);

  CompileOptions badType = options();
  badType.output = (dir / "x.kiln").string();
  badType.dtype = "f8";
  EXPECT_NE(messageOf(badType).find("not 'f8'"), std::string::npos);
  badType.dtype = "f32";
  badType.kvType = "q8";
  EXPECT_NE(messageOf(badType).find("--kv-type must be f32, f16 or bf16, not "
                                    "'q8'"),
            std::string::npos);

  CompileOptions missing = options();
  missing.model = (dir / "absent.gguf").string();
  missing.output = (dir / "x.kiln").string();
  EXPECT_NE(messageOf(missing).find("absent.gguf"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "x.kiln"));
}
