//===- StepWork.h - What a step of a compiled model costs -------*- C++ -*-===//
//
// Part of Kiln's benchmark library. `kiln bench` quotes every speed against
// a limit (decode's bytes against the read bandwidth, prefill's FLOPs against
// the FMA peak), so the bytes and FLOPs of a step must be right for the
// artifact actually timed. They are counted here from the step library's
// manifest: its packed weight entries (runtime/PackedWeight.h: shape, layout,
// type and bytes as stored, written by the code generator) and the model's
// recorded attention shape (heads, kv heads, head size), not from tensor
// names or a model-shape formula. bench/README.md, "What is measured", says
// what each figure counts and what it leaves out.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_BENCH_STEPWORK_H
#define KILN_BENCH_STEPWORK_H

#include "runtime/CompiledModel.h"

#include <cstdint>
#include <string>

namespace kiln::bench {

/// The work of a step, counted from the packed GEMM weights the manifest
/// lists (layout "panels"): these are what the kernels read, classifier
/// included.
struct StepWork {
  int64_t layers = 0, vocab = 0;
  /// The model width: the classifier's K.
  int64_t dim = 0;
  /// The width attention works in: query heads x head size.
  int64_t qDim = 0;
  /// Parameters of every GEMM weight but the classifier: run for every
  /// token.
  int64_t layerGemmParameters = 0;
  /// The classifier [vocab, dim]: run once per logit row.
  int64_t classifierParameters = 0;
  /// The panels' bytes as stored (padding rows and pairs included): what a
  /// decode step reads.
  int64_t gemmBytes = 0;
  int64_t gemmEntries = 0;
  /// Bytes one position adds to the KV cache: a key and a value row of
  /// kv heads x head size elements in every layer, each element of the
  /// artifact's cache type (`kiln compile --kv-type`: f32 4 bytes, f16 and
  /// bf16 2), whatever the weights' type. Not counted in single-sequence
  /// decode's bytes (a few percent of them at the positions timed); counted
  /// in batched decode's, where B sequences' caches are read each step.
  int64_t kvBytesPerToken = 0;
  /// Tokens a step holds at most (the artifact's max_tokens): a larger
  /// batch runs as several steps, each reading the weights.
  int64_t maxTokens = 0;
  /// The GEMMs multiply in bf16 dot products (panels packed as k pairs):
  /// prefill is then measured against the bf16 dot peak.
  bool bf16Dot = false;
  /// Most of the layers' GEMM parameters are quantized (Q8_0, Q4_0,
  /// K-quants): their kernels multiply int8 activations by the weights'
  /// levels, so prefill is measured against the int8 dot peak.
  bool int8Dot = false;

  /// FLOPs per token of a P-token prefill with logits for its last row:
  /// 2 per GEMM weight parameter, the classifier's shared by the P tokens,
  /// and causal attention: token i scores and mixes i + 1 positions at
  /// 2 x 2 x qDim FLOPs each, in every layer; averaged over the prompt,
  /// 2 x layers x qDim x (P + 1) per token.
  double prefillFlopsPerToken(int64_t p) const;

  /// FLOPs of one decode step at `position` (it attends to positions
  /// 0..position): 2 per GEMM weight parameter, classifier included, and
  /// 2 x 2 x qDim per attended position in every layer.
  double decodeFlopsPerToken(int64_t position) const;

  /// Bytes of KV cache a decode step at `position` reads: every layer's
  /// keys and values of positions 0..position.
  int64_t decodeKvBytes(int64_t position) const;

  /// Batched decode (`kiln bench --batch`): a step holds one token of each
  /// of `batch` sequences, all at the same position, and asks for every
  /// sequence's logits; `steps` steps run at positions first..first+steps-1.
  /// Bytes a step reads on average: the weights once per step of at most
  /// maxTokens tokens, and every sequence's own cache (decodeKvBytes).
  double batchStepBytes(int64_t batch, int64_t first, int64_t steps) const;
  /// FLOPs a step on average: batch x decodeFlopsPerToken (the classifier
  /// runs for every sequence's logits).
  double batchStepFlops(int64_t batch, int64_t first, int64_t steps) const;
};

/// Counts the work of a step of `library` (one of `manifest.libraries`).
/// Throws std::runtime_error naming `artifactPath` when the manifest lacks
/// what the count needs (packed weight entries, `model.heads`): artifacts
/// written before Kiln recorded them need recompiling.
StepWork countStepWork(const runtime::ArtifactManifest &manifest,
                       const runtime::StepLibraryManifest &library,
                       const std::string &artifactPath);

/// The work of a step of the library `model` runs.
StepWork countStepWork(const runtime::CompiledModel &model);

} // namespace kiln::bench

#endif // KILN_BENCH_STEPWORK_H
