//===- Quantize.cpp - Float weights into GGUF's quantized blocks ----------===//
//
// Part of Kiln. See Quantize.h for the rules; docs/quantization.md for why
// each one is what it is. The K-quant blocks are QuantizeK.cpp's; the
// checks around them, and the Q4_K_M mix, are here.
//
//===----------------------------------------------------------------------===//

#include "frontends/formats/Quantize.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

// The reference rounds x * id and then adds 8.5 (Q4_0): two float
// operations. A compiler allowed to fuse them into one FMA (clang's default
// contracts within an expression on FMA targets, GCC's across statements)
// would round once and could move a weight across a level boundary.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace kiln::formats {

namespace {

constexpr int kBlock = 32;

/// Where values sit, for errors: "tensor 'x': row 3, column 17".
std::string where(const std::string &tensor, int64_t row, int64_t column) {
  std::string text = tensor.empty() ? "" : "tensor '" + tensor + "': ";
  return text + "row " + std::to_string(row) + ", column " +
         std::to_string(column);
}

/// Throws unless every value of the block is finite.
void requireFinite(const float *x, ElementType type, const std::string &tensor,
                   int64_t row, int64_t column) {
  for (int64_t j = 0; j < blockSize(type); ++j)
    if (!std::isfinite(x[j]))
      throw std::invalid_argument(where(tensor, row, column + j) + " is " +
                                  (std::isnan(x[j]) ? "NaN" : "infinite") +
                                  ": it cannot be " + "quantized to " +
                                  elementTypeName(type));
}

/// Stores the f16 bits of `d` at `out`, little-endian; throws when `d` is
/// beyond f16's range (the block would dequantize to infinities).
void storeScale(float d, uint8_t *out, ElementType type, float largest,
                const std::string &tensor, int64_t row, int64_t column) {
  uint16_t bits = floatToHalf(d);
  if ((bits & 0x7c00) == 0x7c00)
    throw std::invalid_argument(
        where(tensor, row, column) + ": the block's largest magnitude " +
        std::to_string(largest) + " needs a scale of " + std::to_string(d) +
        ", beyond f16's 65504: it cannot be quantized to " +
        elementTypeName(type));
  out[0] = static_cast<uint8_t>(bits & 0xff);
  out[1] = static_cast<uint8_t>(bits >> 8);
}

/// 1/d, or 0 when d is 0. A d so small that 1/d overflows (|d| < 2^-128)
/// stores a zero scale anyway; its weights are all stored as 0 then, as
/// the reference's conversion of the infinite products gives on x86.
float inverseScale(float d) {
  if (d == 0.0f)
    return 0.0f;
  float id = 1.0f / d;
  return std::isfinite(id) ? id : 0.0f;
}

void quantizeBlockQ8_0(const float *x, uint8_t *out, const std::string &tensor,
                       int64_t row, int64_t column) {
  requireFinite(x, ElementType::Q8_0, tensor, row, column);
  float amax = 0.0f;
  for (int j = 0; j < kBlock; ++j)
    amax = std::max(amax, std::fabs(x[j]));
  float d = amax / 127.0f;
  float id = inverseScale(d);
  storeScale(d, out, ElementType::Q8_0, amax, tensor, row, column);
  for (int j = 0; j < kBlock; ++j) {
    float scaled = x[j] * id; // |scaled| <= 127 (rounding cannot pass 127.5)
    int q = static_cast<int>(std::round(scaled)); // halfway: away from zero
    out[2 + j] = static_cast<uint8_t>(q & 0xff);  // two's-complement int8
  }
}

void quantizeBlockQ4_0(const float *x, uint8_t *out, const std::string &tensor,
                       int64_t row, int64_t column) {
  requireFinite(x, ElementType::Q4_0, tensor, row, column);
  // The signed value of largest magnitude, the first of equals.
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < kBlock; ++j)
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  float d = max / -8.0f;
  float id = inverseScale(d);
  storeScale(d, out, ElementType::Q4_0, amax, tensor, row, column);
  auto level = [&](float v) {
    float scaled = v * id;             // in [-8, 8] up to rounding
    float shifted = scaled + 8.5f;     // in [0.5, 16.5]: positive, so the
    int q = static_cast<int>(shifted); // conversion truncates down
    return static_cast<uint8_t>(std::min(q, 15));
  };
  for (int j = 0; j < kBlock / 2; ++j)
    out[2 + j] =
        static_cast<uint8_t>(level(x[j]) | (level(x[j + kBlock / 2]) << 4));
}

/// Whether a K-quant block's f16 d (and Q4_K/Q5_K's dmin) is infinite or
/// NaN: all exponent bits set.
bool hasNonFiniteScale(ElementType type, const uint8_t *block) {
  auto nonFinite = [](const uint8_t *half) { return (half[1] & 0x7c) == 0x7c; };
  if (type == ElementType::Q6_K)
    return nonFinite(block + 208);
  return nonFinite(block) || nonFinite(block + 2);
}

void quantizeBlockK(ElementType type, const float *x, uint8_t *out,
                    const std::string &tensor, int64_t row, int64_t column) {
  requireFinite(x, type, tensor, row, column);
  detail::quantizeKBlock(type, x, out);
  // The reference would store the infinite scale and dequantize the block
  // to infinities and NaNs; refuse the block instead.
  if (!hasNonFiniteScale(type, out))
    return;
  float largest = 0.0f;
  for (int64_t j = 0; j < blockSize(type); ++j)
    largest = std::max(largest, std::fabs(x[j]));
  throw std::invalid_argument(
      where(tensor, row, column) + ": the block's largest magnitude " +
      std::to_string(largest) +
      " needs a scale beyond f16's 65504: it cannot be quantized to " +
      elementTypeName(type));
}

void quantizeBlock(ElementType type, const float *x, uint8_t *out,
                   const std::string &tensor, int64_t row, int64_t column) {
  switch (type) {
  case ElementType::Q8_0:
    quantizeBlockQ8_0(x, out, tensor, row, column);
    return;
  case ElementType::Q4_0:
    quantizeBlockQ4_0(x, out, tensor, row, column);
    return;
  case ElementType::Q4_K:
  case ElementType::Q5_K:
  case ElementType::Q6_K:
    quantizeBlockK(type, x, out, tensor, row, column);
    return;
  case ElementType::F32:
  case ElementType::F16:
  case ElementType::BF16:
    break;
  }
}

} // namespace

bool isBlockQuantized(ElementType type) {
  switch (type) {
  case ElementType::Q8_0:
  case ElementType::Q4_0:
  case ElementType::Q4_K:
  case ElementType::Q5_K:
  case ElementType::Q6_K:
    return true;
  case ElementType::F32:
  case ElementType::F16:
  case ElementType::BF16:
    return false;
  }
  return false;
}

std::optional<ElementType> parseQuantizedType(const std::string &name) {
  for (ElementType type :
       {ElementType::Q8_0, ElementType::Q4_0, ElementType::Q4_K,
        ElementType::Q5_K, ElementType::Q6_K})
    if (name == elementTypeName(type))
      return type;
  return std::nullopt;
}

void quantizeRow(ElementType type, const float *src, uint8_t *dst, int64_t n,
                 const std::string &tensor, int64_t row) {
  if (!isBlockQuantized(type))
    throw std::invalid_argument(std::string("cannot quantize to ") +
                                elementTypeName(type) +
                                " (q8_0, q4_0, q4_k, q5_k, q6_k)");
  int64_t size = blockSize(type);
  if (n % size != 0)
    throw std::invalid_argument(
        (tensor.empty() ? std::string("a row") : "tensor '" + tensor + "'") +
        " has rows of " + std::to_string(n) + " weights, not a multiple of " +
        std::to_string(size) + ": it cannot be quantized to " +
        elementTypeName(type) + " (its blocks hold " + std::to_string(size) +
        " weights of one row)");
  int64_t bytes = blockBytes(type);
  for (int64_t b = 0; b < n / size; ++b)
    quantizeBlock(type, src + b * size, dst + b * bytes, tensor, row, b * size);
}

std::vector<uint8_t> quantizeTensor(ElementType type, const std::string &tensor,
                                    const std::vector<int64_t> &shape,
                                    const float *values) {
  int64_t rowLength = shape.empty() ? 1 : shape.back();
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i)
    rows *= shape[i];
  std::optional<uint64_t> perRow = rowBytes(type, rowLength);
  if (!perRow || !isBlockQuantized(type)) {
    // quantizeRow says what is wrong, naming the tensor.
    quantizeRow(type, values, nullptr, rowLength, tensor, 0);
    throw std::invalid_argument("tensor '" + tensor + "' cannot be quantized");
  }
  std::vector<uint8_t> out(static_cast<size_t>(*perRow) *
                           static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r)
    quantizeRow(type, values + r * rowLength, out.data() + r * *perRow,
                rowLength, tensor, r);
  return out;
}

ElementType pureQuantizedType(const std::vector<int64_t> &shape,
                              ElementType type) {
  return shape.size() <= 1 ? ElementType::F32 : type;
}

//===----------------------------------------------------------------------===//
// Schemes
//===----------------------------------------------------------------------===//

namespace {

struct SchemeInfo {
  QuantizationScheme scheme;
  const char *name;
  ElementType base;
};

constexpr SchemeInfo kSchemes[] = {
    {QuantizationScheme::Q8_0, "q8_0", ElementType::Q8_0},
    {QuantizationScheme::Q4_0, "q4_0", ElementType::Q4_0},
    {QuantizationScheme::Q4_K, "q4_k", ElementType::Q4_K},
    {QuantizationScheme::Q5_K, "q5_k", ElementType::Q5_K},
    {QuantizationScheme::Q6_K, "q6_k", ElementType::Q6_K},
    {QuantizationScheme::Q4_K_M, "q4_k_m", ElementType::Q4_K},
};

const SchemeInfo &infoOf(QuantizationScheme scheme) {
  for (const SchemeInfo &info : kSchemes)
    if (info.scheme == scheme)
      return info;
  return kSchemes[0];
}

bool contains(const std::string &name, const char *part) {
  return name.find(part) != std::string::npos;
}

bool endsWith(const std::string &name, const std::string &suffix) {
  return name.size() >= suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Whether llama-quantize quantizes a tensor at all outside --pure
/// (llama_model_quantize_impl): weights of two or more dimensions, except
/// norms, MoE routers and the small tensors of other architectures.
bool llamaQuantizes(const std::string &name,
                    const std::vector<int64_t> &shape) {
  if (shape.size() < 2 || !endsWith(name, "weight"))
    return false;
  for (const char *kept : {"_norm.weight", "ffn_gate_inp.weight",
                           "ssm_conv1d.weight", "attn_rel_b.weight"})
    if (contains(name, kept))
      return false;
  return name != "position_embd.weight" && name != "token_types.weight";
}

/// llama.cpp's use_more_bits: the first and last eighth of the layers, and
/// every third layer between them.
bool useMoreBits(int layer, int layers) {
  return layer < layers / 8 || layer >= 7 * layers / 8 ||
         (layer - layers / 8) % 3 == 2;
}

/// Q4_K_M's choice for a tensor llama-quantize quantizes, before the row
/// length is looked at.
ElementType q4KMType(const std::string &name, const TensorPlacement &at) {
  bool classifier =
      name == "output.weight" || (!at.hasOutput && name == "token_embd.weight");
  if (classifier)
    return ElementType::Q6_K;
  if (name == "token_embd.weight")
    return ElementType::Q4_K;
  if (contains(name, "attn_v.weight") || contains(name, "ffn_down"))
    return useMoreBits(at.layer, at.layerCount) ? ElementType::Q6_K
                                                : ElementType::Q4_K;
  if (contains(name, "attn_qkv.weight"))
    return ElementType::Q5_K;
  return ElementType::Q4_K;
}

/// `type` if rows of `rowLength` are whole blocks of it; else Q8_0 when they
/// are whole Q8_0 blocks; else F32 (kept as the input is).
ElementType withFallback(ElementType type, int64_t rowLength) {
  if (rowLength % blockSize(type) == 0)
    return type;
  if (rowLength % blockSize(ElementType::Q8_0) == 0)
    return ElementType::Q8_0;
  return ElementType::F32;
}

} // namespace

std::optional<QuantizationScheme>
parseQuantizationScheme(const std::string &name) {
  for (const SchemeInfo &info : kSchemes)
    if (name == info.name)
      return info.scheme;
  return std::nullopt;
}

const char *quantizationSchemeName(QuantizationScheme scheme) {
  return infoOf(scheme).name;
}

ElementType schemeBaseType(QuantizationScheme scheme) {
  return infoOf(scheme).base;
}

ElementType schemeTensorType(QuantizationScheme scheme, const std::string &name,
                             const std::vector<int64_t> &shape,
                             const TensorPlacement &placement) {
  if (scheme != QuantizationScheme::Q4_K_M)
    return pureQuantizedType(shape, schemeBaseType(scheme));
  if (!llamaQuantizes(name, shape))
    return ElementType::F32;
  return withFallback(q4KMType(name, placement), shape.back());
}

uint32_t llamaFileType(QuantizationScheme scheme) {
  if (scheme == QuantizationScheme::Q4_K_M)
    return 15; // MOSTLY_Q4_K_M
  return llamaFileType(schemeBaseType(scheme));
}

uint32_t llamaFileType(ElementType type) {
  switch (type) {
  case ElementType::F32:
    return 0; // ALL_F32
  case ElementType::F16:
    return 1; // MOSTLY_F16
  case ElementType::Q4_0:
    return 2; // MOSTLY_Q4_0
  case ElementType::Q8_0:
    return 7; // MOSTLY_Q8_0
  case ElementType::BF16:
    return 32; // MOSTLY_BF16
  case ElementType::Q4_K:
    return 15; // MOSTLY_Q4_K_M: llama-quantize's "Q4_K"
  case ElementType::Q5_K:
    return 17; // MOSTLY_Q5_K_M: llama-quantize's "Q5_K"
  case ElementType::Q6_K:
    return 18; // MOSTLY_Q6_K
  }
  return 0;
}

} // namespace kiln::formats
