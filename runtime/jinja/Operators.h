//===- Operators.h - Jinja's arithmetic and comparisons ---------*- C++ -*-===//
//
// Part of Kiln's Jinja engine. The operators of expressions with Python's
// semantics: int and float arithmetic (/ is true division, // and % floor),
// str and list concatenation and repetition, `~` as str() concatenation
// (the only one an Undefined survives), comparisons and `in`.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_JINJA_OPERATORS_H
#define KILN_RUNTIME_JINJA_OPERATORS_H

#include "runtime/jinja/Value.h"

#include <string>

namespace kiln::runtime::jinja {

/// `left op right` for + - * / // % ** ~; a TemplateError with Python's
/// message for unsupported operand types.
Value binaryOperator(const std::string &op, const Value &left,
                     const Value &right);
/// `left op right` for == != < > <= >= in notin.
bool compareOperator(const std::string &op, const Value &left,
                     const Value &right);
/// Unary minus (`negate`) or plus.
Value unaryOperator(bool negate, const Value &operand);

} // namespace kiln::runtime::jinja

#endif // KILN_RUNTIME_JINJA_OPERATORS_H
