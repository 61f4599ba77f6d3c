//===- Lexer.cpp - Jinja template source to tokens ------------------------===//
//
// Part of Kiln's Jinja engine. See Lexer.h. A tag ends at its closing
// delimiter only outside brackets, so `{{ {'a': {'b': 1}} }}` is one
// expression, as in jinja2.
//
//===----------------------------------------------------------------------===//

#include "runtime/jinja/Lexer.h"

#include "runtime/jinja/PyString.h"
#include "runtime/jinja/Value.h"

#include <cctype>
#include <cstring>

namespace kiln::runtime::jinja {

namespace {

bool isNameStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}

bool isNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

/// "\r\n" and "\r" as "\n", one trailing newline dropped.
std::string normalizeNewlines(const std::string &source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n')
        ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n')
    out.pop_back();
  return out;
}

class Lexer {
public:
  explicit Lexer(std::string source) : src(std::move(source)) {}

  std::vector<Token> run();

private:
  [[noreturn]] void fail(const std::string &message) const {
    throw TemplateError(message, line);
  }
  bool startsWith(const char *s) const {
    return src.compare(pos, std::strlen(s), s) == 0;
  }
  void advance(size_t n) {
    for (size_t i = 0; i < n && pos < src.size(); ++i)
      line += src[pos++] == '\n';
  }
  void emit(Token::Kind kind, std::string text, int at) {
    tokens.push_back({kind, std::move(text), at});
  }

  void emitText(std::string text, bool tagStrips, bool tagLstrips);
  /// After a closing delimiter: `-` strips all following whitespace,
  /// otherwise trim_blocks takes one newline (block and comment tags).
  void afterTag(bool strip, bool trimNewline);
  void lexComment();
  void lexTag(bool block);
  void lexString();
  void lexNumber();

  std::string src;
  size_t pos = 0;
  int line = 1;
  /// Whether the text about to be read starts a line (jinja2's
  /// line_starting): lstrip_blocks then applies from its start.
  bool lineStarting = true;
  std::vector<Token> tokens;
};

std::vector<Token> Lexer::run() {
  while (pos < src.size()) {
    size_t tag = pos;
    while ((tag = src.find('{', tag)) != std::string::npos &&
           (tag + 1 >= src.size() || !std::strchr("{%#", src[tag + 1])))
      ++tag;
    if (tag == std::string::npos)
      tag = src.size();
    std::string text = src.substr(pos, tag - pos);
    char kind = tag + 1 < src.size() ? src[tag + 1] : '\0';
    char control = tag + 2 < src.size() ? src[tag + 2] : '\0';
    emitText(std::move(text), control == '-',
             kind != '{' && control != '+' && tag < src.size());
    advance(tag - pos);
    if (pos >= src.size())
      break;
    advance(control == '-' || control == '+' ? 3 : 2);
    if (kind == '#')
      lexComment();
    else
      lexTag(kind == '%');
  }
  emit(Token::Kind::End, "", line);
  return std::move(tokens);
}

void Lexer::emitText(std::string text, bool tagStrips, bool tagLstrips) {
  int at = line;
  if (tagStrips) {
    text = pyStrip(text, std::nullopt, false, true);
  } else if (tagLstrips) {
    size_t lineStart = text.rfind('\n');
    lineStart = lineStart == std::string::npos ? 0 : lineStart + 1;
    if (lineStart > 0 || lineStarting) {
      bool blank = lineStart < text.size();
      for (size_t i = lineStart; i < text.size(); ++i)
        blank &= text[i] == ' ' || text[i] == '\t' || text[i] == '\v' ||
                 text[i] == '\f';
      if (blank)
        text.erase(lineStart);
    }
  }
  if (!text.empty())
    emit(Token::Kind::Text, std::move(text), at);
}

void Lexer::afterTag(bool strip, bool trimNewline) {
  size_t start = pos;
  if (strip) {
    while (pos < src.size() &&
           std::isspace(static_cast<unsigned char>(src[pos])))
      advance(1);
  } else if (trimNewline && pos < src.size() && src[pos] == '\n') {
    advance(1);
  }
  lineStarting = pos > start && src[pos - 1] == '\n';
}

void Lexer::lexComment() {
  int startLine = line;
  size_t end = src.find("#}", pos);
  if (end == std::string::npos)
    throw TemplateError("unterminated comment: '{#' without '#}'", startLine);
  bool strip = end > pos && src[end - 1] == '-';
  bool keep = end > pos && src[end - 1] == '+';
  advance(end + 2 - pos);
  afterTag(strip, !keep);
}

void Lexer::lexTag(bool block) {
  int startLine = line;
  emit(block ? Token::Kind::BlockBegin : Token::Kind::VariableBegin,
       block ? "{%" : "{{", line);
  const char *close = block ? "%}" : "}}";
  int depth = 0;
  while (true) {
    while (pos < src.size() &&
           std::isspace(static_cast<unsigned char>(src[pos])))
      advance(1);
    if (pos >= src.size())
      throw TemplateError(std::string("unterminated tag: '") +
                              (block ? "{%" : "{{") + "' without '" + close +
                              "'",
                          startLine);
    if (depth == 0) {
      bool strip = src[pos] == '-' || (block && src[pos] == '+');
      if (src.compare(pos + (strip ? 1 : 0), 2, close) == 0) {
        bool minus = src[pos] == '-';
        bool plus = src[pos] == '+';
        emit(block ? Token::Kind::BlockEnd : Token::Kind::VariableEnd, close,
             line);
        advance(strip ? 3 : 2);
        afterTag(minus, block && !plus);
        return;
      }
    }
    char c = src[pos];
    if (c == '\'' || c == '"') {
      lexString();
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      lexNumber();
    } else if (isNameStart(c)) {
      size_t start = pos;
      while (pos < src.size() && isNameChar(src[pos]))
        ++pos;
      emit(Token::Kind::Name, src.substr(start, pos - start), line);
    } else {
      static const char *const twoChar[] = {"//", "**", "==", "!=", "<=", ">="};
      std::string op;
      for (const char *candidate : twoChar)
        if (startsWith(candidate))
          op = candidate;
      if (op.empty() && std::strchr("+-*/%~()[]{},.:|=<>", c))
        op = std::string(1, c);
      if (op.empty())
        fail(std::string("unexpected character '") + c + "' in a tag");
      if (op == "(" || op == "[" || op == "{")
        ++depth;
      else if (op == ")" || op == "]" || op == "}")
        --depth;
      emit(Token::Kind::Operator, op, line);
      advance(op.size());
    }
  }
}

void Lexer::lexString() {
  int startLine = line;
  char quote = src[pos];
  advance(1);
  std::string value;
  while (true) {
    if (pos >= src.size())
      throw TemplateError("unterminated string literal", startLine);
    char c = src[pos];
    if (c == quote) {
      advance(1);
      break;
    }
    if (c != '\\' || pos + 1 >= src.size()) {
      value += c;
      advance(1);
      continue;
    }
    // Python's string escapes.
    char e = src[pos + 1];
    advance(2);
    auto hex = [&](int digits) {
      bool valid = pos + digits <= src.size();
      for (int i = 0; valid && i < digits; ++i)
        valid = std::isxdigit(static_cast<unsigned char>(src[pos + i]));
      if (!valid)
        fail(std::string("truncated \\") + e + " escape in a string literal");
      uint32_t code = static_cast<uint32_t>(
          std::stoul(src.substr(pos, digits), nullptr, 16));
      if (code > 0x10FFFF)
        fail("\\U escape beyond U+10FFFF in a string literal");
      advance(digits);
      appendUtf8(value, code);
    };
    switch (e) {
    case 'n':
      value += '\n';
      break;
    case 't':
      value += '\t';
      break;
    case 'r':
      value += '\r';
      break;
    case '0':
      value += '\0';
      break;
    case 'a':
      value += '\a';
      break;
    case 'b':
      value += '\b';
      break;
    case 'f':
      value += '\f';
      break;
    case 'v':
      value += '\v';
      break;
    case '\\':
    case '\'':
    case '"':
      value += e;
      break;
    case '\n': // a line continuation
      break;
    case 'x':
      hex(2);
      break;
    case 'u':
      hex(4);
      break;
    case 'U':
      hex(8);
      break;
    default:
      value += '\\';
      value += e;
    }
  }
  emit(Token::Kind::String, std::move(value), startLine);
}

void Lexer::lexNumber() {
  size_t start = pos;
  auto digits = [&] {
    while (
        pos < src.size() &&
        (std::isdigit(static_cast<unsigned char>(src[pos])) || src[pos] == '_'))
      ++pos;
  };
  digits();
  bool isFloat = false;
  if (pos + 1 < src.size() && src[pos] == '.' &&
      std::isdigit(static_cast<unsigned char>(src[pos + 1]))) {
    isFloat = true;
    ++pos;
    digits();
  }
  if (pos < src.size() && (src[pos] == 'e' || src[pos] == 'E')) {
    size_t save = pos++;
    if (pos < src.size() && (src[pos] == '+' || src[pos] == '-'))
      ++pos;
    if (pos < src.size() &&
        std::isdigit(static_cast<unsigned char>(src[pos]))) {
      isFloat = true;
      digits();
    } else {
      pos = save;
    }
  }
  std::string text;
  for (size_t i = start; i < pos; ++i)
    if (src[i] != '_')
      text += src[i];
  emit(isFloat ? Token::Kind::Float : Token::Kind::Integer, text, line);
}

} // namespace

std::vector<Token> lexTemplate(const std::string &source) {
  return Lexer(normalizeNewlines(source)).run();
}

} // namespace kiln::runtime::jinja
