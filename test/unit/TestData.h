//===- TestData.h - Locating ../shared test files ---------------*- C++ -*-===//
//
// Part of Kiln's unit tests. Model, vocabulary and chat template fixtures are
// not committed to Kiln; tests read them from $KILN_TEST_MODELS,
// $KILN_TEST_VOCAB and $KILN_TEST_CHAT_TEMPLATES (defaults: ../shared/models,
// ../shared/vocab and ../shared/chat-templates beside the checkout). Where
// they are missing, a test is skipped with a message saying where to put
// them -- except in CI (CI=true), where that is a failure.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TEST_UNIT_TESTDATA_H
#define KILN_TEST_UNIT_TESTDATA_H

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <sys/stat.h>

namespace kiln::test {

inline std::string envOr(const char *name, const std::string &fallback) {
  const char *value = std::getenv(name);
  return value && *value ? std::string(value) : fallback;
}

inline std::string modelsDir() {
  return envOr("KILN_TEST_MODELS", KILN_SOURCE_DIR "/../shared/models");
}

inline std::string vocabDir() {
  return envOr("KILN_TEST_VOCAB", KILN_SOURCE_DIR "/../shared/vocab");
}

inline std::string chatTemplatesDir() {
  return envOr("KILN_TEST_CHAT_TEMPLATES",
               KILN_SOURCE_DIR "/../shared/chat-templates");
}

inline bool fileExists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

inline bool inCI() { return envOr("CI", "") == "true"; }

} // namespace kiln::test

/// Skips the test (fails it in CI) unless `path` exists.
#define KILN_REQUIRE_TEST_FILE(path)                                           \
  do {                                                                         \
    const std::string kilnTestFile_ = (path);                                  \
    if (!::kiln::test::fileExists(kilnTestFile_)) {                            \
      if (::kiln::test::inCI())                                                \
        FAIL() << "missing test file " << kilnTestFile_                        \
               << " (CI needs ../shared beside the clone)";                    \
      GTEST_SKIP() << "missing test file " << kilnTestFile_                    \
                   << "; set KILN_TEST_MODELS / KILN_TEST_VOCAB / "            \
                      "KILN_TEST_CHAT_TEMPLATES or put shared/ beside the "    \
                      "checkout";                                              \
    }                                                                          \
  } while (false)

#endif // KILN_TEST_UNIT_TESTDATA_H
