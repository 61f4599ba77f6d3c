//===- Operators.cpp - Jinja's arithmetic and comparisons -----------------===//
//
// Part of Kiln's Jinja engine. See Operators.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/jinja/Operators.h"

#include "runtime/jinja/Builtins.h"

#include <cmath>

namespace kiln::runtime::jinja {

namespace {

[[noreturn]] void unsupported(const std::string &op, const Value &left,
                              const Value &right) {
  if (op == "+" && (left.isString() || left.isSequence()))
    throw TemplateError("can only concatenate " + left.typeName() + " (not \"" +
                        right.typeName() + "\") to " + left.typeName());
  throw TemplateError("unsupported operand type(s) for " + op + ": '" +
                      left.typeName() + "' and '" + right.typeName() + "'");
}

bool isFloat(const Value &v) { return v.kind() == Value::Kind::Float; }

/// Python's floor division and modulo of integers (rounding to -infinity).
int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/// `sequence * count`, for str, list and tuple.
Value repeat(const Value &sequence, int64_t count) {
  if (sequence.isString()) {
    std::string out;
    for (int64_t i = 0; i < count; ++i)
      out += sequence.asString();
    return Value(out);
  }
  ValueList out;
  for (int64_t i = 0; i < count; ++i)
    out.insert(out.end(), sequence.asList().begin(), sequence.asList().end());
  return sequence.kind() == Value::Kind::Tuple ? Value::tuple(std::move(out))
                                               : Value::list(std::move(out));
}

Value arithmetic(const std::string &op, const Value &l, const Value &r) {
  bool useFloat = isFloat(l) || isFloat(r);
  if (op == "+")
    return useFloat ? Value(l.asDouble() + r.asDouble())
                    : Value(l.asInt() + r.asInt());
  if (op == "-")
    return useFloat ? Value(l.asDouble() - r.asDouble())
                    : Value(l.asInt() - r.asInt());
  if (op == "*")
    return useFloat ? Value(l.asDouble() * r.asDouble())
                    : Value(l.asInt() * r.asInt());
  if (op == "**") {
    if (!useFloat && r.asInt() >= 0) {
      int64_t result = 1;
      for (int64_t i = 0; i < r.asInt(); ++i)
        result *= l.asInt();
      return Value(result);
    }
    return Value(std::pow(l.asDouble(), r.asDouble()));
  }
  // Division of every kind.
  if (r.asDouble() == 0.0)
    throw TemplateError(op == "%" ? "integer modulo by zero"
                                  : "division by zero");
  if (op == "/")
    return Value(l.asDouble() / r.asDouble());
  if (!useFloat) {
    int64_t q = floorDiv(l.asInt(), r.asInt());
    return op == "//" ? Value(q) : Value(l.asInt() - q * r.asInt());
  }
  double q = std::floor(l.asDouble() / r.asDouble());
  return op == "//" ? Value(q) : Value(l.asDouble() - q * r.asDouble());
}

} // namespace

Value binaryOperator(const std::string &op, const Value &left,
                     const Value &right) {
  if (op == "~")
    return Value(toStr(left) + toStr(right));
  left.requireDefined();
  right.requireDefined();
  if (left.isNumber() && right.isNumber())
    return arithmetic(op, left, right);
  if (op == "+" && left.isString() && right.isString())
    return Value(left.asString() + right.asString());
  if (op == "+" && left.isSequence() && left.kind() == right.kind()) {
    ValueList items = left.asList();
    items.insert(items.end(), right.asList().begin(), right.asList().end());
    return left.kind() == Value::Kind::Tuple ? Value::tuple(std::move(items))
                                             : Value::list(std::move(items));
  }
  if (op == "*") {
    bool leftRepeats = left.isString() || left.isSequence();
    const Value &sequence = leftRepeats ? left : right;
    const Value &count = leftRepeats ? right : left;
    if ((sequence.isString() || sequence.isSequence()) &&
        (count.kind() == Value::Kind::Int || count.kind() == Value::Kind::Bool))
      return repeat(sequence, count.asInt());
  }
  unsupported(op, left, right);
}

bool compareOperator(const std::string &op, const Value &left,
                     const Value &right) {
  if (op == "==")
    return equals(left, right);
  if (op == "!=")
    return !equals(left, right);
  if (op == "<")
    return lessThan(left, right);
  if (op == ">")
    return lessThan(right, left);
  if (op == "<=")
    return lessThan(left, right) || equals(left, right);
  if (op == ">=")
    return lessThan(right, left) || equals(left, right);
  if (op == "in")
    return contains(right, left);
  if (op == "notin")
    return !contains(right, left);
  throw TemplateError("unknown comparison '" + op + "'");
}

Value unaryOperator(bool negate, const Value &operand) {
  operand.requireDefined();
  if (!operand.isNumber())
    throw TemplateError(std::string("bad operand type for unary ") +
                        (negate ? "-" : "+") + ": '" + operand.typeName() +
                        "'");
  if (!negate)
    return isFloat(operand) ? operand : Value(operand.asInt());
  return isFloat(operand) ? Value(-operand.asDouble())
                          : Value(-operand.asInt());
}

} // namespace kiln::runtime::jinja
