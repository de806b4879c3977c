// jinja_lex.h — a chat template's text as tokens, lexed as transformers configures jinja2
// (trim_blocks, lstrip_blocks): {{ expr }} / {% stmt %} / {# comment #}; a '-' inside the
// delimiter strips the whitespace beside it, a '+' after '{%' keeps lstrip_blocks off; the
// first newline after '%}' or '#}' is dropped; spaces and tabs before '{%' or '{#' on their own
// line are dropped. Inside tags: names, integers, strings with Python's escapes, operators.
// Relies on: jinja_ast.h (Position), jinja_value.h, utf8.h. Tested by: tests/tokenizers/test_jinja_template.cpp
// and tests/tokenizers/test_jinja_vs_jinja2.sh (random lexing templates against jinja2).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "framework/data/jinja_ast.h"

namespace farthing::data::jinja {

struct Token {
  enum class Type { kText, kVariableBegin, kVariableEnd, kBlockBegin, kBlockEnd, kName, kString, kInteger, kOperator, kEnd };
  Type type = Type::kEnd;
  std::string text;  // kText: the data; kString: the decoded literal; else the token as written
  Position at;
};

// How an error message names a token: "'}}'", "a string", "the end of the template".
std::string describe(const Token& t);

// The tokens of text (its newlines already read as "\n"), ending with a kEnd token; throws
// "chat template SOURCE, line L column C: ..." for an unterminated tag, comment or string, a
// bad escape, an unbalanced bracket or a character no expression has.
std::vector<Token> lex_template(std::string_view text, const std::string& source);

}  // namespace farthing::data::jinja
