//===- ModelFileOutput.h - What the model writers share ---------*- C++ -*-===//
//
// Part of Kiln; internal to kiln_formats' writers (ModelWriters.h,
// SyntheticModel.cpp). An output file that counts what it writes and names
// its path in every error, and the streaming of one tensor from a
// TensorSource into it: converted to the stored element type and, for Q
// and K, with each head's rows moved into the rotary pair layout the
// format stores. Everything is written little-endian whatever the host.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_FRONTENDS_FORMATS_MODELFILEOUTPUT_H
#define KILN_FRONTENDS_FORMATS_MODELFILEOUTPUT_H

#include "frontends/formats/ElementType.h"
#include "frontends/formats/ModelConfig.h"
#include "frontends/formats/TensorSource.h"

#include <cstdint>
#include <cstdio>
#include <string>

namespace kiln::formats {

/// An output file that counts what it writes and throws
/// std::runtime_error, naming the path, when it cannot create or write.
class OutputFile {
public:
  explicit OutputFile(const std::string &path);
  ~OutputFile();
  OutputFile(const OutputFile &) = delete;
  OutputFile &operator=(const OutputFile &) = delete;

  void write(const void *data, size_t n);
  void write(const std::string &bytes) { write(bytes.data(), bytes.size()); }
  /// Zero bytes up to the next multiple of `alignment`.
  void pad(uint64_t alignment);
  /// Closes the file; returns the bytes written.
  uint64_t finish();

  const std::string &path() const { return filePath; }

private:
  [[noreturn]] void fail(const char *what);

  std::string filePath;
  std::FILE *file;
  uint64_t written = 0;
};

/// Appends the little-endian bytes of an unsigned integer.
template <typename T> void appendLE(std::string &out, T v) {
  for (size_t i = 0; i < sizeof(T); ++i)
    out += static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff);
}

/// The bit pattern of a float.
uint32_t floatBits(float f);

/// Throws std::invalid_argument "<path>: <problem>" when `config` does not
/// validate.
void requireValidConfig(const ModelConfig &config, const std::string &path);

/// Throws std::invalid_argument unless `type` is one the writers store
/// (F32, F16, BF16: Kiln does not quantize). `format` names the format.
void requireStorableType(ElementType type, const char *format);

/// Bytes of `tensor` stored as `type` (F32, F16 or BF16).
uint64_t storedBytes(const ModelTensor &tensor, ElementType type);

/// Streams the values of `tensor` from `source` to `out` as `type` (F32,
/// F16 or BF16). Q and K weights and biases are written in the `stored`
/// rotary pair layout: when it differs from config.ropePairs each head's
/// rows are reordered (adjacent pairs (2i, 2i+1) <-> halves (i, i + d/2)).
void writeTensorValues(OutputFile &out, const TensorSource &source,
                       const ModelTensor &tensor, ElementType type,
                       const ModelConfig &config, RopePairs stored);

} // namespace kiln::formats

#endif // KILN_FRONTENDS_FORMATS_MODELFILEOUTPUT_H
