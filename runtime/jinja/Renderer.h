//===- Renderer.h - Walks a parsed template, writing its text ---*- C++ -*-===//
//
// Part of Kiln's Jinja engine (internal to it). Scopes follow jinja2's:
// `set` assigns in the innermost scope; each for-loop iteration and each
// macro call has a scope of its own that reads through to the enclosing
// ones, so an assignment inside a loop is gone after it (which is why
// templates use namespace()). A macro reads the scope it was defined in as
// that scope is when the macro runs.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_JINJA_RENDERER_H
#define KILN_RUNTIME_JINJA_RENDERER_H

#include "runtime/jinja/Ast.h"

#include <deque>
#include <string>
#include <unordered_map>

namespace kiln::runtime::jinja {

class Renderer {
public:
  /// `globals` are read after every scope (the template's variables go in
  /// the outermost scope, given to render()).
  explicit Renderer(ValueDict globals);

  /// Renders `body` with `context` as its variables.
  std::string render(const Body &body, const ValueDict &context);

private:
  struct Scope {
    std::unordered_map<std::string, Value> variables;
    Scope *parent = nullptr;
  };
  /// What a statement asks of the loop around it.
  enum class Flow { Normal, Break, Continue };

  Scope *newScope(Scope *parent);
  Value lookup(const std::string &name, Scope *scope) const;

  Flow execute(const Body &body, Scope *scope, std::string &out);
  Flow executeStatement(const Stmt &stmt, Scope *scope, std::string &out);
  Flow executeFor(const Stmt &stmt, Scope *scope, std::string &out);
  void assign(const std::vector<std::string> &targets, const Value &value,
              Scope *scope);
  Value defineMacro(const Stmt &stmt, Scope *scope);
  Value callMacro(const Stmt &stmt, Scope *definition, CallArgs &args);
  void executeCallBlock(const Stmt &stmt, Scope *scope, std::string &out);

  Value evaluate(const Expr &expr, Scope *scope);
  Value evaluateUnchecked(const Expr &expr, Scope *scope);
  CallArgs evaluateArgs(const ArgExprs &args, Scope *scope);
  Value applyFilters(const std::vector<FilterCall> &filters, Value value,
                     Scope *scope);

  ValueDict globals;
  /// Every scope of this render; a deque so that pointers stay valid.
  /// Macros keep pointers to their defining scope, which a shared_ptr would
  /// turn into a cycle (the scope holds the macro).
  std::deque<Scope> scopes;
  int callDepth = 0;
};

} // namespace kiln::runtime::jinja

#endif // KILN_RUNTIME_JINJA_RENDERER_H
