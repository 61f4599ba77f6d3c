//===- Tests.cpp - Jinja's `is` tests -------------------------------------===//
//
// Part of Kiln's Jinja engine: jinja2's built-in tests, with its notion of
// each Python type (a bool is a number but not an integer; Undefined is
// iterable and a sequence, being empty).
//
//===----------------------------------------------------------------------===//

#include "runtime/jinja/Builtins.h"

#include "runtime/jinja/PyString.h"

namespace kiln::runtime::jinja {

namespace {

const Value &onlyArgument(const std::string &name, const CallArgs &args) {
  if (args.positional.size() != 1 || !args.keywords.empty())
    throw TemplateError("test '" + name + "' takes one argument");
  return args.positional[0];
}

void noArguments(const std::string &name, const CallArgs &args) {
  if (!args.positional.empty() || !args.keywords.empty())
    throw TemplateError("test '" + name + "' takes no arguments");
}

} // namespace

bool applyTest(const std::string &name, const Value &v, const CallArgs &args) {
  using K = Value::Kind;
  // Comparisons, under jinja2's names and operator aliases.
  if (name == "equalto" || name == "eq" || name == "==")
    return equals(v, onlyArgument(name, args));
  if (name == "ne" || name == "!=")
    return !equals(v, onlyArgument(name, args));
  if (name == "lt" || name == "lessthan" || name == "<")
    return lessThan(v, onlyArgument(name, args));
  if (name == "gt" || name == "greaterthan" || name == ">")
    return lessThan(onlyArgument(name, args), v);
  if (name == "le" || name == "<=")
    return !lessThan(onlyArgument(name, args), v);
  if (name == "ge" || name == ">=")
    return !lessThan(v, onlyArgument(name, args));
  if (name == "in")
    return contains(onlyArgument(name, args), v);
  if (name == "sameas") {
    const Value &other = onlyArgument(name, args);
    // `is` on Python's singletons; other objects by identity, which for
    // JSON values comes down to equality of the same kind.
    return v.kind() == other.kind() && equals(v, other);
  }
  if (name == "divisibleby") {
    const Value &n = onlyArgument(name, args);
    v.requireDefined();
    if (n.asInt() == 0)
      throw TemplateError("divisibleby: division by zero");
    return v.asInt() % n.asInt() == 0;
  }

  noArguments(name, args);
  if (name == "defined")
    return !v.isUndefined();
  if (name == "undefined")
    return v.isUndefined();
  if (name == "none")
    return v.isNone();
  if (name == "boolean")
    return v.kind() == K::Bool;
  if (name == "true" || name == "false")
    return v.kind() == K::Bool && v.asBool() == (name == "true");
  if (name == "integer")
    return v.kind() == K::Int;
  if (name == "float")
    return v.kind() == K::Float;
  if (name == "number")
    return v.isNumber();
  if (name == "string")
    return v.isString();
  if (name == "mapping")
    return v.isMapping();
  if (name == "iterable" || name == "sequence")
    return v.isUndefined() || v.isString() || v.isSequence() || v.isMapping();
  if (name == "callable")
    return v.kind() == K::Callable;
  if (name == "even" || name == "odd") {
    v.requireDefined();
    return (v.asInt() % 2 == 0) == (name == "even");
  }
  if (name == "lower" || name == "upper") {
    std::string s = toStr(v);
    // str.islower()/isupper(): no character of the other case, and at
    // least one cased character.
    bool cased = pyLower(s) != pyUpper(s);
    return cased && (name == "lower" ? pyLower(s) == s : pyUpper(s) == s);
  }
  throw TemplateError("no test named '" + name + "'");
}

} // namespace kiln::runtime::jinja
