//===- Llama2c.cpp - Reading llama2.c checkpoints -------------------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "frontends/formats/Llama2c.h"

#include "frontends/formats/FormatError.h"

#include <cstring>

namespace kiln::formats {

namespace {

int32_t readInt32(const uint8_t *p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

/// Lays out the float32 tensors of a checkpoint after `offset`, in
/// llama2.c's order, checking each fits in the file.
class TensorLayout {
public:
  TensorLayout(const MappedFile &file, uint64_t offset)
      : file(file), offset(offset) {}

  /// Adds `count` tensors (one per layer when perLayer) of `shape`.
  void add(const std::string &name, std::vector<int64_t> shape) {
    TensorInfo t;
    t.name = name;
    t.shape = std::move(shape);
    t.type = ElementType::F32;
    t.offset = offset;
    t.bytes = static_cast<uint64_t>(t.numElements()) * 4;
    if (t.offset + t.bytes > file.size())
      throw FormatError(file.path(),
                        "truncated: tensor '" + name + "' needs bytes [" +
                            std::to_string(t.offset) + ", " +
                            std::to_string(t.offset + t.bytes) +
                            ") but the file has " +
                            std::to_string(file.size()) + " bytes");
    offset += t.bytes;
    tensors.push_back(std::move(t));
  }

  void addPerLayer(int64_t layers, const char *suffix,
                   const std::vector<int64_t> &shape) {
    for (int64_t l = 0; l < layers; ++l)
      add(layerTensorName(l, suffix), shape);
  }

  /// Skips bytes that hold no tensor Kiln uses.
  void skip(uint64_t bytes, const char *what) {
    if (offset + bytes > file.size())
      throw FormatError(file.path(), std::string("truncated: ") + what +
                                         " runs past the end of the file");
    offset += bytes;
  }

  uint64_t position() const { return offset; }
  std::vector<TensorInfo> tensors;

private:
  const MappedFile &file;
  uint64_t offset;
};

} // namespace

Llama2cCheckpoint readLlama2c(std::shared_ptr<const MappedFile> file) {
  const std::string &path = file->path();
  const uint8_t *bytes = file->data();
  Llama2cCheckpoint ckpt;
  ckpt.file = file;

  uint64_t headerBytes = 0;
  const uint8_t *header = bytes;
  bool sharedClassifier = true;
  if (file->size() >= 8 &&
      static_cast<uint32_t>(readInt32(bytes)) == kLlama2cMagic) {
    ckpt.version = readInt32(bytes + 4);
    if (ckpt.version == 2)
      throw FormatError(path, "llama2.c export version 2 (int8 weights in "
                              "groups with float32 scales) is not supported; "
                              "export version 1 (float32) or convert to GGUF");
    if (ckpt.version != 1)
      throw FormatError(path, "unknown llama2.c export version " +
                                  std::to_string(ckpt.version) +
                                  "; expected 1");
    headerBytes = 256;
    header = bytes + 8;
    if (file->size() < headerBytes)
      throw FormatError(path, "truncated: the version 1 header needs 256 "
                              "bytes, the file has " +
                                  std::to_string(file->size()));
    sharedClassifier = bytes[8 + 7 * 4] != 0;
  } else {
    headerBytes = 7 * 4;
    if (file->size() < headerBytes)
      throw FormatError(path, "truncated: a llama2.c checkpoint starts with "
                              "7 int32 (28 bytes), the file has " +
                                  std::to_string(file->size()));
  }

  ModelConfig &c = ckpt.config;
  c.architecture = "llama";
  c.dim = readInt32(header);
  c.hiddenDim = readInt32(header + 4);
  c.numLayers = readInt32(header + 8);
  c.numHeads = readInt32(header + 12);
  c.numKvHeads = readInt32(header + 16);
  int32_t vocab = readInt32(header + 20);
  c.contextLength = readInt32(header + 24);
  if (ckpt.version == 0) {
    // The legacy format flags an unshared classifier with a negative vocab.
    sharedClassifier = vocab > 0;
    vocab = vocab < 0 ? -static_cast<int64_t>(vocab) : vocab;
  }
  c.vocabSize = vocab;
  c.tiedClassifier = sharedClassifier;
  c.ropePairs = RopePairs::Adjacent;
  c.ropeTheta = 10000.0;
  c.normEpsilon = 1e-5;
  if (c.numHeads <= 0 || c.dim % c.numHeads != 0)
    throw FormatError(path, "dim " + std::to_string(c.dim) +
                                " is not a multiple of n_heads " +
                                std::to_string(c.numHeads));
  c.headDim = c.dim / c.numHeads;
  if (auto problem = c.validate())
    throw FormatError(path, "bad header: " + *problem);

  int64_t kvDim = c.numKvHeads * c.headDim;
  TensorLayout layout(*file, headerBytes);
  if (ckpt.version == 1) {
    // export.py version 1 writes the norms first, then the embedding and the
    // matrices.
    layout.addPerLayer(c.numLayers, "attn_norm.weight", {c.dim});
    layout.addPerLayer(c.numLayers, "ffn_norm.weight", {c.dim});
    layout.add("output_norm.weight", {c.dim});
    layout.add("token_embd.weight", {c.vocabSize, c.dim});
    layout.addPerLayer(c.numLayers, "attn_q.weight", {c.dim, c.dim});
    layout.addPerLayer(c.numLayers, "attn_k.weight", {kvDim, c.dim});
    layout.addPerLayer(c.numLayers, "attn_v.weight", {kvDim, c.dim});
    layout.addPerLayer(c.numLayers, "attn_output.weight", {c.dim, c.dim});
    layout.addPerLayer(c.numLayers, "ffn_gate.weight", {c.hiddenDim, c.dim});
    layout.addPerLayer(c.numLayers, "ffn_down.weight", {c.dim, c.hiddenDim});
    layout.addPerLayer(c.numLayers, "ffn_up.weight", {c.hiddenDim, c.dim});
  } else {
    layout.add("token_embd.weight", {c.vocabSize, c.dim});
    layout.addPerLayer(c.numLayers, "attn_norm.weight", {c.dim});
    layout.addPerLayer(c.numLayers, "attn_q.weight", {c.dim, c.dim});
    layout.addPerLayer(c.numLayers, "attn_k.weight", {kvDim, c.dim});
    layout.addPerLayer(c.numLayers, "attn_v.weight", {kvDim, c.dim});
    layout.addPerLayer(c.numLayers, "attn_output.weight", {c.dim, c.dim});
    layout.addPerLayer(c.numLayers, "ffn_norm.weight", {c.dim});
    layout.addPerLayer(c.numLayers, "ffn_gate.weight", {c.hiddenDim, c.dim});
    layout.addPerLayer(c.numLayers, "ffn_down.weight", {c.dim, c.hiddenDim});
    layout.addPerLayer(c.numLayers, "ffn_up.weight", {c.hiddenDim, c.dim});
    layout.add("output_norm.weight", {c.dim});
    // The legacy RoPE tables (freq_cis_real, freq_cis_imag): Kiln computes
    // RoPE itself.
    layout.skip(static_cast<uint64_t>(c.contextLength) * c.headDim * 4,
                "the legacy freq_cis tables");
  }
  if (!c.tiedClassifier)
    layout.add("output.weight", {c.vocabSize, c.dim});
  ckpt.tensors = std::move(layout.tensors);
  return ckpt;
}

Llama2cCheckpoint readLlama2c(const std::string &path) {
  return readLlama2c(MappedFile::open(path));
}

} // namespace kiln::formats
