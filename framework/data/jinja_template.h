// jinja_template.h — a small interpreter for the Jinja subset that Hugging Face chat templates
// use, for templates no built-in renderer (chat_template.h) recognises. Parsed once, at load:
// text outside the subset, or malformed, is an error naming the template's source, the line and
// column, and what was expected or which construct is unsupported. Rendered per conversation as
// transformers' apply_chat_template renders it with jinja2 (trim_blocks, lstrip_blocks; variables
// messages, bos_token, eos_token, add_generation_prompt, and tools = documents = None).
//
// The subset: {{ expr }}, {% if/elif/else/endif %}, {% for x in xs %} (loop.index, index0,
// first, last, length, revindex, revindex0), {% set x = ... %}, {% set ns.attr = ... %} with
// namespace(...), {% generation %}, {# comments #}, whitespace control {%- -%} {{- -}} {%+;
// literals (strings with Python escapes, integers, true/false/none, lists); + - * % ~, == != < >
// <= >=, and or not, in / not in, `a if c else b`; x.attr, x['key'], xs[0], xs[-1], xs[1:],
// xs[::-1]; filters trim, length, count, tojson, string, first, last, default, join; methods
// .strip() .lstrip() .rstrip() .startswith() .endswith() .split() .replace() .get(); tests is
// [not] defined/undefined/none/string/number/integer/mapping/sequence/iterable/boolean/true/
// false/even/odd; raise_exception('message'), a render-time error carrying the message.
// Limits (jinja_ast.h): 1 MiB of template, 64 nested blocks or brackets, expressions 256 deep;
// per render 16 MiB of output or of any string, 256 MiB of string work in all, lists of 1M items,
// 1 million evaluation steps. Integers are 64-bit: overflow is an error (Python's are unbounded).
// Relies on: jinja_ast.h (parse: jinja_lex.cpp, jinja_parse.cpp), jinja_value.h, chat_template.h (ChatMessage).
// Tested by: tests/tokenizers/test_jinja_template.cpp (each construct and error),
// tests/tokenizers/test_jinja_goldens.cpp (real templates against jinja2) and
// tests/tokenizers/test_jinja_vs_jinja2.sh (random templates against jinja2).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "framework/data/chat_template.h"

namespace farthing::data {

namespace jinja {
struct Node;
}

class JinjaTemplate {
 public:
  // Parses text; source names it in every error ("data.chat_template", a file path).
  JinjaTemplate(std::string_view text, std::string source);

  std::string render(std::span<const ChatMessage> messages, bool add_generation_prompt, const std::string& bos_token,
                     const std::string& eos_token) const;

  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::shared_ptr<const std::vector<jinja::Node>> body_;  // shared: copies of a template share one parse
};

}  // namespace farthing::data
