//===- BenchCommand.cpp - kiln bench --------------------------------------===//
//
// Part of Kiln's command line. See BenchCommand.h.
//
//===----------------------------------------------------------------------===//

#include "tools/kiln/BenchCommand.h"

#include "bench/BatchReport.h"
#include "bench/BenchReport.h"
#include "runtime/CompiledModel.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include <sched.h>
#include <unistd.h>

namespace kiln {

namespace {

int availableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    return std::max(1, CPU_COUNT(&set));
  return 1;
}

/// --batch: every sequence holds the first prompt length and the decoded
/// tokens, so P + G must fit in the artifact's context.
void checkBatchOptions(const BenchOptions &o,
                       const runtime::ArtifactManifest &manifest) {
  if (o.batch.empty()) {
    if (!o.kvMemory.empty())
      throw std::runtime_error("--kv-memory sizes the KV cache of batched "
                               "decode: give --batch too");
    return;
  }
  for (int b : o.batch)
    if (b <= 0)
      throw std::runtime_error("--batch: " + std::to_string(b) +
                               " is not a positive number of sequences");
  int64_t p = o.promptTokens.front();
  if (p + o.genTokens > manifest.contextLength)
    throw std::runtime_error(
        "--batch: each sequence needs " + std::to_string(p) + " prompt + " +
        std::to_string(o.genTokens) +
        " decoded = " + std::to_string(p + o.genTokens) +
        " positions, more than the artifact's context of " +
        std::to_string(manifest.contextLength) +
        "; lower --prompt-tokens or --gen-tokens");
  if (!o.plot.empty())
    throw std::runtime_error(
        "--batch times batched decode only: drop --plot (it draws tokens/s "
        "against threads)");
}

/// Checks the options against the artifact, so mistakes are named before
/// minutes are spent.
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
  checkBatchOptions(o, manifest);
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

void progress(const std::string &message) {
  std::fprintf(stderr, "kiln bench: %s\n", message.c_str());
  std::fflush(stderr);
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
    bench::requireGnuplot();

  {
    runtime::Artifact file = runtime::Artifact::open(o.artifact, false);
    checkOptions(o, runtime::parseManifest(
                        o.artifact, file.section(runtime::section::kManifest)));
  }

  if (!o.batch.empty()) {
    bench::BatchResults results = bench::runBatchedDecode(o, progress);
    bench::printBatchTable(results);
    std::fflush(stdout);
    if (!o.json.empty())
      bench::writeBatchJson(results, o.json);
    return 0;
  }

  bench::BenchResults results = bench::runBenchmark(o, progress);
  bench::printTable(results);
  if (o.profile)
    bench::printProfiles(results);
  std::fflush(stdout);
  if (!o.json.empty())
    bench::writeJson(results, o.json);
  if (!o.plot.empty())
    bench::drawPlot(results, o.plot);
  return 0;
}

} // namespace kiln
