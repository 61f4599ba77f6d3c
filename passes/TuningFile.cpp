//===- TuningFile.cpp - Tile overrides from a text file -------------------===//
//
// Part of Kiln. See TuningFile.h.
//
//===----------------------------------------------------------------------===//

#include "passes/TuningFile.h"

#include "ir/Tiling.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace llvm;

namespace kiln {

ArrayRef<StringLiteral> tuningShapeKeys(StringRef kind) {
  static constexpr StringLiteral gemm[] = {"n", "k"};
  static constexpr StringLiteral attention[] = {"heads", "kv_heads",
                                                "head_dim"};
  static constexpr StringLiteral norm[] = {"d"};
  if (kind == "matmul" || kind == "swiglu")
    return gemm;
  if (kind == "attention")
    return attention;
  if (kind == "norm")
    return norm;
  return {};
}

ArrayRef<StringLiteral> tuningSizeNames(StringRef kind) {
  // The sizes of the tiling kind the op gets (ir/Tiling.h).
  if (kind == "matmul" || kind == "swiglu")
    return tileSizeNames("gemm");
  if (kind == "norm")
    return tileSizeNames("rows");
  return tileSizeNames(kind);
}

/// Parses `key=value` with a positive integer value.
static Expected<std::pair<StringRef, int64_t>>
parseAssignment(StringRef word, const Twine &where) {
  auto [key, value] = word.split('=');
  int64_t number;
  if (key.empty() || value.empty() || value.getAsInteger(10, number) ||
      number < 1)
    return createStringError(inconvertibleErrorCode(),
                             where +
                                 ": expected key=N with N a positive "
                                 "integer, got '" +
                                 word + "'");
  return std::make_pair(key, number);
}

static std::string list(ArrayRef<StringLiteral> names) {
  return join(map_range(names, [](StringLiteral n) { return n.str(); }), ", ");
}

Expected<SmallVector<TuningEntry>> parseTuningFile(StringRef path,
                                                   StringRef text) {
  SmallVector<TuningEntry> entries;
  SmallVector<StringRef> lines;
  text.split(lines, '\n');
  for (auto [index, rawLine] : enumerate(lines)) {
    std::string where = (path + ":" + Twine(index + 1)).str();
    StringRef line = rawLine.split('#').first.trim();
    if (line.empty())
      continue;
    auto fail = [&](const Twine &message) {
      return createStringError(inconvertibleErrorCode(),
                               where + ": " + message);
    };
    auto [selector, override] = line.split(':');
    if (override.data() == nullptr || !line.contains(':'))
      return fail("expected 'OP [key=N ...] : PHASE size=N ...', got '" + line +
                  "'");
    SmallVector<StringRef> left, right;
    SplitString(selector, left);
    SplitString(override, right);
    TuningEntry entry;
    entry.location = where;
    if (left.empty())
      return fail("missing the op kind (matmul, swiglu, attention or norm)");
    entry.kind = left.front().str();
    if (tuningShapeKeys(entry.kind).empty())
      return fail("unknown op kind '" + entry.kind +
                  "' (expected matmul, swiglu, attention or norm)");
    for (StringRef word : ArrayRef(left).drop_front()) {
      auto kv = parseAssignment(word, where);
      if (!kv)
        return kv.takeError();
      if (!is_contained(tuningShapeKeys(entry.kind), kv->first))
        return fail("'" + kv->first + "' is not a shape key of " + entry.kind +
                    " (expected " + list(tuningShapeKeys(entry.kind)) + ")");
      entry.shape[kv->first] = kv->second;
    }
    if (right.empty() ||
        (right.front() != "decode" && right.front() != "prefill"))
      return fail("expected the phase 'decode' or 'prefill' after ':'");
    entry.phase = right.front().str();
    if (right.size() == 1)
      return fail("no tile sizes after '" + entry.phase + "'");
    for (StringRef word : ArrayRef(right).drop_front()) {
      auto kv = parseAssignment(word, where);
      if (!kv)
        return kv.takeError();
      if (!is_contained(tuningSizeNames(entry.kind), kv->first))
        return fail("'" + kv->first + "' is not a tile size of " + entry.kind +
                    " (expected " + list(tuningSizeNames(entry.kind)) + ")");
      entry.sizes.push_back({kv->first.str(), kv->second});
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

Expected<SmallVector<TuningEntry>> loadTuningFile(StringRef path) {
  auto buffer = MemoryBuffer::getFile(path);
  if (!buffer)
    return createStringError(buffer.getError(),
                             "cannot read tuning file '" + path +
                                 "': " + buffer.getError().message());
  return parseTuningFile(path, (*buffer)->getBuffer());
}

} // namespace kiln
