//===- Value.h - The values Jinja templates compute with --------*- C++ -*-===//
//
// Part of Kiln's Jinja engine. Chat templates were written for Python's
// jinja2, so values behave as the Python objects jinja2 would hold: JSON
// data (None, bool, int, float, str, list, dict with insertion order),
// tuples, jinja2's default Undefined, namespaces and callables (macros,
// globals, bound methods). Truthiness, equality, ordering and str()/repr()
// follow Python.
//
// Lists and dicts are shared and immutable once built (the sandbox that
// transformers uses forbids list.append and friends); a namespace is the one
// mutable object, shared by reference as in Python.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_JINJA_VALUE_H
#define KILN_RUNTIME_JINJA_VALUE_H

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace kiln::runtime::jinja {

/// A template failed to parse or render. `line` is the template line (1-based)
/// of the tag or expression at fault, 0 while not yet known.
class TemplateError : public std::runtime_error {
public:
  explicit TemplateError(const std::string &message, int line = 0)
      : std::runtime_error(message), line(line) {}
  int line;
};

class Value;
using ValueList = std::vector<Value>;

/// A dict with string keys, in insertion order (as Python 3.7+ dicts).
struct ValueDict {
  std::vector<std::pair<std::string, Value>> entries;

  const Value *find(const std::string &key) const;
  /// Inserts or replaces `key`.
  void set(const std::string &key, Value value);
};

/// The arguments of a call: positional, then keyword.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keywords;
};

using Function = std::function<Value(CallArgs &)>;

/// A callable with its name, for messages.
struct NamedFunction {
  std::string name;
  Function function;
};

class Value {
public:
  enum class Kind {
    Undefined,
    None,
    Bool,
    Int,
    Float,
    String,
    List,
    Tuple,
    Dict,
    Namespace,
    Callable,
  };

  /// Undefined, as jinja2's default Undefined: `hint` is what using it as
  /// more than an empty, falsy value reports ("'x' is undefined").
  Value() = default;
  static Value undefined(std::string hint);
  static Value none();
  Value(bool b);
  Value(int64_t i);
  Value(int i) : Value(static_cast<int64_t>(i)) {}
  Value(double f);
  Value(std::string s);
  Value(const char *s) : Value(std::string(s)) {}
  static Value list(ValueList items);
  static Value tuple(ValueList items);
  static Value dict(ValueDict dict);
  static Value makeNamespace(ValueDict attributes);
  static Value callable(std::string name, Function function);

  /// JSON data as Python's json.loads would give it.
  static Value fromJson(const nlohmann::ordered_json &json);

  Kind kind() const { return valueKind; }
  bool isUndefined() const { return valueKind == Kind::Undefined; }
  bool isNone() const { return valueKind == Kind::None; }
  bool isString() const { return valueKind == Kind::String; }
  bool isNumber() const {
    return valueKind == Kind::Int || valueKind == Kind::Float ||
           valueKind == Kind::Bool;
  }
  bool isSequence() const {
    return valueKind == Kind::List || valueKind == Kind::Tuple;
  }
  bool isMapping() const { return valueKind == Kind::Dict; }

  /// The payload as a C++ type; a TemplateError naming the expected and the
  /// actual type when the value is not of that kind.
  bool asBool() const {
    expect(valueKind == Kind::Bool, "a bool");
    return std::get<bool>(payload);
  }
  int64_t asInt() const;   ///< Int or Bool.
  double asDouble() const; ///< Int, Float or Bool.
  const std::string &asString() const;
  const ValueList &asList() const; ///< List or Tuple.
  const ValueDict &asDict() const;
  ValueDict &namespaceAttributes() const;
  const Function &asFunction() const;
  /// Undefined's hint; a callable's name.
  const std::string &hint() const;

  /// Python's bool(x); Undefined is false.
  bool truthy() const;
  /// The error jinja2 raises when an Undefined is used as more than an empty
  /// value; does nothing for other values.
  void requireDefined() const;

  /// Python's type name, for messages ("dict object", "str").
  std::string typeName() const;

private:
  void expect(bool ok, const char *what) const;
  template <typename Ptr, typename Data>
  static Value shared(Kind kind, Data data);

  Kind valueKind = Kind::Undefined;
  std::variant<std::monostate, bool, int64_t, double, std::string,
               std::shared_ptr<const ValueList>,
               std::shared_ptr<const ValueDict>, std::shared_ptr<ValueDict>,
               std::shared_ptr<const NamedFunction>>
      payload;
};

/// Python's ==: 1 == 1.0 == True, containers compared element-wise.
bool equals(const Value &a, const Value &b);
/// Python's <, for numbers, strings and sequences; a TemplateError for
/// types Python cannot order.
bool lessThan(const Value &a, const Value &b);

/// Python's str(x) (Undefined is empty, as jinja2 prints it).
std::string toStr(const Value &value);
/// Python's repr(x).
std::string toRepr(const Value &value);
/// Python's repr of a float ("1.0", "0.1", "1e-05", "1e+20").
std::string floatRepr(double value);

} // namespace kiln::runtime::jinja

#endif // KILN_RUNTIME_JINJA_VALUE_H
