//===- Quantize.h - Float weights into GGUF's quantized blocks --*- C++ -*-===//
//
// Part of Kiln. Quantizes float32 rows into GGUF's Q8_0, Q4_0, Q4_K, Q5_K
// and Q6_K blocks (the layouts are ElementType.h's) by the rules of
// llama.cpp's reference quantizers, so that the blocks are the ones
// `llama-quantize --pure` writes, byte for byte (test/unit/QuantizeTest.cpp
// and KQuantTest.cpp compare every block of the shared fixtures). The rules,
// per block of 32 weights x (docs/quantization.md):
//
//   Q8_0: amax = max |x|; d = amax / 127 in float; the stored scale is d
//         rounded to f16 (nearest, ties to even); with id = 1/d (0 when d is
//         0), q = round(x * id), halfway cases away from zero (C's roundf).
//   Q4_0: m = the x of largest magnitude, the first one on ties, with its
//         sign; d = m / -8 in float, stored as f16; with id = 1/d (0 when d
//         is 0), q = min(15, trunc(x * id + 8.5)): the largest-magnitude
//         weight becomes q = 0 (-8 d), the others lie in 0..15.
//
// The K-quants (256 weights a block) follow quantize_row_q{4,5,6}_K_ref, the
// quantizers llama-quantize runs without an importance matrix; their rules,
// a least-squares search per sub-block, are in docs/quantization.md and
// QuantizeK.cpp.
//
// The products use the unrounded float d; only the stored scale is f16.
// Every multiply and add is one float operation, rounded on its own (never
// fused into an FMA), as the reference computes them.
//
// What the reference leaves undefined is refused here: NaN or infinite
// weights, and blocks whose scale exceeds f16's range (|w| above 65504 * 127
// for Q8_0, 65504 * 8 for Q4_0, a super-block scale or min above 65504 for
// the K-quants), throw std::invalid_argument naming the tensor, row and
// column. MLIR-free.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_FRONTENDS_FORMATS_QUANTIZE_H
#define KILN_FRONTENDS_FORMATS_QUANTIZE_H

#include "frontends/formats/ElementType.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kiln::formats {

/// Whether `type` is a block-quantized type Kiln writes (Q8_0, Q4_0, Q4_K,
/// Q5_K, Q6_K).
bool isBlockQuantized(ElementType type);

/// "q8_0", "q4_0", "q4_k", "q5_k", "q6_k" -> that type; nothing for any
/// other name.
std::optional<ElementType> parseQuantizedType(const std::string &name);

/// Quantizes `n` floats at `src` into n / blockSize(type) blocks of `type`
/// (a block-quantized type) at `dst` (rowBytes(type, n) bytes). `tensor`
/// and `row` name the values in errors: a length that is not a whole number
/// of blocks, a NaN or infinite weight, a scale beyond f16's range
/// (std::invalid_argument).
void quantizeRow(ElementType type, const float *src, uint8_t *dst, int64_t n,
                 const std::string &tensor = "", int64_t row = 0);

/// Quantizes a tensor of `shape` (outermost first; rows are the innermost
/// dimension) held row-major at `values` into `type`'s blocks, rows one after
/// another as GGUF stores them. Throws std::invalid_argument naming `tensor`
/// when the row length is not a multiple of the block size, or as
/// quantizeRow does.
std::vector<uint8_t> quantizeTensor(ElementType type, const std::string &tensor,
                                    const std::vector<int64_t> &shape,
                                    const float *values);

/// The type a tensor of `shape` is stored as when a model is quantized to
/// `type` as `llama-quantize --pure` does it: 1-D tensors (RMSNorm weights,
/// biases) stay F32; every matrix, token_embd and output included, becomes
/// `type`.
ElementType pureQuantizedType(const std::vector<int64_t> &shape,
                              ElementType type);

/// How a model's tensors are quantized: one type for every matrix (what
/// `llama-quantize --pure` does), or Q4_K_M, llama.cpp's mix.
enum class QuantizationScheme { Q8_0, Q4_0, Q4_K, Q5_K, Q6_K, Q4_K_M };

/// "q8_0", "q4_0", "q4_k", "q5_k", "q6_k", "q4_k_m" -> the scheme; nothing
/// for any other name.
std::optional<QuantizationScheme>
parseQuantizationScheme(const std::string &name);

/// The name parseQuantizationScheme takes.
const char *quantizationSchemeName(QuantizationScheme scheme);

/// The type of a scheme's matrices: the type of a pure scheme, Q4_K for
/// Q4_K_M.
ElementType schemeBaseType(QuantizationScheme scheme);

/// Where a tensor sits in the model, for the mixes that treat layers
/// differently. `layer` counts the tensors of its kind before it, as
/// llama.cpp's quantizer does: for attn_v.weight the attn_v tensors (of
/// `layerCount`, the model's attn_v/attn_qkv tensors), for ffn_down the
/// ffn_down tensors (of `layerCount`, the model's block count) -- the layer
/// index in a file in the usual order. `hasOutput` says whether the model
/// has an output.weight (else token_embd.weight is the tied classifier).
struct TensorPlacement {
  int layer = 0;
  int layerCount = 1;
  bool hasOutput = true;
};

/// The type tensor `name` of `shape` is stored as under `scheme`, as
/// llama-quantize (c392e50) chooses it, or F32 for a tensor that is not
/// quantized and is kept in the input's type. Pure schemes:
/// pureQuantizedType. Q4_K_M (llama_tensor_get_type for
/// LLAMA_FTYPE_MOSTLY_Q4_K_M, the llama architecture): 1-D tensors,
/// *_norm.weight and names not ending in "weight" are kept; output.weight
/// (token_embd.weight when tied) is Q6_K; attn_v.weight and ffn_down are Q6_K
/// in the layers use_more_bits picks (the first and last eighth, and every
/// third between), else Q4_K; attn_qkv.weight is Q5_K; anything else Q4_K.
/// A row length that is not a multiple of 256 falls back to Q8_0 when it is
/// a multiple of 32 and is kept otherwise (llama.cpp falls back to Q5_0,
/// Q5_1 or Q8_0, and to F16: Kiln has no Q5_0/Q5_1 and keeps the input).
ElementType schemeTensorType(QuantizationScheme scheme, const std::string &name,
                             const std::vector<int64_t> &shape,
                             const TensorPlacement &placement = {});

/// Writes a copy of the GGUF file `input` (F32, F16 or BF16 tensors) to
/// `output` with every tensor pureQuantizedType(shape, type) makes a block
/// type quantized by quantizeTensor: what `llama-quantize --pure` does.
/// The metadata is copied in its order, general.file_type set to
/// llamaFileType(type) and general.quantization_version (2) added; 1-D
/// tensors are copied as they are. Throws FormatError for an input Kiln
/// cannot read, std::invalid_argument naming the tensor for one that cannot
/// be quantized (a quantized input, a row length not a whole number of
/// blocks, NaN or infinite weights) -- before `output` is created when the
/// directory shows it -- and std::runtime_error when `output` cannot be
/// written. Returns the bytes written.
///
/// `overrides` names tensors stored otherwise, as llama-quantize's
/// --output-tensor-type and --token-embedding-type do: a block type, or the
/// input's own type to keep the tensor as it is. Mixed files like
/// llama.cpp's default mixes (Q4_0 matrices, a Q8_0 classifier) are made
/// this way.
uint64_t
quantizeGGUFFile(const std::string &input, const std::string &output,
                 ElementType type,
                 const std::map<std::string, ElementType> &overrides = {});

/// The same for a scheme: each tensor is stored as schemeTensorType says
/// (with its placement in the file), general.file_type is
/// llamaFileType(scheme). A pure scheme is quantizeGGUFFile(its type).
uint64_t
quantizeGGUFFile(const std::string &input, const std::string &output,
                 QuantizationScheme scheme,
                 const std::map<std::string, ElementType> &overrides = {});

/// llama.cpp's LLAMA_FTYPE for a file of `type` weights (general.file_type):
/// 0 F32, 1 F16, 32 BF16, 7 Q8_0, 2 Q4_0, and for the K-quants the mix
/// llama-quantize names by the type ("Q4_K" is an alias of Q4_K_M): 15
/// Q4_K (MOSTLY_Q4_K_M), 17 Q5_K (MOSTLY_Q5_K_M), 18 Q6_K.
uint32_t llamaFileType(ElementType type);

/// general.file_type of a scheme's file: llamaFileType of a pure scheme's
/// type; 15 for Q4_K_M.
uint32_t llamaFileType(QuantizationScheme scheme);

namespace detail {

/// One 256-weight block of `type` (Q4_K, Q5_K, Q6_K) at `out` from the
/// finite weights `x`, by llama.cpp's quantize_row_q*_K_ref (QuantizeK.cpp).
/// No checks: quantizeRow refuses what the reference leaves undefined.
void quantizeKBlock(ElementType type, const float *x, uint8_t *out);

} // namespace detail

} // namespace kiln::formats

#endif // KILN_FRONTENDS_FORMATS_QUANTIZE_H
