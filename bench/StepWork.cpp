//===- StepWork.cpp - What a step of a compiled model costs ---------------===//
//
// Part of Kiln's benchmark library. See StepWork.h.
//
//===----------------------------------------------------------------------===//

#include "bench/StepWork.h"

#include <stdexcept>

namespace kiln::bench {

double StepWork::prefillFlopsPerToken(int64_t p) const {
  double attention = 2.0 * double(layers) * double(qDim) * double(p + 1);
  return 2.0 * double(layerGemmParameters) +
         2.0 * double(classifierParameters) / double(p) + attention;
}

double StepWork::decodeFlopsPerToken(int64_t position) const {
  double attention = 4.0 * double(layers) * double(qDim) * double(position + 1);
  return 2.0 * double(layerGemmParameters + classifierParameters) + attention;
}

int64_t StepWork::decodeKvBytes(int64_t position) const {
  return kvBytesPerToken * (position + 1);
}

double StepWork::batchStepBytes(int64_t batch, int64_t first,
                                int64_t steps) const {
  int64_t perStep = maxTokens > 0 ? maxTokens : batch;
  double weightReads = double((batch + perStep - 1) / perStep);
  // decodeKvBytes is linear in the position: its mean over the steps is
  // its value at the mean position.
  double meanKv =
      double(kvBytesPerToken) * (double(first) + double(steps - 1) / 2.0 + 1.0);
  return weightReads * double(gemmBytes) + double(batch) * meanKv;
}

double StepWork::batchStepFlops(int64_t batch, int64_t first,
                                int64_t steps) const {
  double meanAttention = 4.0 * double(layers) * double(qDim) *
                         (double(first) + double(steps - 1) / 2.0 + 1.0);
  return double(batch) *
         (2.0 * double(layerGemmParameters + classifierParameters) +
          meanAttention);
}

StepWork countStepWork(const runtime::ArtifactManifest &manifest,
                       const runtime::StepLibraryManifest &library,
                       const std::string &artifactPath) {
  StepWork work;
  int64_t quantizedLayerParameters = 0;
  work.layers = manifest.layers;
  work.vocab = manifest.vocabSize;
  for (const runtime::PackedWeight &w : library.weightEntries) {
    if (w.layout != "panels")
      continue; // row-major tables (embedding, norms) are not GEMM weights
    work.gemmBytes += w.bytes;
    ++work.gemmEntries;
    work.bf16Dot = work.bf16Dot || w.pairs == "k";
    // The classifier is the one GEMM whose N is the vocabulary; it runs
    // once per logit row, not once per token.
    if (w.rows == manifest.vocabSize && work.classifierParameters == 0) {
      work.classifierParameters = w.rows * w.cols;
      work.dim = w.cols;
    } else {
      work.layerGemmParameters += w.rows * w.cols;
      if (w.type != "f32" && w.type != "f16" && w.type != "bf16")
        quantizedLayerParameters += w.rows * w.cols;
    }
  }
  if (work.gemmEntries == 0)
    throw std::runtime_error(artifactPath +
                             ": the manifest lists no packed GEMM "
                             "weights ('weights.entries' of layout "
                             "\"panels\"; artifacts before Kiln wrote "
                             "them need recompiling), so the weights a "
                             "step reads cannot be counted");
  if (manifest.heads <= 0)
    throw std::runtime_error(artifactPath +
                             ": the manifest has no 'model.heads' "
                             "(recompile the artifact), so attention's "
                             "FLOPs cannot be counted");
  work.int8Dot = 2 * quantizedLayerParameters > work.layerGemmParameters;
  work.qDim = manifest.heads * manifest.headDim;
  work.maxTokens = manifest.maxTokens;
  int64_t elementBytes = manifest.cacheElementType == "f32" ? 4 : 2;
  work.kvBytesPerToken =
      2 * manifest.layers * manifest.kvHeads * manifest.headDim * elementBytes;
  return work;
}

StepWork countStepWork(const runtime::CompiledModel &model) {
  return countStepWork(model.manifest(), model.stepLibrary(),
                       model.artifact().path());
}

} // namespace kiln::bench
