//===- BenchModelTest.cpp - kiln bench's cost model and report ------------===//
//
// Part of Kiln's unit tests. `kiln bench` quotes every speed as a fraction of
// a limit, so a wrong count of a step's bytes or FLOPs makes every fraction
// wrong while every speed still looks plausible. These tests compile a small
// synthetic Llama into an artifact with the compiler library, count its step
// with bench/StepWork.h and compare with figures worked out by hand from the
// model's config; then they check that the JSON report (bench/BenchReport.h)
// holds the fields bench/README.md documents, with the rates derived from
// known timings, and that a batched decode run (bench/BatchRunner.h) counts
// every sequence's tokens and logits.
//
//===----------------------------------------------------------------------===//

#include "SyntheticModel.h"

#include "bench/BatchReport.h"
#include "bench/BatchRunner.h"
#include "bench/BenchReport.h"
#include "bench/StepWork.h"
#include "codegen/WriteArtifact.h"
#include "codegen/cpu/HostCompiler.h"
#include "codegen/driver/Compiler.h"
#include "frontends/formats/ModelWriters.h"
#include "frontends/formats/SyntheticModel.h"
#include "runtime/CompiledModel.h"
#include "runtime/CpuFeatures.h"
#include "runtime/WeightPrefetch.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace kiln;
using nlohmann::json;

namespace {

//===----------------------------------------------------------------------===//
// The model and its figures, by hand
//===----------------------------------------------------------------------===//

/// Every GEMM's N (128 + 64 + 64 for the packed QKV, 128, 256, 128, and the
/// classifier's 320) is a multiple of 64, the widest panel any target packs,
/// and every K is even (bf16 k pairs): the panels hold no padding, so the
/// bytes a decode step reads are exactly parameters x element size.
formats::ModelConfig benchConfig() {
  formats::ModelConfig c;
  c.dim = 128;
  c.hiddenDim = 256;
  c.numLayers = 2;
  c.numHeads = 4;
  c.numKvHeads = 2;
  c.headDim = 32;
  c.vocabSize = 320;
  c.contextLength = 64;
  c.tiedClassifier = true;
  return c;
}

/// A layer's GEMM weights [N, K]: Q, K, V, the output projection, gate, up
/// and down.
int64_t handLayerGemmParameters(const formats::ModelConfig &c) {
  int64_t q = c.numHeads * c.headDim, kv = c.numKvHeads * c.headDim;
  int64_t attention = q * c.dim + 2 * kv * c.dim + c.dim * q;
  int64_t ffn = 3 * c.hiddenDim * c.dim;
  return c.numLayers * (attention + ffn);
}

int64_t handClassifierParameters(const formats::ModelConfig &c) {
  return c.vocabSize * c.dim;
}

//===----------------------------------------------------------------------===//
// Compiling the model into an artifact, as `kiln compile` does
//===----------------------------------------------------------------------===//

/// Whether this CPU runs code compiled for `spec`.
bool cpuRuns(const std::string &spec) {
  return runtime::missingCpuFeatures(
             codegen::requiredCpuFeatures(parseCompileTargets(spec).front()))
      .empty();
}

/// The artifacts of this program, compiled once each, in a directory
/// removed when the program ends.
class Artifacts {
public:
  static Artifacts &get() {
    static Artifacts artifacts;
    return artifacts;
  }

  /// benchConfig() compiled for `targetSpec` with GEMM weights of `type`.
  const std::string &path(const std::string &targetSpec,
                          codegen::PackedType type) {
    std::string name =
        targetSpec + "-" + codegen::packedTypeName(type).str() + ".kiln";
    std::string &path = compiled[name];
    if (path.empty())
      path = compile(targetSpec, type, dir / name);
    return path;
  }

private:
  /// benchConfig() with the tests' random weights, written once as a GGUF
  /// file with a synthetic vocabulary.
  Artifacts()
      : dir(fs::temp_directory_path() /
            ("kiln-bench-test-" + std::to_string(getpid()))),
        model(test::SyntheticModel::random(benchConfig(), 5)) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    runtime::TokenizerSpec vocabulary =
        formats::syntheticVocabulary(model.config.vocabSize);
    formats::GGUFModelOptions options;
    options.vocabulary = &vocabulary;
    formats::writeGGUFModel(
        model.config,
        formats::InMemoryTensorSource(model.config, model.weights),
        (dir / "bench-model.gguf").string(), options);
  }
  ~Artifacts() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }

  /// Compiles the model as `kiln compile --no-cache` does.
  std::string compile(const std::string &targetSpec, codegen::PackedType type,
                      const fs::path &path) {
    CompileOptions options;
    options.model = (dir / "bench-model.gguf").string();
    options.output = path.string();
    options.target = targetSpec;
    // Float types by --dtype, quantized ones by --quantize, as on the
    // command line.
    (codegen::isQuantized(type) ? options.quantize : options.dtype) =
        codegen::packedTypeName(type).str();
    options.maxTokens = 16;
    options.useCache = false;
    return compileModel(options).artifact;
  }

  fs::path dir;
  test::SyntheticModel model;
  std::map<std::string, std::string> compiled;
};

bench::StepWork countArtifact(const std::string &path) {
  runtime::CompiledModelOptions options;
  options.threads = 1;
  std::unique_ptr<runtime::CompiledModel> model =
      runtime::CompiledModel::load(path, options);
  return bench::countStepWork(*model);
}

//===----------------------------------------------------------------------===//
// The cost model
//===----------------------------------------------------------------------===//

/// The hand counts themselves, so a change to benchConfig() that breaks the
/// no-padding argument above is noticed: per layer Q 128x128, K and V
/// 64x128, output 128x128, gate and up 256x128, down 128x256; the tied
/// classifier 320x128.
TEST(BenchStepWork, HandCountsOfTheTestModel) {
  formats::ModelConfig c = benchConfig();
  EXPECT_EQ(handLayerGemmParameters(c), 2 * 147456);
  EXPECT_EQ(handClassifierParameters(c), 40960);
}

/// f32 panels, portable code (any CPU runs it): 4 bytes a parameter.
TEST(BenchStepWork, F32ArtifactMatchesTheConfig) {
  formats::ModelConfig c = benchConfig();
  bench::StepWork w = countArtifact(
      Artifacts::get().path("portable", codegen::PackedType::F32));
  int64_t layerParameters = handLayerGemmParameters(c);
  int64_t classifierParameters = handClassifierParameters(c);
  EXPECT_EQ(w.layers, 2);
  EXPECT_EQ(w.vocab, 320);
  EXPECT_EQ(w.dim, 128);
  EXPECT_EQ(w.qDim, 4 * 32);
  EXPECT_EQ(w.layerGemmParameters, layerParameters);
  EXPECT_EQ(w.classifierParameters, classifierParameters);
  // Per layer the packed QKV, the output projection, gate, up and down;
  // then the classifier.
  EXPECT_EQ(w.gemmEntries, 2 * 5 + 1);
  EXPECT_EQ(w.gemmBytes, 4 * (layerParameters + classifierParameters));
  EXPECT_EQ(w.gemmBytes, 1343488);
  EXPECT_FALSE(w.bf16Dot);

  // A key and a value row of 2 kv heads x 32 floats, in each of 2 layers.
  EXPECT_EQ(w.kvBytesPerToken, 2 * 2 * (2 * 32) * 4);
  EXPECT_EQ(w.decodeKvBytes(5), 6 * 1024);

  // Prefill of P = 8: 2 FLOPs a parameter, the classifier's once for the 8
  // tokens, and causal attention 2 x layers x qDim x (P + 1) a token.
  double prefill8 = 2.0 * double(layerParameters) +
                    2.0 * double(classifierParameters) / 8 +
                    2.0 * 2 * 128 * (8 + 1);
  EXPECT_EQ(w.prefillFlopsPerToken(8), prefill8);
  EXPECT_EQ(w.prefillFlopsPerToken(8), 589824.0 + 10240.0 + 4608.0);
  // Decode at position 5: every parameter, and 6 positions attended at
  // 4 x qDim FLOPs each in each layer.
  double decode5 =
      2.0 * double(layerParameters + classifierParameters) + 4.0 * 2 * 128 * 6;
  EXPECT_EQ(w.decodeFlopsPerToken(5), decode5);
  EXPECT_EQ(w.decodeFlopsPerToken(5), 671744.0 + 6144.0);

  // Batched decode: 3 sequences for 4 steps at positions 8..11 read the
  // weights once a step and each its cache, 10.5 positions on average
  // (9 to 12 attended).
  EXPECT_EQ(w.maxTokens, 16); // the fixtures' --max-tokens
  EXPECT_EQ(w.batchStepBytes(3, 8, 4), 1343488.0 + 3 * 1024 * 10.5);
  EXPECT_EQ(w.batchStepFlops(3, 8, 4), 3 * (671744.0 + 4.0 * 2 * 128 * 10.5));
  // A batch past max_tokens runs as several steps, each reading the
  // weights.
  w.maxTokens = 2;
  EXPECT_EQ(w.batchStepBytes(3, 8, 4), 2 * 1343488.0 + 3 * 1024 * 10.5);
}

/// The cache's element type sets its bytes a position: `kiln compile
/// --kv-type bf16` halves them, whatever the weights.
TEST(BenchStepWork, KvBytesFollowTheCacheElementType) {
  runtime::CompiledModelOptions options;
  options.threads = 1;
  std::unique_ptr<runtime::CompiledModel> model = runtime::CompiledModel::load(
      Artifacts::get().path("portable", codegen::PackedType::F32), options);
  runtime::ArtifactManifest manifest = model->manifest();
  for (const auto &[type, bytes] :
       {std::pair<std::string, int64_t>{"f32", 4}, {"bf16", 2}, {"f16", 2}}) {
    SCOPED_TRACE(type);
    manifest.cacheElementType = type;
    bench::StepWork w = bench::countStepWork(manifest, model->stepLibrary(),
                                             model->artifact().path());
    EXPECT_EQ(w.kvBytesPerToken, 2 * 2 * (2 * 32) * bytes);
  }
}

/// bf16 panels, portable code: 2 bytes a parameter, the same FLOPs; no
/// bf16 dot products (those need avx512+bf16).
TEST(BenchStepWork, Bf16ArtifactHalvesTheBytes) {
  formats::ModelConfig c = benchConfig();
  bench::StepWork w = countArtifact(
      Artifacts::get().path("portable", codegen::PackedType::BF16));
  EXPECT_EQ(w.layerGemmParameters, handLayerGemmParameters(c));
  EXPECT_EQ(w.classifierParameters, handClassifierParameters(c));
  EXPECT_EQ(w.gemmEntries, 11);
  EXPECT_EQ(w.gemmBytes,
            2 * (handLayerGemmParameters(c) + handClassifierParameters(c)));
  EXPECT_EQ(w.gemmBytes, 671744);
  EXPECT_FALSE(w.bf16Dot);
  EXPECT_EQ(w.kvBytesPerToken, 1024); // the cache stays f32
  EXPECT_EQ(w.prefillFlopsPerToken(8), 604672.0);
}

/// Q8_0 weights: the layers' GEMMs multiply int8 activations (int8Dot),
/// whatever the target; f32 and bf16 artifacts above do not.
TEST(BenchStepWork, QuantizedArtifactsUseTheInt8DotPeak) {
  bench::StepWork w = countArtifact(
      Artifacts::get().path("portable", codegen::PackedType::Q8_0));
  EXPECT_TRUE(w.int8Dot);
  EXPECT_FALSE(w.bf16Dot);
  EXPECT_EQ(w.layerGemmParameters, handLayerGemmParameters(benchConfig()));
  EXPECT_FALSE(
      countArtifact(Artifacts::get().path("portable", codegen::PackedType::F32))
          .int8Dot);
}

/// bf16 on avx512+bf16: panels of k pairs, so prefill is measured against
/// the bf16 dot peak; the same bytes (every K is even).
TEST(BenchStepWork, Bf16DotProductsAreRecognised) {
  if (!cpuRuns("avx512+bf16"))
    GTEST_SKIP() << "this CPU cannot run avx512+bf16 code";
  bench::StepWork w = countArtifact(
      Artifacts::get().path("avx512+bf16", codegen::PackedType::BF16));
  EXPECT_TRUE(w.bf16Dot);
  EXPECT_EQ(w.gemmBytes, 671744);
  EXPECT_EQ(w.layerGemmParameters + w.classifierParameters, 335872);
}

/// A manifest written by hand: bytes are counted as stored (padding rows
/// included), parameters as [N, K]; row-major tables are not GEMM weights.
runtime::PackedWeight entry(const std::string &name, const char *layout,
                            int64_t rows, int64_t cols, int64_t bytes) {
  runtime::PackedWeight w;
  w.name = name;
  w.layout = layout;
  w.rows = rows;
  w.cols = cols;
  w.bytes = bytes;
  w.type = "f32";
  return w;
}

runtime::ArtifactManifest handManifest() {
  runtime::ArtifactManifest m;
  m.layers = 1;
  m.vocabSize = 100;
  m.heads = 3;
  m.kvHeads = 1;
  m.headDim = 16;
  return m;
}

TEST(BenchStepWork, CountsPanelsAsStored) {
  runtime::StepLibraryManifest library;
  library.weightEntries = {
      entry("token_embd.weight", "rows", 100, 48, 100 * 48 * 4),
      // 60 rows in panels of 32: 64 rows stored.
      entry("blk.0.ffn_gate.weight", "panels", 60, 48, 64 * 48 * 4),
      entry("output.weight", "panels", 100, 48, 128 * 48 * 4),
  };
  bench::StepWork w = bench::countStepWork(handManifest(), library, "m.kiln");
  EXPECT_EQ(w.gemmEntries, 2);
  EXPECT_EQ(w.gemmBytes, (64 + 128) * 48 * 4);
  EXPECT_EQ(w.layerGemmParameters, 60 * 48);
  EXPECT_EQ(w.classifierParameters, 100 * 48);
  EXPECT_EQ(w.dim, 48);
  EXPECT_EQ(w.qDim, 48);
  EXPECT_EQ(w.kvBytesPerToken, 2 * 1 * 16 * 4);
}

TEST(BenchStepWork, MissingManifestFieldsAreNamed) {
  runtime::StepLibraryManifest noPanels;
  noPanels.weightEntries = {entry("token_embd.weight", "rows", 100, 48, 1)};
  try {
    bench::countStepWork(handManifest(), noPanels, "old.kiln");
    FAIL() << "no panels: expected an error";
  } catch (const std::runtime_error &e) {
    EXPECT_NE(std::string(e.what()).find("old.kiln: the manifest lists no "
                                         "packed GEMM weights"),
              std::string::npos)
        << e.what();
  }

  runtime::StepLibraryManifest library;
  library.weightEntries = {entry("output.weight", "panels", 100, 48, 1)};
  runtime::ArtifactManifest noHeads = handManifest();
  noHeads.heads = 0;
  try {
    bench::countStepWork(noHeads, library, "old.kiln");
    FAIL() << "no heads: expected an error";
  } catch (const std::runtime_error &e) {
    EXPECT_NE(std::string(e.what()).find("'model.heads'"), std::string::npos)
        << e.what();
  }
}

//===----------------------------------------------------------------------===//
// The report
//===----------------------------------------------------------------------===//

/// A run with known timings and limits on the f32 artifact: one thread
/// count, P = 8 timed at 4, 2 and 8 ms (median 4 ms: 2000 tokens/s), G = 4
/// at 40, 20 and 10 ms (median 20 ms: 200 tokens/s), an FMA peak of 100
/// GFLOP/s and a read bandwidth of 20 GB/s.
bench::BenchResults knownResults() {
  const std::string &path =
      Artifacts::get().path("portable", codegen::PackedType::F32);
  runtime::CompiledModelOptions options;
  options.threads = 1;
  std::unique_ptr<runtime::CompiledModel> model =
      runtime::CompiledModel::load(path, options);

  bench::BenchResults r;
  r.options.artifact = path;
  r.options.promptTokens = {8};
  r.options.genTokens = 4;
  r.options.threads = {2};
  r.options.repeat = 3;
  r.options.seed = 7;
  r.options.profile = true;
  r.options.command = "kiln bench " + path;
  r.manifest = model->manifest();
  r.work = bench::countStepWork(*model);
  r.weightsSectionBytes = int64_t(model->weights().size());
  r.date = "2026-12-02 10:00 UTC";
  r.cpu = "test CPU";

  bench::ThreadResult t;
  t.threads = 2;
  t.machine.fmaPeak = {100e9, "avx2+fma", 8, 12, 3};
  t.machine.readBandwidth.bytesPerSecond = 20e9;
  t.machine.readBandwidth.arrayBytes = 12 << 20;
  t.machine.readBandwidth.repetitions = 10;
  t.machine.readBandwidth.isa = "avx2";
  t.machine.bandwidth.bytesPerSecond = 16e9;
  t.machine.bandwidth.arrayBytes = 4 << 20;
  t.machine.bandwidth.repetitions = 5;
  bench::PrefillResult p;
  p.promptTokens = 8;
  p.samples.seconds = {0.004, 0.002, 0.008};
  p.flopsPerToken = r.work.prefillFlopsPerToken(8);
  t.prefill = {p};
  t.decode.seconds = {0.04, 0.02, 0.01};
  // The first sample, then one before and one after each decode run.
  t.readSamples = {18e9, 20e9, 19e9, 16e9, 10e9, 12e9, 20e9};
  bench::Profile prefill{"prefill of 8 tokens", 1, 0.004, {}};
  prefill.kernels = {{"k01_gemm", "kiln.fused_matmul", 0.003, 2}};
  bench::Profile decode{"decode of 4 tokens", 4, 0.02, {}};
  decode.kernels = {{"k06_attention", "kiln.attention", 0.005, 8}};
  t.profiles = {prefill, decode};
  r.runs = {t};
  return r;
}

/// Keys README's "--json writes all of it" names: every run's seconds, the
/// read probe's samples, the artifact's target, CPU features and Kiln
/// version, the host and the settings (settings.page_cache from "Page
/// cache"), and the model's counts.
TEST(BenchReport, JsonHoldsTheDocumentedFields) {
  bench::BenchResults r = knownResults();
  json d = bench::reportJson(r);

  for (const char *key : {"command", "date", "kiln_version", "artifact",
                          "model", "host", "settings", "counting", "runs"})
    EXPECT_TRUE(d.contains(key)) << key;
  EXPECT_EQ(d["command"], r.options.command);
  EXPECT_EQ(d["date"], "2026-12-02 10:00 UTC");

  const json &a = d["artifact"];
  EXPECT_EQ(a["path"], r.options.artifact);
  EXPECT_EQ(a["kiln_version"], codegen::kKilnVersion);
  EXPECT_EQ(a["target"], r.manifest.target);
  EXPECT_EQ(a["cpu_features"], r.manifest.cpuFeatures);
  EXPECT_EQ(a["weight_type"], "f32");
  EXPECT_EQ(a["weights_section_bytes"], r.weightsSectionBytes);
  EXPECT_EQ(a["max_tokens"], 16);

  const json &m = d["model"];
  EXPECT_EQ(m["layers"], 2);
  EXPECT_EQ(m["vocab_size"], 320);
  EXPECT_EQ(m["context_length"], 64);
  EXPECT_EQ(m["kv_heads"], 2);
  EXPECT_EQ(m["head_dim"], 32);
  EXPECT_EQ(m["dim"], 128);
  EXPECT_EQ(m["attention_dim"], 128);
  EXPECT_EQ(m["gemm_matrices"], 11);
  EXPECT_EQ(m["layer_gemm_parameters"], 294912);
  EXPECT_EQ(m["classifier_parameters"], 40960);
  EXPECT_EQ(m["gemm_weight_bytes"], 1343488);

  EXPECT_EQ(d["host"]["cpu"], "test CPU");
  EXPECT_TRUE(d["host"].contains("cpu_features"));
  EXPECT_EQ(d["host"]["weight_prefetch"],
            runtime::weightPrefetchName(runtime::hostWeightPrefetch()));
  EXPECT_TRUE(d["host"].contains("last_level_cache_bytes"));

  const json &s = d["settings"];
  EXPECT_EQ(s["prompt_tokens"], json::array({8}));
  EXPECT_EQ(s["gen_tokens"], 4);
  EXPECT_EQ(s["repeat"], 3);
  EXPECT_EQ(s["seed"], 7);
  EXPECT_EQ(s["page_cache"], "evicted");

  for (const char *key : {"decode_bytes", "prefill_flops", "read_bandwidth",
                          "bandwidth", "fma_peak", "time"})
    EXPECT_TRUE(d["counting"].contains(key)) << key;
}

/// Each rate from the known timings and limits, as bench/README.md's table
/// defines it.
TEST(BenchReport, JsonRatesFollowFromTheTimings) {
  bench::BenchResults r = knownResults();
  json d = bench::reportJson(r);
  ASSERT_EQ(d["runs"].size(), 1u);
  const json &run = d["runs"][0];
  EXPECT_EQ(run["threads"], 2);

  const json &mp = run["machine"];
  EXPECT_DOUBLE_EQ(mp["fma_peak_gflops"].get<double>(), 100.0);
  EXPECT_EQ(mp["fma_isa"], "avx2+fma");
  EXPECT_DOUBLE_EQ(mp["read_gb_per_s"].get<double>(), 20.0);
  EXPECT_EQ(mp["read_array_bytes"], 12 << 20);
  EXPECT_EQ(mp["read_samples_gb_per_s"].size(), 7u);
  EXPECT_DOUBLE_EQ(mp["read_samples_gb_per_s"][0].get<double>(), 18.0);
  EXPECT_DOUBLE_EQ(mp["triad_gb_per_s"].get<double>(), 16.0);
  EXPECT_EQ(mp["triad_counts_write_allocate"], false);
  EXPECT_FALSE(mp.contains("bf16_dot_peak_gflops"));

  ASSERT_EQ(run["prefill"].size(), 1u);
  const json &p = run["prefill"][0];
  double flops = 604672.0; // prefillFlopsPerToken(8), by hand above
  EXPECT_EQ(p["prompt_tokens"], 8);
  EXPECT_EQ(p["seconds"], json::array({0.004, 0.002, 0.008}));
  EXPECT_DOUBLE_EQ(p["median_seconds"].get<double>(), 0.004);
  EXPECT_DOUBLE_EQ(p["best_seconds"].get<double>(), 0.002);
  EXPECT_DOUBLE_EQ(p["worst_seconds"].get<double>(), 0.008);
  EXPECT_DOUBLE_EQ(p["tokens_per_second"].get<double>(), 2000.0);
  EXPECT_DOUBLE_EQ(p["best_tokens_per_second"].get<double>(), 4000.0);
  EXPECT_DOUBLE_EQ(p["worst_tokens_per_second"].get<double>(), 1000.0);
  EXPECT_EQ(p["flops_per_token"].get<double>(), flops);
  EXPECT_DOUBLE_EQ(p["gflops"].get<double>(), 2000.0 * flops / 1e9);
  EXPECT_DOUBLE_EQ(p["fraction_of_fma_peak"].get<double>(),
                   2000.0 * flops / 100e9);
  EXPECT_EQ(p["peak"], "fma");
  EXPECT_DOUBLE_EQ(p["roofline_tokens_per_second"].get<double>(),
                   100e9 / flops);

  const json &t = run["decode"];
  double bytes = 1343488.0;
  EXPECT_EQ(t["gen_tokens"], 4);
  EXPECT_EQ(t["seconds"], json::array({0.04, 0.02, 0.01}));
  EXPECT_DOUBLE_EQ(t["tokens_per_second"].get<double>(), 200.0);
  EXPECT_DOUBLE_EQ(t["best_tokens_per_second"].get<double>(), 400.0);
  EXPECT_DOUBLE_EQ(t["worst_tokens_per_second"].get<double>(), 100.0);
  EXPECT_EQ(t["bytes_per_token"], 1343488);
  EXPECT_DOUBLE_EQ(t["gb_per_s"].get<double>(), 200.0 * bytes / 1e9);
  EXPECT_DOUBLE_EQ(t["fraction_of_read_bandwidth"].get<double>(),
                   200.0 * bytes / 20e9);
  EXPECT_DOUBLE_EQ(t["fraction_of_triad"].get<double>(), 200.0 * bytes / 16e9);
  // Each run (4 tokens in 0.04, 0.02, 0.01 s) against the better sample
  // around it: 20 (of 20, 19), 16 (of 16, 10), 20 (of 12, 20) GB/s.
  ASSERT_EQ(t["paired_read_fractions"].size(), 3u);
  EXPECT_DOUBLE_EQ(t["paired_read_fractions"][0].get<double>(),
                   100.0 * bytes / 20e9);
  EXPECT_DOUBLE_EQ(t["paired_read_fractions"][1].get<double>(),
                   200.0 * bytes / 16e9);
  EXPECT_DOUBLE_EQ(t["paired_read_fractions"][2].get<double>(),
                   400.0 * bytes / 20e9);
  EXPECT_DOUBLE_EQ(t["median_paired_read_fraction"].get<double>(),
                   200.0 * bytes / 16e9);
  EXPECT_DOUBLE_EQ(t["roofline_tokens_per_second"].get<double>(), 20e9 / bytes);

  const json &profile = run["profile"];
  EXPECT_EQ(profile["prefill"]["what"], "prefill of 8 tokens");
  EXPECT_EQ(profile["prefill"]["steps"], 1);
  EXPECT_EQ(profile["decode"]["steps"], 4);
  const json &k = profile["decode"]["kernels"][0];
  EXPECT_EQ(k["kernel"], "k06_attention");
  EXPECT_EQ(k["op"], "kiln.attention");
  EXPECT_EQ(k["calls"], 8);
  EXPECT_DOUBLE_EQ(k["fraction"].get<double>(), 0.005 / 0.02);
}

/// The table `kiln bench` prints for r.
std::string tableOf(const bench::BenchResults &r) {
  char *text = nullptr;
  size_t size = 0;
  std::FILE *out = open_memstream(&text, &size);
  if (!out)
    return "open_memstream failed";
  bench::printTable(r, out);
  std::fclose(out);
  std::string table(text, size);
  std::free(text);
  return table;
}

/// An artifact whose layer GEMMs are quantized is quoted against the int8
/// dot peak where the probe measured one (its kernels multiply int8
/// activations, and pass the FP32 FMA peak), in GOP/s; without one, against
/// the FMA peak as before.
TEST(BenchReport, QuantizedPrefillIsQuotedAgainstTheInt8DotPeak) {
  bench::BenchResults r = knownResults();
  r.work.int8Dot = true;
  r.runs[0].machine.int8DotPeak = {400e9, "avx512vnni", 16, 16, 3};
  double flops = 604672.0; // prefillFlopsPerToken(8), by hand above
  json d = bench::reportJson(r);
  const json &run = d["runs"][0];
  EXPECT_DOUBLE_EQ(run["machine"]["int8_dot_peak_gops"].get<double>(), 400.0);
  EXPECT_EQ(run["machine"]["int8_dot_isa"], "avx512vnni");
  const json &p = run["prefill"][0];
  EXPECT_EQ(p["peak"], "int8_dot");
  EXPECT_DOUBLE_EQ(p["fraction_of_peak"].get<double>(), 2000.0 * flops / 400e9);
  EXPECT_DOUBLE_EQ(p["fraction_of_fma_peak"].get<double>(),
                   2000.0 * flops / 100e9);
  EXPECT_DOUBLE_EQ(p["roofline_tokens_per_second"].get<double>(),
                   400e9 / flops);

  std::string table = tableOf(r);
  EXPECT_NE(table.find("| int8 dot peak (avx512vnni vpdpbusd, 16 chains x 16 "
                       "lanes) | 400.0 GOP/s |"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("| pp8 GOP/s (of int8 dot peak) | 1.2 (0%) |"),
            std::string::npos)
      << table;

  // No VNNI on the machine: the probe measured nothing, so the FMA peak.
  r.runs[0].machine.int8DotPeak = {};
  json without = bench::reportJson(r);
  EXPECT_EQ(without["runs"][0]["prefill"][0]["peak"], "fma");
  EXPECT_FALSE(without["runs"][0]["machine"].contains("int8_dot_peak_gops"));
}

/// The table's header says what was counted, in the units the README
/// gives.
TEST(BenchReport, TableStatesTheCounts) {
  bench::BenchResults r = knownResults();
  std::string table = tableOf(r);
  EXPECT_NE(table.find("counted    decode: 1.3 MB of packed GEMM weights a "
                       "token (11 matrices, 0.3 M parameters"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("prefill FLOPs a token: 2 x 0.29 M layer GEMM "
                       "parameters + 2 x 0.04 M classifier parameters / P"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("| pp8 tokens/s | 2000.0 (1000.0-4000.0) |"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("| tg4 tokens/s | 200.0 (100.0-400.0) |"),
            std::string::npos)
      << table;
  // 1.3 MB a token against 20, 16 and 20 GB/s around the three runs.
  EXPECT_NE(table.find("| tg4 each run's share of the read probe around it "
                       "(median, range) | 2% (1-3%) |"),
            std::string::npos)
      << table;
}

//===----------------------------------------------------------------------===//
// Batched decode
//===----------------------------------------------------------------------===//

/// Batches of 1 and 3 sequences, 8-token prompts and 4 decode steps, twice:
/// timings vary, so this checks the counts and that every figure is sane.
TEST(BenchBatch, CountsEverySequencesTokensAndLogits) {
  bench::BenchOptions o;
  o.artifact = Artifacts::get().path("portable", codegen::PackedType::F32);
  o.promptTokens = {8};
  o.genTokens = 4;
  o.threads = {1};
  o.repeat = 2;
  o.batch = {1, 3};
  o.keepPageCache = true;
  o.triadArrayBytes = 1 << 20; // a read probe of 3 MiB: counts, not speed
  o.command = "kiln bench --batch 1,3";
  std::vector<std::string> progress;
  bench::BatchResults r = bench::runBatchedDecode(
      o, [&](const std::string &line) { progress.push_back(line); });

  EXPECT_EQ(progress.size(), 3u); // the machine, then each batch size
  EXPECT_EQ(r.threads, 1);
  EXPECT_EQ(r.promptTokens, 8);
  EXPECT_EQ(r.contextLength, 12);
  EXPECT_EQ(r.manifest.vocabSize, 320);
  ASSERT_EQ(r.batches.size(), 2u);
  ASSERT_NE(r.single(), nullptr);
  EXPECT_EQ(r.single()->batch, 1);
  for (const bench::BatchResult &b : r.batches) {
    SCOPED_TRACE("batch " + std::to_string(b.batch));
    EXPECT_EQ(b.decodeTokens, b.batch * 4);
    // One row of logits a sequence a step, in each of the 2 runs; the
    // runner checks each row holds vocab floats.
    EXPECT_EQ(b.decodeLogitRows, 2 * b.batch * 4);
    EXPECT_EQ(b.decode.seconds.size(), 2u);
    EXPECT_EQ(b.prefill.seconds.size(), 2u);
    ASSERT_EQ(b.stepSeconds.size(), 2u * 4);
    EXPECT_GT(b.stepPercentile(0.50), 0.0);
    EXPECT_LE(b.stepPercentile(0.50), b.stepPercentile(0.99));
    EXPECT_GT(b.decode.median(), 0.0);
    EXPECT_GT(b.prefill.median(), 0.0);
    EXPECT_GT(b.kvPoolBytes, 0);
    EXPECT_GT(b.residentBytes, 0);
    EXPECT_GE(b.peakResidentBytes, b.residentBytes);
    // The probe's first sample, then one before and one after each run;
    // the limit is the best of all.
    ASSERT_EQ(b.readSamples.size(), 1u + 2 * 2);
    for (double sample : b.readSamples)
      EXPECT_LE(sample, r.readBandwidth.bytesPerSecond);
    // The roofline is B over the longer of the step's reading and its
    // arithmetic.
    double reading = r.stepBytes(b.batch) / r.readBandwidth.bytesPerSecond;
    double computing = r.stepFlops(b.batch) / r.computePeak.flopsPerSecond;
    bool computeBound = false;
    EXPECT_DOUBLE_EQ(r.rooflineTokensPerSecond(b.batch, &computeBound),
                     b.batch / std::max(reading, computing));
    EXPECT_EQ(computeBound, computing > reading);
    // Each run against the roofline at the better sample beside it.
    std::vector<double> paired = r.pairedRooflineFractions(b);
    ASSERT_EQ(paired.size(), 2u);
    for (size_t i = 0; i < paired.size(); ++i) {
      double bandwidth =
          std::max(b.readSamples[1 + 2 * i], b.readSamples[2 + 2 * i]);
      EXPECT_DOUBLE_EQ(paired[i],
                       b.decodeTokens / b.decode.seconds[i] /
                           r.rooflineTokensPerSecond(b.batch, bandwidth));
    }
  }
  EXPECT_EQ(r.computePeakName, "FMA peak"); // f32 weights
  EXPECT_GT(r.computePeak.flopsPerSecond, 0.0);
  EXPECT_EQ(r.readBandwidth.arrayBytes, 3 << 20);
  EXPECT_EQ(r.work.gemmBytes, 1343488);
  EXPECT_EQ(r.stepBytes(3), r.work.batchStepBytes(3, 8, 4));

  // The pool holds the same blocks for each sequence's 12 positions.
  EXPECT_EQ(r.batches[1].kvPoolBytes, 3 * r.batches[0].kvPoolBytes);

  json d = bench::batchReportJson(r);
  const json &batch = d["batch"];
  EXPECT_EQ(batch["gen_tokens"], 4);
  ASSERT_EQ(batch["results"].size(), 2u);
  const json &three = batch["results"][1];
  EXPECT_EQ(three["batch"], 3);
  EXPECT_EQ(three["decode"]["tokens"], 12);
  EXPECT_EQ(three["prefill"]["tokens"], 24);
  EXPECT_DOUBLE_EQ(three["decode"]["tokens_per_second"].get<double>(),
                   12 / r.batches[1].decode.median());
  EXPECT_DOUBLE_EQ(
      batch["results"][0]["decode"]["speedup_over_batch_1"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(three["step_bytes"].get<double>(), r.stepBytes(3));
  EXPECT_DOUBLE_EQ(three["roofline_tokens_per_second"].get<double>(),
                   r.rooflineTokensPerSecond(3));
  EXPECT_DOUBLE_EQ(three["fraction_of_roofline"].get<double>(),
                   12 / r.batches[1].decode.median() /
                       r.rooflineTokensPerSecond(3));
  EXPECT_DOUBLE_EQ(three["roofline_speedup_over_batch_1"].get<double>(),
                   r.rooflineTokensPerSecond(3) / r.rooflineTokensPerSecond(1));
  EXPECT_EQ(batch["counted"]["kv_element_type"], "f32");
  EXPECT_EQ(batch["counted"]["kv_bytes_per_position"], 1024);
  EXPECT_EQ(batch["limits"]["compute_peak"]["name"], "FMA peak");
}

/// The step latency's percentiles are nearest-rank ones.
TEST(BenchBatch, PercentilesAreNearestRank) {
  bench::BatchResult b;
  for (int i = 100; i >= 1; --i)
    b.stepSeconds.push_back(i * 0.001);
  EXPECT_DOUBLE_EQ(b.stepPercentile(0.50), 0.050);
  EXPECT_DOUBLE_EQ(b.stepPercentile(0.99), 0.099);
  EXPECT_DOUBLE_EQ(b.stepPercentile(1.0), 0.100);
  b.stepSeconds = {0.003};
  EXPECT_DOUBLE_EQ(b.stepPercentile(0.99), 0.003);
}

} // namespace
