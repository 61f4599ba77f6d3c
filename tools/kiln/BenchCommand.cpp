//===- BenchCommand.cpp - kiln bench --------------------------------------===//
//
// Part of Kiln's command line. See BenchCommand.h. Sections: what a step
// costs (from the manifest), timing, profiles, and the report (table, JSON,
// plot).
//
//===----------------------------------------------------------------------===//

#include "tools/kiln/BenchCommand.h"

#include "runtime/CompiledModel.h"
#include "runtime/CpuFeatures.h"
#include "runtime/MachineProbe.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

namespace kiln {

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;
using runtime::CompiledModel;
using runtime::StepBatch;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string format(const char *fmt, double value) {
  char text[64];
  std::snprintf(text, sizeof text, fmt, value);
  return text;
}

//===----------------------------------------------------------------------===//
// What a step costs
//===----------------------------------------------------------------------===//

/// The work of a step, counted from the packed GEMM weights the manifest
/// lists ("NAME: [N, K] in panels of NR rows, TYPE[ (lane pairs)| (k pairs)],
/// at OFFSET"): these are what the kernels read, classifier included, so the
/// count follows the artifact rather than a model-shape formula.
struct StepWork {
  int64_t layers = 0, vocab = 0, dim = 0, qDim = 0;
  /// Parameters of every GEMM weight but the classifier: run for every token.
  int64_t layerGemmParameters = 0;
  /// The classifier [vocab, dim]: run once per logit row.
  int64_t classifierParameters = 0;
  /// The panels' bytes as stored (padding rows included): what a decode
  /// step reads.
  int64_t gemmBytes = 0;
  int64_t gemmEntries = 0;
  int64_t weightsSectionBytes = 0;
  /// The GEMMs multiply in bf16 dot products (panels packed as k pairs):
  /// prefill is then measured against the bf16 dot peak.
  bool bf16Dot = false;

  /// FLOPs per token of a P-token prefill with logits for its last row:
  /// 2 per GEMM weight parameter, the classifier's shared by the P tokens,
  /// and causal attention: token i scores and mixes i + 1 positions at
  /// 2 x 2 x qDim FLOPs each, in every layer; averaged over the prompt,
  /// 2 x layers x qDim x (P + 1) per token.
  double prefillFlopsPerToken(int64_t p) const {
    double attention = 2.0 * double(layers) * double(qDim) * double(p + 1);
    return 2.0 * double(layerGemmParameters) +
           2.0 * double(classifierParameters) / double(p) + attention;
  }
};

StepWork countStepWork(const CompiledModel &model) {
  const std::string &path = model.artifact().path();
  const runtime::ArtifactManifest &info = model.manifest();
  // The library the model runs: its packed weights are what a step reads.
  const runtime::StepLibraryManifest &library = model.stepLibrary();
  StepWork work;
  work.layers = info.layers;
  work.vocab = info.vocabSize;
  work.weightsSectionBytes = int64_t(model.weights().size());
  for (const runtime::PackedWeight &w : library.weightEntries) {
    if (w.layout != "panels")
      continue; // row-major tables (embedding, norms) are not GEMM weights
    work.gemmBytes += w.bytes;
    ++work.gemmEntries;
    work.bf16Dot = work.bf16Dot || w.pairs == "k";
    if (w.rows == info.vocabSize && work.classifierParameters == 0) {
      work.classifierParameters = w.rows * w.cols;
      work.dim = w.cols;
    } else {
      work.layerGemmParameters += w.rows * w.cols;
    }
  }
  if (work.gemmEntries == 0)
    throw std::runtime_error(path + ": the manifest lists no packed GEMM "
                                    "weights ('weights.entries' of layout "
                                    "\"panels\"; artifacts before Kiln wrote "
                                    "them need recompiling), so the weights a "
                                    "step reads cannot be counted");
  if (info.heads <= 0)
    throw std::runtime_error(path + ": the manifest has no 'model.heads' "
                                    "(recompile the artifact), so attention's "
                                    "FLOPs cannot be counted");
  work.qDim = info.heads * info.headDim;
  return work;
}

//===----------------------------------------------------------------------===//
// Timing
//===----------------------------------------------------------------------===//

std::vector<int32_t> randomTokens(int64_t count, int64_t vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> pick(0, int32_t(vocab - 1));
  std::vector<int32_t> tokens(static_cast<size_t>(count));
  for (int32_t &t : tokens)
    t = pick(rng);
  return tokens;
}

/// Positions 0..P-1 of sequence 0, logits for the last row only.
StepBatch promptBatch(const std::vector<int32_t> &tokens) {
  StepBatch batch;
  for (size_t i = 0; i < tokens.size(); ++i)
    batch.addToken(0, tokens[i], int32_t(i), i + 1 == tokens.size());
  return batch;
}

/// The timed runs of one cell. Figures are quoted as the median run, with
/// the fastest and slowest beside it (bench/README.md, "Protocol").
struct Samples {
  std::vector<double> seconds;
  double best() const {
    return *std::min_element(seconds.begin(), seconds.end());
  }
  double worst() const {
    return *std::max_element(seconds.begin(), seconds.end());
  }
  double median() const {
    std::vector<double> s = seconds;
    std::sort(s.begin(), s.end());
    size_t n = s.size();
    return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  }
};

/// One untimed warm-up, then `repeat` timed prefills from an empty cache.
Samples timePrefill(CompiledModel &model, int64_t p, int repeat,
                    uint64_t seed) {
  StepBatch batch =
      promptBatch(randomTokens(p, model.manifest().vocabSize, seed));
  model.reset();
  model.step(batch);
  Samples samples;
  for (int r = 0; r < repeat; ++r) {
    model.reset();
    Clock::time_point start = Clock::now();
    model.step(batch);
    samples.seconds.push_back(secondsSince(start));
  }
  return samples;
}

/// Single-token steps at positions 1..G after an untimed 1-token prefill.
struct DecodeRun {
  std::vector<StepBatch> steps;
  StepBatch first;

  DecodeRun(int64_t g, int64_t vocab, uint64_t seed) {
    std::vector<int32_t> tokens = randomTokens(g + 1, vocab, seed);
    first.addToken(0, tokens[0], 0, true);
    for (int64_t i = 1; i <= g; ++i) {
      steps.emplace_back();
      steps.back().addToken(0, tokens[size_t(i)], int32_t(i), true);
    }
  }

  double run(CompiledModel &model, size_t count) const {
    model.reset();
    model.step(first);
    Clock::time_point start = Clock::now();
    for (size_t i = 0; i < count; ++i)
      model.step(steps[i]);
    return secondsSince(start);
  }
};

/// Passes of the read probe sampled right before and right after each
/// timed decode run.
constexpr int kReadPassesAroundDecode = 5;

/// A short warm-up, then `repeat` timed decodes of G tokens, each between
/// two samples of `readProbe`: the memory bandwidth a shared host gives
/// drifts within seconds, and decode's limit is what memory delivered while
/// it ran.
Samples timeDecode(CompiledModel &model, int64_t g, int repeat, uint64_t seed,
                   runtime::ReadBandwidthProbe &readProbe) {
  DecodeRun decode(g, model.manifest().vocabSize, seed);
  decode.run(model, std::min<size_t>(decode.steps.size(), 16));
  Samples samples;
  for (int r = 0; r < repeat; ++r) {
    readProbe.sample(kReadPassesAroundDecode);
    samples.seconds.push_back(decode.run(model, decode.steps.size()));
    readProbe.sample(kReadPassesAroundDecode);
  }
  return samples;
}

//===----------------------------------------------------------------------===//
// Profiles
//===----------------------------------------------------------------------===//

struct KernelTime {
  std::string kernel, op;
  double seconds = 0;
  int64_t calls = 0;
};

struct Profile {
  std::string what;
  int64_t steps = 0; ///< step-library calls profiled
  double seconds = 0;
  std::vector<KernelTime> kernels; ///< slowest first
};

std::vector<double> profileSeconds(const CompiledModel &model) {
  std::vector<double> seconds;
  for (const CompiledModel::ProfileEntry &e : model.profile())
    seconds.push_back(e.seconds);
  return seconds;
}

/// Sums the calls made between two snapshots by kernel: the call name's
/// prefix before ':' ("k03_gemm: kiln.fused_matmul at loc(...)"), the
/// layers' calls of one kernel together.
std::vector<KernelTime> aggregateByKernel(const CompiledModel &model,
                                          const std::vector<double> &before,
                                          int64_t steps) {
  std::vector<CompiledModel::ProfileEntry> after = model.profile();
  std::map<std::string, KernelTime> byKernel;
  for (size_t i = 0; i < after.size(); ++i) {
    const std::string &call = after[i].call;
    size_t colon = call.find(':');
    KernelTime &k = byKernel[call.substr(0, colon)];
    if (k.kernel.empty()) {
      k.kernel = call.substr(0, colon);
      if (colon != std::string::npos) {
        std::string rest = call.substr(colon + 1);
        rest.erase(0, rest.find_first_not_of(' '));
        k.op = rest.substr(0, rest.find(" at "));
        std::replace(k.op.begin(), k.op.end(), '|', '/');
      }
    }
    k.seconds += after[i].seconds - (i < before.size() ? before[i] : 0.0);
    k.calls += steps;
  }
  std::vector<KernelTime> kernels;
  for (auto &[name, k] : byKernel)
    kernels.push_back(k);
  std::sort(kernels.begin(), kernels.end(),
            [](const KernelTime &a, const KernelTime &b) {
              return a.seconds > b.seconds;
            });
  return kernels;
}

/// Profiles one prefill of `p` tokens and one decode of `g`, untimed runs
/// of their own so the profile's clock reads do not touch the figures.
std::vector<Profile> profileSteps(CompiledModel &model, int64_t p, int64_t g,
                                  uint64_t seed) {
  std::vector<Profile> profiles;
  model.setProfiling(true);

  StepBatch prompt =
      promptBatch(randomTokens(p, model.manifest().vocabSize, seed));
  model.reset();
  std::vector<double> before = profileSeconds(model);
  Clock::time_point start = Clock::now();
  model.step(prompt);
  Profile prefill;
  prefill.what = "prefill of " + std::to_string(p) + " tokens";
  prefill.seconds = secondsSince(start);
  prefill.steps = (p + model.manifest().maxTokens - 1) /
                  model.manifest().maxTokens; // longer steps run in chunks
  prefill.kernels = aggregateByKernel(model, before, prefill.steps);
  profiles.push_back(prefill);

  DecodeRun decodeRun(g, model.manifest().vocabSize, seed);
  model.reset();
  model.step(decodeRun.first);
  before = profileSeconds(model);
  start = Clock::now();
  for (const StepBatch &step : decodeRun.steps)
    model.step(step);
  Profile decode;
  decode.what = "decode of " + std::to_string(g) + " tokens";
  decode.seconds = secondsSince(start);
  decode.steps = g;
  decode.kernels = aggregateByKernel(model, before, decode.steps);
  profiles.push_back(decode);

  model.setProfiling(false);
  return profiles;
}

//===----------------------------------------------------------------------===//
// One thread count
//===----------------------------------------------------------------------===//

struct PrefillResult {
  int64_t promptTokens = 0;
  Samples samples;
  double flopsPerToken = 0;
};

struct ThreadResult {
  int threads = 0;
  runtime::MachineProbeResult machine;
  std::vector<PrefillResult> prefill;
  Samples decode;
  /// The read probe's samples (bytes/s): its first, then one before and
  /// one after each timed decode run. machine.readBandwidth is the best.
  std::vector<double> readSamples;
  std::vector<Profile> profiles;
};

void progress(const std::string &message) {
  std::fprintf(stderr, "kiln bench: %s\n", message.c_str());
  std::fflush(stderr);
}

/// Writes back and drops the page cache's copy of `path`, so the load that
/// follows reads it from the file system. Decode streams the weights from
/// those pages, and how they came into the cache matters: pages left by the
/// writer of a just-compiled artifact can decode slower than the same file
/// read back, where the page cache builds large folios (figures in
/// bench/NOTES.md). Evicting first gives every run the read path, as after
/// a reboot. Best effort: on failure the pages stay.
void evictFromPageCache(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0)
    return;
  ::fdatasync(fd); // dirty pages are not dropped
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

/// `manifest` becomes the loaded model's (the step library it runs) on the
/// first call, with `work`.
ThreadResult benchThreads(const BenchOptions &o, int threads, bool verify,
                          StepWork &work, runtime::ArtifactManifest &manifest) {
  if (!o.keepPageCache)
    evictFromPageCache(o.artifact);
  runtime::CompiledModelOptions options;
  options.threads = threads;
  options.verifyHashes = verify; // once is enough
  std::unique_ptr<CompiledModel> model =
      CompiledModel::load(o.artifact, options);
  if (work.gemmEntries == 0) {
    work = countStepWork(*model);
    manifest = model->manifest();
    if (model->manifest().libraries.size() > 1)
      std::fprintf(stderr, "kiln bench: using %s\n",
                   model->stepLibraryChoice().c_str());
  }

  ThreadResult result;
  result.threads = threads;
  std::string who =
      std::to_string(threads) + (threads == 1 ? " thread: " : " threads: ");
  progress(who + "measuring the machine (FMA peak, read and triad bandwidth)");
  runtime::MachineProbeOptions probe;
  probe.triadArrayBytes = o.triadArrayBytes;
  probe.bf16DotPeak = work.bf16Dot;
  probe.readBandwidth = false; // sampled around the decode runs below
  result.machine = runtime::probeMachine(model->threadPool(), probe);
  for (int64_t p : o.promptTokens) {
    progress(who + "prefill of " + std::to_string(p) + " tokens");
    PrefillResult r;
    r.promptTokens = p;
    r.samples = timePrefill(*model, p, o.repeat, o.seed);
    r.flopsPerToken = work.prefillFlopsPerToken(p);
    result.prefill.push_back(r);
  }
  progress(who + "decode of " + std::to_string(o.genTokens) + " tokens");
  {
    runtime::ReadBandwidthProbe read(model->threadPool(),
                                     runtime::readArrayBytes(probe));
    read.sample(probe.readRepetitions);
    result.decode = timeDecode(*model, o.genTokens, o.repeat, o.seed, read);
    result.machine.readBandwidth = read.result();
    result.readSamples = read.sampleBytesPerSecond();
  }
  if (o.profile) {
    progress(who + "profiles");
    result.profiles = profileSteps(
        *model, *std::max_element(o.promptTokens.begin(), o.promptTokens.end()),
        o.genTokens, o.seed);
  }
  return result;
}

//===----------------------------------------------------------------------===//
// The report
//===----------------------------------------------------------------------===//

struct Report {
  const BenchOptions &options;
  runtime::ArtifactManifest manifest;
  StepWork work;
  std::string date, cpu;
  std::vector<ThreadResult> runs;
};

std::string hostCpuName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos)
        return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  return "unknown CPU";
}

std::string utcNow() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", &tm);
  return text;
}

std::string joined(const std::vector<std::string> &items, const char *sep) {
  std::string out;
  for (const std::string &s : items)
    out += (out.empty() ? "" : sep) + s;
  return out;
}

double decodeTokensPerSecond(const Report &r, const ThreadResult &t) {
  return double(r.options.genTokens) / t.decode.median();
}

double prefillTokensPerSecond(const PrefillResult &p) {
  return double(p.promptTokens) / p.samples.median();
}

/// "571.0", or "571.0 (563.2-575.1)" with the slowest and fastest runs'
/// rates when there were several: `work` per run over each time.
std::string rateWithSpread(double work, const Samples &s) {
  std::string text = format("%.1f", work / s.median());
  if (s.seconds.size() > 1)
    text +=
        format(" (%.1f", work / s.worst()) + format("-%.1f)", work / s.best());
  return text;
}

/// Decode's weight traffic in bytes a second at the median rate.
double decodeBytesPerSecond(const Report &r, const ThreadResult &t) {
  return double(r.work.gemmBytes) * decodeTokensPerSecond(r, t);
}

/// The compute limit prefill runs into: the bf16 dot peak when the GEMMs
/// multiply in bf16 dot products and the probe measured it, else the FP32
/// FMA peak.
const runtime::FmaPeakResult &prefillPeak(const Report &r,
                                          const ThreadResult &t) {
  const runtime::MachineProbeResult &m = t.machine;
  return r.work.bf16Dot && m.bf16DotPeak.flopsPerSecond > 0 ? m.bf16DotPeak
                                                            : m.fmaPeak;
}

/// "FMA peak" or "bf16 dot peak", for labels.
std::string prefillPeakName(const Report &r) {
  const ThreadResult &t = r.runs.front();
  return &prefillPeak(r, t) == &t.machine.bf16DotPeak ? "bf16 dot peak"
                                                      : "FMA peak";
}

void printTable(const Report &r) {
  const StepWork &w = r.work;
  const runtime::ArtifactManifest &m = r.manifest;
  std::printf("# %s\n", r.options.command.c_str());
  std::printf("date       %s\n", r.date.c_str());
  std::printf("host       %s; %s\n", r.cpu.c_str(),
              joined(runtime::detectCpuFeatures(), " ").c_str());
  std::printf("artifact   %s: kiln %s, target %s, %s weights, %lld layers, "
              "vocab %lld, context %lld, max %lld tokens a step\n",
              r.options.artifact.c_str(), m.kilnVersion.c_str(),
              m.target.c_str(), m.weightType.c_str(), (long long)m.layers,
              (long long)m.vocabSize, (long long)m.contextLength,
              (long long)m.maxTokens);
  std::printf("counted    decode: %.1f MB of packed GEMM weights a token (%lld "
              "matrices, %.1f M parameters, classifier included; the "
              "embedding row and the KV cache are not counted)\n",
              double(w.gemmBytes) / 1e6, (long long)w.gemmEntries,
              double(w.layerGemmParameters + w.classifierParameters) / 1e6);
  std::printf("           prefill FLOPs a token: 2 x %.2f M layer GEMM "
              "parameters + 2 x %.2f M classifier parameters / P (last row's "
              "logits only) + causal attention 2 x %lld layers x %lld x "
              "(P + 1)\n",
              double(w.layerGemmParameters) / 1e6,
              double(w.classifierParameters) / 1e6, (long long)w.layers,
              (long long)w.qDim);
  std::printf("timing     %d timed run%s after a warm-up, the median "
              "quoted%s; prefill at positions 0..P-1, decode at 1..%lld "
              "after a 1-token prefill; random token ids, seed %llu; %s\n\n",
              r.options.repeat, r.options.repeat == 1 ? "" : "s",
              r.options.repeat == 1 ? "" : " (slowest-fastest)",
              (long long)r.options.genTokens,
              (unsigned long long)r.options.seed,
              r.options.keepPageCache
                  ? "the artifact's pages left in the page cache as found"
                  : "the artifact evicted from the page cache before each "
                    "load");

  std::vector<std::pair<std::string, std::vector<std::string>>> rows;
  auto row = [&](std::string label, auto cell) {
    std::vector<std::string> cells;
    for (const ThreadResult &t : r.runs)
      cells.push_back(cell(t));
    rows.push_back({std::move(label), std::move(cells)});
  };
  const runtime::MachineProbeResult &first = r.runs.front().machine;
  row("FP32 FMA peak (" + first.fmaPeak.isa + ", " +
          std::to_string(first.fmaPeak.accumulators) + " chains x " +
          std::to_string(first.fmaPeak.lanes) + " lanes)",
      [](const ThreadResult &t) {
        return format("%.1f GFLOP/s", t.machine.fmaPeak.flopsPerSecond / 1e9);
      });
  if (first.bf16DotPeak.flopsPerSecond > 0)
    row("bf16 dot peak (" + first.bf16DotPeak.isa + " vdpbf16ps, " +
            std::to_string(first.bf16DotPeak.accumulators) + " chains x " +
            std::to_string(first.bf16DotPeak.lanes) + " lanes)",
        [](const ThreadResult &t) {
          return format("%.1f GFLOP/s",
                        t.machine.bf16DotPeak.flopsPerSecond / 1e9);
        });
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
    row(pp + " GFLOP/s (of " + prefillPeakName(r) + ")",
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
  row(tg + " roofline tokens/s (read bandwidth / bytes a token)",
      [&](const ThreadResult &t) {
        return format("%.1f", t.machine.readBandwidth.bytesPerSecond /
                                  double(w.gemmBytes));
      });

  std::printf("| what |");
  for (const ThreadResult &t : r.runs)
    std::printf(" %d thread%s |", t.threads, t.threads == 1 ? "" : "s");
  std::printf("\n| --- |");
  for (size_t i = 0; i < r.runs.size(); ++i)
    std::printf(" ---: |");
  std::printf("\n");
  for (const auto &[label, cells] : rows) {
    std::printf("| %s |", label.c_str());
    for (const std::string &c : cells)
      std::printf(" %s |", c.c_str());
    std::printf("\n");
  }
  // The read probe is meant to bound decode; a decode faster than it means
  // the probe missed something (the weights partly in cache, a probe run
  // slowed by another process), and its fraction is no verdict.
  for (const ThreadResult &t : r.runs) {
    double decode = decodeBytesPerSecond(r, t),
           limit = t.machine.readBandwidth.bytesPerSecond;
    if (decode > limit)
      std::printf("\nwarning: with %d thread%s decode read %.1f GB/s, more "
                  "than the read probe's %.1f GB/s: the probe did not bound "
                  "it in this run (a busy machine, or weights held in "
                  "cache); rerun on an idle machine before quoting it\n",
                  t.threads, t.threads == 1 ? "" : "s", decode / 1e9,
                  limit / 1e9);
  }
}

void printProfiles(const Report &r) {
  for (const ThreadResult &t : r.runs)
    for (const Profile &p : t.profiles) {
      std::printf("\n## Profile, %d thread%s: %s (%lld step%s, %.2f ms)\n",
                  t.threads, t.threads == 1 ? "" : "s", p.what.c_str(),
                  (long long)p.steps, p.steps == 1 ? "" : "s", p.seconds * 1e3);
      std::printf("| kernel | op | ms | %% of step | calls |\n");
      std::printf("| --- | --- | ---: | ---: | ---: |\n");
      double inKernels = 0;
      for (const KernelTime &k : p.kernels) {
        std::printf("| %s | %s | %.3f | %.1f%% | %lld |\n", k.kernel.c_str(),
                    k.op.c_str(), k.seconds * 1e3,
                    100.0 * k.seconds / p.seconds, (long long)k.calls);
        inKernels += k.seconds;
      }
      double outside = std::max(0.0, p.seconds - inKernels);
      std::printf("| (outside kernels) | | %.3f | %.1f%% | |\n", outside * 1e3,
                  100.0 * outside / p.seconds);
    }
}

json gigabytes(const std::vector<double> &bytesPerSecond) {
  json out = json::array();
  for (double b : bytesPerSecond)
    out.push_back(b / 1e9);
  return out;
}

json samplesJson(const Samples &s) {
  return {{"seconds", s.seconds},
          {"best_seconds", s.best()},
          {"worst_seconds", s.worst()},
          {"median_seconds", s.median()}};
}

json reportJson(const Report &r) {
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
      e["peak"] = &peak == &mp.bf16DotPeak ? "bf16_dot" : "fma";
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
      for (const Profile &p : t.profiles) {
        json kernels = json::array();
        for (const KernelTime &k : p.kernels)
          kernels.push_back({{"kernel", k.kernel},
                             {"op", k.op},
                             {"seconds", k.seconds},
                             {"fraction", k.seconds / p.seconds},
                             {"calls", k.calls}});
        profiles[p.what.rfind("prefill", 0) == 0 ? "prefill" : "decode"] = {
            {"what", p.what},
            {"steps", p.steps},
            {"seconds", p.seconds},
            {"kernels", kernels}};
      }
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
            {"weights_section_bytes", w.weightsSectionBytes},
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
            {"last_level_cache_bytes", runtime::lastLevelCacheBytes()}}},
          {"settings",
           {{"prompt_tokens", r.options.promptTokens},
            {"gen_tokens", r.options.genTokens},
            {"repeat", r.options.repeat},
            {"seed", r.options.seed},
            {"page_cache", r.options.keepPageCache ? "kept" : "evicted"}}},
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
            {"time", "median of repeat runs after a warm-up (best and "
                     "worst beside it)"}}},
          {"runs", runs}};
}

void writeJson(const Report &r) {
  std::ofstream out(r.options.json);
  out << reportJson(r).dump(2) << "\n";
  if (!out)
    throw std::runtime_error("--json " + r.options.json + ": cannot write");
}

//===----------------------------------------------------------------------===//
// The plot
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

void requireGnuplot() {
  if (!onPath("gnuplot"))
    throw std::runtime_error("--plot needs gnuplot, which is not on PATH; "
                             "install the Debian package gnuplot-nox "
                             "(apt-get install gnuplot-nox)");
}

/// gnuplot quotes: single-quoted, a quote doubled.
std::string quoted(const std::string &text) {
  std::string out = "'";
  for (char c : text)
    out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

void drawPlot(const Report &r) {
  const BenchOptions &o = r.options;
  std::ostringstream s;
  s << "set terminal pngcairo size 1000,640 noenhanced\n"
    << "set output " << quoted(o.plot) << "\n"
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
    throw std::runtime_error("--plot " + o.plot +
                             ": gnuplot failed (its messages are above)");
}

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

int availableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    return std::max(1, CPU_COUNT(&set));
  return 1;
}

/// Checks the options against the artifact.
void checkOptions(const BenchOptions &o,
                  const runtime::ArtifactManifest &manifest) {
  if (o.promptTokens.empty())
    throw std::runtime_error("--prompt-tokens: give at least one length");
  for (int64_t p : o.promptTokens)
    if (p <= 0 || p > manifest.contextLength)
      throw std::runtime_error("--prompt-tokens: " + std::to_string(p) +
                               " is not in 1.." +
                               std::to_string(manifest.contextLength) +
                               " (the artifact's context length)");
  if (o.genTokens <= 0 || o.genTokens + 1 > manifest.contextLength)
    throw std::runtime_error(
        "--gen-tokens: " + std::to_string(o.genTokens) + " is not in 1.." +
        std::to_string(manifest.contextLength - 1) +
        " (decode runs at positions 1..G of a context of " +
        std::to_string(manifest.contextLength) + ")");
  for (int t : o.threads)
    if (t <= 0)
      throw std::runtime_error("--threads: " + std::to_string(t) +
                               " is not a positive thread count");
  if (o.repeat <= 0)
    throw std::runtime_error("--repeat must be at least 1");
  for (const auto &[option, file] :
       {std::pair<const char *, std::string>{"--json", o.json},
        {"--plot", o.plot}}) {
    if (file.empty())
      continue;
    std::filesystem::path dir = std::filesystem::path(file).parent_path();
    if (access(dir.empty() ? "." : dir.c_str(), W_OK) != 0)
      throw std::runtime_error(std::string(option) + " " + file +
                               ": cannot write into '" +
                               (dir.empty() ? "." : dir.string()) + "'");
  }
}

} // namespace

int runBench(const BenchOptions &options) {
  BenchOptions o = options;
  if (o.command.empty())
    o.command = "kiln bench " + o.artifact;
  if (o.threads.empty()) {
    o.threads = {1};
    if (availableCores() > 1)
      o.threads.push_back(availableCores());
  }
  if (!o.plot.empty())
    requireGnuplot();

  // Check the options against the manifest before minutes are spent.
  runtime::ArtifactManifest manifest;
  {
    runtime::Artifact file = runtime::Artifact::open(o.artifact, false);
    manifest = runtime::parseManifest(
        o.artifact, file.section(runtime::section::kManifest));
  }
  checkOptions(o, manifest);

  Report report{o, manifest, {}, utcNow(), hostCpuName(), {}};
  for (size_t i = 0; i < o.threads.size(); ++i)
    report.runs.push_back(benchThreads(o, o.threads[i], /*verify=*/i == 0,
                                       report.work, report.manifest));
  printTable(report);
  if (o.profile)
    printProfiles(report);
  std::fflush(stdout);
  if (!o.json.empty())
    writeJson(report);
  if (!o.plot.empty())
    drawPlot(report);
  return 0;
}

} // namespace kiln
