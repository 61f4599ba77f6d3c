//===- ModelWriters.h - Writing Llama models in Kiln's formats --*- C++ -*-===//
//
// Part of Kiln. Writes a Llama-family model -- its ModelConfig and weights
// from a TensorSource -- in each format Kiln reads: llama2.c checkpoints
// (legacy and export version 1), GGUF, and Hugging Face directories
// (config.json, safetensors, tokenizer.json). `kiln make-model` writes its
// synthetic models with them (SyntheticModel.h) and the tests write their
// random models with them, so the files the tests read are the files Kiln
// makes. Byte layouts follow the readers (Llama2c.cpp, GGUF.cpp,
// Safetensors.cpp, HuggingFace.cpp, TokenizerJson.cpp).
//
// Weights stream from the source a slice at a time (a head at a time where
// Q and K rows are reordered), so a multi-GB model never sits in memory.
// Each format's rotary pair layout is its own: llama2.c and GGUF "llama"
// store adjacent pairs, GGUF "qwen2" and Hugging Face rotate-half; a
// writer reorders Q and K rows (and biases) when config.ropePairs differs.
//
// Errors are std::invalid_argument for a model the format cannot hold and
// std::runtime_error for a file that cannot be written, each naming the
// path and what is wrong. A writer checks what it can before creating its
// file; one that fails while writing leaves what it wrote.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_FRONTENDS_FORMATS_MODELWRITERS_H
#define KILN_FRONTENDS_FORMATS_MODELWRITERS_H

#include "frontends/formats/ElementType.h"
#include "frontends/formats/GGUFWriter.h"
#include "frontends/formats/ModelConfig.h"
#include "frontends/formats/TensorSource.h"
#include "runtime/Tokenizer.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::formats {

//===----------------------------------------------------------------------===//
// llama2.c
//===----------------------------------------------------------------------===//

/// Writes a float32 llama2.c checkpoint of version 0 (legacy: 7 int32, a
/// negative vocabulary size for an untied classifier, the tensors in
/// llama2.c's order, the RoPE tables older llama2.c builds read) or 1
/// (export.py: a 256-byte header, the norms first). The format holds only
/// plain Llamas: head size dim / n_heads, RoPE theta 10000, epsilon 1e-5,
/// no QKV biases, sliding window or RoPE scaling; anything else, a missing
/// tensor or one of another shape throws std::invalid_argument. Returns
/// the bytes written.
uint64_t writeLlama2c(const ModelConfig &config, const TensorSource &weights,
                      const std::string &path, int version = 0);

//===----------------------------------------------------------------------===//
// GGUF
//===----------------------------------------------------------------------===//

struct GGUFModelOptions {
  /// How 2-D tensors are stored: F32, F16 or BF16. 1-D tensors (norms,
  /// biases) stay F32, as llama.cpp's converters keep them.
  ElementType type = ElementType::F32;
  /// general.name, when not empty.
  std::string name;
  /// The tokenizer.ggml.* keys, when not null: a ScoreMerge vocabulary
  /// with "▁" for spaces (model "llama") or a byte-level BPE one without
  /// custom expressions (model "gpt2"); and tokenizer.chat_template when
  /// it has a chat template.
  const runtime::TokenizerSpec *vocabulary = nullptr;
};

/// Adds a model's metadata to `gguf` as llama.cpp writes it:
/// general.architecture (config.architecture, "llama" or "qwen2"),
/// general.name, general.file_type, the <arch>.* hyperparameters (with
/// attention.sliding_window, rope.scaling.* for linear scaling, and
/// attention.key_length/value_length when the head size is not dim /
/// heads) and the vocabulary. Llama 3 scaling has no key: it is the
/// rope_freqs tensor (ggufRopeFreqFactors). Tests add tensors or more keys
/// after it. Throws std::invalid_argument for what GGUF cannot describe
/// (another architecture, a vocabulary of another kind).
void addGGUFModelMetadata(GGUFWriter &gguf, const ModelConfig &config,
                          const GGUFModelOptions &options = {});

/// The values of GGUF's rope_freqs tensor for `config`: its
/// ropeFreqFactors if it has them; for llama3 scaling, the divisor of each
/// pair's frequency as llama.cpp's converter computes it, in the same f32
/// arithmetic (1 for short wavelengths, `factor` for long ones, the
/// reciprocal of the blend between); otherwise none.
std::vector<float> ggufRopeFreqFactors(const ModelConfig &config);

/// Writes a GGUF v3 file: addGGUFModelMetadata, then rope_freqs.weight (F32,
/// headDim / 2) when ggufRopeFreqFactors gives values, then every tensor of
/// `weights` in its order, shapes as the source gives them. Returns the
/// bytes written.
uint64_t writeGGUFModel(const ModelConfig &config, const TensorSource &weights,
                        const std::string &path,
                        const GGUFModelOptions &options = {});

//===----------------------------------------------------------------------===//
// Hugging Face
//===----------------------------------------------------------------------===//

struct HuggingFaceOptions {
  /// The safetensors dtype: F32, F16 or BF16.
  ElementType type = ElementType::F32;
  /// 1: model.safetensors. More: model-0000i-of-0000n.safetensors, each
  /// holding consecutive tensors of about equal size, listed by
  /// model.safetensors.index.json.
  int shards = 1;
  /// When not null, written as tokenizer.json and tokenizer_config.json
  /// (writeHFTokenizer).
  const runtime::TokenizerSpec *vocabulary = nullptr;
};

/// Hugging Face's name for a canonical tensor name ("blk.3.attn_q.weight"
/// -> "model.layers.3.self_attn.q_proj.weight"), the inverse of
/// canonicalHFTensorName; throws std::invalid_argument for a name Hugging
/// Face's Llama and Qwen2 models do not have.
std::string hfTensorName(const std::string &canonical);

/// Writes a Hugging Face model directory at `dir` (created if missing):
/// config.json (LlamaForCausalLM, or Qwen2ForCausalLM, whose QKV biases the
/// config must have) and the weights of `weights` under Hugging Face's
/// names, Q and K rows in rotate-half order. Returns the bytes written
/// over all files.
uint64_t writeHuggingFaceModel(const ModelConfig &config,
                               const TensorSource &weights,
                               const std::string &dir,
                               const HuggingFaceOptions &options = {});

/// Writes `vocab` as a Hugging Face tokenizer.json in `dir`, with a
/// tokenizer_config.json naming BOS and EOS (and holding the chat template,
/// when the vocabulary has one): a BPE model with "▁" spaces
/// and byte fallback, as the library converts SentencePiece vocabularies.
/// Only ScoreMerge vocabularies; their merges are every split of each
/// piece into two pieces, in order of the piece's score, so Kiln's loader
/// reads back the same tokenization. Returns the bytes written.
uint64_t writeHFTokenizer(const runtime::TokenizerSpec &vocab,
                          const std::string &dir);

} // namespace kiln::formats

#endif // KILN_FRONTENDS_FORMATS_MODELWRITERS_H
