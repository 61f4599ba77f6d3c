//===- ReportPieces.cpp - Numbers as kiln bench prints them ---------------===//
//
// Part of Kiln's benchmark library. See ReportPieces.h.
//
//===----------------------------------------------------------------------===//

#include "bench/ReportPieces.h"

#include <cstdio>

namespace kiln::bench {

std::string format(const char *fmt, double value) {
  char text[64];
  std::snprintf(text, sizeof text, fmt, value);
  return text;
}

std::string rateWithSpread(double work, const Samples &s) {
  std::string text = format("%.1f", work / s.median());
  if (s.seconds.size() > 1)
    text +=
        format(" (%.1f", work / s.worst()) + format("-%.1f)", work / s.best());
  return text;
}

nlohmann::json samplesJson(const Samples &s) {
  return {{"seconds", s.seconds},
          {"best_seconds", s.best()},
          {"worst_seconds", s.worst()},
          {"median_seconds", s.median()}};
}

} // namespace kiln::bench
