//===- ReferenceKVCache.h - The interpreter's KV cache ----------*- C++ -*-===//
//
// Part of Kiln. The simplest KV cache that implements !kiln.kv_cache: per
// sequence and layer, a growable array of positions. Entries are rounded to
// the cache's storage type on write, as a real cache of that type would.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_INTERPRETER_REFERENCEKVCACHE_H
#define KILN_IR_INTERPRETER_REFERENCEKVCACHE_H

#include "ir/KilnTypes.h"

#include "llvm/ADT/APFloat.h"

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace kiln {

template <typename T> class ReferenceKVCache {
public:
  /// A cache of the given type (layers, heads, head size, storage type).
  explicit ReferenceKVCache(KVCacheType type)
      : numLayers(type.getNumLayers()),
        entrySize(type.getNumKvHeads() * type.getHeadDim()),
        numKvHeads(type.getNumKvHeads()), headDim(type.getHeadDim()),
        storage(&llvm::cast<mlir::FloatType>(type.getElementType())
                     .getFloatSemantics()) {}

  int64_t layers() const { return numLayers; }
  int64_t kvHeads() const { return numKvHeads; }
  int64_t headSize() const { return headDim; }

  /// Writes the [Hkv * d] key and value of one token.
  void append(int64_t layer, int32_t seq, int32_t pos, const T *key,
              const T *value) {
    if (pos < 0)
      throw std::out_of_range("kv cache: negative position " +
                              std::to_string(pos));
    Layer &l = layerOf(seq, layer);
    size_t needed = static_cast<size_t>(pos + 1) * entrySize;
    if (l.keys.size() < needed) {
      l.keys.resize(needed, T(0));
      l.values.resize(needed, T(0));
    }
    for (int64_t i = 0; i < entrySize; ++i) {
      l.keys[pos * entrySize + i] = round(key[i]);
      l.values[pos * entrySize + i] = round(value[i]);
    }
  }

  /// Copies the entry at (layer, seq, pos) into key/value; zeros where the
  /// sequence has not written that position.
  void read(int64_t layer, int32_t seq, int32_t pos, T *key, T *value) const {
    const Layer *l = find(seq, layer);
    bool present = l && pos >= 0 &&
                   static_cast<size_t>(pos + 1) * entrySize <= l->keys.size();
    for (int64_t i = 0; i < entrySize; ++i) {
      key[i] = present ? l->keys[pos * entrySize + i] : T(0);
      value[i] = present ? l->values[pos * entrySize + i] : T(0);
    }
  }

  /// Forgets a sequence (its slot can be reused).
  void release(int32_t seq) { sequences.erase(seq); }

private:
  struct Layer {
    std::vector<T> keys, values; ///< [positions, Hkv, d]
  };

  Layer &layerOf(int32_t seq, int64_t layer) {
    std::vector<Layer> &layers = sequences[seq];
    if (layers.empty())
      layers.resize(numLayers);
    return layers.at(layer);
  }

  const Layer *find(int32_t seq, int64_t layer) const {
    auto it = sequences.find(seq);
    if (it == sequences.end())
      return nullptr;
    return &it->second.at(layer);
  }

  /// Rounds to the storage type (round to nearest even), as storing there
  /// would.
  T round(T x) const {
    if (storage == &llvm::APFloat::IEEEsingle())
      return static_cast<T>(static_cast<float>(x));
    llvm::APFloat value(static_cast<double>(x));
    bool losesInfo;
    value.convert(*storage, llvm::APFloat::rmNearestTiesToEven, &losesInfo);
    value.convert(llvm::APFloat::IEEEdouble(),
                  llvm::APFloat::rmNearestTiesToEven, &losesInfo);
    return static_cast<T>(value.convertToDouble());
  }

  int64_t numLayers, entrySize, numKvHeads, headDim;
  const llvm::fltSemantics *storage;
  std::map<int32_t, std::vector<Layer>> sequences;
};

} // namespace kiln

#endif // KILN_IR_INTERPRETER_REFERENCEKVCACHE_H
