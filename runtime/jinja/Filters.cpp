//===- Filters.cpp - Jinja's `|` filters ----------------------------------===//
//
// Part of Kiln's Jinja engine: jinja2's built-in filters that chat templates
// use, with jinja2's argument names and defaults, and transformers' tojson.
// Filters jinja2 implements as generators (map, select, unique, ...) return
// lists here; templates pass them through `list`, `join` or `length`.
//
//===----------------------------------------------------------------------===//

#include "runtime/jinja/Builtins.h"

#include "runtime/jinja/JsonDump.h"
#include "runtime/jinja/PyString.h"

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <map>

namespace kiln::runtime::jinja {

namespace {

using Bound = std::vector<std::optional<Value>>;

bool flag(const std::optional<Value> &v) { return v && v->truthy(); }

/// jinja2's make_attrgetter: "a.b.0" looks up a, then b, then item 0.
Value attributePath(const Value &item, const std::string &path) {
  Value v = item;
  for (const std::string &part : pySplit(path, std::string("."), -1)) {
    bool digits = !part.empty() &&
                  std::all_of(part.begin(), part.end(),
                              [](char c) { return c >= '0' && c <= '9'; });
    v = getItem(v, digits ? Value(int64_t(std::stoll(part))) : Value(part));
  }
  return v;
}

/// std::stable_sort, which libstdc++ 12 builds on the deprecated
/// get_temporary_buffer: an index sort with ties broken by position.
template <typename Less> void stableSort(ValueList &items, Less less) {
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (less(items[a], items[b]))
      return true;
    return !less(items[b], items[a]) && a < b;
  });
  ValueList sorted;
  for (size_t i : order)
    sorted.push_back(items[i]);
  items = std::move(sorted);
}

Value attributeOf(const Value &item, const std::optional<Value> &attribute) {
  if (!attribute || attribute->isNone())
    return item;
  if (attribute->kind() == Value::Kind::Int)
    return getItem(item, *attribute);
  return attributePath(item, toStr(*attribute));
}

/// The key sort, unique, min and max compare: lower-cased strings unless
/// case-sensitive.
Value sortKey(const Value &v, bool caseSensitive) {
  return !caseSensitive && v.isString() ? Value(pyLower(v.asString())) : v;
}

/// select/reject/selectattr/rejectattr: keeps items whose test (or
/// truthiness, without one) is `keep`.
Value selectItems(const Value &input, const CallArgs &args, bool byAttribute,
                  bool keep) {
  size_t next = 0;
  std::optional<std::string> attribute;
  if (byAttribute) {
    if (args.positional.empty())
      throw TemplateError("selectattr/rejectattr need an attribute name");
    attribute = toStr(args.positional[next++]);
  }
  std::optional<std::string> test;
  if (next < args.positional.size())
    test = toStr(args.positional[next++]);
  CallArgs testArgs;
  testArgs.positional.assign(args.positional.begin() + next,
                             args.positional.end());
  testArgs.keywords = args.keywords;
  ValueList out;
  // jinja2 skips a falsy input (None included) without iterating it.
  if (!input.truthy())
    return Value::list({});
  for (const Value &item : iterate(input)) {
    Value subject = attribute ? attributePath(item, *attribute) : item;
    bool passes = test ? applyTest(*test, subject, testArgs) : subject.truthy();
    if (passes == keep)
      out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value mapItems(const Value &input, const CallArgs &args) {
  ValueList out;
  // jinja2 skips a falsy input (None included) without iterating it.
  if (!input.truthy())
    return Value::list({});
  for (const auto &[key, value] : args.keywords) {
    if (key != "attribute" && key != "default")
      throw TemplateError("map() got an unexpected keyword argument '" + key +
                          "'");
  }
  Bound p = bindArgs({{}, args.keywords}, "map", {"attribute", "default"});
  if (p[0]) {
    for (const Value &item : iterate(input)) {
      Value v = attributePath(item, toStr(*p[0]));
      out.push_back(v.isUndefined() && p[1] ? *p[1] : v);
    }
    return Value::list(std::move(out));
  }
  if (args.positional.empty())
    throw TemplateError("map() needs a filter name or attribute=");
  std::string filter = toStr(args.positional[0]);
  CallArgs filterArgs;
  filterArgs.positional.assign(args.positional.begin() + 1,
                               args.positional.end());
  for (const Value &item : iterate(input))
    out.push_back(applyFilter(filter, item, filterArgs));
  return Value::list(std::move(out));
}

std::string indent(const std::string &text, const Value &width, bool first,
                   bool blank) {
  std::string indention = width.isString()
                              ? width.asString()
                              : std::string(size_t(width.asInt()), ' ');
  // jinja2 appends a newline before splitlines(); it only matters for a
  // text that ends in a blank line.
  std::vector<std::string> lines = pySplitLines(text + "\n");
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i)
      out += "\n";
    bool indentThis = i == 0 ? first : blank || !lines[i].empty();
    out += (indentThis ? indention : "") + lines[i];
  }
  return out;
}

/// jinja2's title filter: each word (after -, whitespace or an opening
/// bracket) capitalized.
std::string titleWords(const std::string &text) {
  std::string out, word;
  auto flush = [&] {
    if (!word.empty()) {
      CodePoints c = decodeUtf8(word);
      std::string head;
      appendUtf8(head, c[0]);
      out += pyUpper(head) +
             pyLower(encodeUtf8(CodePoints(c.begin() + 1, c.end())));
    }
    word.clear();
  };
  for (uint32_t c : decodeUtf8(text)) {
    bool separator = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' ||
                     isPySpace(c);
    if (separator) {
      flush();
      appendUtf8(out, c);
    } else {
      appendUtf8(word, c);
    }
  }
  flush();
  return out;
}

Value toInt(const Value &v, const std::optional<Value> &fallback) {
  Value def = fallback.value_or(Value(int64_t(0)));
  if (v.isNumber())
    return Value(v.kind() == Value::Kind::Float
                     ? int64_t(std::trunc(v.asDouble()))
                     : v.asInt());
  if (!v.isString())
    return def;
  std::string s = pyStrip(v.asString(), std::nullopt, true, true);
  try {
    size_t used = 0;
    int64_t i = std::stoll(s, &used);
    if (used == s.size())
      return Value(i);
    double d = std::stod(s, &used);
    if (used == s.size())
      return Value(int64_t(std::trunc(d)));
  } catch (const std::exception &) {
  }
  return def;
}

Value toFloat(const Value &v, const std::optional<Value> &fallback) {
  if (v.isNumber())
    return Value(v.asDouble());
  if (v.isString()) {
    std::string s = pyStrip(v.asString(), std::nullopt, true, true);
    try {
      size_t used = 0;
      double d = std::stod(s, &used);
      if (used == s.size())
        return Value(d);
    } catch (const std::exception &) {
    }
  }
  return fallback.value_or(Value(0.0));
}

Value roundNumber(const Value &v, const Bound &p) {
  int64_t precision = p[0] ? p[0]->asInt() : 0;
  std::string method = p[1] ? toStr(*p[1]) : "common";
  double scale = std::pow(10.0, double(precision));
  double x = v.asDouble() * scale;
  if (method == "common") {
    // Python's round(): halves to even.
    std::fesetround(FE_TONEAREST);
    x = std::nearbyint(x);
  } else if (method == "ceil") {
    x = std::ceil(x);
  } else if (method == "floor") {
    x = std::floor(x);
  } else {
    throw TemplateError("round: method must be common, ceil or floor");
  }
  return Value(x / scale);
}

Value sortItems(const Value &input, const Bound &p) {
  ValueList items = iterate(input);
  bool reverse = flag(p[0]), caseSensitive = flag(p[1]);
  stableSort(items, [&](const Value &a, const Value &b) {
    Value x = sortKey(attributeOf(a, p[2]), caseSensitive);
    Value y = sortKey(attributeOf(b, p[2]), caseSensitive);
    return reverse ? lessThan(y, x) : lessThan(x, y);
  });
  return Value::list(std::move(items));
}

Value minOrMax(const Value &input, const Bound &p, bool max) {
  ValueList items = iterate(input);
  if (items.empty())
    return Value::undefined("No aggregated item, sequence was empty.");
  bool caseSensitive = flag(p[0]);
  const Value *best = &items[0];
  for (const Value &item : items) {
    Value a = sortKey(attributeOf(item, p[1]), caseSensitive);
    Value b = sortKey(attributeOf(*best, p[1]), caseSensitive);
    if (max ? lessThan(b, a) : lessThan(a, b))
      best = &item;
  }
  return *best;
}

Value uniqueItems(const Value &input, const Bound &p) {
  ValueList out, seen;
  for (const Value &item : iterate(input)) {
    Value key = sortKey(attributeOf(item, p[1]), flag(p[0]));
    if (std::none_of(seen.begin(), seen.end(),
                     [&](const Value &s) { return equals(s, key); })) {
      seen.push_back(key);
      out.push_back(item);
    }
  }
  return Value::list(std::move(out));
}

Value toJson(const Value &input, const Bound &p) {
  JsonDumpOptions options;
  options.ensureAscii = flag(p[0]);
  if (p[1] && !p[1]->isNone())
    options.indent =
        p[1]->isString()
            ? p[1]->asString()
            : std::string(size_t(std::max<int64_t>(0, p[1]->asInt())), ' ');
  if (p[2] && !p[2]->isNone()) {
    ValueList separators = iterate(*p[2]);
    if (separators.size() != 2)
      throw TemplateError("tojson: separators must be an (item, key) pair");
    options.itemSeparator = toStr(separators[0]);
    options.keySeparator = toStr(separators[1]);
  }
  options.sortKeys = flag(p[3]);
  return Value(jsonDump(input, options));
}

Value dictSort(const Value &input, const Bound &p) {
  if (!input.isMapping())
    throw TemplateError("dictsort: expected a mapping, got " +
                        input.typeName());
  bool caseSensitive = flag(p[0]);
  bool byValue = p[1] && toStr(*p[1]) == "value";
  bool reverse = flag(p[2]);
  ValueList pairs;
  for (const auto &[key, value] : input.asDict().entries)
    pairs.push_back(Value::tuple({Value(key), value}));
  stableSort(pairs, [&](const Value &a, const Value &b) {
    Value x = sortKey(a.asList()[byValue], caseSensitive);
    Value y = sortKey(b.asList()[byValue], caseSensitive);
    return reverse ? lessThan(y, x) : lessThan(x, y);
  });
  return Value::list(std::move(pairs));
}

Value sumItems(const Value &input, const Bound &p) {
  Value total = p[1].value_or(Value(int64_t(0)));
  for (const Value &item : iterate(input)) {
    Value v = attributeOf(item, p[0]);
    if (!v.isNumber() || !total.isNumber())
      throw TemplateError("sum: unsupported operand types '" +
                          total.typeName() + "' and '" + v.typeName() + "'");
    if (v.kind() == Value::Kind::Float || total.kind() == Value::Kind::Float)
      total = Value(total.asDouble() + v.asDouble());
    else
      total = Value(total.asInt() + v.asInt());
  }
  return total;
}

std::string htmlEscape(const std::string &text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&#34;";
      break;
    case '\'':
      out += "&#39;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

using FilterFunction = Value (*)(const Value &, const CallArgs &);

Value reverseItems(const Value &input) {
  if (input.isString()) {
    CodePoints c = decodeUtf8(input.asString());
    std::reverse(c.begin(), c.end());
    return Value(encodeUtf8(c));
  }
  ValueList items = iterate(input);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

const std::map<std::string, FilterFunction> &filterTable() {
  using A = const CallArgs &;
  using V = const Value &;
  static const std::map<std::string, FilterFunction> table = {
      {"abs",
       [](V v, A a) {
         bindArgs(a, "abs", {});
         v.requireDefined();
         return v.kind() == Value::Kind::Float ? Value(std::fabs(v.asDouble()))
                                               : Value(std::abs(v.asInt()));
       }},
      {"attr",
       [](V v, A a) {
         Bound p = bindArgs(a, "attr", {"name"});
         return getAttribute(v, toStr(p[0].value_or(Value(""))));
       }},
      {"capitalize",
       [](V v, A a) {
         bindArgs(a, "capitalize", {});
         return Value(pyCapitalize(toStr(v)));
       }},
      {"count", [](V v, A a) { return applyFilter("length", v, a); }},
      {"d", [](V v, A a) { return applyFilter("default", v, a); }},
      {"default",
       [](V v, A a) {
         Bound p = bindArgs(a, "default", {"default_value", "boolean"});
         bool useDefault = v.isUndefined() || (flag(p[1]) && !v.truthy());
         return useDefault ? p[0].value_or(Value("")) : v;
       }},
      {"dictsort",
       [](V v, A a) {
         return dictSort(
             v, bindArgs(a, "dictsort", {"case_sensitive", "by", "reverse"}));
       }},
      {"e", [](V v, A a) { return applyFilter("escape", v, a); }},
      {"escape",
       [](V v, A a) {
         bindArgs(a, "escape", {});
         return Value(htmlEscape(toStr(v)));
       }},
      {"first",
       [](V v, A a) {
         bindArgs(a, "first", {});
         ValueList items = iterate(v);
         return items.empty()
                    ? Value::undefined("No first item, sequence was empty.")
                    : items.front();
       }},
      {"float",
       [](V v, A a) {
         return toFloat(v, bindArgs(a, "float", {"default"})[0]);
       }},
      {"indent",
       [](V v, A a) {
         Bound p = bindArgs(a, "indent", {"width", "first", "blank"});
         return Value(indent(toStr(v), p[0].value_or(Value(int64_t(4))),
                             flag(p[1]), flag(p[2])));
       }},
      {"int",
       [](V v, A a) {
         return toInt(v, bindArgs(a, "int", {"default", "base"})[0]);
       }},
      {"items",
       [](V v, A a) {
         bindArgs(a, "items", {});
         if (v.isUndefined())
           return Value::list({});
         if (!v.isMapping())
           throw TemplateError("Can only get item pairs from a mapping.");
         ValueList pairs;
         for (const auto &[key, value] : v.asDict().entries)
           pairs.push_back(Value::tuple({Value(key), value}));
         return Value::list(std::move(pairs));
       }},
      {"join",
       [](V v, A a) {
         Bound p = bindArgs(a, "join", {"d", "attribute"});
         std::string separator = p[0] ? toStr(*p[0]) : "", out;
         bool firstItem = true;
         for (const Value &item : iterate(v)) {
           out += (firstItem ? "" : separator) + toStr(attributeOf(item, p[1]));
           firstItem = false;
         }
         return Value(out);
       }},
      {"last",
       [](V v, A a) {
         bindArgs(a, "last", {});
         ValueList items = iterate(v);
         return items.empty()
                    ? Value::undefined("No last item, sequence was empty.")
                    : items.back();
       }},
      {"length",
       [](V v, A a) {
         bindArgs(a, "length", {});
         return Value(length(v));
       }},
      {"list",
       [](V v, A a) {
         bindArgs(a, "list", {});
         return Value::list(iterate(v));
       }},
      {"lower",
       [](V v, A a) {
         bindArgs(a, "lower", {});
         return Value(pyLower(toStr(v)));
       }},
      {"map", [](V v, A a) { return mapItems(v, a); }},
      {"max",
       [](V v, A a) {
         return minOrMax(v, bindArgs(a, "max", {"case_sensitive", "attribute"}),
                         true);
       }},
      {"min",
       [](V v, A a) {
         return minOrMax(v, bindArgs(a, "min", {"case_sensitive", "attribute"}),
                         false);
       }},
      {"reject", [](V v, A a) { return selectItems(v, a, false, false); }},
      {"rejectattr", [](V v, A a) { return selectItems(v, a, true, false); }},
      {"replace",
       [](V v, A a) {
         Bound p = bindArgs(a, "replace", {"old", "new", "count"});
         if (!p[0] || !p[1])
           throw TemplateError("replace() needs the old and new strings");
         return Value(pyReplace(toStr(v), toStr(*p[0]), toStr(*p[1]),
                                p[2] && !p[2]->isNone() ? p[2]->asInt() : -1));
       }},
      {"reverse",
       [](V v, A a) {
         bindArgs(a, "reverse", {});
         return reverseItems(v);
       }},
      {"round",
       [](V v, A a) {
         return roundNumber(v, bindArgs(a, "round", {"precision", "method"}));
       }},
      {"safe",
       [](V v, A a) {
         bindArgs(a, "safe", {});
         return v;
       }},
      {"select", [](V v, A a) { return selectItems(v, a, false, true); }},
      {"selectattr", [](V v, A a) { return selectItems(v, a, true, true); }},
      {"sort",
       [](V v, A a) {
         return sortItems(
             v,
             bindArgs(a, "sort", {"reverse", "case_sensitive", "attribute"}));
       }},
      {"string",
       [](V v, A a) {
         bindArgs(a, "string", {});
         return Value(toStr(v));
       }},
      {"sum",
       [](V v, A a) {
         return sumItems(v, bindArgs(a, "sum", {"attribute", "start"}));
       }},
      {"title",
       [](V v, A a) {
         bindArgs(a, "title", {});
         return Value(titleWords(toStr(v)));
       }},
      {"tojson",
       [](V v, A a) {
         return toJson(v, bindArgs(a, "tojson",
                                   {"ensure_ascii", "indent", "separators",
                                    "sort_keys"}));
       }},
      {"trim",
       [](V v, A a) {
         Bound p = bindArgs(a, "trim", {"chars"});
         std::optional<std::string> chars;
         if (p[0] && !p[0]->isNone())
           chars = toStr(*p[0]);
         return Value(pyStrip(toStr(v), chars, true, true));
       }},
      {"unique",
       [](V v, A a) {
         return uniqueItems(
             v, bindArgs(a, "unique", {"case_sensitive", "attribute"}));
       }},
      {"upper",
       [](V v, A a) {
         bindArgs(a, "upper", {});
         return Value(pyUpper(toStr(v)));
       }},
  };
  return table;
}

} // namespace

Value applyFilter(const std::string &name, const Value &input,
                  const CallArgs &args) {
  const auto &table = filterTable();
  auto it = table.find(name);
  if (it == table.end())
    throw TemplateError("no filter named '" + name + "'");
  return it->second(input, args);
}

} // namespace kiln::runtime::jinja
