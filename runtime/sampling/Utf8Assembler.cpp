//===- Utf8Assembler.cpp - Whole UTF-8 characters from a byte stream ------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "runtime/sampling/Utf8Assembler.h"

#include <cstdint>

namespace kiln::runtime {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD"; // U+FFFD

/// What a lead byte promises: how many continuation bytes follow, and the
/// range the first of them must lie in (Unicode's table 3-7: this rules
/// out overlong forms, surrogates and code points past U+10FFFF).
struct Lead {
  int continuations; ///< -1: not a lead byte.
  uint8_t low;
  uint8_t high;
};

Lead leadOf(uint8_t byte) {
  if (byte < 0x80)
    return {0, 0, 0};
  if (byte >= 0xC2 && byte <= 0xDF)
    return {1, 0x80, 0xBF};
  if (byte == 0xE0)
    return {2, 0xA0, 0xBF};
  if (byte == 0xED)
    return {2, 0x80, 0x9F};
  if (byte >= 0xE1 && byte <= 0xEF)
    return {2, 0x80, 0xBF};
  if (byte == 0xF0)
    return {3, 0x90, 0xBF};
  if (byte >= 0xF1 && byte <= 0xF3)
    return {3, 0x80, 0xBF};
  if (byte == 0xF4)
    return {3, 0x80, 0x8F};
  return {-1, 0, 0};
}

} // namespace

std::string Utf8Assembler::push(std::string_view bytes) {
  std::string in = pending;
  in.append(bytes);
  pending.clear();
  std::string out;
  size_t at = 0;
  while (at < in.size()) {
    Lead lead = leadOf(static_cast<uint8_t>(in[at]));
    if (lead.continuations < 0) {
      out += kReplacement;
      ++at;
      continue;
    }
    size_t next = at + 1;
    bool wellFormed = true;
    for (int k = 0; k < lead.continuations; ++k, ++next) {
      if (next == in.size()) {
        // So far a valid start: the rest may come with the next token.
        pending = in.substr(at);
        return out;
      }
      auto byte = static_cast<uint8_t>(in[next]);
      if (byte < (k == 0 ? lead.low : 0x80) ||
          byte > (k == 0 ? lead.high : 0xBF)) {
        wellFormed = false;
        break;
      }
    }
    // An ill-formed sequence is replaced up to the byte that broke it,
    // which starts afresh.
    if (wellFormed)
      out.append(in, at, next - at);
    else
      out += kReplacement;
    at = next;
  }
  return out;
}

std::string Utf8Assembler::finish() {
  bool cut = holding();
  pending.clear();
  return cut ? std::string(kReplacement) : std::string();
}

bool isValidUtf8(std::string_view text) {
  Utf8Assembler assembler;
  return assembler.push(text) == text && assembler.finish().empty();
}

} // namespace kiln::runtime
