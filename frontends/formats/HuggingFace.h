//===- HuggingFace.h - Hugging Face model directories -----------*- C++ -*-===//
//
// Part of Kiln. A Hugging Face checkpoint is a directory with config.json
// (hyperparameters), safetensors weights and usually tokenizer.json. This
// reads config.json for LlamaForCausalLM, MistralForCausalLM and
// Qwen2ForCausalLM, and maps tensor names to Kiln's canonical (GGUF) names.
// Hugging Face stores Q and K for rotate-half RoPE, so these models use the
// `halves` pair layout.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_FRONTENDS_FORMATS_HUGGINGFACE_H
#define KILN_FRONTENDS_FORMATS_HUGGINGFACE_H

#include "frontends/formats/ModelConfig.h"

#include <optional>
#include <string>

namespace kiln::formats {

/// Reads and validates config.json; throws FormatError naming the file and
/// the key at fault.
ModelConfig readHFConfig(const std::string &configPath);

/// Kiln's name for a Hugging Face tensor ("model.layers.3.self_attn.q_proj.
/// weight" -> "blk.3.attn_q.weight"), or nothing for a tensor Kiln does not
/// use (e.g. rotary_emb.inv_freq).
std::optional<std::string> canonicalHFTensorName(const std::string &name);

} // namespace kiln::formats

#endif // KILN_FRONTENDS_FORMATS_HUGGINGFACE_H
