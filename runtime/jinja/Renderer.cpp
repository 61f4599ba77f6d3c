//===- Renderer.cpp - Walks a parsed template, writing its text -----------===//
//
// Part of Kiln's Jinja engine. See Renderer.h. Errors raised below a node
// take that node's line on the way out (the innermost node that knows it).
//
//===----------------------------------------------------------------------===//

#include "runtime/jinja/Renderer.h"

#include "runtime/jinja/Builtins.h"
#include "runtime/jinja/Operators.h"

namespace kiln::runtime::jinja {

namespace {

/// Macro calls nested deeper than this are a runaway recursion.
constexpr int kMaxCallDepth = 200;

/// Runs `body`, giving a TemplateError raised inside it `line` unless it
/// already has one; other exceptions become TemplateErrors.
template <typename Body> auto atLine(int line, Body body) {
  try {
    return body();
  } catch (TemplateError &e) {
    if (e.line == 0)
      e.line = line;
    throw;
  } catch (const std::exception &e) {
    throw TemplateError(e.what(), line);
  }
}

/// `callee(args)`; an Undefined callee reports why it is undefined.
Value invoke(const Value &callee, CallArgs &args) {
  if (callee.kind() != Value::Kind::Callable) {
    callee.requireDefined();
    throw TemplateError("'" + callee.typeName() + "' object is not callable");
  }
  return callee.asFunction()(args);
}

} // namespace

Renderer::Renderer(ValueDict globals) : globals(std::move(globals)) {}

std::string Renderer::render(const Body &body, const ValueDict &context) {
  Scope *root = newScope(nullptr);
  for (const auto &[name, value] : context.entries)
    root->variables[name] = value;
  std::string out;
  execute(body, newScope(root), out);
  return out;
}

Renderer::Scope *Renderer::newScope(Scope *parent) {
  scopes.emplace_back();
  scopes.back().parent = parent;
  return &scopes.back();
}

Value Renderer::lookup(const std::string &name, Scope *scope) const {
  for (Scope *s = scope; s; s = s->parent) {
    auto it = s->variables.find(name);
    if (it != s->variables.end())
      return it->second;
  }
  if (const Value *v = globals.find(name))
    return *v;
  return Value::undefined("'" + name + "' is undefined");
}

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

Renderer::Flow Renderer::execute(const Body &body, Scope *scope,
                                 std::string &out) {
  for (const StmtPtr &stmt : body) {
    Flow flow =
        atLine(stmt->line, [&] { return executeStatement(*stmt, scope, out); });
    if (flow != Flow::Normal)
      return flow;
  }
  return Flow::Normal;
}

Renderer::Flow Renderer::executeStatement(const Stmt &stmt, Scope *scope,
                                          std::string &out) {
  switch (stmt.kind) {
  case Stmt::Kind::Text:
    out += stmt.text;
    return Flow::Normal;
  case Stmt::Kind::Output:
    out += toStr(evaluate(*stmt.expr, scope));
    return Flow::Normal;
  case Stmt::Kind::If:
    for (size_t i = 0; i < stmt.conditions.size(); ++i)
      if (evaluate(*stmt.conditions[i], scope).truthy())
        return execute(stmt.bodies[i], scope, out);
    return execute(stmt.elseBody, scope, out);
  case Stmt::Kind::For:
    return executeFor(stmt, scope, out);
  case Stmt::Kind::Set:
    assign(stmt.targets, evaluate(*stmt.expr, scope), scope);
    return Flow::Normal;
  case Stmt::Kind::SetBlock: {
    std::string text;
    execute(stmt.body, scope, text);
    assign(stmt.targets, applyFilters(stmt.filters, Value(text), scope), scope);
    return Flow::Normal;
  }
  case Stmt::Kind::Macro:
    scope->variables[stmt.name] = defineMacro(stmt, scope);
    return Flow::Normal;
  case Stmt::Kind::CallBlock:
    executeCallBlock(stmt, scope, out);
    return Flow::Normal;
  case Stmt::Kind::FilterBlock: {
    std::string text;
    execute(stmt.body, scope, text);
    out += toStr(applyFilters(stmt.filters, Value(text), scope));
    return Flow::Normal;
  }
  case Stmt::Kind::Break:
    return Flow::Break;
  case Stmt::Kind::Continue:
    return Flow::Continue;
  }
  return Flow::Normal;
}

Renderer::Flow Renderer::executeFor(const Stmt &stmt, Scope *scope,
                                    std::string &out) {
  ValueList items = iterate(evaluate(*stmt.expr, scope));
  if (stmt.condition) {
    // The filter sees the loop variables but not `loop`.
    ValueList kept;
    for (const Value &item : items) {
      Scope *test = newScope(scope);
      assign(stmt.targets, item, test);
      if (evaluate(*stmt.condition, test).truthy())
        kept.push_back(item);
    }
    items = std::move(kept);
  }
  if (items.empty())
    return execute(stmt.elseBody, scope, out);

  auto n = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < n; ++i) {
    Scope *iteration = newScope(scope);
    assign(stmt.targets, items[i], iteration);
    ValueDict loop;
    loop.set("index", Value(i + 1));
    loop.set("index0", Value(i));
    loop.set("revindex", Value(n - i));
    loop.set("revindex0", Value(n - i - 1));
    loop.set("first", Value(i == 0));
    loop.set("last", Value(i == n - 1));
    loop.set("length", Value(n));
    loop.set("depth", Value(int64_t(1)));
    loop.set("depth0", Value(int64_t(0)));
    loop.set("previtem", i > 0 ? items[i - 1]
                               : Value::undefined("there is no previous item"));
    loop.set("nextitem", i < n - 1 ? items[i + 1]
                                   : Value::undefined("there is no next item"));
    loop.set("cycle", Value::callable("loop.cycle", [i](CallArgs &args) {
               if (args.positional.empty())
                 throw TemplateError("no items for cycling given");
               return args.positional[i % args.positional.size()];
             }));
    iteration->variables["loop"] = Value::dict(std::move(loop));
    if (execute(stmt.body, iteration, out) == Flow::Break)
      break;
  }
  return Flow::Normal;
}

void Renderer::assign(const std::vector<std::string> &targets,
                      const Value &value, Scope *scope) {
  if (targets.size() > 1) {
    ValueList items = iterate(value);
    if (items.size() != targets.size())
      throw TemplateError(items.size() < targets.size()
                              ? "not enough values to unpack (expected " +
                                    std::to_string(targets.size()) + ", got " +
                                    std::to_string(items.size()) + ")"
                              : "too many values to unpack (expected " +
                                    std::to_string(targets.size()) + ")");
    for (size_t i = 0; i < targets.size(); ++i)
      assign({targets[i]}, items[i], scope);
    return;
  }
  const std::string &target = targets[0];
  size_t dot = target.find('.');
  if (dot == std::string::npos) {
    scope->variables[target] = value;
    return;
  }
  Value object = lookup(target.substr(0, dot), scope);
  if (object.kind() != Value::Kind::Namespace)
    throw TemplateError("cannot assign attribute on non-namespace object '" +
                        target.substr(0, dot) + "'");
  object.namespaceAttributes().set(target.substr(dot + 1), value);
}

Value Renderer::defineMacro(const Stmt &stmt, Scope *scope) {
  return Value::callable(stmt.name, [this, &stmt, scope](CallArgs &args) {
    return callMacro(stmt, scope, args);
  });
}

Value Renderer::callMacro(const Stmt &stmt, Scope *definition, CallArgs &args) {
  const std::vector<Parameter> &parameters = stmt.parameters;
  if (args.positional.size() > parameters.size())
    throw TemplateError("macro '" + stmt.name + "' takes not more than " +
                        std::to_string(parameters.size()) + " argument(s)");
  Scope *scope = newScope(definition);
  std::vector<bool> given(parameters.size());
  for (size_t i = 0; i < args.positional.size(); ++i) {
    scope->variables[parameters[i].name] = args.positional[i];
    given[i] = true;
  }
  for (auto &[key, value] : args.keywords) {
    size_t i = 0;
    while (i < parameters.size() && parameters[i].name != key)
      ++i;
    if (i == parameters.size() && key != "caller")
      throw TemplateError("macro '" + stmt.name +
                          "' takes no keyword argument '" + key + "'");
    scope->variables[key] = value;
    if (i < parameters.size())
      given[i] = true;
  }
  // Defaults are evaluated at the call, seeing the earlier parameters.
  for (size_t i = 0; i < parameters.size(); ++i) {
    if (given[i])
      continue;
    const Parameter &p = parameters[i];
    scope->variables[p.name] =
        p.defaultValue
            ? evaluate(*p.defaultValue, scope)
            : Value::undefined("parameter '" + p.name + "' was not provided");
  }
  if (++callDepth > kMaxCallDepth)
    throw TemplateError("macro '" + stmt.name + "' recursed more than " +
                        std::to_string(kMaxCallDepth) + " calls deep");
  std::string out;
  execute(stmt.body, scope, out);
  --callDepth;
  return Value(out);
}

void Renderer::executeCallBlock(const Stmt &stmt, Scope *scope,
                                std::string &out) {
  // The block's body becomes `caller`, a macro with the block's parameters.
  Value caller =
      Value::callable("caller", [this, &stmt, scope](CallArgs &args) {
        return callMacro(stmt, scope, args);
      });
  const Expr &call = *stmt.expr;
  Value callee = evaluate(*call.operands[0], scope);
  CallArgs args = evaluateArgs(call.args, scope);
  args.keywords.emplace_back("caller", caller);
  out += toStr(invoke(callee, args));
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

Value Renderer::evaluate(const Expr &expr, Scope *scope) {
  return atLine(expr.line, [&] { return evaluateUnchecked(expr, scope); });
}

CallArgs Renderer::evaluateArgs(const ArgExprs &args, Scope *scope) {
  CallArgs out;
  for (const ExprPtr &e : args.positional)
    out.positional.push_back(evaluate(*e, scope));
  for (const auto &[name, e] : args.keywords)
    out.keywords.emplace_back(name, evaluate(*e, scope));
  return out;
}

Value Renderer::applyFilters(const std::vector<FilterCall> &filters,
                             Value value, Scope *scope) {
  for (const FilterCall &f : filters)
    value = atLine(f.line, [&] {
      return applyFilter(f.name, value, evaluateArgs(f.args, scope));
    });
  return value;
}

Value Renderer::evaluateUnchecked(const Expr &e, Scope *scope) {
  auto operand = [&](size_t i) { return evaluate(*e.operands[i], scope); };
  switch (e.kind) {
  case Expr::Kind::Literal:
    return e.value;
  case Expr::Kind::Name:
    return lookup(e.name, scope);
  case Expr::Kind::List:
  case Expr::Kind::Tuple: {
    ValueList items;
    for (size_t i = 0; i < e.operands.size(); ++i)
      items.push_back(operand(i));
    return e.kind == Expr::Kind::List ? Value::list(std::move(items))
                                      : Value::tuple(std::move(items));
  }
  case Expr::Kind::Dict: {
    ValueDict dict;
    for (size_t i = 0; i < e.keys.size(); ++i) {
      Value key = evaluate(*e.keys[i], scope);
      if (!key.isString())
        throw TemplateError("dict keys must be strings here, not " +
                            key.typeName());
      dict.set(key.asString(), operand(i));
    }
    return Value::dict(std::move(dict));
  }
  case Expr::Kind::Attribute:
    return getAttribute(operand(0), e.name);
  case Expr::Kind::Item:
    return getItem(operand(0), operand(1));
  case Expr::Kind::Slice: {
    auto part = [&](size_t i) {
      return e.operands[i] ? operand(i) : Value::none();
    };
    return getSlice(operand(0), part(1), part(2), part(3));
  }
  case Expr::Kind::Call: {
    Value callee = operand(0);
    CallArgs args = evaluateArgs(e.args, scope);
    return invoke(callee, args);
  }
  case Expr::Kind::Filter:
    return applyFilter(e.filter.name, operand(0),
                       evaluateArgs(e.filter.args, scope));
  case Expr::Kind::Test: {
    bool result = applyTest(e.name, operand(0), evaluateArgs(e.args, scope));
    return Value(result != e.negated);
  }
  case Expr::Kind::Negate:
  case Expr::Kind::Plus:
    return unaryOperator(e.kind == Expr::Kind::Negate, operand(0));
  case Expr::Kind::Not:
    return Value(!operand(0).truthy());
  case Expr::Kind::And: {
    Value left = operand(0);
    return left.truthy() ? operand(1) : left;
  }
  case Expr::Kind::Or: {
    Value left = operand(0);
    return left.truthy() ? left : operand(1);
  }
  case Expr::Kind::Binary:
    return binaryOperator(e.name, operand(0), operand(1));
  case Expr::Kind::Compare: {
    Value left = operand(0);
    for (size_t i = 0; i < e.ops.size(); ++i) {
      Value right = operand(i + 1);
      if (!compareOperator(e.ops[i], left, right))
        return Value(false);
      left = std::move(right);
    }
    return Value(true);
  }
  case Expr::Kind::Conditional:
    if (operand(0).truthy())
      return operand(1);
    if (e.operands.size() > 2)
      return operand(2);
    return Value::undefined("the inline if-expression on line " +
                            std::to_string(e.line) +
                            " evaluated to false and no else section was "
                            "defined.");
  }
  return Value();
}

} // namespace kiln::runtime::jinja
