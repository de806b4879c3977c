// jinja_lex.cpp — see jinja_lex.h.
#include "framework/data/jinja_lex.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>

#include "framework/core/error.h"
#include "framework/data/jinja_value.h"
#include "framework/data/utf8.h"

namespace farthing::data::jinja {

namespace {

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
        fail(pos, "float literals and digit separators are not supported (" + std::string(kSupportedSubset) +
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

}  // namespace

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

std::vector<Token> lex_template(std::string_view text, const std::string& source) {
  return Lexer(text, source).run();
}

}  // namespace farthing::data::jinja
