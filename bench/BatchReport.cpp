//===- BatchReport.cpp - The report of a batched decode run ---------------===//
//
// Part of Kiln's benchmark library. See BatchReport.h. Sections: rates, the
// table, JSON.
//
//===----------------------------------------------------------------------===//

#include "bench/BatchReport.h"

#include "bench/ReportPieces.h"

#include "bench/BenchReport.h"
#include "runtime/CpuFeatures.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <optional>
#include <stdexcept>

namespace kiln::bench {

using nlohmann::json;

namespace {

//===----------------------------------------------------------------------===//
// Rates
//===----------------------------------------------------------------------===//

/// Aggregate decode tokens a second: every sequence's tokens over the
/// median run's decode time.
double decodeTokensPerSecond(const BatchResult &b) {
  return double(b.decodeTokens) / b.decode.median();
}

double prefillTokens(const BatchResults &r, const BatchResult &b) {
  return double(b.batch) * double(r.promptTokens);
}

/// Aggregate decode tokens/s over one sequence's, when one was measured.
std::optional<double> speedup(const BatchResults &r, const BatchResult &b) {
  const BatchResult *one = r.single();
  if (!one)
    return std::nullopt;
  return decodeTokensPerSecond(b) / decodeTokensPerSecond(*one);
}

double mebibytes(int64_t bytes) { return double(bytes) / (1 << 20); }

/// The roofline's speedup over one sequence's: what the machine's balance
/// allows B sequences over one when both run at the same share of their
/// limits.
std::optional<double> rooflineSpeedup(const BatchResults &r,
                                      const BatchResult &b) {
  if (!r.single())
    return std::nullopt;
  return r.rooflineTokensPerSecond(b.batch) / r.rooflineTokensPerSecond(1);
}

} // namespace

//===----------------------------------------------------------------------===//
// The table
//===----------------------------------------------------------------------===//

void printBatchTable(const BatchResults &r, std::FILE *out) {
  const BenchOptions &o = r.options;
  printReportHeader(o, r.date, r.cpu, r.manifest, out);
  long long p = r.promptTokens, g = o.genTokens;
  std::fprintf(out,
               "batched    B sequences of %lld random prompt tokens each "
               "(seed %llu), prefilled one sequence a step, then %lld decode "
               "steps of B tokens (one a sequence at positions %lld..%lld, "
               "logits for each); a KV cache for B sequences of %lld "
               "positions%s%s; %d thread%s\n",
               p, (unsigned long long)o.seed, g, p, p + g - 1,
               (long long)r.contextLength,
               o.kvMemory.empty() ? "" : ", its pool limited to --kv-memory ",
               o.kvMemory.c_str(), r.threads, r.threads == 1 ? "" : "s");
  std::fprintf(out,
               "timing     %d timed run%s after a warm-up, the median "
               "quoted%s; step latency percentiles over every timed step; "
               "memory read from /proc/self/status after each batch size's "
               "runs (the bench's read probe, resident beside them, taken "
               "out); %s; %s\n",
               o.repeat, o.repeat == 1 ? "" : "s",
               o.repeat == 1 ? "" : " (slowest-fastest)",
               o.keepPageCache
                   ? "the artifact's pages left in the page cache as found"
                   : "the artifact evicted from the page cache before each "
                     "load",
               weightPlacement(r.weightsInHugePages));
  const StepWork &w = r.work;
  std::fprintf(out,
               "counted    a step of B tokens reads the packed GEMM weights "
               "(%.1f MB) once per %lld tokens, and every sequence's KV cache "
               "up to its position (%.1f KiB a position, %s); it computes 2 "
               "FLOPs per GEMM parameter (%.2f M, classifier included) and 4 x "
               "%lld layers x %lld per attended position, for each token\n",
               double(w.gemmBytes) / 1e6, (long long)w.maxTokens,
               double(w.kvBytesPerToken) / 1024,
               r.manifest.cacheElementType.c_str(),
               double(w.layerGemmParameters + w.classifierParameters) / 1e6,
               (long long)w.layers, (long long)w.qDim);
  std::fprintf(out,
               "limits     %s %.1f G%s/s (%s), read bandwidth %.1f GB/s (the "
               "best probe sample, taken around every timed run); roofline: "
               "B / the longer of a step's bytes at the read bandwidth and "
               "its FLOPs at the peak\n\n",
               r.computePeakName.c_str(), r.computePeak.flopsPerSecond / 1e9,
               r.computePeakName == "int8 dot peak" ? "OP" : "FLOP",
               r.computePeak.isa.c_str(), r.readBandwidth.bytesPerSecond / 1e9);

  std::fprintf(out, "## Batched decode, %d thread%s\n", r.threads,
               r.threads == 1 ? "" : "s");
  std::fprintf(out, "| batch | decode tokens/s | speedup over batch 1 | "
                    "roofline tokens/s (bound) | of roofline | each run's "
                    "share at the probe around it | roofline over batch 1 | "
                    "step p50 ms | step p99 ms | prefill tokens/s | KV pool "
                    "MiB | VmRSS MiB | VmHWM MiB |\n");
  std::fprintf(out, "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
                    "| ---: | ---: | ---: | ---: | ---: |\n");
  for (const BatchResult &b : r.batches) {
    std::optional<double> over1 = speedup(r, b);
    std::optional<double> rooflineOver1 = rooflineSpeedup(r, b);
    bool computeBound = false;
    double roofline = r.rooflineTokensPerSecond(b.batch, &computeBound);
    std::fprintf(
        out,
        "| %d | %s | %s | %.1f (%s) | %.0f%% | %s | %s | %.3f | %.3f | %s | "
        "%.2f | %.1f | %.1f |\n",
        b.batch, rateWithSpread(double(b.decodeTokens), b.decode).c_str(),
        over1 ? format("%.2fx", *over1).c_str() : "-", roofline,
        computeBound ? "compute" : "memory",
        100.0 * decodeTokensPerSecond(b) / roofline,
        shareWithRange(r.pairedRooflineFractions(b)).c_str(),
        rooflineOver1 ? format("%.2fx", *rooflineOver1).c_str() : "-",
        b.stepPercentile(0.50) * 1e3, b.stepPercentile(0.99) * 1e3,
        rateWithSpread(prefillTokens(r, b), b.prefill).c_str(),
        mebibytes(b.kvPoolBytes), mebibytes(b.residentBytes),
        mebibytes(b.peakResidentBytes));
  }
  for (const BatchResult &b : r.batches)
    if (b.profile.steps > 0)
      printProfile("batch " + std::to_string(b.batch) + ", " +
                       std::to_string(r.threads) +
                       (r.threads == 1 ? " thread" : " threads"),
                   b.profile, out);
}

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

json batchReportJson(const BatchResults &r) {
  const BenchOptions &o = r.options;
  const runtime::ArtifactManifest &m = r.manifest;
  json results = json::array();
  for (const BatchResult &b : r.batches) {
    double tps = decodeTokensPerSecond(b);
    std::optional<double> over1 = speedup(r, b);
    json decode = samplesJson(b.decode);
    decode["tokens"] = b.decodeTokens;
    decode["tokens_per_second"] = tps;
    decode["best_tokens_per_second"] = double(b.decodeTokens) / b.decode.best();
    decode["worst_tokens_per_second"] =
        double(b.decodeTokens) / b.decode.worst();
    decode["speedup_over_batch_1"] = over1 ? json(*over1) : json(nullptr);
    decode["logit_rows"] = b.decodeLogitRows;
    json prefill = samplesJson(b.prefill);
    prefill["tokens"] = int64_t(prefillTokens(r, b));
    prefill["tokens_per_second"] = prefillTokens(r, b) / b.prefill.median();
    results.push_back({{"batch", b.batch},
                       {"decode", decode},
                       {"step_seconds", b.stepSeconds},
                       {"step_p50_seconds", b.stepPercentile(0.50)},
                       {"step_p99_seconds", b.stepPercentile(0.99)},
                       {"prefill", prefill},
                       {"kv_pool_bytes", b.kvPoolBytes},
                       {"vm_rss_bytes", b.residentBytes},
                       {"vm_hwm_bytes", b.peakResidentBytes}});
    bool computeBound = false;
    double roofline = r.rooflineTokensPerSecond(b.batch, &computeBound);
    std::optional<double> rooflineOver1 = rooflineSpeedup(r, b);
    json &e = results.back();
    e["step_bytes"] = r.stepBytes(b.batch);
    e["step_flops"] = r.stepFlops(b.batch);
    e["roofline_tokens_per_second"] = roofline;
    e["roofline_bound"] = computeBound ? "compute" : "memory";
    e["fraction_of_roofline"] = tps / roofline;
    e["paired_fractions_of_roofline"] = r.pairedRooflineFractions(b);
    e["roofline_speedup_over_batch_1"] =
        rooflineOver1 ? json(*rooflineOver1) : json(nullptr);
    json samples = json::array();
    for (double bytesPerSecond : b.readSamples)
      samples.push_back(bytesPerSecond / 1e9);
    e["read_samples_gbps"] = samples;
    if (b.profile.steps > 0)
      e["profile"] = profileJson(b.profile);
  }
  return {{"command", o.command},
          {"date", r.date},
          {"kiln_version", m.kilnVersion},
          {"artifact",
           {{"path", o.artifact},
            {"target", m.target},
            {"weight_type", m.weightType},
            {"max_tokens", m.maxTokens}}},
          {"host",
           {{"cpu", r.cpu}, {"cpu_features", runtime::detectCpuFeatures()}}},
          {"settings",
           {{"batch", o.batch},
            {"prompt_tokens", r.promptTokens},
            {"gen_tokens", o.genTokens},
            {"threads", r.threads},
            {"repeat", o.repeat},
            {"seed", o.seed},
            {"page_cache", o.keepPageCache ? "kept" : "evicted"},
            {"weights_in_huge_pages", r.weightsInHugePages}}},
          {"batch",
           {{"threads", r.threads},
            {"prompt_tokens", r.promptTokens},
            {"gen_tokens", o.genTokens},
            {"context_length", r.contextLength},
            {"counted",
             {{"gemm_bytes", r.work.gemmBytes},
              {"gemm_parameters",
               r.work.layerGemmParameters + r.work.classifierParameters},
              {"max_tokens", r.work.maxTokens},
              {"kv_bytes_per_position", r.work.kvBytesPerToken},
              {"kv_element_type", m.cacheElementType}}},
            {"limits",
             {{"compute_peak",
               {{"name", r.computePeakName},
                {"isa", r.computePeak.isa},
                {"per_second", r.computePeak.flopsPerSecond}}},
              {"read_bytes_per_second", r.readBandwidth.bytesPerSecond},
              {"read_array_bytes", r.readBandwidth.arrayBytes}}},
            {"results", results}}}};
}

void writeBatchJson(const BatchResults &r, const std::string &path) {
  std::ofstream file(path);
  file << batchReportJson(r).dump(2) << "\n";
  if (!file)
    throw std::runtime_error("--json " + path + ": cannot write");
}

} // namespace kiln::bench
