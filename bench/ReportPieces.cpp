//===- ReportPieces.cpp - Numbers as kiln bench prints them ---------------===//
//
// Part of Kiln's benchmark library. See ReportPieces.h.
//
//===----------------------------------------------------------------------===//

#include "bench/ReportPieces.h"

#include <algorithm>
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

std::string shareWithRange(const std::vector<double> &fractions) {
  if (fractions.empty())
    return "-";
  std::string median = format("%.0f%%", 100.0 * medianOf(fractions));
  if (fractions.size() == 1)
    return median;
  auto [lo, hi] = std::minmax_element(fractions.begin(), fractions.end());
  return median + format(" (%.0f", 100.0 * *lo) +
         format("-%.0f%%)", 100.0 * *hi);
}

nlohmann::json samplesJson(const Samples &s) {
  return {{"seconds", s.seconds},
          {"best_seconds", s.best()},
          {"worst_seconds", s.worst()},
          {"median_seconds", s.median()}};
}

void printProfile(const std::string &who, const Profile &p, std::FILE *out) {
  std::fprintf(out, "\n## Profile, %s: %s (%lld step%s, %.2f ms)\n",
               who.c_str(), p.what.c_str(), (long long)p.steps,
               p.steps == 1 ? "" : "s", p.seconds * 1e3);
  std::fprintf(out, "| kernel | op | ms | %% of step | calls |\n");
  std::fprintf(out, "| --- | --- | ---: | ---: | ---: |\n");
  double inKernels = 0;
  for (const KernelTime &k : p.kernels) {
    std::fprintf(out, "| %s | %s | %.3f | %.1f%% | %lld |\n", k.kernel.c_str(),
                 k.op.c_str(), k.seconds * 1e3, 100.0 * k.seconds / p.seconds,
                 (long long)k.calls);
    inKernels += k.seconds;
  }
  double outside = std::max(0.0, p.seconds - inKernels);
  std::fprintf(out, "| (outside kernels) | | %.3f | %.1f%% | |\n",
               outside * 1e3, 100.0 * outside / p.seconds);
}

nlohmann::json profileJson(const Profile &p) {
  nlohmann::json kernels = nlohmann::json::array();
  for (const KernelTime &k : p.kernels)
    kernels.push_back({{"kernel", k.kernel},
                       {"op", k.op},
                       {"seconds", k.seconds},
                       {"fraction", k.seconds / p.seconds},
                       {"calls", k.calls}});
  return {{"what", p.what},
          {"steps", p.steps},
          {"seconds", p.seconds},
          {"kernels", kernels}};
}

const char *weightPlacement(bool inHugePages) {
  return inHugePages ? "weights copied into transparent huge pages"
                     : "weights read in the artifact's mapping";
}

} // namespace kiln::bench
