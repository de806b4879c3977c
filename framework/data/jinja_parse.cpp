// jinja_parse.cpp — a template's tokens (jinja_lex.h) to statements and expressions
// (jinja_ast.h). Operator precedence follows jinja2's parser (low to high): `a if c else b`, or,
// and, not, comparisons and `in`, + -, ~, * %, unary -, then postfix (.attr, [i], [a:b:c],
// calls), filters and `is` tests. Anything outside the subset fails here, at load, naming the
// construct; "\r\n" and "\r" are read as "\n" and one newline ending the template is dropped,
// as jinja2 does.
// Relies on: jinja_lex.h, jinja_ast.h, core/checked_math.h. Tested by: tests/tokenizers/test_jinja_template.cpp.
#include <algorithm>
#include <array>
#include <cstdint>

#include "framework/core/checked_math.h"
#include "framework/core/error.h"
#include "framework/data/jinja_ast.h"
#include "framework/data/jinja_lex.h"

namespace farthing::data::jinja {

namespace {

// Arity of each supported filter, method and test; anything else is refused at parse time.
struct Arity {
  std::string_view name;
  int min_args;
  int max_args;
};
constexpr std::array<Arity, 10> kFilters = {{{"trim", 0, 1}, {"length", 0, 0}, {"count", 0, 0}, {"tojson", 0, 0},
                                              {"string", 0, 0}, {"first", 0, 0}, {"last", 0, 0}, {"default", 0, 1},
                                              {"d", 0, 1}, {"join", 0, 1}}};
constexpr std::array<Arity, 8> kMethods = {{{"strip", 0, 1}, {"lstrip", 0, 1}, {"rstrip", 0, 1}, {"startswith", 1, 1},
                                              {"endswith", 1, 1}, {"split", 0, 1}, {"replace", 2, 2}, {"get", 1, 2}}};
constexpr std::array<std::string_view, 14> kTests = {"defined", "undefined", "none", "string", "number", "integer",
                                                     "mapping", "sequence", "iterable", "boolean", "true", "false",
                                                     "even", "odd"};
constexpr std::array<std::string_view, 17> kUnsupportedStatements = {
    "macro", "call", "filter", "include", "import", "from", "extends", "block", "raw", "with", "do", "break",
    "continue", "autoescape", "endmacro", "endcall", "endset"};

template <size_t N>
const Arity* find_arity(const std::array<Arity, N>& table, std::string_view name) {
  for (const Arity& a : table) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

template <size_t N>
std::string names_of(const std::array<Arity, N>& table) {
  std::string out;
  for (const Arity& a : table) out += (out.empty() ? "" : ", ") + std::string(a.name);
  return out;
}

class Parser {
 public:
  Parser(std::vector<Token> tokens, const std::string& source) : tokens_(std::move(tokens)), source_(source) {}

  Body parse_all() {
    std::string ended_by;
    return parse_body({}, ended_by, peek());
  }

 private:
  using Ends = std::vector<std::string_view>;

  const Token& peek(size_t ahead = 0) const { return tokens_[std::min(at_ + ahead, tokens_.size() - 1)]; }
  const Token& next() { return tokens_[std::min(at_++, tokens_.size() - 1)]; }
  bool peek_operator(std::string_view op) const { return peek().type == Token::Type::kOperator && peek().text == op; }
  bool peek_name(std::string_view name, size_t ahead = 0) const {
    return peek(ahead).type == Token::Type::kName && peek(ahead).text == name;
  }

  [[noreturn]] void fail(const Position& p, const std::string& message) const {
    FARTHING_FAIL("chat template ", source_, ", line ", p.line, " column ", p.column, ": ", message);
  }
  [[noreturn]] void expected(const std::string& what) const { fail(peek().at, "expected " + what + ", found " + describe(peek())); }
  [[noreturn]] void unsupported(const Position& p, const std::string& what) const {
    fail(p, what + " is not supported (" + kSupportedSubset + ")");
  }

  void expect_operator(std::string_view op) {
    if (!peek_operator(op)) expected("'" + std::string(op) + "'");
    next();
  }
  const Token& expect_name(const std::string& what) {
    if (peek().type != Token::Type::kName) expected(what);
    return next();
  }
  void expect_block_end(const std::string& after) {
    if (peek().type != Token::Type::kBlockEnd) expected("'%}' after " + after);
    next();
  }

  // Guards recursion in blocks and expressions: nesting is bounded by kMaxNestingDepth.
  struct Nest {
    Parser& p;
    Nest(Parser& parser, const Position& at) : p(parser) {
      check_depth(++p.depth_, kMaxNestingDepth, "chat template ", p.source_, ", line ", at.line, " column ", at.column,
                  ":");
    }
    ~Nest() { --p.depth_; }
  };

  // Nodes up to a {% NAME %} with NAME in ends (consumed up to NAME), or the end of the template
  // when ends is empty.
  Body parse_body(const Ends& ends, std::string& ended_by, const Token& opener) {
    const Nest nest(*this, opener.at);
    Body body;
    while (true) {
      const Token& t = peek();
      if (t.type == Token::Type::kEnd) {
        if (ends.empty()) return body;
        fail(opener.at, "expected {% " + std::string(ends.back()) + " %} to close this '" + opener.text +
                            "', found the end of the template");
      }
      if (t.type == Token::Type::kText) {
        Node node;
        node.kind = Node::Kind::kText;
        node.at = t.at;
        node.text = next().text;
        body.push_back(std::move(node));
        continue;
      }
      if (t.type == Token::Type::kVariableBegin) {
        Node node;
        node.kind = Node::Kind::kOutput;
        node.at = next().at;
        node.expr = parse_expression();
        if (peek().type != Token::Type::kVariableEnd) expected("'}}'");
        next();
        body.push_back(std::move(node));
        continue;
      }
      if (t.type != Token::Type::kBlockBegin) expected("template text, '{{' or '{%'");
      next();
      const Token& name = expect_name("a statement name (if, for, set, ...)");
      if (std::find(ends.begin(), ends.end(), name.text) != ends.end()) {
        ended_by = name.text;
        return body;
      }
      body.push_back(parse_statement(name, ends));
    }
  }

  Node parse_statement(const Token& name, const Ends& open_ends) {
    Node node;
    node.at = name.at;
    const std::string& s = name.text;
    if (s == "if") {
      node.kind = Node::Kind::kIf;
      ExprPtr condition = parse_expression();
      expect_block_end("the if condition");
      while (true) {
        std::string ended_by;
        Body body = parse_body({"elif", "else", "endif"}, ended_by, name);
        node.branches.push_back({std::move(condition), std::move(body)});
        if (ended_by == "elif") {
          condition = parse_expression();
          expect_block_end("the elif condition");
          continue;
        }
        if (ended_by == "else") {
          expect_block_end("else");
          node.branches.push_back({nullptr, parse_body({"endif"}, ended_by, name)});
        }
        expect_block_end("endif");
        return node;
      }
    }
    if (s == "for") {
      node.kind = Node::Kind::kFor;
      node.name = expect_name("a loop variable name after 'for'").text;
      if (peek_operator(",")) unsupported(peek().at, "unpacking into several loop variables (for a, b in ...)");
      if (!peek_name("in")) expected("'in' after the loop variable");
      next();
      node.expr = parse_or();
      if (peek_name("if")) unsupported(peek().at, "a loop filter (for x in xs if ...)");
      if (peek_name("recursive")) unsupported(peek().at, "a recursive loop");
      expect_block_end("the for loop's list");
      std::string ended_by;
      node.body = parse_body({"else", "endfor"}, ended_by, name);
      if (ended_by == "else") unsupported(peek().at, "{% else %} in a for loop");
      expect_block_end("endfor");
      return node;
    }
    if (s == "set") {
      node.kind = Node::Kind::kSet;
      node.name = expect_name("a variable name after 'set'").text;
      if (peek_operator(".")) {
        next();
        node.attribute = expect_name("an attribute name after '.'").text;
      }
      if (peek_operator(",")) unsupported(peek().at, "assigning several variables at once (set a, b = ...)");
      if (peek().type == Token::Type::kBlockEnd) unsupported(name.at, "a block set ({% set x %}...{% endset %})");
      expect_operator("=");
      node.expr = parse_expression();
      expect_block_end("the set expression");
      return node;
    }
    if (s == "generation") {
      node.kind = Node::Kind::kGeneration;
      expect_block_end("generation");
      std::string ended_by;
      node.body = parse_body({"endgeneration"}, ended_by, name);
      expect_block_end("endgeneration");
      return node;
    }
    if (std::find(kUnsupportedStatements.begin(), kUnsupportedStatements.end(), s) != kUnsupportedStatements.end()) {
      unsupported(name.at, "{% " + s + " %}");
    }
    std::string wanted = "a statement (if, for, set, generation)";
    for (std::string_view end : open_ends) wanted += std::string(end == open_ends.front() ? " or " : ", ") + "{% " + std::string(end) + " %}";
    fail(name.at, "expected " + wanted + ", found '" + s + "'");
  }

  ExprPtr make(Expr::Kind kind, const Position& at, std::vector<ExprPtr> args = {}, std::string name = "") {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->at = at;
    e->args = std::move(args);
    e->name = std::move(name);
    check_expression_depth(*e);
    return e;
  }
  void check_expression_depth(Expr& e) const {
    for (const ExprPtr& a : e.args) {
      if (a) e.depth = std::max(e.depth, a->depth + 1);
    }
    check_depth(e.depth, kMaxExpressionDepth, "chat template ", source_, ", line ", e.at.line, " column ",
                e.at.column, ": this expression");
  }
  template <class... E>
  static std::vector<ExprPtr> list(E&&... e) {
    std::vector<ExprPtr> v;
    (v.push_back(std::move(e)), ...);
    return v;
  }

  ExprPtr parse_expression() {
    const Nest nest(*this, peek().at);
    ExprPtr e = parse_or();
    while (peek_name("if")) {
      const Position at = next().at;
      ExprPtr condition = parse_or();
      ExprPtr otherwise;
      if (peek_name("else")) {
        next();
        otherwise = parse_expression();
      }
      e = make(Expr::Kind::kCondition, at, list(std::move(e), std::move(condition), std::move(otherwise)));
    }
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    while (peek_name("or")) {
      const Position at = next().at;
      e = make(Expr::Kind::kOr, at, list(std::move(e), parse_and()));
    }
    return e;
  }

  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    while (peek_name("and")) {
      const Position at = next().at;
      e = make(Expr::Kind::kAnd, at, list(std::move(e), parse_not()));
    }
    return e;
  }

  ExprPtr parse_not() {
    if (!peek_name("not")) return parse_compare();
    const Position at = next().at;
    const Nest nest(*this, at);
    return make(Expr::Kind::kNot, at, list(parse_not()));
  }

  // One comparison at most: jinja2 chains `a < b < c` as Python does, which this subset does not.
  std::string comparison_ahead() const {
    if (peek().type == Token::Type::kOperator) {
      for (std::string_view op : {"==", "!=", "<", ">", "<=", ">="}) {
        if (peek().text == op) return std::string(op);
      }
    }
    if (peek_name("in")) return "in";
    if (peek_name("not") && peek_name("in", 1)) return "not in";
    return "";
  }

  ExprPtr parse_compare() {
    ExprPtr e = parse_add();
    const std::string op = comparison_ahead();
    if (op.empty()) return e;
    const Position at = next().at;
    if (op == "not in") next();
    e = make(Expr::Kind::kBinary, at, list(std::move(e), parse_add()), op);
    if (!comparison_ahead().empty()) unsupported(peek().at, "a chained comparison (a < b < c)");
    return e;
  }

  ExprPtr parse_add() {
    ExprPtr e = parse_concat();
    while (peek_operator("+") || peek_operator("-")) {
      const Token& op = next();
      e = make(Expr::Kind::kBinary, op.at, list(std::move(e), parse_concat()), op.text);
    }
    return e;
  }

  ExprPtr parse_concat() {
    ExprPtr e = parse_multiply();
    while (peek_operator("~")) {
      const Position at = next().at;
      e = make(Expr::Kind::kBinary, at, list(std::move(e), parse_multiply()), "~");
    }
    return e;
  }

  ExprPtr parse_multiply() {
    ExprPtr e = parse_unary(true);
    while (peek_operator("*") || peek_operator("%") || peek_operator("/") || peek_operator("//")) {
      if (peek_operator("/") || peek_operator("//")) unsupported(peek().at, "division ('" + peek().text + "')");
      const Token& op = next();
      e = make(Expr::Kind::kBinary, op.at, list(std::move(e), parse_unary(true)), op.text);
    }
    if (peek_operator("**")) unsupported(peek().at, "the power operator '**'");
    return e;
  }

  ExprPtr parse_unary(bool with_filters) {
    const Nest nest(*this, peek().at);
    ExprPtr e;
    if (peek_operator("-")) {
      const Position at = next().at;
      e = make(Expr::Kind::kNegate, at, list(parse_unary(false)));
    } else if (peek_operator("+")) {
      unsupported(peek().at, "unary '+'");
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    return with_filters ? parse_filters(std::move(e)) : std::move(e);
  }

  ExprPtr parse_primary() {
    const Token& t = peek();
    if (t.type == Token::Type::kName) {
      next();
      ExprPtr e = make(Expr::Kind::kLiteral, t.at);
      if (t.text == "true" || t.text == "True") e->value = Value::of(true);
      else if (t.text == "false" || t.text == "False") e->value = Value::of(false);
      else if (t.text == "none" || t.text == "None") e->value = Value::none();
      else e = make(Expr::Kind::kName, t.at, {}, t.text);
      return e;
    }
    if (t.type == Token::Type::kString) {
      ExprPtr e = make(Expr::Kind::kLiteral, t.at);
      std::string s;
      while (peek().type == Token::Type::kString) s += next().text;  // "a" "b" is "ab", as in jinja2
      e->value = Value::of(std::move(s));
      return e;
    }
    if (t.type == Token::Type::kInteger) {
      ExprPtr e = make(Expr::Kind::kLiteral, t.at);
      e->value = Value::of(int64_t(std::stoll(next().text)));
      return e;
    }
    if (peek_operator("(")) {
      next();
      ExprPtr e = parse_expression();
      if (peek_operator(",")) unsupported(peek().at, "a tuple");
      expect_operator(")");
      return e;
    }
    if (peek_operator("[")) {
      const Position at = next().at;
      std::vector<ExprPtr> items;
      while (!peek_operator("]")) {
        items.push_back(parse_expression());
        if (!peek_operator(",")) break;
        next();
      }
      expect_operator("]");
      return make(Expr::Kind::kList, at, std::move(items));
    }
    if (peek_operator("{")) unsupported(t.at, "a dict literal");
    expected("an expression");
  }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      if (peek_operator(".")) {
        next();
        const Token& name = expect_name("an attribute name after '.'");
        if (peek_operator("(")) {
          e = parse_call_args(make(Expr::Kind::kMethod, name.at, list(std::move(e)), name.text));
        } else {
          e = make(Expr::Kind::kAttribute, name.at, list(std::move(e)), name.text);
        }
      } else if (peek_operator("[")) {
        e = parse_subscript(std::move(e));
      } else if (peek_operator("(")) {
        if (e->kind != Expr::Kind::kName) unsupported(peek().at, "calling the result of an expression");
        e->kind = Expr::Kind::kCall;
        e = parse_call_args(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr e) {
    const Position at = next().at;  // '['
    std::array<ExprPtr, 3> parts;   // start, stop, step
    bool slice = false;
    for (int k = 0; k < 3; ++k) {
      if (!peek_operator(":") && !peek_operator("]")) parts[k] = parse_expression();
      if (k == 0 && peek_operator(",")) unsupported(peek().at, "a tuple subscript (x[a, b])");
      if (!peek_operator(":")) break;
      if (k == 2) expected("']'");
      next();
      slice = true;
    }
    expect_operator("]");
    if (!slice) {
      if (!parts[0]) fail(at, "expected an index or a slice inside '[]'");
      return make(Expr::Kind::kItem, at, list(std::move(e), std::move(parts[0])));
    }
    return make(Expr::Kind::kSlice, at, list(std::move(e), std::move(parts[0]), std::move(parts[1]), std::move(parts[2])));
  }

  // Arguments of a function (kCall: raise_exception(msg), namespace(key=value, ...)) or of a
  // method (kMethod: args[0] is the object).
  ExprPtr parse_call_args(ExprPtr call) {
    const Position at = call->at;
    const bool is_namespace = call->kind == Expr::Kind::kCall && call->name == "namespace";
    if (call->kind == Expr::Kind::kCall && call->name != "raise_exception" && !is_namespace) {
      unsupported(at, "the function '" + call->name + "' (functions: raise_exception, namespace)");
    }
    const Arity* method = call->kind == Expr::Kind::kMethod ? find_arity(kMethods, call->name) : nullptr;
    if (call->kind == Expr::Kind::kMethod && !method) {
      unsupported(at, "the method '." + call->name + "()' (methods: " + names_of(kMethods) + ")");
    }
    expect_operator("(");
    int count = 0;
    while (!peek_operator(")")) {
      if (peek().type == Token::Type::kName && peek(1).type == Token::Type::kOperator && peek(1).text == "=") {
        if (!is_namespace) unsupported(peek().at, "a keyword argument");
        call->keys.push_back(next().text);
        next();
      } else if (is_namespace) {
        expected("a keyword argument (name=value) in namespace(...)");
      }
      call->args.push_back(parse_expression());
      ++count;
      if (!peek_operator(",")) break;
      next();
    }
    expect_operator(")");
    if (call->kind == Expr::Kind::kCall && call->name == "raise_exception" && count != 1) {
      fail(at, "raise_exception takes one argument, the message; found " + std::to_string(count));
    }
    if (method && (count < method->min_args || count > method->max_args)) {
      fail(at, "the method '." + call->name + "()' takes " + std::to_string(method->min_args) + " to " +
                   std::to_string(method->max_args) + " arguments; found " + std::to_string(count));
    }
    check_expression_depth(*call);
    return call;
  }

  ExprPtr parse_filters(ExprPtr e) {
    while (true) {
      if (peek_operator("|")) {
        next();
        const Token& name = expect_name("a filter name after '|'");
        const Arity* filter = find_arity(kFilters, name.text);
        if (!filter) unsupported(name.at, "the filter '" + name.text + "' (filters: " + names_of(kFilters) + ")");
        ExprPtr f = make(Expr::Kind::kFilter, name.at, list(std::move(e)), name.text);
        int count = 0;
        if (peek_operator("(")) {
          next();
          while (!peek_operator(")")) {
            if (peek().type == Token::Type::kName && peek(1).type == Token::Type::kOperator && peek(1).text == "=") {
              unsupported(peek().at, "a keyword argument to a filter");
            }
            f->args.push_back(parse_expression());
            ++count;
            if (!peek_operator(",")) break;
            next();
          }
          expect_operator(")");
        }
        if (count < filter->min_args || count > filter->max_args) {
          fail(name.at, "the filter '" + name.text + "' takes " + std::to_string(filter->min_args) + " to " +
                            std::to_string(filter->max_args) + " arguments; found " + std::to_string(count));
        }
        check_expression_depth(*f);
        e = std::move(f);
      } else if (peek_name("is")) {
        next();
        const bool negated = peek_name("not");
        if (negated) next();
        const Token& name = expect_name("a test name after 'is'");
        if (std::find(kTests.begin(), kTests.end(), name.text) == kTests.end()) {
          unsupported(name.at, "the test 'is " + name.text + "' (tests: defined, undefined, none, string, number, "
                               "integer, mapping, sequence, iterable, boolean, true, false, even, odd)");
        }
        if (peek_operator("(")) unsupported(peek().at, "an argument to a test");
        e = make(Expr::Kind::kTest, name.at, list(std::move(e)), name.text);
        e->negated = negated;
      } else {
        return e;
      }
    }
  }

  std::vector<Token> tokens_;
  size_t at_ = 0;
  int depth_ = 0;
  const std::string& source_;
};

}  // namespace

Body parse_template(std::string_view text, const std::string& source) {
  FARTHING_CHECK(text.size() <= kMaxTemplateBytes, "chat template ", source, " is ", text.size(),
                 " bytes; at most ", kMaxTemplateBytes, " are accepted");
  // jinja2 reads "\r\n" and "\r" as "\n" and drops one newline that ends the template.
  std::string normalized;
  normalized.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\r') {
      normalized += '\n';
      if (i + 1 < text.size() && text[i + 1] == '\n') ++i;
    } else {
      normalized += text[i];
    }
  }
  if (!normalized.empty() && normalized.back() == '\n') normalized.pop_back();
  return Parser(lex_template(normalized, source), source).parse_all();
}

}  // namespace farthing::data::jinja