//===- ScopedEnv.h - An environment variable set for one scope -*- C++ -*-===//
//
// Part of Kiln's unit tests. The runtime reads several overrides from the
// environment (KILN_CPU_FEATURES, KILN_WEIGHT_PREFETCH, KILN_CUDA_DRIVER,
// ...); tests set one for a scope and put back what was there.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TEST_UNIT_SCOPEDENV_H
#define KILN_TEST_UNIT_SCOPEDENV_H

#include <cstdlib>
#include <optional>
#include <string>

namespace kiln::test {

/// Sets `name` to `value` (null: unsets it) until the end of the scope,
/// then restores its earlier value or absence.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value) : name(name) {
    if (const char *old = std::getenv(name))
      saved = old;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (saved)
      setenv(name, saved->c_str(), 1);
    else
      unsetenv(name);
  }
  ScopedEnv(const ScopedEnv &) = delete;
  ScopedEnv &operator=(const ScopedEnv &) = delete;

private:
  const char *name;
  std::optional<std::string> saved;
};

} // namespace kiln::test

#endif // KILN_TEST_UNIT_SCOPEDENV_H
