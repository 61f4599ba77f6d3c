//===- ModelFileOutput.cpp - What the model writers share -----------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "frontends/formats/ModelFileOutput.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace kiln::formats {

//===----------------------------------------------------------------------===//
// OutputFile
//===----------------------------------------------------------------------===//

OutputFile::OutputFile(const std::string &path)
    : filePath(path), file(std::fopen(path.c_str(), "wb")) {
  if (!file)
    fail("cannot create");
}

OutputFile::~OutputFile() {
  if (file)
    std::fclose(file);
}

void OutputFile::write(const void *data, size_t n) {
  if (n && std::fwrite(data, 1, n, file) != n)
    fail("cannot write");
  written += n;
}

void OutputFile::pad(uint64_t alignment) {
  static const char zeros[64] = {};
  while (written % alignment)
    write(zeros,
          std::min<uint64_t>(sizeof zeros, alignment - written % alignment));
}

uint64_t OutputFile::finish() {
  std::FILE *f = file;
  file = nullptr;
  if (std::fclose(f) != 0)
    fail("cannot write");
  return written;
}

void OutputFile::fail(const char *what) {
  throw std::runtime_error(filePath + ": " + what + " (" +
                           std::strerror(errno) + ")");
}

//===----------------------------------------------------------------------===//
// Checks
//===----------------------------------------------------------------------===//

uint32_t floatBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

void requireValidConfig(const ModelConfig &config, const std::string &path) {
  if (auto problem = config.validate())
    throw std::invalid_argument(path +
                                ": bad model configuration: " + *problem);
}

void requireStorableType(ElementType type, const char *format) {
  if (type != ElementType::F32 && type != ElementType::F16 &&
      type != ElementType::BF16)
    throw std::invalid_argument(std::string(format) +
                                " weights are written as f32, f16 or bf16, "
                                "not " +
                                elementTypeName(type) +
                                " (Kiln does not quantize)");
}

uint64_t storedBytes(const ModelTensor &tensor, ElementType type) {
  return static_cast<uint64_t>(tensor.numElements()) *
         static_cast<uint64_t>(blockBytes(type));
}

//===----------------------------------------------------------------------===//
// Tensor data
//===----------------------------------------------------------------------===//

namespace {

/// Elements converted and written at a time.
constexpr int64_t kSlice = int64_t(1) << 16;

bool isQueryOrKey(const std::string &name) {
  return name.find("attn_q.") != std::string::npos ||
         name.find("attn_k.") != std::string::npos;
}

/// Writes `values` as `type`.
void encode(OutputFile &out, const std::vector<float> &values, ElementType type,
            std::string &bytes) {
  int width = type == ElementType::F32 ? 4 : 2;
  bytes.resize(values.size() * width);
  char *p = bytes.data();
  for (float f : values) {
    uint32_t bits = type == ElementType::F16    ? floatToHalf(f)
                    : type == ElementType::BF16 ? floatToBf16(f)
                                                : floatBits(f);
    for (int b = 0; b < width; ++b)
      *p++ = static_cast<char>((bits >> (8 * b)) & 0xff);
  }
  out.write(bytes);
}

} // namespace

void writeTensorValues(OutputFile &out, const TensorSource &source,
                       const ModelTensor &tensor, ElementType type,
                       const ModelConfig &config, RopePairs stored) {
  std::unique_ptr<TensorValueStream> values = source.values(tensor);
  std::vector<float> slice;
  std::string bytes;
  int64_t n = tensor.numElements();
  if (config.ropePairs == stored || !isQueryOrKey(tensor.name)) {
    for (int64_t done = 0; done < n;) {
      int64_t count = std::min(kSlice, n - done);
      slice.resize(static_cast<size_t>(count));
      values->next(slice.data(), count);
      encode(out, slice, type, bytes);
      done += count;
    }
    return;
  }

  // One head's rows at a time: row i of a head with pairs (i, i + d/2) is
  // row 2i with adjacent pairs, row i + d/2 is row 2i + 1.
  int64_t d = config.headDim;
  int64_t rows = tensor.shape.empty() ? 1 : tensor.shape[0];
  int64_t rowSize = rows ? n / rows : 0;
  if (rows % d != 0)
    throw std::invalid_argument(out.path() + ": tensor '" + tensor.name +
                                "' has " + std::to_string(rows) +
                                " rows, not whole heads of " +
                                std::to_string(d));
  std::vector<float> head(static_cast<size_t>(d * rowSize));
  slice.resize(head.size());
  for (int64_t h = 0; h < rows / d; ++h) {
    values->next(head.data(), d * rowSize);
    for (int64_t i = 0; i < d / 2; ++i)
      for (int64_t pair = 0; pair < 2; ++pair) {
        int64_t adjacent = 2 * i + pair, halves = i + pair * (d / 2);
        int64_t from = stored == RopePairs::Halves ? adjacent : halves;
        int64_t to = stored == RopePairs::Halves ? halves : adjacent;
        std::copy_n(head.begin() + from * rowSize, rowSize,
                    slice.begin() + to * rowSize);
      }
    encode(out, slice, type, bytes);
  }
}

} // namespace kiln::formats
