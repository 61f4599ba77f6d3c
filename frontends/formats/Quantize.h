//===- Quantize.h - Float weights into Q8_0 and Q4_0 blocks -----*- C++ -*-===//
//
// Part of Kiln. Quantizes float32 rows into GGUF's Q8_0 and Q4_0 blocks (the
// layouts are ElementType.h's) by the rules of llama.cpp's reference
// quantizer, so that the blocks are the ones `llama-quantize --pure` writes,
// byte for byte (test/unit/QuantizeTest.cpp compares every block of the
// shared fixtures). The rules, per block of 32 weights x
// (docs/quantization.md):
//
//   Q8_0: amax = max |x|; d = amax / 127 in float; the stored scale is d
//         rounded to f16 (nearest, ties to even); with id = 1/d (0 when d is
//         0), q = round(x * id), halfway cases away from zero (C's roundf).
//   Q4_0: m = the x of largest magnitude, the first one on ties, with its
//         sign; d = m / -8 in float, stored as f16; with id = 1/d (0 when d
//         is 0), q = min(15, trunc(x * id + 8.5)): the largest-magnitude
//         weight becomes q = 0 (-8 d), the others lie in 0..15.
//
// The products use the unrounded float d; only the stored scale is f16.
// Every multiply and add is one float operation, rounded on its own (never
// fused into an FMA), as the reference computes them.
//
// What the reference leaves undefined is refused here: NaN or infinite
// weights, and blocks whose scale exceeds f16's range (|w| above 65504 * 127
// for Q8_0, 65504 * 8 for Q4_0), throw std::invalid_argument naming the
// tensor, row and column. MLIR-free.
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

/// Whether `type` is a block-quantized type Kiln writes (Q8_0, Q4_0).
bool isBlockQuantized(ElementType type);

/// "q8_0" -> Q8_0, "q4_0" -> Q4_0; nothing for any other name.
std::optional<ElementType> parseQuantizedType(const std::string &name);

/// Quantizes `n` floats at `src` into n / 32 blocks of `type` (Q8_0 or Q4_0)
/// at `dst` (rowBytes(type, n) bytes). `tensor` and `row` name the values in
/// errors: a length that is not a multiple of 32, a NaN or infinite weight,
/// a scale beyond f16's range (std::invalid_argument).
void quantizeRow(ElementType type, const float *src, uint8_t *dst, int64_t n,
                 const std::string &tensor = "", int64_t row = 0);

/// Quantizes a tensor of `shape` (outermost first; rows are the innermost
/// dimension) held row-major at `values` into `type`'s blocks, rows one after
/// another as GGUF stores them. Throws std::invalid_argument naming `tensor`
/// when the row length is not a multiple of 32, or as quantizeRow does.
std::vector<uint8_t> quantizeTensor(ElementType type, const std::string &tensor,
                                    const std::vector<int64_t> &shape,
                                    const float *values);

/// The type a tensor of `shape` is stored as when a model is quantized to
/// `type` as `llama-quantize --pure` does it: 1-D tensors (RMSNorm weights,
/// biases) stay F32; every matrix, token_embd and output included, becomes
/// `type`.
ElementType pureQuantizedType(const std::vector<int64_t> &shape,
                              ElementType type);

/// Writes a copy of the GGUF file `input` (F32, F16 or BF16 tensors) to
/// `output` with every tensor pureQuantizedType(shape, type) makes Q8_0 or
/// Q4_0 quantized by quantizeTensor: what `llama-quantize --pure` does.
/// The metadata is copied in its order, general.file_type set to
/// llamaFileType(type) and general.quantization_version (2) added; 1-D
/// tensors are copied as they are. Throws FormatError for an input Kiln
/// cannot read, std::invalid_argument naming the tensor for one that cannot
/// be quantized (a quantized input, a row length not a multiple of 32, NaN
/// or infinite weights) -- before `output` is created when the directory
/// shows it -- and std::runtime_error when `output` cannot be written.
/// Returns the bytes written.
///
/// `overrides` names tensors stored otherwise, as llama-quantize's
/// --output-tensor-type and --token-embedding-type do: a block type (Q8_0,
/// Q4_0), or the input's own type to keep the tensor as it is. Mixed files
/// like llama.cpp's default mixes (Q4_0 matrices, a Q8_0 classifier) are
/// made this way.
uint64_t
quantizeGGUFFile(const std::string &input, const std::string &output,
                 ElementType type,
                 const std::map<std::string, ElementType> &overrides = {});

/// llama.cpp's LLAMA_FTYPE for a file of `type` weights (general.file_type):
/// 0 F32, 1 F16, 32 BF16, 7 Q8_0, 2 Q4_0.
uint32_t llamaFileType(ElementType type);

} // namespace kiln::formats

#endif // KILN_FRONTENDS_FORMATS_QUANTIZE_H
