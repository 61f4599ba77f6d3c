//===- WeightPacker.cpp - Weights in the layout kernels read --------------===//
//
// Part of Kiln. See WeightPacker.h.
//
//===----------------------------------------------------------------------===//

#include "codegen/WeightPacker.h"

#include "frontends/formats/ElementType.h"
#include "ir/KilnOps.h"
#include "ir/KilnTypes.h"

#include "llvm/ADT/Twine.h"

#include <stdexcept>

using namespace mlir;

namespace kiln::codegen {

llvm::StringRef packedTypeName(PackedType type) {
  switch (type) {
  case PackedType::F32:
    return "f32";
  case PackedType::F16:
    return "f16";
  case PackedType::BF16:
    return "bf16";
  case PackedType::Q8_0:
    return "q8_0";
  case PackedType::Q4_0:
    return "q4_0";
  case PackedType::Q4_K:
    return "q4_k";
  case PackedType::Q5_K:
    return "q5_k";
  case PackedType::Q6_K:
    return "q6_k";
  }
  return "?";
}

bool isQuantized(PackedType type) {
  return type != PackedType::F32 && type != PackedType::F16 &&
         type != PackedType::BF16;
}

bool isKQuant(PackedType type) {
  return type == PackedType::Q4_K || type == PackedType::Q5_K ||
         type == PackedType::Q6_K;
}

PackedType packedTypeOf(Type elementType) {
  if (elementType.isF16())
    return PackedType::F16;
  if (elementType.isBF16())
    return PackedType::BF16;
  if (isa<Q8_0Type>(elementType))
    return PackedType::Q8_0;
  if (isa<Q4_0Type>(elementType))
    return PackedType::Q4_0;
  if (isa<Q4_KType>(elementType))
    return PackedType::Q4_K;
  if (isa<Q5_KType>(elementType))
    return PackedType::Q5_K;
  if (isa<Q6_KType>(elementType))
    return PackedType::Q6_K;
  return PackedType::F32;
}

int64_t quantizedBlockSize(PackedType type) {
  return isKQuant(type) ? 256 : kQuantBlock;
}

int64_t quantizedBlockBytes(PackedType type) {
  switch (type) {
  case PackedType::Q8_0:
    return 34;
  case PackedType::Q4_0:
    return 18;
  case PackedType::Q4_K:
    return 144;
  case PackedType::Q5_K:
    return 176;
  case PackedType::Q6_K:
    return 210;
  default:
    return 0;
  }
}

int64_t kQuantPanelColumnBytes(PackedType type) {
  return type == PackedType::Q4_K ? 148 : type == PackedType::Q5_K ? 180 : 210;
}

namespace {

/// One row's K-quant super-block `src` (GGUF's bytes) into column c of the
/// panel super-block `dst` of nr columns (codegen/cpu/kernels/KQuant.h's
/// layout): the f16 scales as they are, the 6-bit scales and mins of Q4_K
/// and Q5_K unpacked to bytes in pairs of sub-blocks, the level bytes in
/// groups of 4 per column.
void packKQuantColumn(PackedType type, const uint8_t *src, uint8_t *dst,
                      int64_t nr, int64_t c) {
  auto groups = [&](const uint8_t *from, int64_t count, uint8_t *to) {
    for (int64_t g = 0; g < count; ++g)
      for (int64_t i = 0; i < 4; ++i)
        to[g * 4 * nr + 4 * c + i] = from[4 * g + i];
  };
  if (type == PackedType::Q6_K) {
    // GGUF: ql[128], qh[64], int8 scales[16], f16 d.
    dst[2 * c] = src[208];
    dst[2 * c + 1] = src[209];
    for (int64_t j = 0; j < 16; ++j)
      dst[2 * nr + (j / 2) * 2 * nr + 2 * c + j % 2] = src[192 + j];
    // Then 48 slots of 4 bytes a row, in the order the dot product reads
    // them: per half n, ql group 16n + g and qh group 8n + g alternating,
    // then ql groups 16n + 8 .. 16n + 15 (KQuant.h's q6k_ql_slot and
    // q6k_qh_slot).
    auto slot = [&](const uint8_t *from, int64_t z) {
      for (int64_t i = 0; i < 4; ++i)
        dst[18 * nr + z * 4 * nr + 4 * c + i] = from[i];
    };
    for (int64_t t = 0; t < 32; ++t) {
      const int64_t n = t / 16, r = t % 16;
      slot(src + 4 * t, 24 * n + (r < 8 ? 2 * r : 8 + r));
    }
    for (int64_t u = 0; u < 16; ++u)
      slot(src + 128 + 4 * u, 24 * (u / 8) + 2 * (u % 8) + 1);
    return;
  }
  // GGUF: f16 d, f16 dmin, scales[12], (Q5_K: qh[32]), qs[128].
  dst[2 * c] = src[0];
  dst[2 * c + 1] = src[1];
  dst[2 * nr + 2 * c] = src[2];
  dst[2 * nr + 2 * c + 1] = src[3];
  for (int j = 0; j < 8; ++j) {
    uint8_t scale, min;
    formats::unpackKScaleMin(src + 4, j, scale, min);
    dst[4 * nr + (j / 2) * 2 * nr + 2 * c + j % 2] = scale;
    dst[12 * nr + (j / 2) * 2 * nr + 2 * c + j % 2] = min;
  }
  if (type == PackedType::Q5_K) {
    groups(src + 16, 8, dst + 20 * nr);
    groups(src + 48, 32, dst + 52 * nr);
  } else {
    groups(src + 16, 32, dst + 20 * nr);
  }
}

} // namespace

WeightPacker::WeightPacker(WeightProvider &provider, const std::string &path)
    : provider(provider), out(path, std::ios::binary | std::ios::trunc),
      path(path) {
  if (!out)
    throw std::runtime_error("cannot write the packed weights to '" + path +
                             "'");
}

std::vector<float> WeightPacker::read(Value weight, std::string &name) {
  auto type = cast<RankedTensorType>(weight.getType());
  if (auto op = weight.getDefiningOp<WeightOp>()) {
    name = op.getName().str();
    const float *data = provider.getWeight(name, type);
    return std::vector<float>(data, data + type.getNumElements());
  }
  if (auto concat = weight.getDefiningOp<ConcatOp>();
      concat && concat.getAxis() == 0) {
    std::vector<float> all;
    for (Value piece : concat.getInputs()) {
      std::string pieceName;
      std::vector<float> part = read(piece, pieceName);
      all.insert(all.end(), part.begin(), part.end());
      name += (name.empty() ? "" : "+") + pieceName;
    }
    return all;
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  if (Operation *op = weight.getDefiningOp())
    os << op->getName() << " at " << op->getLoc();
  else
    os << "a block argument";
  throw std::runtime_error("codegen: a weight operand must be a kiln.weight "
                           "or a kiln.concat of weights along axis 0, got " +
                           text);
}

std::vector<uint8_t> WeightPacker::readBlocks(Value weight, PackedType type,
                                              std::string &name) {
  auto tensor = cast<RankedTensorType>(weight.getType());
  if (auto op = weight.getDefiningOp<WeightOp>()) {
    name = op.getName().str();
    if (packedTypeOf(tensor.getElementType()) != type)
      throw std::runtime_error("codegen: weight '" + name + "' is not " +
                               packedTypeName(type).str() + " blocks");
    int64_t bytes = tensor.getNumElements() / quantizedBlockSize(type) *
                    quantizedBlockBytes(type);
    const uint8_t *data = provider.getBlocks(name, tensor);
    return std::vector<uint8_t>(data, data + bytes);
  }
  if (auto concat = weight.getDefiningOp<ConcatOp>();
      concat && concat.getAxis() == 0) {
    std::vector<uint8_t> all;
    for (Value piece : concat.getInputs()) {
      std::string pieceName;
      std::vector<uint8_t> part = readBlocks(piece, type, pieceName);
      all.insert(all.end(), part.begin(), part.end());
      name += (name.empty() ? "" : "+") + pieceName;
    }
    return all;
  }
  (void)read(weight, name); // throws, naming the op that is not a weight
  throw std::runtime_error("codegen: weight '" + name + "' has no blocks");
}

void WeightPacker::describe(const std::string &name, const char *layout,
                            int64_t rows, int64_t cols, int64_t nr,
                            PackedType type, const char *pairs,
                            int64_t offset) {
  runtime::PackedWeight entry;
  entry.name = name;
  entry.layout = layout;
  entry.rows = rows;
  entry.cols = cols;
  entry.panelRows = nr;
  entry.type = packedTypeName(type).str();
  entry.pairs = pairs;
  entry.offset = offset;
  entry.bytes = size - offset;
  described.push_back(entry);
}

int64_t WeightPacker::append(const void *data, int64_t bytes) {
  // Every entry starts on a cache line (and so is vector-aligned).
  static const char zeros[64] = {};
  int64_t pad = (64 - size % 64) % 64;
  out.write(zeros, pad);
  size += pad;
  int64_t offset = size;
  out.write(static_cast<const char *>(data), bytes);
  size += bytes;
  if (!out)
    throw std::runtime_error("writing the packed weights to '" + path +
                             "' failed");
  return offset;
}

int64_t WeightPacker::packPanels(Value weight, int64_t nr, PackedType type,
                                 PanelLayout layout, int64_t lanes) {
  auto shape = cast<RankedTensorType>(weight.getType()).getShape();
  int64_t n = shape[0], k = shape[1];
  if (isQuantized(type))
    throw std::runtime_error("codegen: quantized panels are packed by "
                             "packQuantizedPanels");
  if (layout != PanelLayout::Plain && type != PackedType::BF16)
    throw std::runtime_error("codegen: pair layouts are for bf16 panels");
  if (layout == PanelLayout::LanePairs && (lanes <= 0 || nr % (2 * lanes)))
    throw std::runtime_error("codegen: lane pairs need nr a multiple of "
                             "twice the vector width");
  std::string name;
  std::vector<float> w = read(weight, name);
  static const char *layoutNames[] = {"", " (lane pairs)", " (k pairs)"};
  const char *layoutName = layoutNames[int(layout)];
  std::string key =
      (name + "|panels" + llvm::Twine(nr) + "|" + packedTypeName(type) +
       layoutName + "|" + llvm::Twine(lanes))
          .str();
  if (auto it = packed.find(key); it != packed.end())
    return it->second;
  // k rows per panel: K, or K rounded up to pairs.
  int64_t kp = layout == PanelLayout::KPairs ? k + (k & 1) : k;
  int64_t panels = (n + nr - 1) / nr;
  std::vector<float> panel(panels * kp * nr, 0.0f);
  for (int64_t p = 0; p < panels; ++p)
    for (int64_t kk = 0; kk < k; ++kk)
      for (int64_t r = 0; r < nr && p * nr + r < n; ++r) {
        float value = w[(p * nr + r) * k + kk];
        if (layout == PanelLayout::KPairs) // pair row kk / 2, lane r
          panel[(p * kp + kk - kk % 2) * nr + 2 * r + kk % 2] = value;
        else
          panel[(p * kp + kk) * nr + r] = value;
      }
  if (layout == PanelLayout::LanePairs) {
    // Within each group of 2L columns: lane l = columns (l, l + L).
    std::vector<float> paired(panel.size());
    for (size_t row = 0; row < panel.size(); row += size_t(nr))
      for (int64_t g = 0; g < nr; g += 2 * lanes)
        for (int64_t l = 0; l < lanes; ++l) {
          paired[row + g + 2 * l] = panel[row + g + l];
          paired[row + g + 2 * l + 1] = panel[row + g + lanes + l];
        }
    panel.swap(paired);
  }
  int64_t offset;
  if (type == PackedType::F32) {
    offset = append(panel.data(), int64_t(panel.size()) * 4);
  } else {
    std::vector<uint16_t> narrow(panel.size());
    for (size_t i = 0; i < panel.size(); ++i)
      narrow[i] = type == PackedType::F16 ? formats::floatToHalf(panel[i])
                                          : formats::floatToBf16(panel[i]);
    offset = append(narrow.data(), int64_t(narrow.size()) * 2);
  }
  packed[key] = offset;
  describe(name, "panels", n, k, nr, type,
           layout == PanelLayout::LanePairs ? "lane"
           : layout == PanelLayout::KPairs  ? "k"
                                            : "",
           offset);
  return offset;
}

int64_t WeightPacker::packQuantizedPanels(Value weight, int64_t nr,
                                          PackedType type) {
  if (!isQuantized(type))
    throw std::runtime_error("codegen: packQuantizedPanels takes a "
                             "block-quantized type");
  auto shape = cast<RankedTensorType>(weight.getType()).getShape();
  int64_t n = shape[0], k = shape[1];
  std::string name;
  std::vector<uint8_t> blocks = readBlocks(weight, type, name);
  std::string key =
      (name + "|qpanels" + llvm::Twine(nr) + "|" + packedTypeName(type)).str();
  if (auto it = packed.find(key); it != packed.end())
    return it->second;
  const int64_t blockSize = quantizedBlockSize(type);
  if (k % blockSize != 0)
    throw std::runtime_error("codegen: weight '" + name + "' has rows of " +
                             std::to_string(k) + " values, not whole " +
                             packedTypeName(type).str() + " blocks of " +
                             std::to_string(blockSize));
  if (isKQuant(type)) {
    // Per panel and super-block: each column's parts (KQuant.h).
    const int64_t bb = quantizedBlockBytes(type), kb = k / blockSize;
    const int64_t cb = kQuantPanelColumnBytes(type);
    const int64_t panels = (n + nr - 1) / nr;
    std::vector<uint8_t> out(size_t(panels * kb * nr * cb), 0);
    for (int64_t row = 0; row < n; ++row)
      for (int64_t b = 0; b < kb; ++b)
        packKQuantColumn(type, blocks.data() + (row * kb + b) * bb,
                         out.data() + ((row / nr) * kb + b) * nr * cb, nr,
                         row % nr);
    int64_t offset = append(out.data(), int64_t(out.size()));
    packed[key] = offset;
    describe(name, "panels", n, k, nr, type, "", offset);
    return offset;
  }
  // Per panel and block: nr scales, then the levels in groups of 4 bytes
  // per row (docs/artifact.md, "Quantized panels"). Rows past n stay zero.
  const int64_t bb = quantizedBlockBytes(type), kb = k / kQuantBlock;
  const int64_t panels = (n + nr - 1) / nr;
  std::vector<uint8_t> out(size_t(panels * kb * nr * bb), 0);
  for (int64_t row = 0; row < n; ++row) {
    int64_t p = row / nr, c = row % nr;
    for (int64_t b = 0; b < kb; ++b) {
      const uint8_t *src = blocks.data() + (row * kb + b) * bb;
      uint8_t *dst = out.data() + (p * kb + b) * nr * bb;
      dst[2 * c] = src[0]; // the f16 scale, little-endian
      dst[2 * c + 1] = src[1];
      uint8_t *levels = dst + 2 * nr + 4 * c;
      if (type == PackedType::Q8_0) {
        for (int64_t g = 0; g < 8; ++g) // q + 128: the unsigned operand
          for (int64_t i = 0; i < 4; ++i)
            levels[g * 4 * nr + i] = uint8_t(src[2 + 4 * g + i] ^ 0x80);
      } else {
        for (int64_t chunk = 0; chunk < 4; ++chunk)
          for (int64_t i = 0; i < 4; ++i)
            levels[chunk * 4 * nr + i] = src[2 + 4 * chunk + i];
      }
    }
  }
  int64_t offset = append(out.data(), int64_t(out.size()));
  packed[key] = offset;
  describe(name, "panels", n, k, nr, type, "", offset);
  return offset;
}

int64_t WeightPacker::packPlain(Value weight) {
  std::string name;
  std::vector<float> w = read(weight, name);
  std::string key = name + "|plain";
  if (auto it = packed.find(key); it != packed.end())
    return it->second;
  int64_t offset = append(w.data(), int64_t(w.size()) * 4);
  packed[key] = offset;
  auto shape = cast<RankedTensorType>(weight.getType()).getShape();
  int64_t rows = shape.empty() ? 1 : shape[0];
  describe(name, "rows", rows, int64_t(w.size()) / std::max<int64_t>(rows, 1),
           0, PackedType::F32, "", offset);
  return offset;
}

int64_t WeightPacker::finish() {
  out.close();
  if (!out)
    throw std::runtime_error("closing the packed weights '" + path +
                             "' failed");
  return size;
}

} // namespace kiln::codegen
