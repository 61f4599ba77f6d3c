//===- Value.cpp - The values Jinja templates compute with ----------------===//
//
// Part of Kiln's Jinja engine: construction, Python truthiness, equality,
// ordering and str()/repr() of the values in Value.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/jinja/Value.h"

#include "runtime/jinja/PyString.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace kiln::runtime::jinja {

const Value *ValueDict::find(const std::string &key) const {
  for (const auto &[k, v] : entries)
    if (k == key)
      return &v;
  return nullptr;
}

void ValueDict::set(const std::string &key, Value value) {
  for (auto &[k, v] : entries) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  entries.emplace_back(key, std::move(value));
}

//===----------------------------------------------------------------------===//
// Construction and access
//===----------------------------------------------------------------------===//

Value Value::undefined(std::string hint) {
  Value v;
  v.payload = std::move(hint);
  return v;
}

Value Value::none() {
  Value v;
  v.valueKind = Kind::None;
  return v;
}

Value::Value(bool b) : valueKind(Kind::Bool), payload(b) {}
Value::Value(int64_t i) : valueKind(Kind::Int), payload(i) {}
Value::Value(double f) : valueKind(Kind::Float), payload(f) {}
Value::Value(std::string s) : valueKind(Kind::String), payload(std::move(s)) {}

/// A value of `kind` holding `data` behind a shared pointer of type `Ptr`.
template <typename Ptr, typename Data>
Value Value::shared(Kind kind, Data data) {
  Value v;
  v.valueKind = kind;
  v.payload = Ptr(std::make_shared<Data>(std::move(data)));
  return v;
}

Value Value::list(ValueList items) {
  return shared<std::shared_ptr<const ValueList>>(Kind::List, std::move(items));
}

Value Value::tuple(ValueList items) {
  return shared<std::shared_ptr<const ValueList>>(Kind::Tuple,
                                                  std::move(items));
}

Value Value::dict(ValueDict dict) {
  return shared<std::shared_ptr<const ValueDict>>(Kind::Dict, std::move(dict));
}

Value Value::makeNamespace(ValueDict attributes) {
  return shared<std::shared_ptr<ValueDict>>(Kind::Namespace,
                                            std::move(attributes));
}

Value Value::callable(std::string name, Function function) {
  return shared<std::shared_ptr<const NamedFunction>>(
      Kind::Callable, NamedFunction{std::move(name), std::move(function)});
}

Value Value::fromJson(const nlohmann::ordered_json &json) {
  switch (json.type()) {
  case nlohmann::ordered_json::value_t::null:
  case nlohmann::ordered_json::value_t::discarded:
    return none();
  case nlohmann::ordered_json::value_t::boolean:
    return Value(json.get<bool>());
  case nlohmann::ordered_json::value_t::number_integer:
    return Value(json.get<int64_t>());
  case nlohmann::ordered_json::value_t::number_unsigned: {
    auto u = json.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX))
      return Value(static_cast<double>(u));
    return Value(static_cast<int64_t>(u));
  }
  case nlohmann::ordered_json::value_t::number_float:
    return Value(json.get<double>());
  case nlohmann::ordered_json::value_t::string:
    return Value(json.get<std::string>());
  case nlohmann::ordered_json::value_t::array: {
    ValueList items;
    for (const auto &item : json)
      items.push_back(fromJson(item));
    return list(std::move(items));
  }
  case nlohmann::ordered_json::value_t::object: {
    ValueDict dict;
    for (const auto &[key, item] : json.items())
      dict.set(key, fromJson(item));
    return Value::dict(std::move(dict));
  }
  case nlohmann::ordered_json::value_t::binary:
    break;
  }
  throw TemplateError("JSON binary values have no template value");
}

/// The error for using a value as a type it is not ("expected an integer,
/// got str"); an Undefined reports why it is undefined instead.
void Value::expect(bool ok, const char *what) const {
  if (ok)
    return;
  requireDefined();
  throw TemplateError(std::string("expected ") + what + ", got " + typeName());
}

int64_t Value::asInt() const {
  expect(valueKind == Kind::Int || valueKind == Kind::Bool, "an integer");
  if (valueKind == Kind::Bool)
    return asBool() ? 1 : 0;
  return std::get<int64_t>(payload);
}

double Value::asDouble() const {
  expect(isNumber(), "a number");
  if (valueKind == Kind::Float)
    return std::get<double>(payload);
  return static_cast<double>(asInt());
}

const std::string &Value::asString() const {
  expect(valueKind == Kind::String, "a string");
  return std::get<std::string>(payload);
}

const ValueList &Value::asList() const {
  expect(isSequence(), "a list");
  return *std::get<std::shared_ptr<const ValueList>>(payload);
}

const ValueDict &Value::asDict() const {
  expect(valueKind == Kind::Dict, "a dict");
  return *std::get<std::shared_ptr<const ValueDict>>(payload);
}

ValueDict &Value::namespaceAttributes() const {
  expect(valueKind == Kind::Namespace, "a namespace");
  return *std::get<std::shared_ptr<ValueDict>>(payload);
}

const Function &Value::asFunction() const {
  expect(valueKind == Kind::Callable, "a callable");
  return std::get<std::shared_ptr<const NamedFunction>>(payload)->function;
}

const std::string &Value::hint() const {
  static const std::string empty;
  if (valueKind == Kind::Callable)
    return std::get<std::shared_ptr<const NamedFunction>>(payload)->name;
  if (valueKind == Kind::Undefined)
    if (auto *s = std::get_if<std::string>(&payload))
      return *s;
  return empty;
}

bool Value::truthy() const {
  switch (valueKind) {
  case Kind::Undefined:
  case Kind::None:
    return false;
  case Kind::Bool:
    return asBool();
  case Kind::Int:
    return asInt() != 0;
  case Kind::Float:
    return asDouble() != 0.0;
  case Kind::String:
    return !asString().empty();
  case Kind::List:
  case Kind::Tuple:
    return !asList().empty();
  case Kind::Dict:
    return !asDict().entries.empty();
  case Kind::Namespace:
  case Kind::Callable:
    return true;
  }
  return false;
}

void Value::requireDefined() const {
  if (valueKind == Kind::Undefined)
    throw TemplateError(hint().empty() ? "value is undefined" : hint());
}

std::string Value::typeName() const {
  switch (valueKind) {
  case Kind::Undefined:
    return "Undefined";
  case Kind::None:
    return "NoneType";
  case Kind::Bool:
    return "bool";
  case Kind::Int:
    return "int";
  case Kind::Float:
    return "float";
  case Kind::String:
    return "str";
  case Kind::List:
    return "list";
  case Kind::Tuple:
    return "tuple";
  case Kind::Dict:
    return "dict";
  case Kind::Namespace:
    return "Namespace";
  case Kind::Callable:
    return "function";
  }
  return "object";
}

//===----------------------------------------------------------------------===//
// Equality and ordering
//===----------------------------------------------------------------------===//

bool equals(const Value &a, const Value &b) {
  if (a.isNumber() && b.isNumber()) {
    if (a.kind() == Value::Kind::Float || b.kind() == Value::Kind::Float)
      return a.asDouble() == b.asDouble();
    return a.asInt() == b.asInt();
  }
  // A list never equals a tuple in Python.
  if (a.kind() != b.kind())
    return false;
  switch (a.kind()) {
  case Value::Kind::Undefined:
  case Value::Kind::None:
    return true;
  case Value::Kind::String:
    return a.asString() == b.asString();
  case Value::Kind::List:
  case Value::Kind::Tuple: {
    const ValueList &x = a.asList(), &y = b.asList();
    if (x.size() != y.size())
      return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (!equals(x[i], y[i]))
        return false;
    return true;
  }
  case Value::Kind::Dict: {
    const ValueDict &x = a.asDict(), &y = b.asDict();
    if (x.entries.size() != y.entries.size())
      return false;
    for (const auto &[key, value] : x.entries) {
      const Value *other = y.find(key);
      if (!other || !equals(value, *other))
        return false;
    }
    return true;
  }
  case Value::Kind::Namespace:
    return &a.namespaceAttributes() == &b.namespaceAttributes();
  case Value::Kind::Callable:
    return &a.asFunction() == &b.asFunction();
  default:
    return false;
  }
}

bool lessThan(const Value &a, const Value &b) {
  a.requireDefined();
  b.requireDefined();
  if (a.isNumber() && b.isNumber()) {
    if (a.kind() == Value::Kind::Float || b.kind() == Value::Kind::Float)
      return a.asDouble() < b.asDouble();
    return a.asInt() < b.asInt();
  }
  // UTF-8 byte order is code point order, as Python compares str.
  if (a.isString() && b.isString())
    return a.asString() < b.asString();
  if (a.kind() == b.kind() && a.isSequence()) {
    const ValueList &x = a.asList(), &y = b.asList();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!equals(x[i], y[i]))
        return lessThan(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  throw TemplateError("'<' not supported between instances of '" +
                      a.typeName() + "' and '" + b.typeName() + "'");
}

//===----------------------------------------------------------------------===//
// str() and repr()
//===----------------------------------------------------------------------===//

std::string floatRepr(double value) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value < 0 ? "-inf" : "inf";
  // The shortest digits that read back to the same double, as Python's repr.
  char buffer[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof buffer, "%.*e", precision - 1, value);
    if (std::strtod(buffer, nullptr) == value)
      break;
  }
  std::string text = buffer;
  std::string sign;
  if (text[0] == '-') {
    sign = "-";
    text.erase(0, 1);
  }
  size_t e = text.find('e');
  int exponent = std::atoi(text.c_str() + e + 1);
  std::string digits = text.substr(0, e);
  if (digits.size() > 1)
    digits.erase(1, 1); // the decimal point
  while (digits.size() > 1 && digits.back() == '0')
    digits.pop_back();

  if (exponent < -4 || exponent >= 16) {
    std::string mantissa = digits.substr(0, 1);
    if (digits.size() > 1)
      mantissa += "." + digits.substr(1);
    char exp[8];
    std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+',
                  std::abs(exponent));
    return sign + mantissa + exp;
  }
  if (exponent < 0)
    return sign + "0." + std::string(-exponent - 1, '0') + digits;
  auto integerDigits = static_cast<size_t>(exponent) + 1;
  if (digits.size() <= integerDigits)
    return sign + digits + std::string(integerDigits - digits.size(), '0') +
           ".0";
  return sign + digits.substr(0, integerDigits) + "." +
         digits.substr(integerDigits);
}

namespace {

/// Python's repr of a str: single quotes unless the text holds a single
/// quote and no double quote; control characters escaped.
std::string stringRepr(const std::string &text) {
  bool hasSingle = text.find('\'') != std::string::npos;
  bool hasDouble = text.find('"') != std::string::npos;
  char quote = hasSingle && !hasDouble ? '"' : '\'';
  std::string out(1, quote);
  for (uint32_t c : decodeUtf8(text)) {
    if (c == static_cast<uint32_t>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (!isPrintable(c)) {
      char buffer[12];
      if (c < 0x100)
        std::snprintf(buffer, sizeof buffer, "\\x%02x", c);
      else if (c < 0x10000)
        std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
      else
        std::snprintf(buffer, sizeof buffer, "\\U%08x", c);
      out += buffer;
    } else {
      appendUtf8(out, c);
    }
  }
  return out + quote;
}

std::string joinRepr(const ValueList &items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i)
    out += (i ? ", " : "") + toRepr(items[i]);
  return out;
}

} // namespace

std::string toStr(const Value &value) {
  switch (value.kind()) {
  case Value::Kind::Undefined:
    return "";
  case Value::Kind::String:
    return value.asString();
  default:
    return toRepr(value);
  }
}

std::string toRepr(const Value &value) {
  switch (value.kind()) {
  case Value::Kind::Undefined:
    return "Undefined";
  case Value::Kind::None:
    return "None";
  case Value::Kind::Bool:
    return value.asBool() ? "True" : "False";
  case Value::Kind::Int:
    return std::to_string(value.asInt());
  case Value::Kind::Float:
    return floatRepr(value.asDouble());
  case Value::Kind::String:
    return stringRepr(value.asString());
  case Value::Kind::List:
    return "[" + joinRepr(value.asList()) + "]";
  case Value::Kind::Tuple:
    return "(" + joinRepr(value.asList()) +
           (value.asList().size() == 1 ? ",)" : ")");
  case Value::Kind::Dict:
  case Value::Kind::Namespace: {
    const ValueDict &dict = value.kind() == Value::Kind::Dict
                                ? value.asDict()
                                : value.namespaceAttributes();
    std::string out;
    for (const auto &[key, item] : dict.entries)
      out += (out.empty() ? "" : ", ") + stringRepr(key) + ": " + toRepr(item);
    return value.kind() == Value::Kind::Dict ? "{" + out + "}"
                                             : "<Namespace {" + out + "}>";
  }
  case Value::Kind::Callable:
    return "<function " + value.hint() + ">";
  }
  return "";
}

} // namespace kiln::runtime::jinja
