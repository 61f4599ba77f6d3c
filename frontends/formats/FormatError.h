//===- FormatError.h - Errors reading model files ---------------*- C++ -*-===//
//
// Part of Kiln. Every reader of a model or tokenizer file reports problems by
// throwing FormatError, whose message names the file, the tensor or key at
// fault when there is one, and what was expected. Callers (the CLI, tests,
// fuzzers) catch it; malformed input never crashes Kiln.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_FRONTENDS_FORMATS_FORMATERROR_H
#define KILN_FRONTENDS_FORMATS_FORMATERROR_H

#include <stdexcept>
#include <string>

namespace kiln::formats {

class FormatError : public std::runtime_error {
public:
  /// "<file>: <message>"
  FormatError(const std::string &file, const std::string &message)
      : std::runtime_error(file + ": " + message) {}
};

} // namespace kiln::formats

#endif // KILN_FRONTENDS_FORMATS_FORMATERROR_H
