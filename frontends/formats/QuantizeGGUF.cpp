//===- QuantizeGGUF.cpp - A GGUF file with its matrices quantized ---------===//
//
// Part of Kiln. quantizeGGUFFile (Quantize.h): Kiln's `llama-quantize
// --pure`. The metadata is re-encoded value by value from the reader's
// GGUFValues (the writer takes any encoded value), the tensors are written
// one at a time, each dequantized to float and quantized, so a model never
// sits in memory whole.
//
//===----------------------------------------------------------------------===//

#include "frontends/formats/GGUF.h"
#include "frontends/formats/GGUFWriter.h"
#include "frontends/formats/ModelFileOutput.h"
#include "frontends/formats/Quantize.h"

#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace kiln::formats {

namespace {

/// llama.cpp's current quantization version (general.quantization_version).
constexpr uint32_t kQuantizationVersion = 2;

/// A value's bytes as GGUF stores them after its type number.
std::string encodeValue(const GGUFValue &value) {
  auto unsignedBits = [&](int bytes) {
    uint64_t v = std::holds_alternative<uint64_t>(value.scalar)
                     ? std::get<uint64_t>(value.scalar)
                     : static_cast<uint64_t>(std::get<int64_t>(value.scalar));
    std::string out;
    for (int i = 0; i < bytes; ++i)
      out += static_cast<char>((v >> (8 * i)) & 0xff);
    return out;
  };
  switch (value.type) {
  case GGUFType::U8:
  case GGUFType::I8:
    return unsignedBits(1);
  case GGUFType::U16:
  case GGUFType::I16:
    return unsignedBits(2);
  case GGUFType::U32:
  case GGUFType::I32:
    return unsignedBits(4);
  case GGUFType::U64:
  case GGUFType::I64:
    return unsignedBits(8);
  case GGUFType::F32:
    return GGUFWriter::le(
        floatBits(static_cast<float>(std::get<double>(value.scalar))));
  case GGUFType::F64: {
    double d = std::get<double>(value.scalar);
    uint64_t bits;
    std::memcpy(&bits, &d, sizeof bits);
    return GGUFWriter::le(bits);
  }
  case GGUFType::Bool:
    return std::string(1, std::get<bool>(value.scalar) ? '\1' : '\0');
  case GGUFType::String:
    return GGUFWriter::str(std::get<std::string>(value.scalar));
  case GGUFType::Array: {
    std::string out = GGUFWriter::le(static_cast<uint32_t>(value.arrayType)) +
                      GGUFWriter::le(static_cast<uint64_t>(value.array.size()));
    for (const GGUFValue &element : value.array)
      out += encodeValue(element);
    return out;
  }
  }
  return "";
}

/// Rows of a tensor (every dimension but the innermost).
int64_t rowsOf(const TensorInfo &t) {
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < t.shape.size(); ++i)
    rows *= t.shape[i];
  return rows;
}

/// What tensor `t` of `input` is stored as: `to` (F32: kept as it is)
/// unless `overrides` names it. Throws std::invalid_argument for a tensor
/// that cannot be stored so.
ElementType storedType(const std::string &input, const TensorInfo &t,
                       ElementType to,
                       const std::map<std::string, ElementType> &overrides) {
  if (isBlockQuantized(t.type))
    throw std::invalid_argument(input + ": tensor '" + t.name +
                                "' is already " + elementTypeName(t.type) +
                                "; quantize an f32, f16 or bf16 model");
  if (auto it = overrides.find(t.name); it != overrides.end()) {
    if (it->second != t.type && !isBlockQuantized(it->second))
      throw std::invalid_argument(
          input + ": tensor '" + t.name + "' can be kept as " +
          elementTypeName(t.type) + " or quantized, not converted to " +
          elementTypeName(it->second));
    to = it->second == t.type ? ElementType::F32 : it->second;
  }
  if (to == ElementType::F32)
    return t.type; // 1-D tensors are copied as they are
  if (!rowBytes(to, t.shape.back()))
    throw std::invalid_argument(
        input + ": tensor '" + t.name + "' has rows of " +
        std::to_string(t.shape.back()) + " weights, not a multiple of " +
        std::to_string(blockSize(to)) + ": it cannot be quantized to " +
        elementTypeName(to));
  return to;
}

/// Throws unless every tensor `overrides` names is in `in`.
void requireOverridden(const std::string &input, const GGUFFile &in,
                       const std::map<std::string, ElementType> &overrides) {
  for (const auto &[name, type] : overrides)
    if (!in.findTensor(name))
      throw std::invalid_argument(input + ": no tensor '" + name +
                                  "' to store as " + elementTypeName(type));
}

/// Where each tensor of `in` sits for the layered rules of the mixes:
/// running counts of attn_v and ffn_down tensors, as llama.cpp's quantizer
/// keeps them (llama_model_quantize_impl, llama_tensor_get_type).
std::vector<TensorPlacement> placements(const GGUFFile &in) {
  int attentionV = 0, ffnDown = 0;
  bool hasOutput = false;
  for (const TensorInfo &t : in.tensors()) {
    if (t.name.find("attn_v.weight") != std::string::npos ||
        t.name.find("attn_qkv.weight") != std::string::npos ||
        t.name.find("attn_kv_b.weight") != std::string::npos)
      ++attentionV;
    else if (t.name == "output.weight")
      hasOutput = true;
    if (t.name.find("ffn_down") != std::string::npos && t.shape.size() >= 2)
      ++ffnDown;
  }
  // llama.cpp counts ffn_down against the model's block count.
  int blocks = ffnDown;
  if (auto arch = in.getString("general.architecture"))
    if (auto count = in.getInt(*arch + ".block_count"))
      blocks = static_cast<int>(*count);

  std::vector<TensorPlacement> result;
  int seenV = 0, seenDown = 0;
  for (const TensorInfo &t : in.tensors()) {
    TensorPlacement at;
    at.hasOutput = hasOutput;
    if (t.name.find("attn_v.weight") != std::string::npos) {
      at.layer = seenV++;
      at.layerCount = attentionV;
    } else if (t.name.find("ffn_down") != std::string::npos &&
               t.shape.size() >= 2) {
      at.layer = seenDown++;
      at.layerCount = blocks;
    }
    result.push_back(at);
  }
  return result;
}

/// Writes `in`'s metadata (general.file_type set to `fileType`) and its
/// tensors, tensor i stored as `stored[i]`, to `output`.
uint64_t writeQuantized(const std::string &input, const std::string &output,
                        const GGUFFile &in,
                        const std::vector<ElementType> &stored,
                        uint32_t fileType) {
  GGUFWriter out;
  // The metadata in the input's order, with the file type replaced.
  bool hasFileType = false, hasQuantVersion = false;
  for (const std::string &key : in.keys()) {
    const GGUFValue &value = *in.find(key);
    if (key == "general.alignment") {
      out.setAlignment(static_cast<uint32_t>(*in.getInt(key)));
    } else if (key == "general.file_type") {
      out.addU32(key, fileType);
      hasFileType = true;
    } else if (key == "general.quantization_version") {
      out.addU32(key, kQuantizationVersion);
      hasQuantVersion = true;
    } else {
      out.addEncoded(key, static_cast<uint32_t>(value.type),
                     encodeValue(value));
    }
  }
  if (!hasQuantVersion)
    out.addU32("general.quantization_version", kQuantizationVersion);
  if (!hasFileType)
    out.addU32("general.file_type", fileType);

  const std::vector<TensorInfo> &tensors = in.tensors();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo &t = tensors[i];
    uint64_t bytes = stored[i] == t.type
                         ? t.bytes
                         : *rowBytes(stored[i], t.shape.back()) *
                               static_cast<uint64_t>(rowsOf(t));
    out.declareTensor(t.name, t.shape, stored[i], bytes);
  }

  OutputFile file(output);
  try {
    file.write(out.header());
    std::vector<float> values;
    for (size_t i = 0; i < tensors.size(); ++i) {
      const TensorInfo &t = tensors[i];
      if (stored[i] == t.type) {
        file.write(in.data(t), t.bytes);
      } else {
        values.resize(static_cast<size_t>(t.numElements()));
        dequantize(t.type, in.data(t), values.data(), t.numElements());
        std::vector<uint8_t> blocks;
        try {
          blocks = quantizeTensor(stored[i], t.name, t.shape, values.data());
        } catch (const std::invalid_argument &e) {
          throw std::invalid_argument(input + ": " + e.what());
        }
        file.write(blocks.data(), blocks.size());
      }
      file.pad(out.alignment());
    }
    return file.finish();
  } catch (...) {
    std::remove(output.c_str());
    throw;
  }
}

} // namespace

uint64_t quantizeGGUFFile(const std::string &input, const std::string &output,
                          ElementType type,
                          const std::map<std::string, ElementType> &overrides) {
  if (!isBlockQuantized(type))
    throw std::invalid_argument(std::string("cannot quantize to ") +
                                elementTypeName(type) +
                                " (q8_0, q4_0, q4_k, q5_k, q6_k)");
  GGUFFile in = GGUFFile::open(input);
  // What each tensor becomes, checked before anything is written.
  std::vector<ElementType> stored;
  for (const TensorInfo &t : in.tensors())
    stored.push_back(
        storedType(input, t, pureQuantizedType(t.shape, type), overrides));
  requireOverridden(input, in, overrides);
  return writeQuantized(input, output, in, stored, llamaFileType(type));
}

uint64_t quantizeGGUFFile(const std::string &input, const std::string &output,
                          QuantizationScheme scheme,
                          const std::map<std::string, ElementType> &overrides) {
  if (scheme != QuantizationScheme::Q4_K_M)
    return quantizeGGUFFile(input, output, schemeBaseType(scheme), overrides);
  GGUFFile in = GGUFFile::open(input);
  std::vector<TensorPlacement> at = placements(in);
  std::vector<ElementType> stored;
  for (size_t i = 0; i < in.tensors().size(); ++i) {
    const TensorInfo &t = in.tensors()[i];
    ElementType to = schemeTensorType(scheme, t.name, t.shape, at[i]);
    stored.push_back(storedType(input, t, to, overrides));
  }
  requireOverridden(input, in, overrides);
  return writeQuantized(input, output, in, stored, llamaFileType(scheme));
}

} // namespace kiln::formats
