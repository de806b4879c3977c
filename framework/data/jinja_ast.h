// jinja_ast.h — a parsed chat template: statements (Node) holding expressions (Expr), built by
// jinja_parse.cpp (from jinja_lex.cpp's tokens) and walked by jinja_template.cpp. Every node
// keeps its line and column so a render-time error points into the template.
// Relies on: jinja_value.h. Tested by: tests/tokenizers/test_jinja_template.cpp.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "framework/data/jinja_value.h"

namespace farthing::data::jinja {

struct Position {
  int line = 1;
  int column = 1;
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,    // value
    kName,       // name
    kList,       // [args...]
    kAttribute,  // args[0].name
    kItem,       // args[0][args[1]]
    kSlice,      // args[0][args[1]:args[2]:args[3]]; a null arg is an omitted bound
    kNot,        // not args[0]
    kNegate,     // -args[0]
    kBinary,     // args[0] name args[1]: + - * % ~ == != < > <= >= in "not in"
    kAnd,        // args[0] and args[1]
    kOr,         // args[0] or args[1]
    kCondition,  // args[0] if args[1] else args[2] (args[2] null: undefined)
    kFilter,     // args[0] | name(args[1:])
    kTest,       // args[0] is name; negated: is not name
    kCall,       // name(args...): raise_exception, namespace (keys name its keyword arguments)
    kMethod,     // args[0].name(args[1:])
  };
  Kind kind = Kind::kLiteral;
  Position at;
  Value value;
  std::string name;
  bool negated = false;
  std::vector<ExprPtr> args;
  std::vector<std::string> keys;
  int depth = 1;  // of the tree below, bounded by kMaxExpressionDepth (evaluation recurses it)
};

struct Node;
using Body = std::vector<Node>;

struct Branch {
  ExprPtr condition;  // null: else
  Body body;
};

struct Node {
  enum class Kind {
    kText,        // text
    kOutput,      // {{ expr }}
    kIf,          // branches
    kFor,         // {% for name in expr %} body
    kSet,         // {% set name = expr %} or {% set name.attribute = expr %}
    kGeneration,  // {% generation %} body (transformers' assistant-mask block: renders its body)
  };
  Kind kind = Kind::kText;
  Position at;
  std::string text;
  std::string name;
  std::string attribute;
  ExprPtr expr;
  std::vector<Branch> branches;
  Body body;
};

// What error messages say the subset is.
inline constexpr const char* kSupportedSubset =
    "farthing's Jinja subset has {{ }}, {% if/elif/else %}, {% for x in xs %}, {% set %}, "
    "{% generation %} and comments";

// Limits for untrusted templates (a template comes from a recipe or a downloaded file).
inline constexpr size_t kMaxTemplateBytes = size_t(1) << 20;
inline constexpr int kMaxNestingDepth = 64;              // parser recursion: blocks, brackets, not, -
inline constexpr int kMaxExpressionDepth = 256;          // a + b + ... and x.a.b... chains too
inline constexpr size_t kMaxRenderBytes = size_t(16) << 20;       // any string, and the output
inline constexpr size_t kMaxRenderWorkBytes = size_t(256) << 20;  // all strings built in one render
inline constexpr size_t kMaxListItems = size_t(1) << 20;           // a list built by + or *
inline constexpr int64_t kMaxRenderSteps = 1'000'000;             // nodes and expressions evaluated per render

// Parses a template. source names it in errors ("data.chat_template", a file path); errors are
// "chat template SOURCE, line L column C: expected X, found Y" or name the unsupported construct.
Body parse_template(std::string_view text, const std::string& source);

}  // namespace farthing::data::jinja
