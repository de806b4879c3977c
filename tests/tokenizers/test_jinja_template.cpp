// test_jinja_template.cpp — the Jinja-subset interpreter (framework/data/jinja_template.h), one
// test per construct with the output jinja2 gives (each expected string was rendered by jinja2
// 3.1 in transformers' environment: trim_blocks, lstrip_blocks), then every load-time error
// (source, line, column and what was expected or which construct is unsupported), the
// render-time errors (raise_exception, undefined values, type errors) and the limits.
// Real templates against jinja2: test_jinja_goldens.cpp. Tests: data/jinja_template, jinja_parse,
// jinja_value.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/data/jinja_template.h"

namespace {

using farthing::data::ChatMessage;
using farthing::data::JinjaTemplate;

const std::vector<ChatMessage> kChat = {
    {"system", " Be brief. "}, {"user", "Hi"}, {"assistant", "Hello!"}, {"user", "caf\xC3\xA9"}};

std::string render(const std::string& text, const std::vector<ChatMessage>& messages = kChat, bool agp = false) {
  return JinjaTemplate(text, "test-template").render(messages, agp, "<s>", "</s>");
}

// fn must throw farthing::Error whose message contains every one of parts.
void expect_error(const std::function<void()>& fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "expected an error naming " << ::testing::PrintToString(parts);
  } catch (const farthing::Error& e) {
    for (const std::string& part : parts) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << "'" << part << "' missing from: " << e.what();
    }
  }
}

void expect_parse_error(const std::string& text, const std::vector<std::string>& parts) {
  std::vector<std::string> all = {"chat template data.chat_template, "};
  all.insert(all.end(), parts.begin(), parts.end());
  expect_error([&] { JinjaTemplate(text, "data.chat_template"); }, all);
}

void expect_render_error(const std::string& text, const std::vector<std::string>& parts) {
  const JinjaTemplate t(text, "data.chat_template");  // parses
  std::vector<std::string> all = {"chat template data.chat_template"};
  all.insert(all.end(), parts.begin(), parts.end());
  expect_error([&] { (void)t.render(kChat, false, "<s>", "</s>"); }, all);
}

TEST(JinjaTemplate, TextOutputAndVariables) {
  EXPECT_EQ(render("a{{ 'b' }}c{{ bos_token }}{{ eos_token }}{{ add_generation_prompt }}"), "abc<s></s>False");
  EXPECT_EQ(render("{{ add_generation_prompt }}", kChat, true), "True");
  EXPECT_EQ(render("{{ tools }}|{{ tools is none }}|{{ documents is defined }}"), "None|True|True");
  EXPECT_EQ(render(""), "");
}

TEST(JinjaTemplate, IfElifElse) {
  EXPECT_EQ(render("{% for m in messages %}{% if m.role == 'system' %}S{% elif m['role'] == 'user' %}U"
                   "{% else %}A{% endif %}{% endfor %}"),
            "SUAU");
}

TEST(JinjaTemplate, ForLoopVariables) {
  EXPECT_EQ(render("{% for m in messages %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}"
                   "{{ loop.length }}{{ loop.revindex }}{{ loop.revindex0 }}|{% endfor %}"),
            "10TrueFalse443|21FalseFalse432|32FalseFalse421|43FalseTrue410|");
  // Strings iterate by code point, dicts by key, undefined as empty.
  EXPECT_EQ(render("{% for c in 'h\xC3\xA9' %}{{ c }}.{% endfor %}{% for k in messages[0] %}{{ k }},{% endfor %}"
                   "{% for x in nothing %}never{% endfor %}"),
            "h.\xC3\xA9.role,content,");
}

TEST(JinjaTemplate, SetScopesAndNamespace) {
  // A set inside a loop lasts one iteration, reads the outer value before it, and is gone after.
  EXPECT_EQ(render("{% set x = 1 %}{% for m in messages %}[{{ x }}{% set x = loop.index * 10 %}{{ x }}]{% endfor %}{{ x }}"),
            "[110][120][130][140]1");
  EXPECT_EQ(render("{% set ns = namespace(n=0, s='') %}{% for m in messages %}{% set ns.n = ns.n + 1 %}"
                   "{% set ns.s = ns.s ~ m.role[0] %}{% endfor %}{{ ns.n }}{{ ns.s }}"),
            "4suau");
  EXPECT_EQ(render("{% if true %}{% set y = 'kept' %}{% endif %}{{ y }}"), "kept");
}

TEST(JinjaTemplate, WhitespaceControl) {
  // trim_blocks drops the newline after a block tag; lstrip_blocks the indentation before it.
  EXPECT_EQ(render("  {% if true %}\n    yes\n  {% endif %}\nend"), "    yes\nend");
  EXPECT_EQ(render("{% if true -%}\n   x   \n{%- endif %}|{{- ' y ' -}}  |"), "x| y |");
  // {%+ keeps the indentation; comments vanish with their line.
  EXPECT_EQ(render("a  {%+ if true %}b{% endif %}\n  {# comment #}\nc"), "a  bc");
  // One newline ending the template is dropped; \r\n is read as \n.
  EXPECT_EQ(render("{% if true %}\na{% endif %}\n"), "a");
  EXPECT_EQ(render("x\r\ny\r\n\r\n"), "x\ny\n");
  EXPECT_EQ(render("{{ 'a' }}\n "), "a\n ");
  EXPECT_EQ(render("{{ 1 }}\n{% if true +%}\nz{% endif %}"), "1\n\nz");
  // A "{#" that ends the template is dropped, as jinja2 drops it (with the whitespace rules).
  EXPECT_EQ(render("a{#"), "a");
  EXPECT_EQ(render("a {#-"), "a");
  EXPECT_EQ(render("a\n  {#"), "a\n");
  EXPECT_EQ(render("a {#+"), "a ");
}

TEST(JinjaTemplate, StringLiterals) {
  EXPECT_EQ(render("{{ '\\n\\t\\x41\\u00e9\\\\q' }}|{{ \"it's\" 'x' }}|{{ 'a\\\nb' }}"), "\n\tA\xC3\xA9\\q|it'sx|ab");
  EXPECT_EQ(render("{{ 'unknown \\d escape' }}{{ '\\101' }}{{ '\\U0001F600' }}"), "unknown \\d escapeA\xF0\x9F\x98\x80");
}

TEST(JinjaTemplate, Operators) {
  EXPECT_EQ(render("{{ 1 + 2 * 3 }}|{{ 7 % 3 }}|{{ -7 % 3 }}|{{ 7 % -3 }}|{{ 'a' ~ 1 ~ none }}|{{ 1 - - 1 }}|{{ 'ab' * 2 }}"),
            "7|1|2|-2|a1None|2|abab");
  // A filter binds to the operand before it; ~ binds tighter than +.
  EXPECT_EQ(render("{{ 'a' + ' b ' | trim }}|{{ 'x' if false }}|{{ 'x' if messages else 'y' }}|{{ none or 'd' }}|"
                   "{{ 'v' and 0 }}|{{ not 0 }}|{{ 'a' + 'b' ~ 'c' }}|{{ not 1 == 2 }}"),
            "ab||x|d|0|True|abc|True");
  // Lists repeat and order as Python's do.
  EXPECT_EQ(render("{{ [1, 2] * 2 }}|{{ 0 * ['a'] }}|{{ [1, 'a'] < [1, 'b'] }}|{{ [2] > [1, 5] }}|{{ [] < [none] }}"),
            "[1, 2, 1, 2]|[]|True|True|True");
  EXPECT_EQ(render("{{ 'ell' in 'hello' }}{{ 'z' not in 'hello' }}{{ 'user' in ['user', 'tool'] }}"
                   "{{ 'role' in messages[0] }}{{ 1 < 2 }}{{ 'b' >= 'a' }}{{ 1 == true }}{{ 1 != '1' }}"),
            "TrueTrueTrueTrueTrueTrueTrueTrue");
}

TEST(JinjaTemplate, SubscriptsAttributesAndSlices) {
  EXPECT_EQ(render("{{ messages[0]['role'] }}|{{ messages[-1].content }}|{{ messages[1:] | length }}|"
                   "{{ (messages[::-1] | first).content }}|{{ 'caf\xC3\xA9'[-1] }}|{{ 'caf\xC3\xA9'[1:3] }}|"
                   "{{ 'abcdef'[::2] }}|{{ messages[10] }}|{{ messages[0].nothing }}"),
            "system|caf\xC3\xA9|3|caf\xC3\xA9|\xC3\xA9|af|ace||");
  EXPECT_EQ(render("{{ ('a' ~ 'b')[0:1] }}{{ [1,2,3][-2:] }}{{ [1,2,3][5:] }}{{ 'abc'[:-1] }}{{ 'abc'[::-1] }}"
                   "{{ [1,2,3][10:0:-1] }}"),
            "a[2, 3][]abcba[3, 2]");
}

TEST(JinjaTemplate, Filters) {
  EXPECT_EQ(render("{{ ' x '|trim }}|{{ 'xxhixx'|trim('x') }}|{{ 'caf\xC3\xA9'|length }}|{{ messages|count }}|"
                   "{{ messages[0]|tojson }}|{{ [1, 'a', none, true]|tojson }}|{{ 'q\"\\\\\\n\\x01\xC3\xA9'|tojson }}|"
                   "{{ 5|string ~ 1 }}|{{ [3,4]|last }}|{{ nothing|default('d') }}|{{ 'set'|default('d') }}|"
                   "{{ ['a','b']|join(', ') }}|{{ 'abc'|join('-') }}"),
            "x|hi|4|4|{\"role\": \"system\", \"content\": \" Be brief. \"}|[1, \"a\", null, true]|"
            "\"q\\\"\\\\\\n\\u0001\xC3\xA9\"|51|4|d|set|a, b|a-b-c");
  // Python's whitespace: an em space, U+0085, \x1c and a no-break space are stripped too.
  EXPECT_EQ(render("{{ 'A\\u2003'.strip() }}|{{ '\\x1c a \\x85'|trim }}|{{ 'x\\xa0'|trim|length }}"), "A|a|1");
}

TEST(JinjaTemplate, Methods) {
  EXPECT_EQ(render("{{ ' a '.strip() }}|{{ 'xa'.lstrip('x') }}|{{ 'a \\n'.rstrip() }}|{{ 'hello'.startswith('he') }}|"
                   "{{ 'hello'.endswith('lo') }}|{{ 'a<t>b<t>c'.split('<t>') }}|{{ ' a  b '.split() }}|"
                   "{{ 'aXbX'.replace('X', '-') }}|{{ 'ab'.replace('', '.') }}|{{ messages[0].get('role') }}|"
                   "{{ messages[0].get('x', 'dflt') }}|{{ messages[0].get('x') }}"),
            "a|a|a|True|True|['a', 'b', 'c']|['a', 'b']|a-b-|.a.b.|system|dflt|None");
}

TEST(JinjaTemplate, Tests) {
  EXPECT_EQ(render("{{ x is defined }}{{ x is undefined }}{{ none is none }}{{ 'a' is string }}{{ 1 is number }}"
                   "{{ true is integer }}{{ messages[0] is mapping }}{{ messages is sequence }}{{ 'a' is iterable }}"
                   "{{ true is boolean }}{{ true is true }}{{ 0 is false }}{{ 2 is even }}{{ 3 is odd }}"
                   "{{ messages is not string }}"),
            "FalseTrueTrueTrueTrueFalseTrueTrueTrueTrueTrueFalseTrueTrueTrue");
  EXPECT_EQ(render("{{ x is sequence }}{{ x is iterable }}{{ 1 is sequence }}"), "TrueTrueFalse");
}

TEST(JinjaTemplate, PrintsAsPythonStr) {
  EXPECT_EQ(render("{{ none }}|{{ true }}|{{ [1, 'a', none, true, \"it's\"] }}|{{ messages[1] }}|{{ nothing }}|"
                   "{{ ['a\\nb', '\\x01'] }}|{{ ['\xC3\xA9', '\\xa0', '\\u200b', \"'\"] }}"),
            "None|True|[1, 'a', None, True, \"it's\"]|{'role': 'user', 'content': 'Hi'}||['a\\nb', '\\x01']|"
            "['\xC3\xA9', '\\xa0', '\\u200b', \"'\"]");
}

TEST(JinjaTemplate, GenerationBlockRendersItsBody) {
  EXPECT_EQ(render("{% for m in messages %}{% generation %}{{ m.role }}{% endgeneration %}{% endfor %}"),
            "systemuserassistantuser");
}

TEST(JinjaTemplate, ParseErrorsNameSourceLineColumnAndExpectation) {
  expect_parse_error("{{ messages", {"line 1 column 1", "expected '}}' to close the tag"});
  expect_parse_error("{% if true %}x", {"line 1 column 4", "expected {% endif %} to close this 'if'"});
  expect_parse_error("a\n  {% for m in messages %}", {"line 2 column 6", "{% endfor %}", "'for'"});
  expect_parse_error("{{ 1 + }}", {"line 1 column 8", "expected an expression, found '}}'"});
  expect_parse_error("{% endfor %}", {"line 1 column 4", "expected a statement", "found 'endfor'"});
  expect_parse_error("{% if x %}{% endfor %}", {"line 1 column 14", "or {% elif %}", "{% endif %}", "found 'endfor'"});
  expect_parse_error("{% set x %}y{% endset %}", {"block set", "is not supported"});
  expect_parse_error("{% set x 1 %}", {"line 1 column 10", "expected '='"});
  expect_parse_error("{{ 'abc }}", {"line 1 column 4", "to close the string"});
  expect_parse_error("{# never closed", {"line 1 column 1", "expected '#}'"});
  expect_parse_error("{{ 'a' ! 'b' }}", {"line 1 column 8", "unexpected character '!'"});
  expect_parse_error("{{ '\\x4' }}", {"needs 2 hex digits"});
  expect_parse_error("{{ '\\ud800' }}", {"surrogate"});
  expect_parse_error("{{ x ) }}", {"unexpected ')'"});
}

TEST(JinjaTemplate, UnsupportedConstructsAreNamed) {
  expect_parse_error("{% macro f() %}{% endmacro %}", {"line 1 column 4", "{% macro %} is not supported",
                                                       "farthing's Jinja subset has"});
  expect_parse_error("{% include 'x' %}", {"{% include %} is not supported"});
  expect_parse_error("{{ x | upper }}", {"line 1 column 8", "the filter 'upper'", "filters: trim, length"});
  expect_parse_error("{{ x.title() }}", {"the method '.title()'", "methods: strip"});
  expect_parse_error("{{ range(3) }}", {"the function 'range'", "raise_exception, namespace"});
  expect_parse_error("{{ x is divisibleby(3) }}", {"the test 'is divisibleby'"});
  expect_parse_error("{{ 1.5 }}", {"float literals"});
  expect_parse_error("{{ {'a': 1} }}", {"a dict literal"});
  expect_parse_error("{{ (1, 2) }}", {"a tuple"});
  expect_parse_error("{{ 1 < 2 < 3 }}", {"a chained comparison"});
  expect_parse_error("{{ 4 / 2 }}", {"division ('/')"});
  expect_parse_error("{{ 2 ** 3 }}", {"the power operator"});
  expect_parse_error("{% for m in messages if m %}{% endfor %}", {"a loop filter"});
  expect_parse_error("{% for a, b in x %}{% endfor %}", {"unpacking into several loop variables"});
  expect_parse_error("{% for m in messages %}{% else %}{% endfor %}", {"{% else %} in a for loop"});
  expect_parse_error("{{ x | tojson(indent=2) }}", {"a keyword argument to a filter"});
  expect_parse_error("{{ x | trim(1, 2) }}", {"the filter 'trim' takes 0 to 1 arguments; found 2"});
  expect_parse_error("{{ x.replace('a') }}", {"the method '.replace()' takes 2 to 2 arguments; found 1"});
  expect_parse_error("{{ raise_exception() }}", {"raise_exception takes one argument"});
  expect_parse_error("{{ namespace(1) }}", {"a keyword argument (name=value) in namespace"});
  expect_parse_error("{% break %}", {"{% break %} is not supported"});
}

TEST(JinjaTemplate, RenderErrors) {
  // raise_exception: a render-time error carrying the template's message.
  expect_render_error("\n{{ raise_exception('Roles must alternate') }}",
                      {"raised an error at line 2 column 4", "Roles must alternate"});
  expect_render_error("{{ nothing.x }}", {"line 1 column 12", "'nothing' is undefined"});
  expect_render_error("{{ messages[0].content.x.y }}", {"'str object' has no attribute 'x'"});
  expect_render_error("{{ messages[0] + 1 }}", {"unsupported operand types for +: 'dict' and 'int'"});
  expect_render_error("{{ 1 + 2 ~ 3 }}", {"unsupported operand types for +: 'int' and 'str'"});
  expect_render_error("{{ 1 < 'a' }}", {"'<' is not supported between 'int' and 'str'"});
  expect_render_error("{% set ns = 5 %}{% set ns.a = 1 %}", {"'ns' is of type int, not a namespace"});
  expect_render_error("{{ 'a' | trim(1) }}", {"trim's argument must be a string"});
  expect_render_error("{{ 3 % 0 }}", {"integer modulo by zero"});
  expect_render_error("{% for m in 5 %}{% endfor %}", {"'int' object is not iterable"});
  expect_render_error("{{ 5 | length }}", {"object of type 'int' has no length"});
  expect_render_error("{{ nothing | tojson }}", {"not JSON serializable"});
  expect_render_error("{{ 5.strip() }}", {"'int' object has no method 'strip'"});
  expect_render_error("{{ 'a'.split('') }}", {"empty separator"});
  expect_render_error("{{ 'a'[::0] }}", {"slice step cannot be zero"});
  expect_render_error("{{ 999999999999999999 * 10 }}", {"integer overflow in *"});
  expect_render_error("{{ [] in messages[0] }}", {"unhashable type: 'list'"});
  expect_render_error("{{ 'a %s' % 1 }}", {"printf-style string formatting", "not supported"});
  expect_render_error("{% set ns = namespace(a=1) %}{{ ns.get('a') }}", {"'namespace' object has no method 'get'"});
  expect_render_error("{% for m in messages %}{{ loop.index[1:] }}{% endfor %}", {"'int' object is not subscriptable"});
}

TEST(JinjaTemplate, Limits) {
  std::string deep;
  for (int i = 0; i < 70; ++i) deep += "{% if true %}";
  expect_parse_error(deep, {"nests deeper than 64 levels"});
  std::string parens = "{{ " + std::string(70, '(') + "1" + std::string(70, ')') + " }}";
  expect_parse_error(parens, {"nests deeper than 64 levels"});
  std::string chain = "{{ 1";
  for (int i = 0; i < 300; ++i) chain += " + 1";
  expect_parse_error(chain + " }}", {"this expression", "nests deeper than 256 levels"});
  expect_error([] { JinjaTemplate(std::string((size_t(1) << 20) + 1, 'x'), "big.jinja"); },
               {"chat template big.jinja is 1048577 bytes; at most 1048576"});
  // Nested loops over a long conversation: the step budget stops them.
  const std::vector<ChatMessage> many(200, ChatMessage{"user", "x"});
  const JinjaTemplate loops("{% for a in messages %}{% for b in messages %}{% for c in messages %}{% endfor %}"
                            "{% endfor %}{% endfor %}",
                            "loops.jinja");
  expect_error([&] { (void)loops.render(many, false, "", ""); }, {"loops.jinja", "took more than 1000000 steps"});
  // A string doubled at every step stops at the size limit.
  const JinjaTemplate doubling("{% set ns = namespace(s='ab') %}{% for a in messages %}{% set ns.s = ns.s ~ ns.s %}"
                               "{% endfor %}{{ ns.s | length }}",
                               "doubling.jinja");
  expect_error([&] { (void)doubling.render(many, false, "", ""); }, {"doubling.jinja", "grew past"});
}

TEST(JinjaTemplate, ParsedOnceRenderedMany) {
  const JinjaTemplate t("{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}", "t");
  const JinjaTemplate copy = t;  // copies share the parse
  EXPECT_EQ(copy.render(std::vector<ChatMessage>{{"user", "a"}}, false, "", ""), "<user>a");
  EXPECT_EQ(t.render(kChat, false, "", ""), "<system> Be brief. <user>Hi<assistant>Hello!<user>caf\xC3\xA9");
  EXPECT_EQ(t.source(), "t");
}

}  // namespace
