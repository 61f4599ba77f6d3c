//===- Parser.cpp - Jinja tokens to a syntax tree -------------------------===//
//
// Part of Kiln's Jinja engine. See Parser.h; each parse function names the
// jinja2 grammar rule it mirrors.
//
//===----------------------------------------------------------------------===//

#include "runtime/jinja/Parser.h"

#include <initializer_list>

namespace kiln::runtime::jinja {

namespace {

using TK = Token::Kind;

/// Tags and expressions nested deeper than this are refused rather than
/// risking the stack (jinja2 stops at Python's recursion limit).
constexpr int kMaxNesting = 128;

class Parser {
public:
  explicit Parser(const std::vector<Token> &tokens) : tokens(tokens) {}

  Body parseAll() {
    Body body = parseBody({});
    return body;
  }

private:
  //===--------------------------------------------------------------------===//
  // Token helpers
  //===--------------------------------------------------------------------===//

  const Token &peek(size_t ahead = 0) const {
    size_t i = std::min(index + ahead, tokens.size() - 1);
    return tokens[i];
  }
  const Token &next() {
    const Token &t = peek();
    if (index < tokens.size() - 1)
      ++index;
    return t;
  }
  bool isOp(const char *op, size_t ahead = 0) const {
    return peek(ahead).kind == TK::Operator && peek(ahead).text == op;
  }
  bool isName(const char *name, size_t ahead = 0) const {
    return peek(ahead).kind == TK::Name && peek(ahead).text == name;
  }
  bool acceptOp(const char *op) {
    if (!isOp(op))
      return false;
    next();
    return true;
  }
  bool acceptName(const char *name) {
    if (!isName(name))
      return false;
    next();
    return true;
  }
  static std::string describe(const Token &t) {
    switch (t.kind) {
    case TK::Text:
      return "template text";
    case TK::VariableBegin:
      return "'{{'";
    case TK::VariableEnd:
      return "'}}'";
    case TK::BlockBegin:
      return "'{%'";
    case TK::BlockEnd:
      return "'%}'";
    case TK::String:
      return "string literal";
    case TK::End:
      return "end of template";
    default:
      return "'" + t.text + "'";
    }
  }
  [[noreturn]] void fail(const std::string &expected) const {
    throw TemplateError("expected " + expected + ", found " + describe(peek()),
                        peek().line);
  }
  void expectOp(const char *op) {
    if (!acceptOp(op))
      fail(std::string("'") + op + "'");
  }
  void expect(TK kind, const char *what) {
    if (peek().kind != kind)
      fail(what);
    next();
  }
  std::string expectName() {
    if (peek().kind != TK::Name)
      fail("a name");
    return next().text;
  }

  ExprPtr node(Expr::Kind kind, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    return e;
  }
  StmtPtr stmt(Stmt::Kind kind, int line) {
    auto s = std::make_unique<Stmt>();
    s->kind = kind;
    s->line = line;
    return s;
  }

  //===--------------------------------------------------------------------===//
  // Statements
  //===--------------------------------------------------------------------===//

  /// Statements until a block tag named in `ends` (its `{%` and name are
  /// consumed; `endTag` says which). With no ends, until the template ends.
  Body parseBody(std::initializer_list<const char *> ends,
                 std::string *endTag = nullptr) {
    Body body;
    // The tag that opened this block ended just before.
    int openLine = index > 0 ? tokens[index - 1].line : 1;
    while (true) {
      const Token &t = peek();
      if (t.kind == TK::End) {
        if (ends.size() == 0)
          return body;
        std::string names;
        for (const char *e : ends)
          names += (names.empty() ? "'" : " or '") + std::string(e) + "'";
        throw TemplateError("unexpected end of template: expected " + names +
                                " to close the block opened on line " +
                                std::to_string(openLine),
                            t.line);
      }
      if (t.kind == TK::Text) {
        auto s = stmt(Stmt::Kind::Text, t.line);
        s->text = next().text;
        body.push_back(std::move(s));
      } else if (t.kind == TK::VariableBegin) {
        next();
        auto s = stmt(Stmt::Kind::Output, t.line);
        s->expr = parseTuple(true);
        expect(TK::VariableEnd, "'}}'");
        body.push_back(std::move(s));
      } else if (t.kind == TK::BlockBegin) {
        const Token &name = peek(1);
        for (const char *e : ends) {
          if (name.kind == TK::Name && name.text == e) {
            next();
            next();
            if (endTag)
              *endTag = e;
            return body;
          }
        }
        next();
        body.push_back(parseStatement());
      } else {
        fail("template text or a tag");
      }
    }
  }

  StmtPtr parseStatement() {
    NestingGuard guard(*this);
    const Token &t = peek();
    if (t.kind != TK::Name)
      fail("a statement name");
    std::string keyword = next().text;
    int line = t.line;
    if (keyword == "if")
      return parseIf(line);
    if (keyword == "for")
      return parseFor(line);
    if (keyword == "set")
      return parseSet(line);
    if (keyword == "macro")
      return parseMacro(line);
    if (keyword == "call")
      return parseCallBlock(line);
    if (keyword == "filter")
      return parseFilterBlock(line);
    if (keyword == "break" || keyword == "continue") {
      if (loopDepth == 0)
        throw TemplateError("'" + keyword + "' outside a for loop", line);
      expect(TK::BlockEnd, "'%}'");
      return stmt(keyword == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue,
                  line);
    }
    throw TemplateError("unknown tag '" + keyword + "'", line);
  }

  StmtPtr parseIf(int line) {
    auto s = stmt(Stmt::Kind::If, line);
    while (true) {
      s->conditions.push_back(parseTuple(false));
      expect(TK::BlockEnd, "'%}'");
      std::string end;
      s->bodies.push_back(parseBody({"elif", "else", "endif"}, &end));
      if (end == "elif")
        continue;
      if (end == "else") {
        expect(TK::BlockEnd, "'%}'");
        s->elseBody = parseBody({"endif"});
      }
      expect(TK::BlockEnd, "'%}'");
      return s;
    }
  }

  StmtPtr parseFor(int line) {
    auto s = stmt(Stmt::Kind::For, line);
    s->targets = parseTargets();
    if (!acceptName("in"))
      fail("'in'");
    s->expr = parseTuple(false, /*noCondition=*/true);
    if (acceptName("if"))
      s->condition = parseExpression(true);
    if (isName("recursive"))
      throw TemplateError("recursive for loops are not supported", line);
    expect(TK::BlockEnd, "'%}'");
    ++loopDepth;
    std::string end;
    s->body = parseBody({"else", "endfor"}, &end);
    --loopDepth;
    if (end == "else") {
      expect(TK::BlockEnd, "'%}'");
      s->elseBody = parseBody({"endfor"});
    }
    expect(TK::BlockEnd, "'%}'");
    return s;
  }

  /// Assignment targets: `a`, `a, b`, `(a, b)`, and `ns.attr`.
  std::vector<std::string> parseTargets() {
    std::vector<std::string> targets;
    bool parenthesized = acceptOp("(");
    do {
      std::string name = expectName();
      if (acceptOp("."))
        name += "." + expectName();
      targets.push_back(name);
    } while (acceptOp(","));
    if (parenthesized)
      expectOp(")");
    return targets;
  }

  StmtPtr parseSet(int line) {
    std::vector<std::string> targets = parseTargets();
    if (acceptOp("=")) {
      auto s = stmt(Stmt::Kind::Set, line);
      s->targets = std::move(targets);
      s->expr = parseTuple(true);
      expect(TK::BlockEnd, "'%}'");
      return s;
    }
    auto s = stmt(Stmt::Kind::SetBlock, line);
    if (targets.size() != 1)
      throw TemplateError("a block set assigns one name", line);
    s->targets = std::move(targets);
    while (acceptOp("|"))
      s->filters.push_back(parseFilterCall());
    expect(TK::BlockEnd, "'%}'");
    s->body = parseBody({"endset"});
    expect(TK::BlockEnd, "'%}'");
    return s;
  }

  std::vector<Parameter> parseParameters() {
    std::vector<Parameter> parameters;
    expectOp("(");
    parseCommaList(")", [&] {
      Parameter p;
      p.name = expectName();
      if (acceptOp("="))
        p.defaultValue = parseExpression(true);
      parameters.push_back(std::move(p));
    });
    return parameters;
  }

  /// A macro or caller body: loop controls of an enclosing loop do not reach
  /// into it.
  Body parseCallableBody(const char *end) {
    int savedDepth = loopDepth;
    loopDepth = 0;
    Body body = parseBody({end});
    loopDepth = savedDepth;
    expect(TK::BlockEnd, "'%}'");
    return body;
  }

  StmtPtr parseMacro(int line) {
    auto s = stmt(Stmt::Kind::Macro, line);
    s->name = expectName();
    s->parameters = parseParameters();
    expect(TK::BlockEnd, "'%}'");
    s->body = parseCallableBody("endmacro");
    return s;
  }

  StmtPtr parseCallBlock(int line) {
    auto s = stmt(Stmt::Kind::CallBlock, line);
    if (isOp("("))
      s->parameters = parseParameters();
    s->expr = parseExpression(true);
    if (s->expr->kind != Expr::Kind::Call)
      throw TemplateError("'call' needs a macro call, as in {% call m() %}",
                          line);
    expect(TK::BlockEnd, "'%}'");
    s->body = parseCallableBody("endcall");
    return s;
  }

  StmtPtr parseFilterBlock(int line) {
    auto s = stmt(Stmt::Kind::FilterBlock, line);
    do
      s->filters.push_back(parseFilterCall());
    while (acceptOp("|"));
    expect(TK::BlockEnd, "'%}'");
    s->body = parseBody({"endfilter"});
    expect(TK::BlockEnd, "'%}'");
    return s;
  }

  //===--------------------------------------------------------------------===//
  // Expressions
  //===--------------------------------------------------------------------===//

  /// parse_tuple: expressions separated by commas make a tuple.
  ExprPtr parseTuple(bool withCondition, bool noCondition = false) {
    int line = peek().line;
    ExprPtr first = parseExpression(withCondition && !noCondition);
    if (!isOp(","))
      return first;
    auto tuple = node(Expr::Kind::Tuple, line);
    tuple->operands.push_back(std::move(first));
    while (acceptOp(",")) {
      if (atExpressionEnd())
        break;
      tuple->operands.push_back(parseExpression(withCondition && !noCondition));
    }
    return tuple;
  }

  bool atExpressionEnd() const {
    TK k = peek().kind;
    return k == TK::BlockEnd || k == TK::VariableEnd || isOp(")") ||
           isName("in") || isName("if");
  }

  /// parse_expression: or-expressions, with `a if c else b` when allowed.
  ExprPtr parseExpression(bool withCondition) {
    NestingGuard guard(*this);
    ExprPtr e = parseOr();
    while (withCondition && isName("if")) {
      int line = next().line;
      auto conditional = node(Expr::Kind::Conditional, line);
      conditional->operands.push_back(parseOr());
      conditional->operands.push_back(std::move(e));
      if (acceptName("else"))
        conditional->operands.push_back(parseExpression(true));
      e = std::move(conditional);
    }
    return e;
  }

  ExprPtr binaryNode(Expr::Kind kind, std::string op, ExprPtr l, ExprPtr r,
                     int line) {
    auto e = node(kind, line);
    e->name = std::move(op);
    e->operands.push_back(std::move(l));
    e->operands.push_back(std::move(r));
    return e;
  }

  ExprPtr parseOr() {
    ExprPtr e = parseAnd();
    while (isName("or")) {
      int line = next().line;
      e = binaryNode(Expr::Kind::Or, "or", std::move(e), parseAnd(), line);
    }
    return e;
  }

  ExprPtr parseAnd() {
    ExprPtr e = parseNot();
    while (isName("and")) {
      int line = next().line;
      e = binaryNode(Expr::Kind::And, "and", std::move(e), parseNot(), line);
    }
    return e;
  }

  ExprPtr parseNot() {
    NestingGuard guard(*this);
    if (isName("not")) {
      auto e = node(Expr::Kind::Not, next().line);
      e->operands.push_back(parseNot());
      return e;
    }
    return parseCompare();
  }

  ExprPtr parseCompare() {
    int line = peek().line;
    ExprPtr first = parseMath1();
    ExprPtr compare;
    while (true) {
      std::string op;
      if (peek().kind == TK::Operator &&
          (peek().text == "==" || peek().text == "!=" || peek().text == "<" ||
           peek().text == ">" || peek().text == "<=" || peek().text == ">="))
        op = next().text;
      else if (acceptName("in"))
        op = "in";
      else if (isName("not") && isName("in", 1)) {
        next();
        next();
        op = "notin";
      } else
        break;
      if (!compare) {
        compare = node(Expr::Kind::Compare, line);
        compare->operands.push_back(std::move(first));
      }
      compare->ops.push_back(op);
      compare->operands.push_back(parseMath1());
    }
    return compare ? std::move(compare) : std::move(first);
  }

  template <typename Next>
  ExprPtr parseBinary(std::initializer_list<const char *> ops, Next nextLevel) {
    ExprPtr e = (this->*nextLevel)();
    while (true) {
      const char *found = nullptr;
      for (const char *op : ops)
        if (isOp(op))
          found = op;
      if (!found)
        return e;
      int line = next().line;
      e = binaryNode(Expr::Kind::Binary, found, std::move(e),
                     (this->*nextLevel)(), line);
    }
  }

  ExprPtr parseMath1() { return parseBinary({"+", "-"}, &Parser::parseConcat); }
  ExprPtr parseConcat() { return parseBinary({"~"}, &Parser::parseMath2); }
  ExprPtr parseMath2() {
    return parseBinary({"*", "/", "//", "%"}, &Parser::parsePow);
  }
  ExprPtr parsePow() {
    return parseBinary({"**"}, &Parser::parseUnaryFiltered);
  }
  ExprPtr parseUnaryFiltered() { return parseUnary(true); }

  ExprPtr parseUnary(bool withFilter) {
    NestingGuard guard(*this);
    ExprPtr e;
    if (isOp("-") || isOp("+")) {
      const Token &t = next();
      e = node(t.text == "-" ? Expr::Kind::Negate : Expr::Kind::Plus, t.line);
      e->operands.push_back(parseUnary(false));
    } else {
      e = parsePrimary();
    }
    e = parsePostfix(std::move(e));
    return withFilter ? parseFilterExpr(std::move(e)) : std::move(e);
  }

  ExprPtr parsePrimary() {
    size_t start = index;
    const Token &t = next();
    switch (t.kind) {
    case TK::Name: {
      auto e = node(Expr::Kind::Literal, t.line);
      if (t.text == "true" || t.text == "True")
        e->value = Value(true);
      else if (t.text == "false" || t.text == "False")
        e->value = Value(false);
      else if (t.text == "none" || t.text == "None")
        e->value = Value::none();
      else {
        e->kind = Expr::Kind::Name;
        e->name = t.text;
      }
      return e;
    }
    case TK::String: {
      // Adjacent literals concatenate, as in Python.
      std::string text = t.text;
      while (peek().kind == TK::String)
        text += next().text;
      auto e = node(Expr::Kind::Literal, t.line);
      e->value = Value(std::move(text));
      return e;
    }
    case TK::Integer:
    case TK::Float: {
      auto e = node(Expr::Kind::Literal, t.line);
      try {
        e->value = t.kind == TK::Integer ? Value(int64_t(std::stoll(t.text)))
                                         : Value(std::stod(t.text));
      } catch (const std::exception &) {
        throw TemplateError("number " + t.text + " is out of range", t.line);
      }
      return e;
    }
    case TK::Operator:
      if (t.text == "(")
        return parseParenthesized(t.line);
      if (t.text == "[")
        return parseList(t.line);
      if (t.text == "{")
        return parseDict(t.line);
      break;
    default:
      break;
    }
    index = start;
    fail("an expression");
  }

  ExprPtr parseParenthesized(int line) {
    if (acceptOp(")"))
      return node(Expr::Kind::Tuple, line);
    ExprPtr first = parseExpression(true);
    if (acceptOp(")"))
      return first;
    auto tuple = node(Expr::Kind::Tuple, line);
    tuple->operands.push_back(std::move(first));
    while (acceptOp(",")) {
      if (isOp(")"))
        break;
      tuple->operands.push_back(parseExpression(true));
    }
    expectOp(")");
    return tuple;
  }

  /// Comma-separated items up to `close` (a trailing comma allowed), each
  /// read by `item`; consumes `close`.
  template <typename Item> void parseCommaList(const char *close, Item item) {
    for (bool first = true; !isOp(close); first = false) {
      if (!first)
        expectOp(",");
      if (isOp(close))
        break;
      item();
    }
    expectOp(close);
  }

  ExprPtr parseList(int line) {
    auto list = node(Expr::Kind::List, line);
    parseCommaList("]",
                   [&] { list->operands.push_back(parseExpression(true)); });
    return list;
  }

  ExprPtr parseDict(int line) {
    auto dict = node(Expr::Kind::Dict, line);
    parseCommaList("}", [&] {
      dict->keys.push_back(parseExpression(true));
      expectOp(":");
      dict->operands.push_back(parseExpression(true));
    });
    return dict;
  }

  ExprPtr parsePostfix(ExprPtr e) {
    while (true) {
      if (isOp(".")) {
        int line = next().line;
        if (peek().kind == TK::Integer) {
          auto item = node(Expr::Kind::Item, line);
          auto index = node(Expr::Kind::Literal, line);
          index->value = Value(int64_t(std::stoll(next().text)));
          item->operands.push_back(std::move(e));
          item->operands.push_back(std::move(index));
          e = std::move(item);
          continue;
        }
        auto attribute = node(Expr::Kind::Attribute, line);
        attribute->name = expectName();
        attribute->operands.push_back(std::move(e));
        e = std::move(attribute);
      } else if (isOp("[")) {
        e = parseSubscript(std::move(e), next().line);
      } else if (isOp("(")) {
        e = parseCall(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr parseSubscript(ExprPtr target, int line) {
    ExprPtr parts[3];
    int part = 0;
    bool isSlice = false;
    while (!isOp("]")) {
      if (acceptOp(":")) {
        isSlice = true;
        if (++part > 2)
          fail("']'");
        continue;
      }
      if (parts[part])
        fail("':' or ']'");
      parts[part] = parseExpression(true);
    }
    expectOp("]");
    if (!isSlice && !parts[0])
      throw TemplateError("empty subscript '[]'", line);
    auto e = node(isSlice ? Expr::Kind::Slice : Expr::Kind::Item, line);
    e->operands.push_back(std::move(target));
    e->operands.push_back(std::move(parts[0]));
    if (isSlice) {
      e->operands.push_back(std::move(parts[1]));
      e->operands.push_back(std::move(parts[2]));
    }
    return e;
  }

  ArgExprs parseCallArgs() {
    ArgExprs args;
    expectOp("(");
    parseCommaList(")", [&] {
      if (peek().kind == TK::Name && isOp("=", 1)) {
        std::string name = next().text;
        next();
        args.keywords.emplace_back(name, parseExpression(true));
      } else {
        if (!args.keywords.empty())
          fail("a keyword argument (positional arguments come first)");
        args.positional.push_back(parseExpression(true));
      }
    });
    return args;
  }

  ExprPtr parseCall(ExprPtr callee) {
    auto e = node(Expr::Kind::Call, peek().line);
    e->args = parseCallArgs();
    e->operands.push_back(std::move(callee));
    return e;
  }

  FilterCall parseFilterCall() {
    FilterCall f;
    f.line = peek().line;
    f.name = expectName();
    if (isOp("("))
      f.args = parseCallArgs();
    return f;
  }

  ExprPtr parseFilterExpr(ExprPtr e) {
    while (true) {
      if (isOp("|")) {
        int line = next().line;
        auto filter = node(Expr::Kind::Filter, line);
        filter->filter = parseFilterCall();
        filter->operands.push_back(std::move(e));
        e = std::move(filter);
      } else if (isName("is")) {
        e = parseTest(std::move(e), next().line);
      } else if (isOp("(")) {
        e = parseCall(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr parseTest(ExprPtr subject, int line) {
    auto test = node(Expr::Kind::Test, line);
    test->negated = acceptName("not");
    test->name = expectName();
    const Token &t = peek();
    if (isOp("(")) {
      test->args = parseCallArgs();
    } else if ((t.kind == TK::Name || t.kind == TK::String ||
                t.kind == TK::Integer || t.kind == TK::Float || isOp("[") ||
                isOp("{")) &&
               !isName("else") && !isName("or") && !isName("and")) {
      if (isName("is"))
        fail("an expression (tests cannot be chained with 'is')");
      test->args.positional.push_back(parsePostfix(parsePrimary()));
    }
    test->operands.push_back(std::move(subject));
    return test;
  }

  /// Counts one level of nesting while alive; too many is a TemplateError.
  struct NestingGuard {
    explicit NestingGuard(Parser &p) : parser(p) {
      if (++parser.nesting > kMaxNesting)
        throw TemplateError("nested more than " + std::to_string(kMaxNesting) +
                                " levels deep",
                            parser.peek().line);
    }
    ~NestingGuard() { --parser.nesting; }
    Parser &parser;
  };

  const std::vector<Token> &tokens;
  size_t index = 0;
  int loopDepth = 0;
  int nesting = 0;
};

} // namespace

Body parseTemplate(const std::vector<Token> &tokens) {
  return Parser(tokens).parseAll();
}

} // namespace kiln::runtime::jinja
