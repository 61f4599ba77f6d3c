//===- Ast.h - The parsed form of a Jinja template --------------*- C++ -*-===//
//
// Part of Kiln's Jinja engine. The parser (Parser.h) builds these; the
// renderer (Renderer.cpp) walks them. Every node keeps the template line it
// came from, for error messages.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_JINJA_AST_H
#define KILN_RUNTIME_JINJA_AST_H

#include "runtime/jinja/Value.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kiln::runtime::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

/// A call's argument expressions: positional, then `name=value`.
struct ArgExprs {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keywords;
};

/// `| name(args)`, as in an expression or a filter block.
struct FilterCall {
  std::string name;
  ArgExprs args;
  int line = 0;
};

struct Expr {
  enum class Kind {
    Literal,     ///< value
    Name,        ///< name
    List,        ///< [operands...]
    Tuple,       ///< (operands...)
    Dict,        ///< {keys[i]: operands[i]}
    Attribute,   ///< operands[0].name
    Item,        ///< operands[0][operands[1]]
    Slice,       ///< operands[0][1:2:3], absent parts are null
    Call,        ///< operands[0](args)
    Filter,      ///< operands[0] | filter
    Test,        ///< operands[0] is [not] name(args)
    Negate,      ///< -operands[0]
    Plus,        ///< +operands[0]
    Not,         ///< not operands[0]
    And,         ///< operands[0] and operands[1]
    Or,          ///< operands[0] or operands[1]
    Binary,      ///< operands[0] op operands[1]: + - * / // % ** ~
    Compare,     ///< operands[0] ops[0] operands[1] ops[1] ...
    Conditional, ///< operands[1] if operands[0] else operands[2] (if any)
  };
  Kind kind;
  int line = 0;
  Value value;
  std::string name;              ///< Name, Attribute, Test; Binary's operator.
  std::vector<ExprPtr> operands; ///< see Kind; Slice's may be null
  std::vector<ExprPtr> keys;     ///< Dict
  std::vector<std::string> ops;  ///< Compare: == != < > <= >= in notin
  ArgExprs args;                 ///< Call, Test
  FilterCall filter;             ///< Filter
  bool negated = false;          ///< Test
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

/// A parameter of a macro or of a call block's caller.
struct Parameter {
  std::string name;
  ExprPtr defaultValue; ///< null: required
};

struct Stmt {
  enum class Kind {
    Text,        ///< text
    Output,      ///< {{ expr }}
    If,          ///< conditions[i] -> bodies[i]; elseBody
    For,         ///< for targets in expr [if condition]: body; elseBody
    Set,         ///< set targets = expr (a target may be "ns.attr")
    SetBlock,    ///< set targets[0] [| filters]: body
    Macro,       ///< macro name(parameters): body
    CallBlock,   ///< call(parameters) expr: body (the caller)
    FilterBlock, ///< filter filters: body
    Break,
    Continue,
  };
  Kind kind;
  int line = 0;
  std::string text;
  ExprPtr expr;
  std::vector<ExprPtr> conditions;
  std::vector<Body> bodies;
  Body body;
  Body elseBody;
  std::vector<std::string> targets;
  ExprPtr condition;
  std::string name;
  std::vector<Parameter> parameters;
  std::vector<FilterCall> filters;
};

} // namespace kiln::runtime::jinja

#endif // KILN_RUNTIME_JINJA_AST_H
