//===- PyString.cpp - Python's str operations on UTF-8 --------------------===//
//
// Part of Kiln's Jinja engine. See PyString.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/jinja/PyString.h"

#include "runtime/jinja/Value.h"

#include <algorithm>

namespace kiln::runtime::jinja {

//===----------------------------------------------------------------------===//
// UTF-8
//===----------------------------------------------------------------------===//

CodePoints decodeUtf8(const std::string &text) {
  CodePoints out;
  out.reserve(text.size());
  const auto *bytes = reinterpret_cast<const unsigned char *>(text.data());
  size_t n = text.size();
  for (size_t i = 0; i < n;) {
    unsigned char b = bytes[i];
    int length = b < 0x80           ? 1
                 : (b >> 5) == 0x6  ? 2
                 : (b >> 4) == 0xE  ? 3
                 : (b >> 3) == 0x1E ? 4
                                    : 0;
    uint32_t c = length == 1 ? b : b & (0x7F >> length);
    bool valid = length > 0 && i + length <= n;
    for (int k = 1; valid && k < length; ++k) {
      valid = (bytes[i + k] & 0xC0) == 0x80;
      c = c << 6 | (bytes[i + k] & 0x3F);
    }
    if (!valid) {
      out.push_back(0xDC00 + b); // surrogateescape
      ++i;
      continue;
    }
    out.push_back(c);
    i += length;
  }
  return out;
}

void appendUtf8(std::string &out, uint32_t c) {
  if (c >= 0xDC80 && c <= 0xDCFF) {
    out += static_cast<char>(c - 0xDC00);
  } else if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | c >> 6);
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | c >> 12);
    out += static_cast<char>(0x80 | (c >> 6 & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | c >> 18);
    out += static_cast<char>(0x80 | (c >> 12 & 0x3F));
    out += static_cast<char>(0x80 | (c >> 6 & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

std::string encodeUtf8(const CodePoints &codePoints) {
  std::string out;
  for (uint32_t c : codePoints)
    appendUtf8(out, c);
  return out;
}

size_t codePointCount(const std::string &text) {
  return decodeUtf8(text).size();
}

//===----------------------------------------------------------------------===//
// Character classes
//===----------------------------------------------------------------------===//

bool isPySpace(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 ||
         c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
         c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

bool isPrintable(uint32_t c) {
  if (c == ' ')
    return true;
  if (c < 0x20 || (c >= 0x7F && c <= 0xA0) || c == 0xAD)
    return false;
  if (isPySpace(c))
    return false;
  // Format characters, surrogates, private use and noncharacters.
  return !((c >= 0x200B && c <= 0x200F) || (c >= 0x202A && c <= 0x202E) ||
           (c >= 0x2060 && c <= 0x206F) || c == 0xFEFF ||
           (c >= 0xD800 && c <= 0xF8FF) || (c >= 0xFFF0 && c <= 0xFFFB) ||
           c == 0xFFFE || c == 0xFFFF || c > 0x10FFFF);
}

namespace {

/// The single-character upper/lower case of `c`, or `c`.
uint32_t upperOf(uint32_t c) {
  if (c >= 'a' && c <= 'z')
    return c - 32;
  if ((c >= 0xE0 && c <= 0xFE && c != 0xF7))
    return c - 32;
  if (c == 0xFF)
    return 0x178;
  if (c == 0xB5)
    return 0x39C;
  if ((c >= 0x100 && c <= 0x137) || (c >= 0x14A && c <= 0x177))
    return c & ~1u;
  if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E))
    return c % 2 == 0 ? c - 1 : c;
  if (c == 0x131 || c == 0x17F)
    return c == 0x131 ? 'I' : 'S';
  if (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2)
    return c - 32;
  if (c == 0x3C2)
    return 0x3A3;
  if (c >= 0x430 && c <= 0x44F)
    return c - 32;
  if (c >= 0x450 && c <= 0x45F)
    return c - 80;
  return c;
}

uint32_t lowerOf(uint32_t c) {
  if (c >= 'A' && c <= 'Z')
    return c + 32;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7)
    return c + 32;
  if (c == 0x178)
    return 0xFF;
  if (c == 0x130)
    return 'i';
  if ((c >= 0x100 && c <= 0x137) || (c >= 0x14A && c <= 0x177))
    return c | 1u;
  if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E))
    return c % 2 == 1 ? c + 1 : c;
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2)
    return c + 32;
  if (c >= 0x410 && c <= 0x42F)
    return c + 32;
  if (c >= 0x400 && c <= 0x40F)
    return c + 80;
  return c;
}

bool isCased(uint32_t c) {
  return upperOf(c) != c || lowerOf(c) != c || c == 0xDF || c == 0x138;
}

void appendUpper(std::string &out, uint32_t c) {
  if (c == 0xDF) { // ß has no single upper-case letter
    out += "SS";
    return;
  }
  appendUtf8(out, upperOf(c));
}

/// Whether `c` is among `chars` (whitespace when absent).
bool stripsAway(uint32_t c, const std::optional<CodePoints> &chars) {
  if (!chars)
    return isPySpace(c);
  return std::find(chars->begin(), chars->end(), c) != chars->end();
}

} // namespace

//===----------------------------------------------------------------------===//
// Methods
//===----------------------------------------------------------------------===//

std::string pyStrip(const std::string &text,
                    const std::optional<std::string> &chars, bool left,
                    bool right) {
  CodePoints c = decodeUtf8(text);
  std::optional<CodePoints> set;
  if (chars)
    set = decodeUtf8(*chars);
  size_t begin = 0, end = c.size();
  while (left && begin < end && stripsAway(c[begin], set))
    ++begin;
  while (right && end > begin && stripsAway(c[end - 1], set))
    --end;
  return encodeUtf8(CodePoints(c.begin() + begin, c.begin() + end));
}

std::vector<std::string> pySplit(const std::string &text,
                                 const std::optional<std::string> &sep,
                                 int64_t maxSplit) {
  std::vector<std::string> parts;
  if (sep) {
    if (sep->empty())
      throw TemplateError("split(): empty separator");
    size_t start = 0;
    for (size_t hit; (maxSplit < 0 || int64_t(parts.size()) < maxSplit) &&
                     (hit = text.find(*sep, start)) != std::string::npos;
         start = hit + sep->size())
      parts.push_back(text.substr(start, hit - start));
    parts.push_back(text.substr(start));
    return parts;
  }
  CodePoints c = decodeUtf8(text);
  size_t i = 0;
  while (i < c.size()) {
    while (i < c.size() && isPySpace(c[i]))
      ++i;
    if (i == c.size())
      break;
    if (maxSplit >= 0 && int64_t(parts.size()) == maxSplit) {
      // The rest, trailing whitespace stripped.
      size_t end = c.size();
      while (end > i && isPySpace(c[end - 1]))
        --end;
      parts.push_back(encodeUtf8(CodePoints(c.begin() + i, c.begin() + end)));
      break;
    }
    size_t start = i;
    while (i < c.size() && !isPySpace(c[i]))
      ++i;
    parts.push_back(encodeUtf8(CodePoints(c.begin() + start, c.begin() + i)));
  }
  return parts;
}

std::string pyReplace(const std::string &text, const std::string &from,
                      const std::string &to, int64_t count) {
  std::string out;
  int64_t done = 0;
  if (from.empty()) {
    // Python inserts `to` before every character and at the end.
    for (uint32_t c : decodeUtf8(text)) {
      if (count < 0 || done++ < count)
        out += to;
      appendUtf8(out, c);
    }
    if (count < 0 || done < count)
      out += to;
    return out;
  }
  size_t start = 0;
  for (size_t hit; (count < 0 || done < count) &&
                   (hit = text.find(from, start)) != std::string::npos;
       start = hit + from.size(), ++done)
    out.append(text, start, hit - start).append(to);
  return out.append(text, start, std::string::npos);
}

std::vector<std::string> pySplitLines(const std::string &text) {
  std::vector<std::string> lines;
  CodePoints c = decodeUtf8(text);
  size_t start = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    uint32_t x = c[i];
    bool boundary = x == '\n' || x == '\r' || x == 0x0B || x == 0x0C ||
                    (x >= 0x1C && x <= 0x1E) || x == 0x85 || x == 0x2028 ||
                    x == 0x2029;
    if (!boundary)
      continue;
    lines.push_back(encodeUtf8(CodePoints(c.begin() + start, c.begin() + i)));
    if (x == '\r' && i + 1 < c.size() && c[i + 1] == '\n')
      ++i;
    start = i + 1;
  }
  if (start < c.size())
    lines.push_back(encodeUtf8(CodePoints(c.begin() + start, c.end())));
  return lines;
}

std::string pyUpper(const std::string &text) {
  std::string out;
  for (uint32_t c : decodeUtf8(text))
    appendUpper(out, c);
  return out;
}

std::string pyLower(const std::string &text) {
  std::string out;
  for (uint32_t c : decodeUtf8(text))
    appendUtf8(out, lowerOf(c));
  return out;
}

std::string pyTitle(const std::string &text) {
  std::string out;
  bool previousCased = false;
  for (uint32_t c : decodeUtf8(text)) {
    if (previousCased)
      appendUtf8(out, lowerOf(c));
    else
      appendUpper(out, c);
    previousCased = isCased(c);
  }
  return out;
}

std::string pyCapitalize(const std::string &text) {
  std::string out;
  bool first = true;
  for (uint32_t c : decodeUtf8(text)) {
    if (first)
      appendUpper(out, c);
    else
      appendUtf8(out, lowerOf(c));
    first = false;
  }
  return out;
}

} // namespace kiln::runtime::jinja
