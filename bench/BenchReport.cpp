//===- BenchReport.cpp - The report of a benchmark run --------------------===//
//
// Part of Kiln's benchmark library. See BenchReport.h. Sections: rates and
// limits, the table, JSON, the plot.
//
//===----------------------------------------------------------------------===//

#include "bench/BenchReport.h"

#include "bench/ReportPieces.h"

#include "runtime/CpuFeatures.h"
#include "runtime/WeightPrefetch.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <unistd.h>

namespace kiln::bench {

using nlohmann::json;

namespace {

//===----------------------------------------------------------------------===//
// Rates, limits and pieces of JSON
//===----------------------------------------------------------------------===//

std::string joined(const std::vector<std::string> &items, const char *sep) {
  std::string out;
  for (const std::string &s : items)
    out += (out.empty() ? "" : sep) + s;
  return out;
}

double decodeTokensPerSecond(const BenchResults &r, const ThreadResult &t) {
  return double(r.options.genTokens) / t.decode.median();
}

double prefillTokensPerSecond(const PrefillResult &p) {
  return double(p.promptTokens) / p.samples.median();
}

/// Decode's weight traffic in bytes a second at the median rate.
double decodeBytesPerSecond(const BenchResults &r, const ThreadResult &t) {
  return double(r.work.gemmBytes) * decodeTokensPerSecond(r, t);
}

/// Each timed decode run's weight traffic over the read probe's better
/// sample of the two taken right before and right after it
/// (ThreadResult::readSamples), in the order run; empty when the samples
/// are not laid out that way. The host's bandwidth drifts within seconds,
/// so a run against its own neighbours says what the kernels make of the
/// memory they got, where the median against the best sample of the whole
/// run also says how much the host moved.
std::vector<double> pairedReadFractions(const BenchResults &r,
                                        const ThreadResult &t) {
  const std::vector<double> &seconds = t.decode.seconds;
  std::vector<double> around =
      bandwidthAroundRuns(t.readSamples, seconds.size());
  std::vector<double> fractions;
  for (size_t i = 0; i < around.size(); ++i) {
    double bytes =
        double(r.work.gemmBytes) * double(r.options.genTokens) / seconds[i];
    fractions.push_back(bytes / around[i]);
  }
  return fractions;
}

/// The compute limit prefill runs into: the bf16 dot peak when the GEMMs
/// multiply in bf16 dot products, the int8 dot peak when they are mostly
/// quantized (where the probe measured it), else the FP32 FMA peak.
const runtime::FmaPeakResult &prefillPeak(const BenchResults &r,
                                          const ThreadResult &t) {
  const runtime::MachineProbeResult &m = t.machine;
  if (r.work.bf16Dot && m.bf16DotPeak.flopsPerSecond > 0)
    return m.bf16DotPeak;
  if (r.work.int8Dot && m.int8DotPeak.flopsPerSecond > 0)
    return m.int8DotPeak;
  return m.fmaPeak;
}

/// "FMA peak", "bf16 dot peak" or "int8 dot peak", for labels.
std::string prefillPeakName(const BenchResults &r) {
  const ThreadResult &t = r.runs.front();
  const runtime::FmaPeakResult &peak = prefillPeak(r, t);
  return &peak == &t.machine.bf16DotPeak   ? "bf16 dot peak"
         : &peak == &t.machine.int8DotPeak ? "int8 dot peak"
                                           : "FMA peak";
}

json gigabytes(const std::vector<double> &bytesPerSecond) {
  json out = json::array();
  for (double b : bytesPerSecond)
    out.push_back(b / 1e9);
  return out;
}

//===----------------------------------------------------------------------===//
// The plot's helpers
//===----------------------------------------------------------------------===//

bool onPath(const std::string &program) {
  const char *path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':'))
    if (!dir.empty() && access((dir + "/" + program).c_str(), X_OK) == 0)
      return true;
  return false;
}

/// gnuplot quotes: single-quoted, a quote doubled.
std::string quoted(const std::string &text) {
  std::string out = "'";
  for (char c : text)
    out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

} // namespace

//===----------------------------------------------------------------------===//
// The table
//===----------------------------------------------------------------------===//

void printReportHeader(const BenchOptions &o, const std::string &date,
                       const std::string &cpu,
                       const runtime::ArtifactManifest &m, std::FILE *out) {
  std::fprintf(out, "# %s\n", o.command.c_str());
  std::fprintf(out, "date       %s\n", date.c_str());
  std::fprintf(out, "host       %s; %s; decode weight prefetch %s\n",
               cpu.c_str(), joined(runtime::detectCpuFeatures(), " ").c_str(),
               runtime::describeHostWeightPrefetch().c_str());
  std::fprintf(out,
               "artifact   %s: kiln %s, target %s, %s weights, %lld layers, "
               "vocab %lld, context %lld, max %lld tokens a step\n",
               o.artifact.c_str(), m.kilnVersion.c_str(), m.target.c_str(),
               m.weightType.c_str(), (long long)m.layers,
               (long long)m.vocabSize, (long long)m.contextLength,
               (long long)m.maxTokens);
}

void printTable(const BenchResults &r, std::FILE *out) {
  const StepWork &w = r.work;
  printReportHeader(r.options, r.date, r.cpu, r.manifest, out);
  std::fprintf(
      out,
      "counted    decode: %.1f MB of packed GEMM weights a token (%lld "
      "matrices, %.1f M parameters, classifier included; the "
      "embedding row and the KV cache are not counted)\n",
      double(w.gemmBytes) / 1e6, (long long)w.gemmEntries,
      double(w.layerGemmParameters + w.classifierParameters) / 1e6);
  std::fprintf(out,
               "           prefill FLOPs a token: 2 x %.2f M layer GEMM "
               "parameters + 2 x %.2f M classifier parameters / P (last row's "
               "logits only) + causal attention 2 x %lld layers x %lld x "
               "(P + 1)\n",
               double(w.layerGemmParameters) / 1e6,
               double(w.classifierParameters) / 1e6, (long long)w.layers,
               (long long)w.qDim);
  std::fprintf(out,
               "timing     %d timed run%s after a warm-up, the median "
               "quoted%s; prefill at positions 0..P-1, decode at 1..%lld "
               "after a 1-token prefill; random token ids, seed %llu; %s; "
               "%s\n\n",
               r.options.repeat, r.options.repeat == 1 ? "" : "s",
               r.options.repeat == 1 ? "" : " (slowest-fastest)",
               (long long)r.options.genTokens,
               (unsigned long long)r.options.seed,
               r.options.keepPageCache
                   ? "the artifact's pages left in the page cache as found"
                   : "the artifact evicted from the page cache before each "
                     "load",
               weightPlacement(r.weightsInHugePages));

  std::vector<std::pair<std::string, std::vector<std::string>>> rows;
  auto row = [&](std::string label, auto cell) {
    std::vector<std::string> cells;
    for (const ThreadResult &t : r.runs)
      cells.push_back(cell(t));
    rows.push_back({std::move(label), std::move(cells)});
  };
  const runtime::MachineProbeResult &first = r.runs.front().machine;
  // A compute peak's row: "<what> (<isa><instruction>, C chains x L lanes)".
  using Peak = runtime::FmaPeakResult runtime::MachineProbeResult::*;
  auto peakRow = [&](const std::string &what, const std::string &instruction,
                     Peak peak, const char *unit) {
    const runtime::FmaPeakResult &p = first.*peak;
    if (p.flopsPerSecond <= 0)
      return;
    row(what + " (" + p.isa + instruction + ", " +
            std::to_string(p.accumulators) + " chains x " +
            std::to_string(p.lanes) + " lanes)",
        [peak, unit](const ThreadResult &t) {
          return format("%.1f ", (t.machine.*peak).flopsPerSecond / 1e9) + unit;
        });
  };
  peakRow("FP32 FMA peak", "", &runtime::MachineProbeResult::fmaPeak,
          "GFLOP/s");
  peakRow("bf16 dot peak", " vdpbf16ps",
          &runtime::MachineProbeResult::bf16DotPeak, "GFLOP/s");
  peakRow("int8 dot peak", " vpdpbusd",
          &runtime::MachineProbeResult::int8DotPeak, "GOP/s");
  row("memory bandwidth, read (" +
          format("%.0f", double(first.readBandwidth.arrayBytes) / (1 << 20)) +
          " MiB, " + first.readBandwidth.isa +
          (first.readBandwidth.hugePages ? ", huge pages" : "") +
          "; best sample around the decode runs)",
      [](const ThreadResult &t) {
        return format("%.1f GB/s",
                      t.machine.readBandwidth.bytesPerSecond / 1e9);
      });
  row("memory bandwidth, triad (3 x " +
          format("%.0f", double(first.bandwidth.arrayBytes) / (1 << 20)) +
          " MiB)",
      [](const ThreadResult &t) {
        return format("%.1f GB/s", t.machine.bandwidth.bytesPerSecond / 1e9);
      });
  for (size_t i = 0; i < r.options.promptTokens.size(); ++i) {
    std::string pp = "pp" + std::to_string(r.options.promptTokens[i]);
    row(pp + " tokens/s", [&](const ThreadResult &t) {
      const PrefillResult &p = t.prefill[i];
      return rateWithSpread(double(p.promptTokens), p.samples);
    });
    // Integer multiply-adds are operations, not floating-point ones.
    const std::string peakName = prefillPeakName(r);
    row(pp + (peakName == "int8 dot peak" ? " GOP/s" : " GFLOP/s") + " (of " +
            peakName + ")",
        [&](const ThreadResult &t) {
          const PrefillResult &p = t.prefill[i];
          double flops = p.flopsPerToken * prefillTokensPerSecond(p);
          return format("%.1f", flops / 1e9) +
                 format(" (%.0f%%)",
                        100.0 * flops / prefillPeak(r, t).flopsPerSecond);
        });
    row(pp + " roofline tokens/s (peak / FLOPs a token)",
        [&](const ThreadResult &t) {
          return format("%.1f", prefillPeak(r, t).flopsPerSecond /
                                    t.prefill[i].flopsPerToken);
        });
  }
  std::string tg = "tg" + std::to_string(r.options.genTokens);
  row(tg + " tokens/s", [&](const ThreadResult &t) {
    return rateWithSpread(double(r.options.genTokens), t.decode);
  });
  row(tg + " GB/s (of read bandwidth)", [&](const ThreadResult &t) {
    double bytes = decodeBytesPerSecond(r, t);
    return format("%.1f", bytes / 1e9) +
           format(" (%.0f%%)",
                  100.0 * bytes / t.machine.readBandwidth.bytesPerSecond);
  });
  if (std::any_of(r.runs.begin(), r.runs.end(), [&](const ThreadResult &t) {
        return !pairedReadFractions(r, t).empty();
      }))
    row(tg + " each run's share of the read probe around it (median, range)",
        [&](const ThreadResult &t) {
          return shareWithRange(pairedReadFractions(r, t));
        });
  row(tg + " roofline tokens/s (read bandwidth / bytes a token)",
      [&](const ThreadResult &t) {
        return format("%.1f", t.machine.readBandwidth.bytesPerSecond /
                                  double(w.gemmBytes));
      });

  std::fprintf(out, "| what |");
  for (const ThreadResult &t : r.runs)
    std::fprintf(out, " %d thread%s |", t.threads, t.threads == 1 ? "" : "s");
  std::fprintf(out, "\n| --- |");
  for (size_t i = 0; i < r.runs.size(); ++i)
    std::fprintf(out, " ---: |");
  std::fprintf(out, "\n");
  for (const auto &[label, cells] : rows) {
    std::fprintf(out, "| %s |", label.c_str());
    for (const std::string &c : cells)
      std::fprintf(out, " %s |", c.c_str());
    std::fprintf(out, "\n");
  }
  // The read probe is meant to bound decode; a decode faster than it means
  // the probe missed something (the weights partly in cache, a probe run
  // slowed by another process), and its fraction is no verdict.
  for (const ThreadResult &t : r.runs) {
    double decode = decodeBytesPerSecond(r, t),
           limit = t.machine.readBandwidth.bytesPerSecond;
    if (decode > limit)
      std::fprintf(out,
                   "\nwarning: with %d thread%s decode read %.1f GB/s, more "
                   "than the read probe's %.1f GB/s: the probe did not bound "
                   "it in this run (a busy machine, or weights held in "
                   "cache); rerun on an idle machine before quoting it\n",
                   t.threads, t.threads == 1 ? "" : "s", decode / 1e9,
                   limit / 1e9);
  }
}

void printProfiles(const BenchResults &r, std::FILE *out) {
  for (const ThreadResult &t : r.runs)
    for (const Profile &p : t.profiles)
      printProfile(std::to_string(t.threads) +
                       (t.threads == 1 ? " thread" : " threads"),
                   p, out);
}

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

json reportJson(const BenchResults &r) {
  const StepWork &w = r.work;
  const runtime::ArtifactManifest &m = r.manifest;
  json runs = json::array();
  for (const ThreadResult &t : r.runs) {
    const runtime::MachineProbeResult &mp = t.machine;
    json machine = {{"fma_peak_gflops", mp.fmaPeak.flopsPerSecond / 1e9},
                    {"fma_isa", mp.fmaPeak.isa},
                    {"fma_lanes", mp.fmaPeak.lanes},
                    {"fma_accumulators", mp.fmaPeak.accumulators},
                    {"fma_repetitions", mp.fmaPeak.repetitions},
                    {"read_gb_per_s", mp.readBandwidth.bytesPerSecond / 1e9},
                    {"read_array_bytes", mp.readBandwidth.arrayBytes},
                    {"read_repetitions", mp.readBandwidth.repetitions},
                    {"read_samples_gb_per_s", gigabytes(t.readSamples)},
                    {"read_isa", mp.readBandwidth.isa},
                    {"read_huge_pages", mp.readBandwidth.hugePages},
                    {"triad_gb_per_s", mp.bandwidth.bytesPerSecond / 1e9},
                    {"triad_array_bytes", mp.bandwidth.arrayBytes},
                    {"triad_repetitions", mp.bandwidth.repetitions},
                    {"triad_counts_write_allocate", false}};
    if (mp.bf16DotPeak.flopsPerSecond > 0)
      machine["bf16_dot_peak_gflops"] = mp.bf16DotPeak.flopsPerSecond / 1e9;
    if (mp.int8DotPeak.flopsPerSecond > 0) {
      machine["int8_dot_peak_gops"] = mp.int8DotPeak.flopsPerSecond / 1e9;
      machine["int8_dot_isa"] = mp.int8DotPeak.isa;
    }
    const runtime::FmaPeakResult &peak = prefillPeak(r, t);
    json prefill = json::array();
    for (const PrefillResult &p : t.prefill) {
      double median = prefillTokensPerSecond(p);
      json e = samplesJson(p.samples);
      e["prompt_tokens"] = p.promptTokens;
      e["tokens_per_second"] = median;
      e["median_tokens_per_second"] = median;
      e["best_tokens_per_second"] = double(p.promptTokens) / p.samples.best();
      e["worst_tokens_per_second"] = double(p.promptTokens) / p.samples.worst();
      e["flops_per_token"] = p.flopsPerToken;
      e["gflops"] = median * p.flopsPerToken / 1e9;
      e["fraction_of_fma_peak"] =
          median * p.flopsPerToken / mp.fmaPeak.flopsPerSecond;
      e["peak"] = &peak == &mp.bf16DotPeak   ? "bf16_dot"
                  : &peak == &mp.int8DotPeak ? "int8_dot"
                                             : "fma";
      e["fraction_of_peak"] = median * p.flopsPerToken / peak.flopsPerSecond;
      e["roofline_tokens_per_second"] = peak.flopsPerSecond / p.flopsPerToken;
      prefill.push_back(e);
    }
    double tps = decodeTokensPerSecond(r, t);
    json decode = samplesJson(t.decode);
    decode["gen_tokens"] = r.options.genTokens;
    decode["tokens_per_second"] = tps;
    decode["median_tokens_per_second"] = tps;
    decode["best_tokens_per_second"] =
        double(r.options.genTokens) / t.decode.best();
    decode["worst_tokens_per_second"] =
        double(r.options.genTokens) / t.decode.worst();
    decode["bytes_per_token"] = w.gemmBytes;
    decode["gb_per_s"] = tps * double(w.gemmBytes) / 1e9;
    decode["fraction_of_read_bandwidth"] =
        tps * double(w.gemmBytes) / mp.readBandwidth.bytesPerSecond;
    std::vector<double> paired = pairedReadFractions(r, t);
    decode["paired_read_fractions"] = paired;
    if (!paired.empty())
      decode["median_paired_read_fraction"] = medianOf(paired);
    decode["fraction_of_triad"] =
        tps * double(w.gemmBytes) / mp.bandwidth.bytesPerSecond;
    decode["roofline_tokens_per_second"] =
        mp.readBandwidth.bytesPerSecond / double(w.gemmBytes);
    json run = {{"threads", t.threads},
                {"machine", machine},
                {"prefill", prefill},
                {"decode", decode}};
    if (!t.profiles.empty()) {
      json profiles = json::object();
      for (const Profile &p : t.profiles)
        profiles[p.what.rfind("prefill", 0) == 0 ? "prefill" : "decode"] =
            profileJson(p);
      run["profile"] = profiles;
    }
    runs.push_back(run);
  }
  return {{"command", r.options.command},
          {"date", r.date},
          {"kiln_version", m.kilnVersion},
          {"artifact",
           {{"path", r.options.artifact},
            {"kiln_version", m.kilnVersion},
            {"target", m.target},
            {"cpu_features", m.cpuFeatures},
            {"weight_type", m.weightType},
            {"weights_section_bytes", r.weightsSectionBytes},
            {"max_tokens", m.maxTokens}}},
          {"model",
           {{"layers", m.layers},
            {"vocab_size", m.vocabSize},
            {"context_length", m.contextLength},
            {"kv_heads", m.kvHeads},
            {"head_dim", m.headDim},
            {"dim", w.dim},
            {"attention_dim", w.qDim},
            {"gemm_matrices", w.gemmEntries},
            {"layer_gemm_parameters", w.layerGemmParameters},
            {"classifier_parameters", w.classifierParameters},
            {"gemm_weight_bytes", w.gemmBytes}}},
          {"host",
           {{"cpu", r.cpu},
            {"cpu_features", runtime::detectCpuFeatures()},
            {"weight_prefetch",
             runtime::weightPrefetchName(runtime::hostWeightPrefetch())},
            {"last_level_cache_bytes", runtime::lastLevelCacheBytes()}}},
          {"settings",
           {{"prompt_tokens", r.options.promptTokens},
            {"gen_tokens", r.options.genTokens},
            {"repeat", r.options.repeat},
            {"seed", r.options.seed},
            {"page_cache", r.options.keepPageCache ? "kept" : "evicted"},
            {"weights_in_huge_pages", r.weightsInHugePages}}},
          {"counting",
           {{"decode_bytes",
             "packed GEMM weight panels a token, classifier included; not the "
             "embedding row or the KV cache"},
            {"prefill_flops",
             "2 x layer GEMM parameters + 2 x classifier parameters / P + "
             "2 x layers x attention_dim x (P + 1), a token"},
            {"read_bandwidth",
             "bytes read by every thread streaming one array (no stores), "
             "the best pass of samples taken before the decode runs and "
             "right before and after each: decode's limit"},
            {"bandwidth", "STREAM triad, 12 bytes an element, write-allocate "
                          "not counted"},
            {"fma_peak", "2 FLOP per FMA lane"},
            {"int8_dot_peak",
             "8 operations per vpdpbusd lane (4 byte products, 4 adds), "
             "so that a quantized GEMM's 2 x M x N x K compares with it"},
            {"time", "median of repeat runs after a warm-up (best and "
                     "worst beside it)"}}},
          {"runs", runs}};
}

void writeJson(const BenchResults &r, const std::string &path) {
  std::ofstream file(path);
  file << reportJson(r).dump(2) << "\n";
  if (!file)
    throw std::runtime_error("--json " + path + ": cannot write");
}

//===----------------------------------------------------------------------===//
// The plot
//===----------------------------------------------------------------------===//

void requireGnuplot() {
  if (!onPath("gnuplot"))
    throw std::runtime_error("--plot needs gnuplot, which is not on PATH; "
                             "install the Debian package gnuplot-nox "
                             "(apt-get install gnuplot-nox)");
}

void drawPlot(const BenchResults &r, const std::string &path) {
  const BenchOptions &o = r.options;
  std::ostringstream s;
  s << "set terminal pngcairo size 1000,640 noenhanced\n"
    << "set output " << quoted(path) << "\n"
    << "set title "
    << quoted("kiln bench " +
              std::filesystem::path(o.artifact).filename().string() + " (" +
              r.manifest.weightType + "), " + r.date)
    << "\n"
    << "set xlabel 'threads'\nset ylabel 'tokens/s'\nset logscale y\n"
    << "set grid\nset key below\nset xtics (";
  for (size_t i = 0; i < r.runs.size(); ++i)
    s << (i ? ", " : "") << r.runs[i].threads;
  auto [fewest, most] =
      std::minmax_element(r.runs.begin(), r.runs.end(),
                          [](const ThreadResult &a, const ThreadResult &b) {
                            return a.threads < b.threads;
                          });
  s << ")\nset xrange [" << fewest->threads - 0.5 << ":" << most->threads + 0.5
    << "]\n";

  // Columns: threads, then per prompt length measured and roofline, then
  // decode measured and roofline.
  s << "$data << EOD\n";
  for (const ThreadResult &t : r.runs) {
    s << t.threads;
    for (const PrefillResult &p : t.prefill)
      s << " " << prefillTokensPerSecond(p) << " "
        << prefillPeak(r, t).flopsPerSecond / p.flopsPerToken;
    s << " " << decodeTokensPerSecond(r, t) << " "
      << t.machine.readBandwidth.bytesPerSecond / double(r.work.gemmBytes)
      << "\n";
  }
  s << "EOD\nplot ";
  size_t column = 2, color = 1;
  for (int64_t p : o.promptTokens) {
    std::string pp = "prefill " + std::to_string(p);
    s << "$data using 1:" << column << " with linespoints lw 2 lc " << color
      << " title " << quoted(pp) << ", $data using 1:" << column + 1
      << " with lines dt 2 lc " << color << " title "
      << quoted(pp + " roofline (" + prefillPeakName(r) + ")") << ", ";
    column += 2;
    ++color;
  }
  std::string tg = "decode " + std::to_string(o.genTokens);
  s << "$data using 1:" << column << " with linespoints lw 2 lc " << color
    << " title " << quoted(tg) << ", $data using 1:" << column + 1
    << " with lines dt 2 lc " << color << " title "
    << quoted(tg + " roofline (read bandwidth)") << "\n";

  // gnuplot writes the image to stdout when it cannot open the file.
  FILE *gnuplot = popen("gnuplot > /dev/null", "w");
  if (!gnuplot)
    throw std::runtime_error("--plot: cannot start gnuplot");
  std::string script = s.str();
  std::fwrite(script.data(), 1, script.size(), gnuplot);
  if (pclose(gnuplot) != 0)
    throw std::runtime_error("--plot " + path +
                             ": gnuplot failed (its messages are above)");
}

} // namespace kiln::bench
