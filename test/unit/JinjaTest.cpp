//===- JinjaTest.cpp - Kiln's Jinja engine, piece by piece ----------------===//
//
// Part of Kiln's unit tests. The expected renderings of the table below are
// what Python's jinja2 (Debian's python3-jinja2 3.1) gives in transformers'
// chat template environment for the same templates and context; the error
// cases fail there too.
//
//===----------------------------------------------------------------------===//

#include "runtime/ChatTemplate.h"
#include "runtime/jinja/JsonDump.h"
#include "runtime/jinja/Lexer.h"
#include "runtime/jinja/PyString.h"
#include "runtime/jinja/Template.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

using namespace kiln::runtime;
using namespace kiln::runtime::jinja;

namespace {

/// The context every table case renders with.
ValueDict testContext() {
  auto json = nlohmann::ordered_json::parse(R"({
    "messages": [{"role": "user", "content": " Hi there \n"},
                 {"role": "assistant", "content": "Hello"}],
    "d": {"b": 2, "a": [1, "x", null, true, 1.5], "\u00e9": "\u00fc"},
    "s": "h\u00e9llo w\u00f6rld",
    "n": null,
    "ns_list": ["b", "a", "B"]})");
  return Value::fromJson(json).asDict();
}

std::string render(const std::string &source,
                   const ValueDict &context = testContext()) {
  RenderOptions options;
  options.now = parseIsoDate("2026-01-02");
  return Template(source, "test").render(context, options);
}

/// The message of the TemplateError rendering `source` throws.
std::string renderError(const std::string &source) {
  try {
    std::string out = render(source);
    ADD_FAILURE() << "rendered without error: " << out;
  } catch (const TemplateError &e) {
    return e.what();
  }
  return "";
}

struct Case {
  const char *source;
  const char *expected;
};

//===----------------------------------------------------------------------===//
// Rendering, against jinja2
//===----------------------------------------------------------------------===//

const Case kCases[] = {
    {"{{ 1 + 2 * 3 }}|{{ (1 + 2) * 3 }}|{{ 2 ** 3 ** 2 }}|{{ -2 ** 2 }}",
     "7|9|64|4"},
    {"{{ 7 / 2 }}|{{ 6 / 2 }}|{{ 7 // 2 }}|{{ -7 // 2 }}|{{ -7 % 3 }}|{{ 7.5 "
     "// 2 }}|{{ 7 % -3 }}",
     "3.5|3.0|3|-4|2|3.0|-2"},
    {"{{ 0.1 + 0.2 }}|{{ 1e20 }}|{{ 1e16 }}|{{ 123456789012345.0 }}|{{ 1e-5 "
     "}}|{{ 0.0001 }}|{{ 2.5e-3 }}|{{ 3.0 }}|{{ -0.0 }}",
     "0.30000000000000004|1e+20|1e+16|123456789012345.0|1e-05|0.0001|0.0025|3."
     "0|-0.0"},
    {"{{ 'a' ~ 1 ~ none ~ true ~ undefined_thing }}|{{ 'ab' * 3 }}|{{ [1] + "
     "[2, 3] }}|{{ 3 * 'x' }}",
     "a1NoneTrue|ababab|[1, 2, 3]|xxx"},
    {"{{ 1 < 2 < 3 }}|{{ 3 > 2 > 2 }}|{{ 1 == 1.0 }}|{{ true == 1 }}|{{ 'a' < "
     "'b' }}|{{ [1, 2] < [1, 3] }}|{{ 'ell' in 'hello' }}|{{ 2 not in [1, 3] "
     "}}|{{ 'a' in d }}",
     "True|False|True|True|True|True|True|True|True"},
    {"{{ 'x' if n else 'y' }}|{{ 'x' if s }}|[{{ 'x' if n }}]|{{ n or "
     "'fallback' }}|{{ s and 42 }}|{{ not n }}|{{ 0 or [] or '' }}",
     "y|x|[]|fallback|42|True|"},
    {"{{ [1, 'a', none, true, {'k': 1.5}] }}|{{ ('a', 1) }}|{{ ('a',) }}|{{ "
     "\"it's\" }}|{{ [\"it's\", 'say \"x\"'] }}|{{ d }}",
     "[1, 'a', None, True, {'k': 1.5}]|('a', 1)|('a',)|it's|[\"it's\", 'say "
     "\"x\"']|{'b': 2, 'a': [1, 'x', None, True, 1.5], 'é': 'ü'}"},
    {"{{ s[1] }}|{{ s[-1] }}|{{ s[1:4] }}|{{ s[::-1] }}|{{ s[:-6] }}|{{ "
     "d.a[1:] }}|{{ d.a[::2] }}|{{ d.a[-2:] }}|{{ d.a[10] }}|{{ s|length }}",
     "é|d|éll|dlröw olléh|héllo|['x', None, True, 1.5]|[1, None, 1.5]|[True, "
     "1.5]||11"},
    {"{{ messages[0].role }}|{{ messages[0]['content'] }}|{{ d['é'] }}|{{ "
     "d.missing }}|{{ d['missing'] }}|{{ messages[5] }}",
     "user| Hi there \n|ü|||"},
    {"[{{ undefined_thing }}]{{ undefined_thing is defined }}{{ "
     "undefined_thing|length }}{% for x in undefined_thing %}x{% endfor %}{{ "
     "undefined_thing|default('dflt') }}{{ not undefined_thing }}{{ "
     "undefined_thing == undefined_other }}",
     "[]False0dfltTrueTrue"},
    {"{{ n is none }}|{{ s is string }}|{{ d is mapping }}|{{ d.a is iterable "
     "}}|{{ s is iterable }}|{{ 3 is number }}|{{ true is number }}|{{ true is "
     "integer }}|{{ 3 is integer }}|{{ 1.5 is float }}|{{ true is boolean "
     "}}|{{ n is not none }}|{{ 4 is divisibleby 2 }}|{{ 3 is odd }}|{{ 'a' is "
     "in 'abc' }}|{{ d.b is equalto 2 }}|{{ s is lower }}|{{ range is callable "
     "}}",
     "True|True|True|True|True|True|True|False|True|True|True|False|True|True|"
     "True|True|True|True"},
    {"{% if n %}a{% elif s == 'x' %}b{% elif d.b == 2 %}c{% else %}d{% endif "
     "%}",
     "c"},
    {"{% for m in messages %}{{ loop.index }}/{{ loop.index0 }}/{{ "
     "loop.revindex }}/{{ loop.revindex0 }}/{{ loop.first }}/{{ loop.last "
     "}}/{{ loop.length }}/{% if not loop.first %}{{ loop.previtem.role }}{% "
     "endif %}/{{ loop.nextitem.role if not loop.last }}/{{ loop.cycle('odd', "
     "'even') }};{% endfor %}",
     "1/0/2/1/True/False/2//assistant/odd;2/1/1/0/False/True/2/user//even;"},
    {"{% for x in [] %}a{% else %}empty{% endfor %}|{% for x in [1, 2, 3, 4] "
     "if x is odd %}{{ x }}{{ loop.length }}{% endfor %}|{% for x in range(10) "
     "%}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% "
     "endif %}{{ x }}{% endfor %}",
     "empty|1232|0134"},
    {"{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}|{% for k in d "
     "%}{{ k }}{% endfor %}|{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }}{% "
     "endfor %}|{% for c in 'hé' %}[{{ c }}]{% endfor %}",
     "b=2;a=[1, 'x', None, True, 1.5];é=ü;|baé|37|[h][é]"},
    {"{% set x = 1 %}{% for i in range(3) %}{% set x = x + i %}{{ x }}{% "
     "endfor %}{{ x }}|{% set ns = namespace(total=0, seen=false) %}{% for i "
     "in range(4) %}{% set ns.total = ns.total + i %}{% endfor %}{{ ns.total "
     "}}{{ ns.seen }}",
     "1231|6False"},
    {"{% set a, b = 1, 2 %}{{ a }}{{ b }}|{% set t = 'x', 'y' %}{{ t }}|{% set "
     "block %}  inner {{ s }}  {% endset %}[{{ block }}]|{% set trimmed | trim "
     "| upper %}  inner  {% endset %}[{{ trimmed }}]",
     "12|('x', 'y')|[  inner héllo wörld  ]|[INNER]"},
    {"{% macro greet(name, greeting='Hello', punct='!') %}{{ greeting }}, {{ "
     "name }}{{ punct }}{% endmacro %}{{ greet('Ann') }}|{{ greet('Bob', 'Hi') "
     "}}|{{ greet('Cy', punct='?') }}|{{ greet() }}",
     "Hello, Ann!|Hi, Bob!|Hello, Cy?|Hello, !"},
    {"{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro "
     "%}{% call wrap('b') %}bold {{ s }}{% endcall %}|{% macro each(items) "
     "%}{% for i in items %}{{ caller(i) }}{% endfor %}{% endmacro %}{% "
     "call(x) each([1, 2]) %}<{{ x }}>{% endcall %}",
     "<b>bold héllo wörld</b>|<1><2>"},
    {"{% filter upper %}shout {{ s }}{% endfilter %}|{% filter trim | "
     "replace('a', 'o') %}  banana  {% endfilter %}",
     "SHOUT HÉLLO WÖRLD|bonono"},
    {"{{ d|tojson }}|{{ d|tojson(indent=2) }}|{{ d|tojson(sort_keys=true) "
     "}}|{{ d|tojson(separators=(',', ':')) }}|{{ "
     "'a\"b\\\\c\\n\\t\\u0001é'|tojson }}|{{ [] |tojson(indent=2) }}|{{ {} | "
     "tojson }}",
     "{\"b\": 2, \"a\": [1, \"x\", null, true, 1.5], \"é\": \"ü\"}|{\n  \"b\": "
     "2,\n  \"a\": [\n    1,\n    \"x\",\n    null,\n    true,\n    1.5\n  "
     "],\n  \"é\": \"ü\"\n}|{\"a\": [1, \"x\", null, true, 1.5], \"b\": 2, "
     "\"é\": "
     "\"ü\"}|{\"b\":2,\"a\":[1,\"x\",null,true,1.5],\"é\":\"ü\"}|"
     "\"a\\\"b\\\\c\\n\\t\\u0001é\"|[]|{}"},
    {"{{ {'a': {'b': [1, {'c': none}]}, 'e': []}|tojson(indent=4) }}",
     "{\n    \"a\": {\n        \"b\": [\n            1,\n            {\n       "
     "         \"c\": null\n            }\n        ]\n    },\n    \"e\": "
     "[]\n}"},
    {"[{{ '  x y  '|trim }}]|[{{ 'xxhixx'|trim('x') }}]|{{ 'Hello'|upper }}|{{ "
     "'HeLLo'|lower }}|{{ ['a', 'b']|join(', ') }}|{{ [1, 2]|join }}|{{ "
     "n|default('d') }}|{{ ''|default('d') }}|{{ ''|default('d', true) }}|{{ "
     "d|items|list }}|{{ d.a|first }}|{{ d.a|last }}|{{ 'aaa'|replace('a', "
     "'b', 2) }}",
     "[x y]|[hi]|HELLO|hello|a, b|12|None||d|[('b', 2), ('a', [1, 'x', None, "
     "True, 1.5]), ('é', 'ü')]|1|1.5|bba"},
    {"{{ messages|selectattr('role', 'equalto', 'user')|list|length }}|{{ "
     "messages|map(attribute='role')|join(',') }}|{{ "
     "messages|rejectattr('role', 'equalto', "
     "'user')|map(attribute='content')|first }}|{{ ns_list|unique|list }}|{{ "
     "ns_list|sort|join }}|{{ ns_list|map('upper')|join }}|{{ [3, 1, "
     "2]|select('odd')|list }}|{{ [0, 1, '', 'a']|select|list }}|{{ [1, 2, "
     "3]|reject('equalto', 2)|list }}",
     "1|user,assistant|Hello|['b', 'a']|abB|BAB|[3, 1]|[1, 'a']|[1, 3]"},
    {"{{ 'a\\nb\\n\\nc'|indent(2) }}|{{ 'a\\nb'|indent(2, true) }}|{{ "
     "'a\\n\\nb'|indent(2, blank=true) }}|{{ '42'|int }}|{{ '4.7'|int }}|{{ "
     "'x'|int }}|{{ 3.7|int }}|{{ '2.5'|float }}|{{ 2.5|round }}|{{ 3.5|round "
     "}}|{{ 2.567|round(2) }}|{{ 2.5|round(0, 'floor') }}|{{ -3|abs }}|{{ "
     "'hello wORLD-x (y'|title }}|{{ 'hello'|capitalize }}|{{ [1, 2, 3]|sum "
     "}}|{{ [3, 1]|max }}|{{ 'abc'|reverse }}|{{ d|dictsort }}|{{ 3|string ~ "
     "'x' }}",
     "a\n  b\n\n  c|  a\n  b|a\n  \n  b|42|4|0|3|2.5|2.0|4.0|2.57|2.0|3|Hello "
     "World-X (Y|Hello|6|3|cba|[('a', [1, 'x', None, True, 1.5]), ('b', 2), "
     "('é', 'ü')]|3x"},
    {"{{ '  hi  '.strip() }}|{{ 'xxhixx'.lstrip('x') }}|{{ "
     "'xxhixx'.rstrip('x') }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b \\n c "
     "'.split() }}|{{ 'a b c'.split(' ', 1) }}|{{ s.startswith('hé') }}|{{ "
     "s.endswith(('x', 'ld')) }}|{{ s.title() }}|{{ s.upper() }}|{{ "
     "'aXa'.replace('a', 'b') }}|{{ s.find('w') }}|{{ 'a{}b{x}'.format(1, x=2) "
     "}}|{{ '-'.join(['a', 'b']) }}|{{ d.get('b') }}|{{ d.get('zz', 'no') "
     "}}|{{ d.get('zz') }}|{{ d.keys()|list }}|{{ 'l1\\nl2'.splitlines() }}",
     "hi|hixx|xxhi|['a', 'b', '', 'c']|['a', 'b', 'c']|['a', 'b "
     "c']|True|True|Héllo Wörld|HÉLLO WÖRLD|bXb|6|a1b2|a-b|2|no|None|['b', "
     "'a', 'é']|['l1', 'l2']"},
    {"{{ strftime_now('%Y-%m-%d %d %b %Y %A') }}|{{ range(3)|list }}|{{ "
     "range(1, 7, 2)|list }}|{{ dict(a=1, b='x') }}|{{ namespace(a=1).a }}",
     "2026-01-02 02 Jan 2026 Friday|[0, 1, 2]|[1, 3, 5]|{'a': 1, 'b': 'x'}|1"},
    {"  {% if true %}\n  line\n  {% endif %}\n  {{ 'v' }}\n{# comment #}\nnext "
     "{%- if true %} tight {% endif -%}   \n  after",
     "  line\n  v\nnext tight after"},
    {"a {%+ if true %}b{% endif +%}\nc\n{{- ' d ' -}}\n  e\n\n",
     "a b\nc d e\n"},
};

TEST(Jinja, RendersAsJinja2) {
  for (const Case &c : kCases)
    EXPECT_EQ(render(c.source), c.expected) << "template: " << c.source;
}

//===----------------------------------------------------------------------===//
// Errors: where jinja2 fails, with its message and the template line
//===----------------------------------------------------------------------===//

TEST(Jinja, UndefinedFailsOnlyWhenUsedAsMoreThanEmpty) {
  EXPECT_NE(renderError("{{ x.y }}").find("'x' is undefined"),
            std::string::npos);
  EXPECT_NE(renderError("{{ d.missing.z }}")
                .find("'dict object' has no attribute 'missing'"),
            std::string::npos);
  EXPECT_NE(renderError("{{ nothing + 'a' }}").find("'nothing' is undefined"),
            std::string::npos);
  EXPECT_NE(renderError("{{ nothing() }}").find("'nothing' is undefined"),
            std::string::npos);
  EXPECT_NE(renderError("{{ nothing < 1 }}").find("'nothing' is undefined"),
            std::string::npos);
}

TEST(Jinja, ErrorsNameTheTemplateAndLine) {
  EXPECT_EQ(renderError("line 1\n{% if true %}\n{{ raise_exception('no "
                        "system role') }}{% endif %}"),
            "test:3: no system role");
  EXPECT_EQ(renderError("a\n\n{{ 1 + 'x' }}"),
            "test:3: unsupported operand type(s) for +: 'int' and 'str'");
  EXPECT_EQ(renderError("{{ 'x' + 1 }}"),
            "test:1: can only concatenate str (not \"int\") to str");
  EXPECT_EQ(renderError("{% for x in 3 %}{% endfor %}"),
            "test:1: 'int' object is not iterable");
  EXPECT_EQ(renderError("{% set a, b = [1] %}"),
            "test:1: not enough values to unpack (expected 2, got 1)");
  EXPECT_EQ(renderError("{{ 'a' < 1 }}"),
            "test:1: '<' not supported between instances of 'str' and 'int'");
  EXPECT_EQ(renderError("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}"),
            "test:1: macro 'm' takes not more than 1 argument(s)");
  EXPECT_EQ(renderError("{{ x|nosuchfilter }}"),
            "test:1: no filter named 'nosuchfilter'");
  EXPECT_EQ(renderError("{% set n = none %}{% set n.x = 1 %}"),
            "test:1: cannot assign attribute on non-namespace object 'n'");
}

TEST(Jinja, SandboxRefusesMutation) {
  EXPECT_EQ(renderError("{% set l = [] %}{{ l.append(1) }}"),
            "test:1: access to attribute 'append' of 'list' object is unsafe.");
  EXPECT_EQ(renderError("{{ d.update({}) }}"),
            "test:1: access to attribute 'update' of 'dict' object is unsafe.");
}

TEST(Jinja, ParseErrorsNameTheProblem) {
  auto parseError = [](const std::string &source) -> std::string {
    try {
      Template t(source, "bad.jinja");
    } catch (const TemplateError &e) {
      return e.what();
    }
    ADD_FAILURE() << "parsed: " << source;
    return "";
  };
  EXPECT_EQ(parseError("{% if x %}\nnever closed"),
            "bad.jinja:2: unexpected end of template: expected 'elif' or "
            "'else' or 'endif' to close the block opened on line 1");
  EXPECT_EQ(parseError("{% frobnicate %}"), "bad.jinja:1: unknown tag "
                                            "'frobnicate'");
  EXPECT_EQ(parseError("{% break %}"), "bad.jinja:1: 'break' outside a for "
                                       "loop");
  EXPECT_EQ(parseError("{{ 'abc }}"), "bad.jinja:1: unterminated string "
                                      "literal");
  EXPECT_EQ(parseError("\n{{ x "), "bad.jinja:2: unterminated tag: '{{' "
                                   "without '}}'");
  EXPECT_EQ(parseError("{{ 1 + }}"),
            "bad.jinja:1: expected an expression, found '}}'");
  EXPECT_EQ(parseError("{{ x ! y }}"),
            "bad.jinja:1: unexpected character '!' in a tag");
  EXPECT_EQ(parseError(R"({{ "\x4" }})"),
            "bad.jinja:1: truncated \\x escape in a string literal");
  // Nesting is bounded rather than left to overflow the stack.
  EXPECT_EQ(parseError("{{ " + std::string(200, '(') + "1" +
                       std::string(200, ')') + " }}"),
            "bad.jinja:1: nested more than 128 levels deep");
}

TEST(Jinja, MacrosRecursingForeverStop) {
  EXPECT_NE(renderError("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}")
                .find("recursed more than"),
            std::string::npos);
}

//===----------------------------------------------------------------------===//
// Pieces
//===----------------------------------------------------------------------===//

TEST(JinjaLexer, BlockTagsOwnTheirLine) {
  // lstrip_blocks + trim_blocks: a tag alone on its line leaves no trace.
  std::vector<Token> tokens = lexTemplate("a\n  {% if x %}\nb\n");
  ASSERT_EQ(tokens.size(), 7u);
  EXPECT_EQ(tokens[0].text, "a\n");
  EXPECT_EQ(tokens[1].kind, Token::Kind::BlockBegin);
  EXPECT_EQ(tokens[2].text, "if");
  EXPECT_EQ(tokens[4].kind, Token::Kind::BlockEnd);
  EXPECT_EQ(tokens[5].text, "b"); // the template's last newline is dropped
  EXPECT_EQ(tokens[5].line, 3);
}

TEST(JinjaLexer, NestedBracesDoNotCloseTheTag) {
  std::vector<Token> tokens = lexTemplate("{{ {'a': {'b': 1}} }}");
  EXPECT_EQ(tokens.back().kind, Token::Kind::End);
  EXPECT_EQ(tokens[tokens.size() - 2].kind, Token::Kind::VariableEnd);
  EXPECT_EQ(render("{{ {'a': {'b': 1}}.a.b }}"), "1");
}

TEST(JinjaLexer, StringEscapesArePython) {
  std::vector<Token> tokens = lexTemplate(R"({{ 'a\n\t\'\u00e9\x41\q' }})");
  EXPECT_EQ(tokens[1].kind, Token::Kind::String);
  EXPECT_EQ(tokens[1].text, "a\n\t'\xC3\xA9"
                            "A\\q");
}

TEST(JinjaValue, FloatReprIsPythons) {
  EXPECT_EQ(floatRepr(1.0), "1.0");
  EXPECT_EQ(floatRepr(0.1), "0.1");
  EXPECT_EQ(floatRepr(1e-5), "1e-05");
  EXPECT_EQ(floatRepr(1e16), "1e+16");
  EXPECT_EQ(floatRepr(1234567890123456.0), "1234567890123456.0");
  EXPECT_EQ(floatRepr(-2.5e-300), "-2.5e-300");
  EXPECT_EQ(floatRepr(1.0 / 3.0), "0.3333333333333333");
}

TEST(JinjaValue, ReprQuotesAsPython) {
  EXPECT_EQ(toRepr(Value("it's")), "\"it's\"");
  EXPECT_EQ(toRepr(Value("say \"hi\"")), "'say \"hi\"'");
  EXPECT_EQ(toRepr(Value("a\nb\x01")), "'a\\nb\\x01'");
  EXPECT_EQ(toRepr(Value::tuple({Value(int64_t(1))})), "(1,)");
}

TEST(JinjaJson, DumpsAsPythonJson) {
  auto value = Value::fromJson(nlohmann::ordered_json::parse(
      R"({"z": [1, 2.0, "\u00e9\ud83d\ude00"], "a": {}})"));
  JsonDumpOptions options;
  EXPECT_EQ(jsonDump(value, options),
            "{\"z\": [1, 2.0, \"\xC3\xA9\xF0\x9F\x98\x80\"], \"a\": {}}");
  options.ensureAscii = true;
  options.sortKeys = true;
  EXPECT_EQ(jsonDump(value, options),
            R"({"a": {}, "z": [1, 2.0, "\u00e9\ud83d\ude00"]})");
  options = {};
  options.indent = "\t";
  EXPECT_EQ(jsonDump(value, options),
            "{\n\t\"z\": [\n\t\t1,\n\t\t2.0,\n\t\t\"\xC3\xA9\xF0\x9F\x98\x80\""
            "\n\t],\n\t\"a\": {}\n}");
  EXPECT_THROW(jsonDump(Value(), options), TemplateError);
}

TEST(JinjaPyString, WorksOnCodePoints) {
  EXPECT_EQ(codePointCount("h\xC3\xA9llo"), 5u);
  EXPECT_EQ(pyStrip("\xE3\x80\x80 x\xC2\xA0", std::nullopt, true, true), "x");
  EXPECT_EQ(pySplit(" a\tb  c ", std::nullopt, 1),
            (std::vector<std::string>{"a", "b  c"}));
  EXPECT_EQ(pyTitle("\xC3\xA9t\xC3\xA9 they're"), "\xC3\x89t\xC3\xA9 They'Re");
  EXPECT_EQ(pyUpper("stra\xC3\x9F"
                    "e"),
            "STRASSE");
  // Bytes that are not UTF-8 survive a round trip.
  EXPECT_EQ(encodeUtf8(decodeUtf8("a\xFF\xC3")), "a\xFF\xC3");
}

TEST(JinjaDate, StrftimeNowReadsTheFixedDate) {
  EXPECT_EQ(render("{{ strftime_now('%d %B %Y, %a %j') }}"),
            "02 January 2026, Fri 002");
  EXPECT_THROW(parseIsoDate("2026-02-30"), std::invalid_argument);
  EXPECT_THROW(parseIsoDate("2026-1-2"), std::invalid_argument);
}

} // namespace
