//===- PyString.h - Python's str operations on UTF-8 ------------*- C++ -*-===//
//
// Part of Kiln's Jinja engine. Templates call Python string methods
// (strip, split, title, ...) and filters built on them; these work on code
// points as Python does, so `length`, slicing and stripping agree with
// jinja2 on non-ASCII text. Bytes that are not valid UTF-8 decode to
// U+DC80..U+DCFF and encode back to themselves (Python's surrogateescape),
// so no byte is lost.
//
// Case mapping covers ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic;
// other characters are caseless here.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_JINJA_PYSTRING_H
#define KILN_RUNTIME_JINJA_PYSTRING_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln::runtime::jinja {

using CodePoints = std::vector<uint32_t>;

CodePoints decodeUtf8(const std::string &text);
void appendUtf8(std::string &out, uint32_t codePoint);
std::string encodeUtf8(const CodePoints &codePoints);
/// len(text) in Python: code points.
size_t codePointCount(const std::string &text);

/// str.isspace() of one character.
bool isPySpace(uint32_t c);
/// str.isprintable() of one character (what repr() leaves unescaped).
bool isPrintable(uint32_t c);

/// str.strip/lstrip/rstrip: `chars` absent strips whitespace.
std::string pyStrip(const std::string &text,
                    const std::optional<std::string> &chars, bool left,
                    bool right);
/// str.split(sep, maxsplit): `sep` absent splits on whitespace runs and drops
/// empty pieces; maxsplit < 0 is no limit. An empty `sep` is an error.
std::vector<std::string> pySplit(const std::string &text,
                                 const std::optional<std::string> &sep,
                                 int64_t maxSplit);
/// str.replace(old, new, count); count < 0 replaces all.
std::string pyReplace(const std::string &text, const std::string &from,
                      const std::string &to, int64_t count);
/// str.splitlines() (without keepends).
std::vector<std::string> pySplitLines(const std::string &text);

std::string pyUpper(const std::string &text);
std::string pyLower(const std::string &text);
/// str.title(): a cased character after an uncased one is upper-cased, the
/// others lower-cased.
std::string pyTitle(const std::string &text);
/// str.capitalize(): the first character upper-cased, the rest lower-cased.
std::string pyCapitalize(const std::string &text);

} // namespace kiln::runtime::jinja

#endif // KILN_RUNTIME_JINJA_PYSTRING_H
