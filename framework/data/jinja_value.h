// jinja_value.h — the values a chat template computes with, and the Python semantics jinja2
// gives them: truthiness, str() (what {{ x }} prints), repr() inside lists and dicts, equality,
// json.dumps(ensure_ascii=False) for the tojson filter (transformers' override), and Python's
// str.strip() whitespace. Strings are UTF-8; lengths, indices and slices count code points, as
// Python does, so a template that slices content gives jinja2's answer.
// Relies on: utf8.h. Tested by: tests/tokenizers/test_jinja_template.cpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace farthing::data::jinja {

struct Value;
using List = std::vector<Value>;
using Map = std::vector<std::pair<std::string, Value>>;  // insertion order, as Python dicts

struct Value {
  // kUndefined is jinja2's default Undefined: prints as "", is false, iterates as empty, and
  // fails when indexed or used in arithmetic. kNamespace is namespace(...): a Map that
  // {% set ns.key = ... %} may change from inside a loop.
  enum class Type { kUndefined, kNone, kBool, kInt, kString, kList, kMap, kNamespace };
  Type type = Type::kUndefined;
  bool boolean = false;
  int64_t integer = 0;
  std::shared_ptr<const std::string> text;  // kString; for kUndefined, why (for its error)
  std::shared_ptr<List> list;  // kList
  std::shared_ptr<Map> map;    // kMap, kNamespace
  int depth = 0;               // how deep lists and maps nest inside (printing and == recurse it)

  static Value none() { return with_type(Type::kNone); }
  static Value of(bool b) { Value v = with_type(Type::kBool); v.boolean = b; return v; }
  static Value of(int64_t i) { Value v = with_type(Type::kInt); v.integer = i; return v; }
  static Value of(std::string s) { Value v = with_type(Type::kString); v.set_text(std::move(s)); return v; }
  static Value of(const char* s) { return of(std::string(s)); }  // not the bool overload
  static Value of(List l) {
    Value v = with_type(Type::kList);
    for (const Value& x : l) v.depth = std::max(v.depth, x.depth + 1);
    v.list = std::make_shared<List>(std::move(l));
    return v;
  }
  static Value of(Map m, Type type = Type::kMap) {
    Value v = with_type(type);
    for (const auto& kv : m) v.depth = std::max(v.depth, kv.second.depth + 1);
    v.map = std::make_shared<Map>(std::move(m));
    return v;
  }

  // Strings are shared, not copied, as values pass through variables and lists.
  const std::string& str() const {
    static const std::string kEmpty;
    return text ? *text : kEmpty;
  }
  void set_text(std::string s) { text = std::make_shared<const std::string>(std::move(s)); }

  bool is(Type t) const { return type == t; }
  bool is_map() const { return type == Type::kMap || type == Type::kNamespace; }

 private:
  static Value with_type(Type t) { Value v; v.type = t; return v; }
};

// The string work one render may do (bytes built, scanned or compared), so that no template
// runs for hours on a tiny input; charge() throws naming the template past the limit.
struct WorkBudget {
  std::string source;
  size_t limit = 0;
  size_t used = 0;
  void charge(size_t bytes);
};

// Python's type name for error messages ("str", "int", "list", "dict", "undefined", ...).
const char* type_name(const Value& v);
bool truthy(const Value& v);
// str(v): what {{ v }} and ~ print. Each function given a budget charges its work to it.
std::string to_str(const Value& v, WorkBudget* budget = nullptr);
// Python ==, with int == bool as Python has it.
bool equal(const Value& a, const Value& b, WorkBudget* budget = nullptr);
// json.dumps(v, ensure_ascii=False); throws for undefined.
std::string to_json(const Value& v, WorkBudget* budget = nullptr);
// The value at key in a map; undefined when absent.
Value map_get(const Map& map, std::string_view key);

// Python str.isspace for one code point.
bool is_python_space(uint32_t cp);
// The code point of the UTF-8 character at s[pos] (utf8_char_len bytes); an invalid byte gives
// 0xFFFFFFFF, which is neither whitespace nor printable.
uint32_t code_point_at(std::string_view s, size_t pos);
// Byte offsets of each code point of s (invalid bytes count as one each), plus s.size() at the end.
std::vector<size_t> code_point_offsets(std::string_view s);
// Python str.strip / lstrip / rstrip; chars empty: whitespace, else any code point of chars.
enum class StripSide { kBoth, kLeft, kRight };
std::string python_strip(std::string_view s, StripSide side, const Value& chars);

}  // namespace farthing::data::jinja
