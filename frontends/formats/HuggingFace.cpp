//===- HuggingFace.cpp - Hugging Face model directories -------------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "frontends/formats/HuggingFace.h"

#include "frontends/formats/FormatError.h"
#include "frontends/formats/MappedFile.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <map>

namespace kiln::formats {

using nlohmann::json;

namespace {

/// Typed access to config.json's keys with errors naming them.
class Config {
public:
  Config(std::string path, json j) : path(std::move(path)), j(std::move(j)) {}

  bool has(const char *key) const {
    return j.contains(key) && !j[key].is_null();
  }

  int64_t integer(const char *key) const {
    if (!has(key))
      throw FormatError(path, std::string("missing key \"") + key + "\"");
    return integerOr(key, 0);
  }
  int64_t integerOr(const char *key, int64_t fallback) const {
    if (!has(key))
      return fallback;
    if (!j[key].is_number_integer())
      throw FormatError(path,
                        std::string("\"") + key + "\" must be an integer");
    return j[key].get<int64_t>();
  }
  double numberOr(const char *key, double fallback) const {
    if (!has(key))
      return fallback;
    if (!j[key].is_number())
      throw FormatError(path, std::string("\"") + key + "\" must be a number");
    return j[key].get<double>();
  }
  bool booleanOr(const char *key, bool fallback) const {
    if (!has(key))
      return fallback;
    if (!j[key].is_boolean())
      throw FormatError(path,
                        std::string("\"") + key + "\" must be true or false");
    return j[key].get<bool>();
  }
  const json &raw(const char *key) const { return j[key]; }

  const std::string path;

private:
  json j;
};

RopeScalingConfig readRopeScaling(const Config &config) {
  const json &s = config.raw("rope_scaling");
  if (!s.is_object())
    throw FormatError(config.path, "\"rope_scaling\" must be an object");
  std::string type = s.contains("rope_type") && s["rope_type"].is_string()
                         ? s["rope_type"].get<std::string>()
                     : s.contains("type") && s["type"].is_string()
                         ? s["type"].get<std::string>()
                         : "";
  auto number = [&](const char *key) {
    if (!s.contains(key) || !s[key].is_number())
      throw FormatError(config.path, std::string("rope_scaling.") + key +
                                         " must be a number");
    return s[key].get<double>();
  };
  RopeScalingConfig r;
  r.factor = number("factor");
  if (type == "linear") {
    r.kind = RopeScalingConfig::Kind::Linear;
  } else if (type == "llama3") {
    r.kind = RopeScalingConfig::Kind::Llama3;
    r.lowFreqFactor = number("low_freq_factor");
    r.highFreqFactor = number("high_freq_factor");
    r.originalContext =
        static_cast<int64_t>(number("original_max_position_embeddings"));
  } else {
    throw FormatError(config.path, "rope_scaling type '" + type +
                                       "' is not supported (linear, llama3)");
  }
  return r;
}

} // namespace

ModelConfig readHFConfig(const std::string &configPath) {
  auto file = MappedFile::open(configPath);
  const char *text = reinterpret_cast<const char *>(file->data());
  json j;
  try {
    j = json::parse(text, text + file->size());
  } catch (const json::exception &e) {
    throw FormatError(configPath, std::string("invalid JSON: ") + e.what());
  }
  if (!j.is_object())
    throw FormatError(configPath, "expected a JSON object");
  Config c(configPath, std::move(j));

  std::string arch;
  const json &archs = c.raw("architectures");
  if (archs.is_array() && !archs.empty() && archs[0].is_string())
    arch = archs[0].get<std::string>();
  ModelConfig m;
  if (arch == "LlamaForCausalLM" || arch == "MistralForCausalLM") {
    m.architecture = "llama";
    if (c.booleanOr("attention_bias", false) || c.booleanOr("mlp_bias", false))
      throw FormatError(configPath, "attention_bias/mlp_bias Llama variants "
                                    "are not supported");
  } else if (arch == "Qwen2ForCausalLM") {
    m.architecture = "qwen2";
    m.qkvBias = true;
  } else {
    throw FormatError(configPath, "architecture '" + arch +
                                      "' is not supported (LlamaForCausalLM, "
                                      "MistralForCausalLM, Qwen2ForCausalLM)");
  }
  m.dim = c.integer("hidden_size");
  m.hiddenDim = c.integer("intermediate_size");
  m.numLayers = c.integer("num_hidden_layers");
  m.numHeads = c.integer("num_attention_heads");
  m.numKvHeads = c.integerOr("num_key_value_heads", m.numHeads);
  if (m.numHeads <= 0)
    throw FormatError(configPath, "\"num_attention_heads\" must be positive");
  m.headDim = c.integerOr("head_dim", m.dim / m.numHeads);
  m.vocabSize = c.integer("vocab_size");
  m.contextLength = c.integer("max_position_embeddings");
  m.normEpsilon = c.numberOr("rms_norm_eps", 1e-6);
  m.ropeTheta = c.numberOr("rope_theta", 10000.0);
  m.ropePairs = RopePairs::Halves;
  m.tiedClassifier = c.booleanOr("tie_word_embeddings", false);
  // Qwen2 configs carry a sliding_window that applies only when enabled.
  bool windowed = m.architecture == "qwen2"
                      ? c.booleanOr("use_sliding_window", false)
                      : true;
  if (windowed)
    m.slidingWindow = c.integerOr("sliding_window", 0);
  if (c.has("rope_scaling"))
    m.ropeScaling = readRopeScaling(c);
  if (auto problem = m.validate())
    throw FormatError(configPath, "bad configuration: " + *problem);
  return m;
}

std::optional<std::string> canonicalHFTensorName(const std::string &name) {
  static const std::map<std::string, std::string> global = {
      {"model.embed_tokens.weight", "token_embd.weight"},
      {"model.norm.weight", "output_norm.weight"},
      {"lm_head.weight", "output.weight"},
  };
  static const std::map<std::string, std::string> perLayer = {
      {"input_layernorm.weight", "attn_norm.weight"},
      {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.k_proj.weight", "attn_k.weight"},
      {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.q_proj.bias", "attn_q.bias"},
      {"self_attn.k_proj.bias", "attn_k.bias"},
      {"self_attn.v_proj.bias", "attn_v.bias"},
      {"self_attn.o_proj.weight", "attn_output.weight"},
      {"post_attention_layernorm.weight", "ffn_norm.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},
      {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.down_proj.weight", "ffn_down.weight"},
  };
  if (auto it = global.find(name); it != global.end())
    return it->second;
  const std::string prefix = "model.layers.";
  if (name.compare(0, prefix.size(), prefix) != 0)
    return std::nullopt;
  size_t dot = name.find('.', prefix.size());
  if (dot == std::string::npos || dot == prefix.size())
    return std::nullopt;
  std::string layer = name.substr(prefix.size(), dot - prefix.size());
  if (layer.find_first_not_of("0123456789") != std::string::npos ||
      layer.size() > 6)
    return std::nullopt;
  auto it = perLayer.find(name.substr(dot + 1));
  if (it == perLayer.end())
    return std::nullopt;
  return "blk." + std::to_string(std::atoi(layer.c_str())) + "." + it->second;
}

} // namespace kiln::formats
