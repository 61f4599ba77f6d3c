//===- EvalCommand.cpp - kiln eval ----------------------------------------===//
//
// Part of Kiln's command line. See EvalCommand.h; the measures are Eval.h's.
//
//===----------------------------------------------------------------------===//

#include "tools/kiln/EvalCommand.h"

#include "tools/kiln/Eval.h"
#include "tools/kiln/TerminalProgress.h"

#include "codegen/driver/Compiler.h"
#include "runtime/Artifact.h"
#include "runtime/CompiledModel.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

namespace kiln {

namespace {

/// An artifact: `path` itself, or a model file compiled into the cache.
std::string artifactFor(const std::string &path, bool quiet) {
  if (runtime::hasArtifactMagic(path))
    return path;
  CompileOptions compile;
  compile.model = path;
  TerminalProgress progress(quiet);
  progress.attach(compile);
  return compiledArtifactFor(compile);
}

std::string readText(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error("--text: cannot read '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

nlohmann::json toJson(const EvalOptions &o, const eval::Summary &s,
                      size_t tokens, const std::vector<eval::Window> &windows) {
  nlohmann::json j;
  j["model"] = o.model;
  j["text"] = o.text;
  j["tokens"] = tokens;
  j["context"] = windows.front().length;
  j["stride"] = windows.size() > 1 ? windows[1].start - windows[0].start
                                   : windows.front().length;
  j["windows"] = windows.size();
  j["first_scored"] = windows.front().first;
  j["positions"] = s.positions;
  j["mean_nll"] = s.meanNll;
  j["mean_nll_stderr"] = s.nllStdError;
  j["perplexity"] = s.perplexity;
  j["perplexity_stderr"] = s.perplexity * s.nllStdError;
  if (s.hasReference) {
    nlohmann::json r;
    r["model"] = o.reference;
    r["mean_nll"] = s.referenceMeanNll;
    r["perplexity"] = s.referencePerplexity;
    r["perplexity_stderr"] = s.referencePerplexity * s.referenceNllStdError;
    r["ln_ppl_ratio"] = s.meanNll - s.referenceMeanNll;
    r["kl_mean"] = s.meanKl;
    r["kl_mean_stderr"] = s.klStdError;
    r["kl_median"] = s.medianKl;
    r["kl_p99"] = s.p99Kl;
    r["kl_max"] = s.maxKl;
    r["top1_agreement"] = s.top1Agreement;
    r["top1_agreements"] = s.top1Agreements;
    r["max_logit_difference"] = s.maxLogitDifference;
    j["reference"] = r;
  }
  return j;
}

void printSummary(const EvalOptions &o, const eval::Summary &s, size_t tokens,
                  const std::vector<eval::Window> &windows) {
  const eval::Window &w = windows.front();
  int64_t stride =
      windows.size() > 1 ? windows[1].start - windows[0].start : w.length;
  std::printf("kiln eval %s on %s\n", o.model.c_str(), o.text.c_str());
  std::printf("  text        %zu tokens (BOS first)\n", tokens);
  std::printf("  windows     %zu of %lld tokens, stride %lld, BOS in place "
              "of each first token\n",
              windows.size(), (long long)w.length, (long long)stride);
  std::printf("  scored      %lld positions: window positions %lld..%lld "
              "predicting the next token (llama-perplexity's rule)\n",
              (long long)s.positions, (long long)w.first,
              (long long)w.length - 2);
  std::printf("  perplexity  %.4f +/- %.4f\n", s.perplexity,
              s.perplexity * s.nllStdError);
  if (!s.hasReference)
    return;
  std::printf("reference %s\n", o.reference.c_str());
  std::printf("  perplexity  %.4f +/- %.4f\n", s.referencePerplexity,
              s.referencePerplexity * s.referenceNllStdError);
  std::printf("  ln(PPL/PPL_ref)  %.6f\n", s.meanNll - s.referenceMeanNll);
  std::printf("  KL(ref || model)  mean %.6g +/- %.2g, median %.6g, p99 "
              "%.6g, max %.6g\n",
              s.meanKl, s.klStdError, s.medianKl, s.p99Kl, s.maxKl);
  std::printf("  top-1 agreement  %.4f%% (%lld of %lld)\n",
              100.0 * s.top1Agreement, (long long)s.top1Agreements,
              (long long)s.positions);
  std::printf("  max |logit - reference logit|  %.6g%s\n", s.maxLogitDifference,
              s.maxLogitDifference == 0 ? " (identical logits)" : "");
}

} // namespace

CLI::App *addEvalCommand(CLI::App &app, EvalOptions &o) {
  CLI::App *cmd = app.add_subcommand(
      "eval", "Perplexity of a model over a text; with --reference, the KL "
              "divergence and top-1 agreement of its next-token "
              "distributions against another model's (docs/quantization.md)");
  cmd->add_option("model", o.model, "Artifact or model file")->required();
  cmd->add_option("--text", o.text, "Text file to score")->required();
  cmd->add_option("--reference", o.reference,
                  "Artifact or model file to compare with, on the same "
                  "windows (KL(reference || model))");
  cmd->add_option("--context", o.context,
                  "Tokens a window (default: the model's context length)")
      ->check(CLI::Range(int64_t(2), int64_t(1) << 30));
  cmd->add_option("--stride", o.stride,
                  "Tokens between window starts (default: the context, "
                  "llama-perplexity's non-overlapping chunks)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--threads", o.threads, "Threads (default: all cores)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--json", o.json, "Print the figures as JSON instead");
  return cmd;
}

int runEval(const EvalOptions &o) {
  runtime::CompiledModelOptions options;
  options.threads = o.threads;
  options.contextLength = o.context;
  std::unique_ptr<runtime::CompiledModel> model =
      runtime::CompiledModel::load(artifactFor(o.model, o.json), options);
  std::unique_ptr<runtime::CompiledModel> reference;
  if (!o.reference.empty())
    reference =
        runtime::CompiledModel::load(artifactFor(o.reference, o.json), options);

  // Tokenized as llama-perplexity does: BOS first, control-token text kept
  // as text.
  runtime::Tokenizer tokenizer(model->tokenizerSpec());
  tokenizer.setParseSpecial(false);
  std::string text = readText(o.text);
  std::vector<int32_t> tokens = tokenizer.encode(text, true);
  int32_t bos = model->tokenizerSpec().bosId;
  if (bos < 0)
    throw std::runtime_error(o.model + ": the vocabulary has no BOS token to "
                                       "start each window with");
  if (reference) {
    runtime::Tokenizer other(reference->tokenizerSpec());
    other.setParseSpecial(false);
    if (other.encode(text, true) != tokens)
      throw std::runtime_error(o.reference +
                               " tokenizes the text otherwise "
                               "than " +
                               o.model + "; both must see the same tokens");
  }

  int64_t context = o.context ? o.context : model->manifest().contextLength;
  std::vector<eval::Window> windows =
      eval::planWindows(static_cast<int64_t>(tokens.size()), context,
                        o.stride ? o.stride : context);
  eval::Summary summary =
      eval::evaluate(*model, reference.get(), tokens, windows, bos);
  if (o.json)
    std::cout << toJson(o, summary, tokens.size(), windows).dump(2) << "\n";
  else
    printSummary(o, summary, tokens.size(), windows);
  return 0;
}

} // namespace kiln
