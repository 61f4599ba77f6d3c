//===- Lexer.h - Jinja template source to tokens ----------------*- C++ -*-===//
//
// Part of Kiln's Jinja engine. Splits a template into text and the tokens
// of its `{{ ... }}` and `{% ... %}` tags (comments vanish), applying
// whitespace control as jinja2 does with the settings transformers uses:
//
//  - `{%-`, `{{-`, `{#-` strip all whitespace before the tag, `-%}`, `-}}`,
//    `-#}` all whitespace after it;
//  - trim_blocks: the first newline after a block or comment tag goes;
//  - lstrip_blocks: spaces and tabs from the start of a line up to a block
//    or comment tag go;
//  - `{%+` and `+%}` opt a tag out of those two;
//  - a single newline at the end of the template goes
//    (keep_trailing_newline=False); "\r\n" and "\r" read as "\n".
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_JINJA_LEXER_H
#define KILN_RUNTIME_JINJA_LEXER_H

#include <string>
#include <vector>

namespace kiln::runtime::jinja {

struct Token {
  enum class Kind {
    Text,          ///< Template text, whitespace control applied.
    VariableBegin, ///< {{
    VariableEnd,   ///< }}
    BlockBegin,    ///< {%
    BlockEnd,      ///< %}
    Name,          ///< identifiers and keywords
    String,        ///< a string literal, escapes resolved
    Integer,
    Float,
    Operator, ///< + - * / // % ** ~ == != < > <= >= = ( ) [ ] { } , . : |
    End,
  };
  Kind kind;
  std::string text;
  int line;
};

/// The tokens of `source`, ending with an End token. Throws TemplateError
/// (with the line) for an unterminated tag, string or comment or a
/// character that starts no token.
std::vector<Token> lexTemplate(const std::string &source);

} // namespace kiln::runtime::jinja

#endif // KILN_RUNTIME_JINJA_LEXER_H
