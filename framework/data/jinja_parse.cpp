// jinja_parse.cpp — the template text to statements and expressions (jinja_ast.h), lexed as
// transformers configures jinja2 (trim_blocks, lstrip_blocks, no kept trailing newline):
//   {{ expr }} / {% stmt %} / {# comment #}, a '-' inside the delimiter strips the whitespace
//   beside it, a '+' after '{%' keeps lstrip_blocks off; the first newline after '%}' or '#}' is
//   dropped; spaces and tabs before '{%' or '{#' on their own line are dropped; "\r\n" and "\r"
//   are read as "\n", and one newline ending the template is dropped.
// Operator precedence follows jinja2's parser (low to high): `a if c else b`, or, and, not,
// comparisons and `in`, + -, ~, * %, unary -, then postfix (.attr, [i], [a:b:c], calls), filters
// and `is` tests. Anything outside the subset fails here, at load, naming the construct.
// Relies on: jinja_ast.h, jinja_value.h, core/checked_math.h, utf8.h.
// Tested by: tests/tokenizers/test_jinja_template.cpp.
#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>

#include "framework/core/checked_math.h"
#include "framework/core/error.h"
#include "framework/data/jinja_ast.h"
#include "framework/data/utf8.h"

namespace farthing::data::jinja {

namespace {

constexpr const char* kSupported =
    "farthing's Jinja subset has {{ }}, {% if/elif/else %}, {% for x in xs %}, {% set %}, "
    "{% generation %} and comments";

struct Token {
  enum class Type { kText, kVariableBegin, kVariableEnd, kBlockBegin, kBlockEnd, kName, kString, kInteger, kOperator, kEnd };
  Type type = Type::kEnd;
  std::string text;  // kText: the data; kString: the decoded literal; else the token as written
  Position at;
};

std::string describe(const Token& t) {
  switch (t.type) {
    case Token::Type::kText: return "template text";
    case Token::Type::kVariableBegin: return "'{{'";
    case Token::Type::kVariableEnd: return "'}}'";
    case Token::Type::kBlockBegin: return "'{%'";
    case Token::Type::kBlockEnd: return "'%}'";
    case Token::Type::kString: return "a string";
    case Token::Type::kEnd: return "the end of the template";
    default: return "'" + t.text + "'";
  }
}

// Python's whitespace (what jinja2's \s and str.rstrip() match) at text[pos]: its length, or 0.
size_t space_len(std::string_view text, size_t pos) {
  return is_python_space(code_point_at(text, pos)) ? utf8_char_len(text, pos) : 0;
}

size_t skip_spaces(std::string_view text, size_t pos) {
  while (pos < text.size()) {
    const size_t n = space_len(text, pos);
    if (n == 0) break;
    pos += n;
  }
  return pos;
}

class Lexer {
 public:
  Lexer(std::string_view text, const std::string& source) : text_(text), source_(source) {
    for (size_t i = 0; i < text_.size(); ++i) {
      if (text_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  std::vector<Token> run() {
    size_t pos = 0;
    bool line_starting = true;  // the text about to be read starts a line (lstrip_blocks)
    while (pos < text_.size()) {
      size_t at = pos;
      while (at < text_.size() && !(text_[at] == '{' && at + 1 < text_.size() &&
                                    (text_[at + 1] == '{' || text_[at + 1] == '%' || text_[at + 1] == '#'))) {
        ++at;
      }
      std::string data(text_.substr(pos, at - pos));
      if (at == text_.size()) {
        emit_text(std::move(data), pos);
        break;
      }
      const char kind = text_[at + 1];
      const char sign = at + 2 < text_.size() && (text_[at + 2] == '-' || text_[at + 2] == '+') ? text_[at + 2] : 0;
      if (sign == '-') {
        data = python_strip(data, StripSide::kRight, Value{});
      } else if (sign != '+' && kind != '{') {
        const size_t line_begin = data.rfind('\n') == std::string::npos ? 0 : data.rfind('\n') + 1;
        if ((line_begin > 0 || line_starting) && line_begin < data.size() &&
            skip_spaces(data, line_begin) == data.size()) {
          data.resize(line_begin);
        }
      }
      emit_text(std::move(data), pos);
      const size_t inside = at + 2 + (sign ? 1 : 0);
      pos = kind == '#' ? comment(at, inside) : tag(at, inside, kind == '%');
      line_starting = pos > 0 && text_[pos - 1] == '\n';
    }
    tokens_.push_back({Token::Type::kEnd, "", position(text_.size())});
    return std::move(tokens_);
  }

 private:
  Position position(size_t offset) const {
    const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    return {int(it - line_starts_.begin()), int(offset - *(it - 1)) + 1};
  }

  [[noreturn]] void fail(size_t offset, const std::string& message) const {
    const Position p = position(offset);
    FARTHING_FAIL("chat template ", source_, ", line ", p.line, " column ", p.column, ": ", message);
  }

  void emit_text(std::string data, size_t offset) {
    if (!data.empty()) tokens_.push_back({Token::Type::kText, std::move(data), position(offset)});
  }

  // After a tag's closing delimiter: '-' strips the whitespace after it; trim_blocks drops one
  // newline after a block or comment unless '+' asked to keep it.
  size_t after_close(size_t end, char sign, bool is_block) {
    if (sign == '-') return skip_spaces(text_, end);
    if (is_block && sign != '+' && end < text_.size() && text_[end] == '\n') return end + 1;
    return end;
  }

  size_t comment(size_t open, size_t inside) {
    if (inside >= text_.size()) return text_.size();  // jinja2 drops a "{#" that ends the template
    for (size_t i = inside; i + 1 < text_.size(); ++i) {
      const bool signed_close = (text_[i] == '-' || text_[i] == '+') && i + 2 < text_.size() && text_[i + 1] == '#' &&
                                text_[i + 2] == '}';
      if (signed_close) return after_close(i + 3, text_[i], true);
      if (text_[i] == '#' && text_[i + 1] == '}') return after_close(i + 2, 0, true);
    }
    fail(open, "expected '#}' to close the comment, found the end of the template");
  }

  // Lexes the expression tokens of a {{ }} or {% %} tag; returns where the text after it starts.
  size_t tag(size_t open, size_t inside, bool is_block) {
    tokens_.push_back({is_block ? Token::Type::kBlockBegin : Token::Type::kVariableBegin, is_block ? "{%" : "{{",
                       position(open)});
    const std::string_view close = is_block ? "%}" : "}}";
    int brackets = 0;  // as jinja2: '}}' or '%}' inside ( [ { is an operator, not the end
    size_t pos = inside;
    while (true) {
      pos = skip_spaces(text_, pos);
      if (pos >= text_.size()) {
        fail(open, "expected '" + std::string(close) + "' to close the tag opened here, found the end of the template");
      }
      if (brackets == 0) {
        const std::string_view rest = text_.substr(pos);
        for (char sign : {'-', '+'}) {
          if (rest.size() >= 3 && rest[0] == sign && rest.substr(1, 2) == close && (is_block || sign == '-')) {
            tokens_.push_back({is_block ? Token::Type::kBlockEnd : Token::Type::kVariableEnd, std::string(close),
                               position(pos)});
            return after_close(pos + 3, sign, is_block);
          }
        }
        if (rest.substr(0, 2) == close) {
          tokens_.push_back({is_block ? Token::Type::kBlockEnd : Token::Type::kVariableEnd, std::string(close),
                             position(pos)});
          return after_close(pos + 2, 0, is_block);
        }
      }
      pos = expression_token(pos, brackets);
    }
  }

  size_t expression_token(size_t pos, int& brackets) {
    const char c = text_[pos];
    const Position at = position(pos);
    if (std::isalpha(uint8_t(c)) || c == '_') {
      size_t end = pos;
      while (end < text_.size() && (std::isalnum(uint8_t(text_[end])) || text_[end] == '_')) ++end;
      tokens_.push_back({Token::Type::kName, std::string(text_.substr(pos, end - pos)), at});
      return end;
    }
    if (std::isdigit(uint8_t(c))) {
      size_t end = pos;
      while (end < text_.size() && std::isdigit(uint8_t(text_[end]))) ++end;
      if (end < text_.size() && (text_[end] == '.' || text_[end] == 'e' || text_[end] == 'E' || text_[end] == '_') &&
          end + 1 < text_.size() && std::isdigit(uint8_t(text_[end + 1]))) {
        fail(pos, "float literals and digit separators are not supported (" + std::string(kSupported) +
                      "; numbers are integers)");
      }
      FARTHING_CHECK(end - pos <= 18, "chat template ", source_, ", line ", at.line, " column ", at.column,
                     ": the integer ", text_.substr(pos, end - pos), " is too large (at most 18 digits)");
      tokens_.push_back({Token::Type::kInteger, std::string(text_.substr(pos, end - pos)), at});
      return end;
    }
    if (c == '\'' || c == '"') return string_literal(pos);
    static constexpr std::array<std::string_view, 6> kTwoChar = {"//", "**", "==", "!=", ">=", "<="};
    for (std::string_view op : kTwoChar) {
      if (text_.substr(pos, 2) == op) {
        tokens_.push_back({Token::Type::kOperator, std::string(op), at});
        return pos + 2;
      }
    }
    if (std::string_view("+-/*%~[](){}<>=.:|,;").find(c) != std::string_view::npos) {
      if (c == '(' || c == '[' || c == '{') ++brackets;
      if (c == ')' || c == ']' || c == '}') {
        if (brackets == 0) fail(pos, std::string("unexpected '") + c + "' with no bracket open");
        --brackets;
      }
      tokens_.push_back({Token::Type::kOperator, std::string(1, c), at});
      return pos + 1;
    }
    fail(pos, "unexpected character '" + std::string(text_.substr(pos, utf8_char_len(text_, pos))) +
                  "' in an expression");
  }

  // A '...' or "..." literal with Python's escapes (jinja2 decodes them as unicode-escape).
  size_t string_literal(size_t open) {
    const char quote = text_[open];
    std::string value;
    size_t pos = open + 1;
    while (true) {
      if (pos >= text_.size()) fail(open, std::string("expected ") + quote + " to close the string, found the end of the template");
      const char c = text_[pos];
      if (c == quote) break;
      if (c != '\\' || pos + 1 >= text_.size()) {
        value += c;
        ++pos;
        continue;
      }
      const char e = text_[pos + 1];
      pos += 2;
      switch (e) {
        case '\n': break;  // a backslash-newline continues the line
        case '\\': value += '\\'; break;
        case '\'': value += '\''; break;
        case '"': value += '"'; break;
        case 'a': value += '\a'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'n': value += '\n'; break;
        case 'r': value += '\r'; break;
        case 't': value += '\t'; break;
        case 'v': value += '\v'; break;
        case 'x': value_code_point(value, pos, 2, open); break;
        case 'u': value_code_point(value, pos, 4, open); break;
        case 'U': value_code_point(value, pos, 8, open); break;
        case 'N': fail(pos - 2, "the \\N{...} escape is not supported; write the character itself");
        default:
          if (e >= '0' && e <= '7') {  // up to three octal digits
            uint32_t cp = uint32_t(e - '0');
            for (int k = 0; k < 2 && pos < text_.size() && text_[pos] >= '0' && text_[pos] <= '7'; ++k) {
              cp = cp * 8 + uint32_t(text_[pos++] - '0');
            }
            utf8_append(value, cp);
          } else {  // Python keeps unknown escapes as written
            value += '\\';
            value += e;
          }
      }
    }
    tokens_.push_back({Token::Type::kString, std::move(value), position(open)});
    return pos + 1;
  }

  void value_code_point(std::string& value, size_t& pos, int digits, size_t open) {
    uint32_t cp = 0;
    for (int k = 0; k < digits; ++k, ++pos) {
      if (pos >= text_.size() || !std::isxdigit(uint8_t(text_[pos]))) {
        fail(open, "a \\x, \\u or \\U escape in this string needs " + std::to_string(digits) + " hex digits");
      }
      const char h = char(std::tolower(uint8_t(text_[pos])));
      cp = cp * 16 + uint32_t(h <= '9' ? h - '0' : h - 'a' + 10);
    }
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      fail(open, "an escape in this string is not a Unicode scalar value (a surrogate or past U+10FFFF)");
    }
    utf8_append(value, cp);
  }

  std::string_view text_;
  const std::string& source_;
  std::vector<size_t> line_starts_ = {0};
  std::vector<Token> tokens_;
};

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
    fail(p, what + " is not supported (" + kSupported + ")");
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
  return Parser(Lexer(normalized, source).run(), source).parse_all();
}

}  // namespace farthing::data::jinja
