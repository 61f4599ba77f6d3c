//===- HuggingFaceWriter.cpp - Writing Hugging Face model directories -----===//
//
// Part of Kiln. config.json with the keys HuggingFace.cpp reads, and
// safetensors files as the library writes them: an 8-byte header length,
// the JSON header padded with spaces to a multiple of 8, then the data;
// see ModelWriters.h.
//
//===----------------------------------------------------------------------===//

#include "frontends/formats/HuggingFace.h"
#include "frontends/formats/ModelFileOutput.h"
#include "frontends/formats/ModelWriters.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <map>
#include <stdexcept>

namespace kiln::formats {

using ordered_json = nlohmann::ordered_json;

std::string hfTensorName(const std::string &canonical) {
  static const std::map<std::string, std::string> global = {
      {"token_embd.weight", "model.embed_tokens.weight"},
      {"output_norm.weight", "model.norm.weight"},
      {"output.weight", "lm_head.weight"},
  };
  static const std::map<std::string, std::string> perLayer = {
      {"attn_norm.weight", "input_layernorm.weight"},
      {"attn_q.weight", "self_attn.q_proj.weight"},
      {"attn_k.weight", "self_attn.k_proj.weight"},
      {"attn_v.weight", "self_attn.v_proj.weight"},
      {"attn_q.bias", "self_attn.q_proj.bias"},
      {"attn_k.bias", "self_attn.k_proj.bias"},
      {"attn_v.bias", "self_attn.v_proj.bias"},
      {"attn_output.weight", "self_attn.o_proj.weight"},
      {"ffn_norm.weight", "post_attention_layernorm.weight"},
      {"ffn_gate.weight", "mlp.gate_proj.weight"},
      {"ffn_up.weight", "mlp.up_proj.weight"},
      {"ffn_down.weight", "mlp.down_proj.weight"},
  };
  if (auto it = global.find(canonical); it != global.end())
    return it->second;
  // blk.<layer>.<suffix>
  size_t dot = canonical.find('.', 4);
  if (canonical.compare(0, 4, "blk.") == 0 && dot != std::string::npos &&
      dot > 4 && canonical.find_first_not_of("0123456789", 4) == dot)
    if (auto it = perLayer.find(canonical.substr(dot + 1));
        it != perLayer.end())
      return "model.layers." + canonical.substr(4, dot - 4) + "." + it->second;
  throw std::invalid_argument("tensor '" + canonical +
                              "' has no Hugging Face name");
}

namespace {

const char *dtypeName(ElementType type) {
  return type == ElementType::F16    ? "F16"
         : type == ElementType::BF16 ? "BF16"
                                     : "F32";
}

const char *torchDtype(ElementType type) {
  return type == ElementType::F16    ? "float16"
         : type == ElementType::BF16 ? "bfloat16"
                                     : "float32";
}

/// What Hugging Face's classes cannot hold, or Kiln would read back
/// differently.
void requireHFConfig(const ModelConfig &c, const std::string &dir) {
  if (c.architecture == "llama" && c.qkvBias)
    throw std::invalid_argument(dir + ": LlamaForCausalLM has no QKV biases "
                                      "Kiln reads; write architecture qwen2");
  if (c.architecture == "qwen2" && !c.qkvBias)
    throw std::invalid_argument(dir + ": Qwen2ForCausalLM always has QKV "
                                      "biases; the config has none");
  if (c.architecture != "llama" && c.architecture != "qwen2")
    throw std::invalid_argument(dir + ": architecture '" + c.architecture +
                                "' is not written (llama, qwen2)");
  // rope_scaling names a formula; arbitrary factors (from a GGUF) have none.
  if (!c.ropeFreqFactors.empty())
    throw std::invalid_argument(dir + ": config.json has no place for "
                                      "per-pair rope frequency factors "
                                      "(GGUF's rope_freqs)");
}

ordered_json configJson(const ModelConfig &c, const HuggingFaceOptions &o) {
  bool qwen2 = c.architecture == "qwen2";
  ordered_json j;
  j["architectures"] = {qwen2 ? "Qwen2ForCausalLM" : "LlamaForCausalLM"};
  j["model_type"] = c.architecture;
  j["hidden_size"] = c.dim;
  j["intermediate_size"] = c.hiddenDim;
  j["num_hidden_layers"] = c.numLayers;
  j["num_attention_heads"] = c.numHeads;
  j["num_key_value_heads"] = c.numKvHeads;
  if (c.headDim * c.numHeads != c.dim)
    j["head_dim"] = c.headDim;
  j["vocab_size"] = c.vocabSize;
  j["max_position_embeddings"] = c.contextLength;
  j["hidden_act"] = "silu";
  j["rms_norm_eps"] = c.normEpsilon;
  j["rope_theta"] = c.ropeTheta;
  if (c.ropeScaling) {
    const RopeScalingConfig &s = *c.ropeScaling;
    ordered_json scaling;
    bool llama3 = s.kind == RopeScalingConfig::Kind::Llama3;
    scaling["rope_type"] = llama3 ? "llama3" : "linear";
    scaling["factor"] = s.factor;
    if (llama3) {
      scaling["low_freq_factor"] = s.lowFreqFactor;
      scaling["high_freq_factor"] = s.highFreqFactor;
      scaling["original_max_position_embeddings"] = s.originalContext;
    }
    j["rope_scaling"] = scaling;
  }
  if (qwen2)
    j["use_sliding_window"] = c.slidingWindow > 0;
  if (c.slidingWindow)
    j["sliding_window"] = c.slidingWindow;
  j["tie_word_embeddings"] = c.tiedClassifier;
  if (o.vocabulary && o.vocabulary->bosId >= 0)
    j["bos_token_id"] = o.vocabulary->bosId;
  if (o.vocabulary && o.vocabulary->eosId >= 0)
    j["eos_token_id"] = o.vocabulary->eosId;
  j["torch_dtype"] = torchDtype(o.type);
  return j;
}

/// Writes `text` to `path`; returns its size.
uint64_t writeText(const std::string &path, const std::string &text) {
  OutputFile out(path);
  out.write(text);
  return out.finish();
}

/// Which shard holds each tensor: consecutive runs of about equal bytes,
/// every shard holding at least one tensor.
std::vector<int> assignShards(const std::vector<uint64_t> &bytes, int shards) {
  uint64_t total = 0;
  for (uint64_t b : bytes)
    total += b;
  std::vector<int> shardOf;
  int shard = 0;
  uint64_t inShard = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    size_t left = bytes.size() - i;
    bool full = inShard * static_cast<uint64_t>(shards) >= total;
    bool mustMove = left == static_cast<size_t>(shards - 1 - shard);
    if (shard < shards - 1 && inShard > 0 && (full || mustMove)) {
      ++shard;
      inShard = 0;
    }
    shardOf.push_back(shard);
    inShard += bytes[i];
  }
  return shardOf;
}

std::string shardName(int shard, int shards) {
  if (shards == 1)
    return "model.safetensors";
  char name[64];
  std::snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", shard + 1,
                shards);
  return name;
}

} // namespace

uint64_t writeHuggingFaceModel(const ModelConfig &config,
                               const TensorSource &weights,
                               const std::string &dir,
                               const HuggingFaceOptions &options) {
  namespace fs = std::filesystem;
  requireValidConfig(config, dir);
  requireHFConfig(config, dir);
  requireStorableType(options.type, "safetensors");
  const std::vector<ModelTensor> &tensors = weights.tensors();
  if (options.shards < 1 ||
      static_cast<size_t>(options.shards) > tensors.size())
    throw std::invalid_argument(
        dir + ": cannot split " + std::to_string(tensors.size()) +
        " tensors into " + std::to_string(options.shards) + " shards");
  if (options.vocabulary &&
      options.vocabulary->model != runtime::TokenizerSpec::Model::ScoreMerge)
    throw std::invalid_argument(dir + ": only score-merge (SentencePiece) "
                                      "vocabularies are written as "
                                      "tokenizer.json");
  std::vector<std::string> names;
  std::vector<uint64_t> bytes;
  for (const ModelTensor &t : tensors) {
    try {
      names.push_back(hfTensorName(t.name));
    } catch (const std::invalid_argument &e) {
      throw std::invalid_argument(dir + ": " + e.what());
    }
    bytes.push_back(storedBytes(t, options.type));
  }

  std::error_code error;
  fs::create_directories(dir, error);
  if (error)
    throw std::runtime_error(dir + ": cannot create the directory (" +
                             error.message() + ")");
  uint64_t written = writeText((fs::path(dir) / "config.json").string(),
                               configJson(config, options).dump(2) + "\n");

  std::vector<int> shardOf = assignShards(bytes, options.shards);
  ordered_json weightMap = ordered_json::object();
  uint64_t total = 0;
  for (int shard = 0; shard < options.shards; ++shard) {
    std::string file = shardName(shard, options.shards);
    ordered_json header;
    header["__metadata__"] = {{"format", "pt"}};
    uint64_t offset = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (shardOf[i] != shard)
        continue;
      header[names[i]] = {{"dtype", dtypeName(options.type)},
                          {"shape", tensors[i].shape},
                          {"data_offsets", {offset, offset + bytes[i]}}};
      offset += bytes[i];
      weightMap[names[i]] = file;
    }
    total += offset;
    std::string text = header.dump();
    text.resize((text.size() + 7) / 8 * 8, ' ');

    OutputFile out((fs::path(dir) / file).string());
    std::string length;
    appendLE(length, static_cast<uint64_t>(text.size()));
    out.write(length);
    out.write(text);
    for (size_t i = 0; i < tensors.size(); ++i)
      if (shardOf[i] == shard)
        writeTensorValues(out, weights, tensors[i], options.type, config,
                          RopePairs::Halves);
    written += out.finish();
  }
  if (options.shards > 1) {
    ordered_json index;
    index["metadata"] = {{"total_size", total}};
    index["weight_map"] = weightMap;
    written +=
        writeText((fs::path(dir) / "model.safetensors.index.json").string(),
                  index.dump(2) + "\n");
  }
  if (options.vocabulary)
    written += writeHFTokenizer(*options.vocabulary, dir);
  return written;
}

} // namespace kiln::formats
