//===- Protocol.cpp - Python's call binding, iteration, len and in --------===//
//
// Part of Kiln's Jinja engine: the pieces of Python's object protocol that
// filters, tests and the renderer share (Builtins.h).
//
//===----------------------------------------------------------------------===//

#include "runtime/jinja/Builtins.h"

#include "runtime/jinja/PyString.h"

namespace kiln::runtime::jinja {

std::vector<std::optional<Value>>
bindArgs(const CallArgs &args, const std::string &function,
         std::initializer_list<const char *> parameters) {
  std::vector<const char *> names(parameters);
  std::vector<std::optional<Value>> bound(names.size());
  if (args.positional.size() > names.size())
    throw TemplateError(function + "() takes at most " +
                        std::to_string(names.size()) + " argument(s) (" +
                        std::to_string(args.positional.size()) + " given)");
  for (size_t i = 0; i < args.positional.size(); ++i)
    bound[i] = args.positional[i];
  for (const auto &[key, value] : args.keywords) {
    size_t i = 0;
    while (i < names.size() && key != names[i])
      ++i;
    if (i == names.size())
      throw TemplateError(function + "() got an unexpected keyword argument '" +
                          key + "'");
    if (bound[i])
      throw TemplateError(function + "() got multiple values for argument '" +
                          key + "'");
    bound[i] = value;
  }
  return bound;
}

ValueList iterate(const Value &value) {
  switch (value.kind()) {
  case Value::Kind::Undefined:
    return {};
  case Value::Kind::List:
  case Value::Kind::Tuple:
    return value.asList();
  case Value::Kind::Dict: {
    ValueList keys;
    for (const auto &entry : value.asDict().entries)
      keys.emplace_back(entry.first);
    return keys;
  }
  case Value::Kind::String: {
    ValueList chars;
    for (uint32_t c : decodeUtf8(value.asString())) {
      std::string s;
      appendUtf8(s, c);
      chars.emplace_back(std::move(s));
    }
    return chars;
  }
  default:
    throw TemplateError("'" + value.typeName() + "' object is not iterable");
  }
}

int64_t length(const Value &value) {
  switch (value.kind()) {
  case Value::Kind::Undefined:
    return 0;
  case Value::Kind::String:
    return static_cast<int64_t>(codePointCount(value.asString()));
  case Value::Kind::List:
  case Value::Kind::Tuple:
    return static_cast<int64_t>(value.asList().size());
  case Value::Kind::Dict:
    return static_cast<int64_t>(value.asDict().entries.size());
  default:
    throw TemplateError("object of type '" + value.typeName() +
                        "' has no len()");
  }
}

bool contains(const Value &container, const Value &item) {
  switch (container.kind()) {
  case Value::Kind::String:
    if (!item.isString())
      throw TemplateError("'in <string>' requires string as left operand, "
                          "not " +
                          item.typeName());
    return container.asString().find(item.asString()) != std::string::npos;
  case Value::Kind::Dict:
    return item.isString() && container.asDict().find(item.asString());
  case Value::Kind::Undefined:
  case Value::Kind::List:
  case Value::Kind::Tuple:
    for (const Value &x : iterate(container))
      if (equals(x, item))
        return true;
    return false;
  default:
    throw TemplateError("argument of type '" + container.typeName() +
                        "' is not iterable");
  }
}

} // namespace kiln::runtime::jinja
