//===- JsonDump.h - Values as Python's json.dumps writes them ---*- C++ -*-===//
//
// Part of Kiln's Jinja engine. transformers replaces jinja2's HTML-safe
// `tojson` filter with json.dumps(x, ensure_ascii=False, indent=...,
// separators=..., sort_keys=...); templates print tool schemas and
// arguments through it, so its spacing and escapes are part of the prompt.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_JINJA_JSONDUMP_H
#define KILN_RUNTIME_JINJA_JSONDUMP_H

#include "runtime/jinja/Value.h"

#include <optional>
#include <string>

namespace kiln::runtime::jinja {

struct JsonDumpOptions {
  /// json.dumps' indent: absent is one line; otherwise each item on its own
  /// line, indented by this string per level.
  std::optional<std::string> indent;
  /// json.dumps' separators; absent: (", ", ": ") without indent, (",", ": ")
  /// with.
  std::optional<std::string> itemSeparator, keySeparator;
  bool sortKeys = false;
  /// json.dumps' ensure_ascii: non-ASCII characters as \uXXXX escapes.
  /// transformers passes False.
  bool ensureAscii = false;
};

/// json.dumps(value, ...). Undefined, namespaces and
/// callables are not JSON: a TemplateError saying so.
std::string jsonDump(const Value &value, const JsonDumpOptions &options);

} // namespace kiln::runtime::jinja

#endif // KILN_RUNTIME_JINJA_JSONDUMP_H
