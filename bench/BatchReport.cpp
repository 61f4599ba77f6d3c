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
               "runs; %s; %s\n\n",
               o.repeat, o.repeat == 1 ? "" : "s",
               o.repeat == 1 ? "" : " (slowest-fastest)",
               o.keepPageCache
                   ? "the artifact's pages left in the page cache as found"
                   : "the artifact evicted from the page cache before each "
                     "load",
               weightPlacement(r.weightsInHugePages));

  std::fprintf(out, "## Batched decode, %d thread%s\n", r.threads,
               r.threads == 1 ? "" : "s");
  std::fprintf(out, "| batch | decode tokens/s | speedup over batch 1 | "
                    "step p50 ms | step p99 ms | prefill tokens/s | "
                    "KV pool MiB | VmRSS MiB | VmHWM MiB |\n");
  std::fprintf(out, "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | "
                    "---: | ---: |\n");
  for (const BatchResult &b : r.batches) {
    std::optional<double> over1 = speedup(r, b);
    std::fprintf(
        out, "| %d | %s | %s | %.3f | %.3f | %s | %.2f | %.1f | %.1f |\n",
        b.batch, rateWithSpread(double(b.decodeTokens), b.decode).c_str(),
        over1 ? format("%.2fx", *over1).c_str() : "-",
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
    if (b.profile.steps > 0)
      results.back()["profile"] = profileJson(b.profile);
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
            {"results", results}}}};
}

void writeBatchJson(const BatchResults &r, const std::string &path) {
  std::ofstream file(path);
  file << batchReportJson(r).dump(2) << "\n";
  if (!file)
    throw std::runtime_error("--json " + path + ": cannot write");
}

} // namespace kiln::bench
