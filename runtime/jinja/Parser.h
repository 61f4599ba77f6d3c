//===- Parser.h - Jinja tokens to a syntax tree -----------------*- C++ -*-===//
//
// Part of Kiln's Jinja engine. A recursive-descent parser with jinja2's
// grammar and operator precedence (loosest first): `x if c else y`, `or`,
// `and`, `not`, comparisons and `in`/`not in`, `+ -`, `~`, `* / // %`,
// `**`, unary `- +`, then primaries with `.attr`, `[item]`, `[a:b:c]`,
// calls, `| filter` and `is test`.
//
// Statements: if/elif/else, for (with a filter `if`, `else`, unpacking),
// set (names, `ns.attr`, tuples, block set with filters), macro, call,
// filter blocks, break and continue.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_JINJA_PARSER_H
#define KILN_RUNTIME_JINJA_PARSER_H

#include "runtime/jinja/Ast.h"
#include "runtime/jinja/Lexer.h"

#include <vector>

namespace kiln::runtime::jinja {

/// The statements of a whole template. Throws TemplateError with the line
/// of an unexpected token, an unknown or unclosed tag, or a misplaced
/// `break`/`continue`.
Body parseTemplate(const std::vector<Token> &tokens);

} // namespace kiln::runtime::jinja

#endif // KILN_RUNTIME_JINJA_PARSER_H
