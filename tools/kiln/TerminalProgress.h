//===- TerminalProgress.h - Compile stages on a terminal --------*- C++ -*-===//
//
// Part of Kiln's command line. Shows the compiler's stages on one rewritten
// line of stderr ("[3/8   2.1s] avx2: compiling 12 kernels") when stderr is a
// terminal, and nothing otherwise, so logs and tests see only results. The
// compiler's notices always go to stderr.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_TERMINALPROGRESS_H
#define KILN_TOOLS_KILN_TERMINALPROGRESS_H

#include "codegen/driver/Compiler.h"

#include <chrono>

namespace kiln {

class TerminalProgress {
public:
  explicit TerminalProgress(bool quiet);
  /// Clears the progress line.
  ~TerminalProgress();
  TerminalProgress(const TerminalProgress &) = delete;
  TerminalProgress &operator=(const TerminalProgress &) = delete;

  /// Points `options`' progress and notice callbacks at this object, which
  /// must outlive the compile.
  void attach(CompileOptions &options);

private:
  bool enabled;
  bool shown = false;
  std::chrono::steady_clock::time_point start;
};

} // namespace kiln

#endif // KILN_TOOLS_KILN_TERMINALPROGRESS_H
