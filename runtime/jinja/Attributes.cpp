//===- Attributes.cpp - Attribute and item lookup, Python methods ---------===//
//
// Part of Kiln's Jinja engine. jinja2 resolves `x.name` as getattr first and
// x["name"] second, and `x[key]` the other way round, so `message.items` is
// dict.items while `message.content` is the "content" entry. Missing names
// give Undefined with jinja2's hint ("'dict object' has no attribute 'x'"),
// which only fails when the Undefined is used further.
//
// Methods are those of Python's str, dict and list that templates read with;
// the mutating ones (list.append, dict.update, ...) fail when called, as
// transformers' ImmutableSandboxedEnvironment makes them fail.
//
//===----------------------------------------------------------------------===//

#include "runtime/jinja/Builtins.h"

#include "runtime/jinja/PyString.h"

#include <algorithm>
#include <cctype>

namespace kiln::runtime::jinja {

namespace {

/// jinja2's object_type_repr, for hints.
std::string objectTypeRepr(const Value &object) {
  if (object.isNone())
    return "None";
  return object.typeName() + " object";
}

Value missingAttribute(const Value &object, const std::string &name) {
  return Value::undefined("'" + objectTypeRepr(object) +
                          "' has no attribute '" + name + "'");
}

/// An optional string argument (None counts as absent).
std::optional<std::string> optionalString(const std::optional<Value> &v,
                                          const char *what) {
  if (!v || v->isNone())
    return std::nullopt;
  if (!v->isString())
    throw TemplateError(std::string(what) + " must be a str, not " +
                        v->typeName());
  return v->asString();
}

int64_t optionalInt(const std::optional<Value> &v, int64_t fallback) {
  if (!v || v->isNone())
    return fallback;
  if (v->kind() != Value::Kind::Int && v->kind() != Value::Kind::Bool)
    throw TemplateError("an integer is required, not " + v->typeName());
  return v->asInt();
}

/// str.startswith/endswith: a prefix or a tuple of them.
bool affixMatches(const std::string &text, const Value &affix, bool start) {
  if (affix.isSequence()) {
    for (const Value &a : affix.asList())
      if (affixMatches(text, a, start))
        return true;
    return false;
  }
  if (!affix.isString())
    throw TemplateError(std::string(start ? "startswith" : "endswith") +
                        " first arg must be str or a tuple of str, not " +
                        affix.typeName());
  const std::string &a = affix.asString();
  if (a.size() > text.size())
    return false;
  return start ? text.compare(0, a.size(), a) == 0
               : text.compare(text.size() - a.size(), a.size(), a) == 0;
}

/// Python str.format with `{}`, `{0}` and `{name}` fields (no format specs).
std::string pyFormat(const std::string &format, const CallArgs &args) {
  std::string out;
  size_t automatic = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    char c = format[i];
    if ((c == '{' || c == '}') && i + 1 < format.size() && format[i + 1] == c) {
      out += c;
      ++i;
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    size_t close = format.find('}', i);
    if (close == std::string::npos)
      throw TemplateError("Single '{' encountered in format string");
    std::string field = format.substr(i + 1, close - i - 1);
    const Value *value = nullptr;
    if (field.empty() || std::isdigit(static_cast<unsigned char>(field[0]))) {
      size_t index = field.empty() ? automatic++ : std::stoul(field);
      if (index < args.positional.size())
        value = &args.positional[index];
    } else {
      for (const auto &[key, v] : args.keywords)
        if (key == field)
          value = &v;
    }
    if (!value)
      throw TemplateError("format(): no argument for field '{" + field + "}'");
    out += toStr(*value);
    i = close;
  }
  return out;
}

Value stringMethod(const std::string &s, const std::string &name) {
  auto method = [&](Function f) { return Value::callable("str." + name, f); };
  auto bind = [name](const CallArgs &a,
                     std::initializer_list<const char *> params) {
    return bindArgs(a, "str." + name, params);
  };
  if (name == "strip" || name == "lstrip" || name == "rstrip")
    return method([=](CallArgs &a) {
      auto p = bind(a, {"chars"});
      return Value(pyStrip(s, optionalString(p[0], "chars"), name != "rstrip",
                           name != "lstrip"));
    });
  if (name == "split")
    return method([=](CallArgs &a) {
      auto p = bind(a, {"sep", "maxsplit"});
      ValueList parts;
      for (std::string &part :
           pySplit(s, optionalString(p[0], "sep"), optionalInt(p[1], -1)))
        parts.emplace_back(std::move(part));
      return Value::list(std::move(parts));
    });
  if (name == "splitlines")
    return method([=](CallArgs &a) {
      bind(a, {});
      ValueList lines;
      for (std::string &line : pySplitLines(s))
        lines.emplace_back(std::move(line));
      return Value::list(std::move(lines));
    });
  if (name == "startswith" || name == "endswith")
    return method([=](CallArgs &a) {
      auto p = bind(a, {"affix"});
      if (!p[0])
        throw TemplateError("str." + name + "() takes an argument");
      return Value(affixMatches(s, *p[0], name == "startswith"));
    });
  if (name == "upper" || name == "lower" || name == "title" ||
      name == "capitalize")
    return method([=](CallArgs &a) {
      bind(a, {});
      return Value(name == "upper"   ? pyUpper(s)
                   : name == "lower" ? pyLower(s)
                   : name == "title" ? pyTitle(s)
                                     : pyCapitalize(s));
    });
  if (name == "replace")
    return method([=](CallArgs &a) {
      auto p = bind(a, {"old", "new", "count"});
      if (!p[0] || !p[1] || !p[0]->isString() || !p[1]->isString())
        throw TemplateError("str.replace() takes two strings");
      return Value(pyReplace(s, p[0]->asString(), p[1]->asString(),
                             optionalInt(p[2], -1)));
    });
  if (name == "find" || name == "rfind" || name == "count")
    return method([=](CallArgs &a) {
      auto p = bind(a, {"sub"});
      std::optional<std::string> sub = optionalString(p[0], "sub");
      if (!sub)
        throw TemplateError("str." + name + "() takes a string");
      if (name == "count") {
        if (sub->empty())
          return Value(int64_t(codePointCount(s) + 1));
        int64_t n = 0;
        for (size_t at = s.find(*sub); at != std::string::npos;
             at = s.find(*sub, at + sub->size()))
          ++n;
        return Value(n);
      }
      size_t at = name == "find" ? s.find(*sub) : s.rfind(*sub);
      if (at == std::string::npos)
        return Value(int64_t(-1));
      return Value(int64_t(codePointCount(s.substr(0, at))));
    });
  if (name == "join")
    return method([=](CallArgs &a) {
      auto p = bind(a, {"iterable"});
      std::string out;
      size_t i = 0;
      for (const Value &item : iterate(p[0].value_or(Value()))) {
        if (!item.isString())
          throw TemplateError("sequence item " + std::to_string(i) +
                              ": expected str instance, " + item.typeName() +
                              " found");
        out += (i++ ? s : "") + item.asString();
      }
      return Value(out);
    });
  if (name == "format")
    return method([=](CallArgs &a) { return Value(pyFormat(s, a)); });
  if (name == "isdigit" || name == "isalpha" || name == "isalnum" ||
      name == "isspace" || name == "isupper" || name == "islower")
    return method([=](CallArgs &a) {
      bind(a, {});
      CodePoints c = decodeUtf8(s);
      if (name == "isupper" || name == "islower") {
        bool cased = false;
        for (uint32_t x : c) {
          std::string one;
          appendUtf8(one, x);
          bool upper = pyLower(one) != one, lower = pyUpper(one) != one;
          if ((name == "isupper" && lower) || (name == "islower" && upper))
            return Value(false);
          cased |= upper || lower;
        }
        return Value(cased);
      }
      auto test = [&](uint32_t x) {
        bool digit = x >= '0' && x <= '9';
        std::string one;
        appendUtf8(one, x);
        bool alpha = pyUpper(one) != one || pyLower(one) != one;
        return name == "isdigit"   ? digit
               : name == "isalpha" ? alpha
               : name == "isalnum" ? digit || alpha
                                   : isPySpace(x);
      };
      return Value(!c.empty() && std::all_of(c.begin(), c.end(), test));
    });
  return Value();
}

Value dictMethod(const Value &object, const std::string &name) {
  auto method = [&](Function f) { return Value::callable("dict." + name, f); };
  if (name == "get")
    return method([object](CallArgs &a) {
      auto p = bindArgs(a, "dict.get", {"key", "default"});
      if (!p[0])
        throw TemplateError("dict.get() takes a key");
      const Value *v =
          p[0]->isString() ? object.asDict().find(p[0]->asString()) : nullptr;
      return v ? *v : p[1].value_or(Value::none());
    });
  if (name == "items" || name == "keys" || name == "values")
    return method([object, name](CallArgs &a) {
      bindArgs(a, "dict." + name, {});
      ValueList out;
      for (const auto &[key, value] : object.asDict().entries)
        out.push_back(name == "items"  ? Value::tuple({Value(key), value})
                      : name == "keys" ? Value(key)
                                       : value);
      return Value::list(std::move(out));
    });
  return Value();
}

Value listMethod(const Value &object, const std::string &name) {
  if (name == "index" || name == "count")
    return Value::callable("list." + name, [object, name](CallArgs &a) {
      auto p = bindArgs(a, "list." + name, {"value"});
      Value needle = p[0].value_or(Value());
      int64_t n = 0, i = 0;
      for (const Value &x : object.asList()) {
        if (equals(x, needle)) {
          if (name == "index")
            return Value(i);
          ++n;
        }
        ++i;
      }
      if (name == "index")
        throw TemplateError(toRepr(needle) + " is not in list");
      return Value(n);
    });
  return Value();
}

bool isMutatingMethod(const Value &object, const std::string &name) {
  static const char *const listMethods[] = {"append", "extend", "insert",
                                            "pop",    "remove", "reverse",
                                            "sort",   "clear"};
  static const char *const dictMethods[] = {"pop",   "popitem",    "update",
                                            "clear", "setdefault", "copy"};
  if (object.isSequence())
    return std::find(std::begin(listMethods), std::end(listMethods), name) !=
           std::end(listMethods);
  if (object.isMapping())
    return std::find(std::begin(dictMethods), std::end(dictMethods), name) !=
           std::end(dictMethods);
  return false;
}

/// The Python attribute `name` of `object`, or Undefined when it has none.
Value pythonAttribute(const Value &object, const std::string &name) {
  if (isMutatingMethod(object, name)) {
    std::string message = "access to attribute '" + name + "' of '" +
                          object.typeName() + "' object is unsafe.";
    return Value::callable(
        name, [message](CallArgs &) -> Value { throw TemplateError(message); });
  }
  switch (object.kind()) {
  case Value::Kind::String:
    return stringMethod(object.asString(), name);
  case Value::Kind::Dict:
    return dictMethod(object, name);
  case Value::Kind::List:
  case Value::Kind::Tuple:
    return listMethod(object, name);
  case Value::Kind::Namespace: {
    const Value *v = object.namespaceAttributes().find(name);
    return v ? *v : Value();
  }
  default:
    return Value();
  }
}

/// Python's index of `i` into a sequence of `size`, or -1 when outside.
int64_t normalizeIndex(int64_t i, int64_t size) {
  if (i < 0)
    i += size;
  return i >= 0 && i < size ? i : -1;
}

} // namespace

Value getAttribute(const Value &object, const std::string &name) {
  object.requireDefined();
  Value attribute = pythonAttribute(object, name);
  if (!attribute.isUndefined())
    return attribute;
  if (object.isMapping())
    if (const Value *v = object.asDict().find(name))
      return *v;
  return missingAttribute(object, name);
}

Value getItem(const Value &object, const Value &key) {
  object.requireDefined();
  if (object.isMapping() && key.isString())
    if (const Value *v = object.asDict().find(key.asString()))
      return *v;
  bool integerKey =
      key.kind() == Value::Kind::Int || key.kind() == Value::Kind::Bool;
  if (integerKey && (object.isSequence() || object.isString())) {
    if (object.isString()) {
      CodePoints c = decodeUtf8(object.asString());
      int64_t i = normalizeIndex(key.asInt(), int64_t(c.size()));
      if (i >= 0) {
        std::string s;
        appendUtf8(s, c[i]);
        return Value(s);
      }
    } else {
      const ValueList &items = object.asList();
      int64_t i = normalizeIndex(key.asInt(), int64_t(items.size()));
      if (i >= 0)
        return items[i];
    }
    return Value::undefined("'" + objectTypeRepr(object) + "' has no element " +
                            toStr(key));
  }
  if (key.isString()) {
    Value attribute = pythonAttribute(object, key.asString());
    if (!attribute.isUndefined())
      return attribute;
    return missingAttribute(object, key.asString());
  }
  return Value::undefined("'" + objectTypeRepr(object) + "' has no element " +
                          toRepr(key));
}

Value getSlice(const Value &object, const Value &start, const Value &stop,
               const Value &step) {
  object.requireDefined();
  auto bound = [](const Value &v, const char *what) -> std::optional<int64_t> {
    if (v.isUndefined() || v.isNone())
      return std::nullopt;
    if (v.kind() != Value::Kind::Int && v.kind() != Value::Kind::Bool)
      throw TemplateError(std::string("slice ") + what +
                          " must be an integer or None, not " + v.typeName());
    return v.asInt();
  };
  int64_t stepValue = bound(step, "step").value_or(1);
  if (stepValue == 0)
    throw TemplateError("slice step cannot be zero");
  bool isString = object.isString();
  if (!isString && !object.isSequence())
    throw TemplateError("'" + object.typeName() +
                        "' object is not subscriptable");
  CodePoints chars;
  if (isString)
    chars = decodeUtf8(object.asString());
  int64_t size =
      isString ? int64_t(chars.size()) : int64_t(object.asList().size());
  // Python's slice.indices().
  auto clamp = [&](std::optional<int64_t> v, int64_t fallback) {
    if (!v)
      return fallback;
    int64_t i = *v < 0 ? *v + size : *v;
    if (stepValue > 0)
      return std::clamp<int64_t>(i, 0, size);
    return std::clamp<int64_t>(i, -1, size - 1);
  };
  int64_t from = clamp(bound(start, "start"), stepValue > 0 ? 0 : size - 1);
  int64_t to = clamp(bound(stop, "stop"), stepValue > 0 ? size : -1);
  std::vector<int64_t> picked;
  for (int64_t i = from; stepValue > 0 ? i < to : i > to; i += stepValue)
    picked.push_back(i);
  if (isString) {
    std::string out;
    for (int64_t i : picked)
      appendUtf8(out, chars[i]);
    return Value(out);
  }
  ValueList out;
  for (int64_t i : picked)
    out.push_back(object.asList()[i]);
  return object.kind() == Value::Kind::Tuple ? Value::tuple(std::move(out))
                                             : Value::list(std::move(out));
}

} // namespace kiln::runtime::jinja
