//===- TerminalProgress.cpp - Compile stages on a terminal ----------------===//
//
// Part of Kiln's command line. See TerminalProgress.h.
//
//===----------------------------------------------------------------------===//

#include "tools/kiln/TerminalProgress.h"

#include <cstdio>
#include <unistd.h>

namespace kiln {

TerminalProgress::TerminalProgress(bool quiet)
    : enabled(!quiet && isatty(STDERR_FILENO)),
      start(std::chrono::steady_clock::now()) {}

TerminalProgress::~TerminalProgress() {
  if (shown)
    std::fprintf(stderr, "\r\033[K");
}

void TerminalProgress::attach(CompileOptions &options) {
  options.progress = [this](int stage, int stages, const std::string &what) {
    if (!enabled)
      return;
    double t =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    std::fprintf(stderr, "\r\033[K[%d/%d %5.1fs] %s", stage, stages, t,
                 what.c_str());
    std::fflush(stderr);
    shown = true;
  };
  options.notice = [this](const std::string &message) {
    if (shown)
      std::fprintf(stderr, "\r\033[K");
    std::fprintf(stderr, "kiln: notice: %s\n", message.c_str());
  };
}

} // namespace kiln
