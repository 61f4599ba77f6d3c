//===- JsonDump.cpp - Values as Python's json.dumps writes them -----------===//
//
// Part of Kiln's Jinja engine. Follows CPython's json.encoder: floats as
// float.__repr__ (NaN, Infinity), strings with only '"', '\\' and control
// characters escaped (ensure_ascii=False), empty containers as [] and {}.
//
//===----------------------------------------------------------------------===//

#include "runtime/jinja/JsonDump.h"

#include "runtime/jinja/PyString.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace kiln::runtime::jinja {

namespace {

/// A character as \uXXXX (a UTF-16 surrogate pair above U+FFFF).
void appendUnicodeEscape(std::string &out, uint32_t c) {
  char buffer[16];
  if (c >= 0x10000) {
    c -= 0x10000;
    std::snprintf(buffer, sizeof buffer, "\\u%04x\\u%04x", 0xD800 + (c >> 10),
                  0xDC00 + (c & 0x3FF));
  } else {
    std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
  }
  out += buffer;
}

void appendJsonString(std::string &out, const std::string &text,
                      bool ensureAscii) {
  out += '"';
  for (uint32_t c : decodeUtf8(text)) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\f':
      out += "\\f";
      break;
    default:
      if (c < 0x20 || (ensureAscii && c >= 0x80))
        appendUnicodeEscape(out, c);
      else
        appendUtf8(out, c);
    }
  }
  out += '"';
}

class Dumper {
public:
  explicit Dumper(const JsonDumpOptions &options) : options(options) {
    bool indented = options.indent.has_value();
    itemSeparator =
        options.itemSeparator.value_or(indented ? std::string(",") : ", ");
    keySeparator = options.keySeparator.value_or(": ");
  }

  void dump(const Value &value, int level) {
    switch (value.kind()) {
    case Value::Kind::None:
      out += "null";
      return;
    case Value::Kind::Bool:
      out += value.asBool() ? "true" : "false";
      return;
    case Value::Kind::Int:
      out += std::to_string(value.asInt());
      return;
    case Value::Kind::Float: {
      double f = value.asDouble();
      out += std::isnan(f)   ? "NaN"
             : std::isinf(f) ? (f < 0 ? "-Infinity" : "Infinity")
                             : floatRepr(f);
      return;
    }
    case Value::Kind::String:
      appendJsonString(out, value.asString(), options.ensureAscii);
      return;
    case Value::Kind::List:
    case Value::Kind::Tuple:
      dumpList(value.asList(), level);
      return;
    case Value::Kind::Dict:
      dumpDict(value.asDict(), level);
      return;
    default:
      throw TemplateError("Object of type " + value.typeName() +
                          " is not JSON serializable");
    }
  }

  std::string out;

private:
  /// Opens a container's contents: the newline and indent of `level` + 1
  /// when indenting.
  std::string newlineIndent(int level) const {
    if (!options.indent)
      return "";
    std::string s = "\n";
    for (int i = 0; i < level; ++i)
      s += *options.indent;
    return s;
  }

  void dumpList(const ValueList &items, int level) {
    if (items.empty()) {
      out += "[]";
      return;
    }
    out += "[" + newlineIndent(level + 1);
    for (size_t i = 0; i < items.size(); ++i) {
      if (i)
        out += itemSeparator + newlineIndent(level + 1);
      dump(items[i], level + 1);
    }
    out += newlineIndent(level) + "]";
  }

  void dumpDict(const ValueDict &dict, int level) {
    if (dict.entries.empty()) {
      out += "{}";
      return;
    }
    std::vector<const std::pair<std::string, Value> *> entries;
    for (const auto &entry : dict.entries)
      entries.push_back(&entry);
    // Keys are unique, so an unstable sort is stable enough.
    if (options.sortKeys)
      std::sort(entries.begin(), entries.end(),
                [](auto *a, auto *b) { return a->first < b->first; });
    out += "{" + newlineIndent(level + 1);
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i)
        out += itemSeparator + newlineIndent(level + 1);
      appendJsonString(out, entries[i]->first, options.ensureAscii);
      out += keySeparator;
      dump(entries[i]->second, level + 1);
    }
    out += newlineIndent(level) + "}";
  }

  const JsonDumpOptions &options;
  std::string itemSeparator, keySeparator;
};

} // namespace

std::string jsonDump(const Value &value, const JsonDumpOptions &options) {
  Dumper dumper(options);
  dumper.dump(value, 0);
  return std::move(dumper.out);
}

} // namespace kiln::runtime::jinja
