// jinja_template.cpp — see jinja_template.h. The renderer walks the parsed template with jinja2's
// scoping: each for-loop iteration starts a fresh scope (a {% set %} inside a loop is gone at the
// next iteration and after the loop, as in jinja2; namespace() is how templates carry state out),
// and names not found are Undefined, which fails only when indexed, called or computed with.
#include "framework/data/jinja_template.h"

#include <algorithm>
#include <cstdint>

#include "framework/core/error.h"
#include "framework/data/jinja_ast.h"
#include "framework/data/jinja_value.h"

namespace farthing::data {

namespace {

using jinja::Body;
using jinja::Expr;
using jinja::List;
using jinja::Map;
using jinja::Node;
using jinja::Position;
using jinja::Value;
using Type = jinja::Value::Type;

// An Undefined that remembers why, for the error if it is used: "'x' is undefined".
Value undefined(std::string why) {
  Value v;
  v.set_text(std::move(why));
  return v;
}

bool is_numeric(const Value& v) { return v.is(Type::kInt) || v.is(Type::kBool); }
int64_t as_int(const Value& v) { return v.is(Type::kInt) ? v.integer : int64_t(v.boolean); }

class Renderer {
 public:
  Renderer(const std::string& source, Map globals) : source_(source) {
    scopes_.push_back(std::move(globals));
    budget_.source = source;
    budget_.limit = jinja::kMaxRenderWorkBytes;
  }

  std::string run(const Body& body) {
    render(body);
    return std::move(out_);
  }

 private:
  [[noreturn]] void fail(const Position& at, const std::string& message) const {
    FARTHING_FAIL("chat template ", source_, ", line ", at.line, " column ", at.column, ": ", message);
  }

  void step(const Position& at) {
    if (++steps_ > jinja::kMaxRenderSteps) {
      fail(at, "rendering took more than " + std::to_string(jinja::kMaxRenderSteps) + " steps (a runaway loop?)");
    }
  }

  // Every string the template builds passes here: its size is bounded, and so is the sum of all
  // of them with every other string scan (budget_: a loop that keeps rebuilding a long string).
  std::string checked_size(std::string s, const Position& at) {
    if (s.size() > jinja::kMaxRenderBytes) {
      fail(at, "a string grew past " + std::to_string(jinja::kMaxRenderBytes) + " bytes");
    }
    budget_.charge(s.size());
    return s;
  }

  void emit(const std::string& text, const Position& at) {
    if (out_.size() + text.size() > jinja::kMaxRenderBytes) {
      fail(at, "the output grew past " + std::to_string(jinja::kMaxRenderBytes) + " bytes");
    }
    out_ += text;
  }

  std::string str(const Value& v, const Position& at) { return checked_size(jinja::to_str(v, &budget_), at); }
  // Code point offsets of s, charged to the budget (indexing, slicing and length scan s).
  std::vector<size_t> code_points(const std::string& s) {
    budget_.charge(s.size());
    return jinja::code_point_offsets(s);
  }

  void check_list_size(size_t items, const Position& at) const {
    if (items > jinja::kMaxListItems) fail(at, "a list grew past " + std::to_string(jinja::kMaxListItems) + " items");
  }

  void render(const Body& body) {
    for (const Node& node : body) {
      step(node.at);
      switch (node.kind) {
        case Node::Kind::kText: emit(node.text, node.at); break;
        case Node::Kind::kOutput: emit(str(eval(*node.expr), node.at), node.at); break;
        case Node::Kind::kIf:
          for (const jinja::Branch& branch : node.branches) {
            if (!branch.condition || jinja::truthy(eval(*branch.condition))) {
              render(branch.body);
              break;
            }
          }
          break;
        case Node::Kind::kFor: loop(node); break;
        case Node::Kind::kSet: set(node); break;
        case Node::Kind::kGeneration: render(node.body); break;
      }
    }
  }

  void loop(const Node& node) {
    const Value items = eval(*node.expr);
    List list;
    switch (items.type) {
      case Type::kList: list = *items.list; break;
      case Type::kMap:
        for (const auto& kv : *items.map) list.push_back(Value::of(kv.first));
        break;
      case Type::kString: {
        const std::vector<size_t> at = code_points(items.str());
        check_list_size(at.size() - 1, node.expr->at);
        for (size_t k = 0; k + 1 < at.size(); ++k) list.push_back(Value::of(items.str().substr(at[k], at[k + 1] - at[k])));
        break;
      }
      case Type::kUndefined: break;  // iterates as empty, as in jinja2
      default: fail(node.expr->at, std::string("'") + jinja::type_name(items) + "' object is not iterable");
    }
    const int64_t n = int64_t(list.size());
    for (int64_t i = 0; i < n; ++i) {
      step(node.at);
      Map info = {{"index", Value::of(i + 1)},         {"index0", Value::of(i)},
                  {"first", Value::of(i == 0)},        {"last", Value::of(i + 1 == n)},
                  {"length", Value::of(n)},            {"revindex", Value::of(n - i)},
                  {"revindex0", Value::of(n - i - 1)}};
      scopes_.push_back({{node.name, list[size_t(i)]}, {"loop", Value::of(std::move(info))}});
      render(node.body);
      scopes_.pop_back();
    }
  }

  void set(const Node& node) {
    Value value = eval(*node.expr);
    if (!node.attribute.empty()) {
      const Value target = lookup(node.name);
      if (!target.is(Type::kNamespace)) {
        fail(node.at, "cannot set '" + node.name + "." + node.attribute + "': '" + node.name + "' is of type " +
                          jinja::type_name(target) + ", not a namespace(...)");
      }
      // A namespace inside a namespace could hold itself: a cycle that printing would follow forever.
      if (holds_namespace(value)) {
        fail(node.at, "cannot set '" + node.name + "." + node.attribute + "' to a value holding a namespace(...)");
      }
      assign(*target.map, node.attribute, std::move(value));
      return;
    }
    assign(scopes_.back(), node.name, std::move(value));
  }

  bool holds_namespace(const Value& v) {
    budget_.charge(1);
    if (v.is(Type::kNamespace)) return true;
    if (v.is(Type::kList)) return std::any_of(v.list->begin(), v.list->end(), [&](const Value& x) { return holds_namespace(x); });
    if (v.is(Type::kMap)) return std::any_of(v.map->begin(), v.map->end(), [&](const auto& kv) { return holds_namespace(kv.second); });
    return false;
  }

  static void assign(Map& map, const std::string& key, Value value) {
    for (auto& kv : map) {
      if (kv.first == key) {
        kv.second = std::move(value);
        return;
      }
    }
    map.emplace_back(key, std::move(value));
  }

  Value lookup(const std::string& name) const {
    for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope) {
      for (const auto& kv : *scope) {
        if (kv.first == name) return kv.second;
      }
    }
    return undefined("'" + name + "' is undefined");
  }

  // Fails when v is Undefined: it cannot be indexed, called or computed with.
  const Value& defined(const Value& v, const Position& at) const {
    if (v.is(Type::kUndefined)) fail(at, v.str().empty() ? "a value is undefined" : v.str());
    return v;
  }

  Value eval(const Expr& e) {
    step(e.at);
    switch (e.kind) {
      case Expr::Kind::kLiteral: return e.value;
      case Expr::Kind::kName: return lookup(e.name);
      case Expr::Kind::kList: {
        List items;
        for (const auto& a : e.args) items.push_back(eval(*a));
        Value list = Value::of(std::move(items));
        // [x] in a loop nests one level per iteration; printing, == and freeing recurse that deep.
        if (list.depth > jinja::kMaxNestingDepth) {
          fail(e.at, "lists nest deeper than " + std::to_string(jinja::kMaxNestingDepth) + " levels");
        }
        return list;
      }
      case Expr::Kind::kAttribute: {
        const Value obj = eval(*e.args[0]);
        defined(obj, e.at);
        if (obj.is_map()) {
          Value v = jinja::map_get(*obj.map, e.name);
          if (v.is(Type::kUndefined)) v.set_text(std::string("'") + jinja::type_name(obj) + " object' has no attribute '" + e.name + "'");
          return v;
        }
        return undefined(std::string("'") + jinja::type_name(obj) + " object' has no attribute '" + e.name + "'");
      }
      case Expr::Kind::kItem: return item(eval(*e.args[0]), eval(*e.args[1]), e.at);
      case Expr::Kind::kSlice: return slice(e);
      case Expr::Kind::kNot: return Value::of(!jinja::truthy(eval(*e.args[0])));
      case Expr::Kind::kNegate: {
        const Value v = eval(*e.args[0]);
        defined(v, e.at);
        if (!is_numeric(v)) fail(e.at, std::string("bad operand type for unary -: '") + jinja::type_name(v) + "'");
        if (as_int(v) == INT64_MIN) fail(e.at, "integer overflow in unary -");
        return Value::of(-as_int(v));
      }
      case Expr::Kind::kBinary: return binary(e);
      case Expr::Kind::kAnd: {
        Value a = eval(*e.args[0]);
        return jinja::truthy(a) ? eval(*e.args[1]) : a;
      }
      case Expr::Kind::kOr: {
        Value a = eval(*e.args[0]);
        return jinja::truthy(a) ? a : eval(*e.args[1]);
      }
      case Expr::Kind::kCondition:
        if (jinja::truthy(eval(*e.args[1]))) return eval(*e.args[0]);
        return e.args[2] ? eval(*e.args[2]) : undefined("the condition of an `a if c` without else was false");
      case Expr::Kind::kFilter: return filter(e);
      case Expr::Kind::kTest: return Value::of(test(e.name, eval(*e.args[0]), e.at) != e.negated);
      case Expr::Kind::kCall: return call(e);
      case Expr::Kind::kMethod: return method(e);
    }
    fail(e.at, "unknown expression");
  }

  Value item(const Value& obj, const Value& key, const Position& at) {
    defined(obj, at);
    if (obj.is(Type::kList) && is_numeric(key)) {  // Python: xs[True] is xs[1]
      const int64_t n = int64_t(obj.list->size());
      const int64_t i = as_int(key) < 0 ? as_int(key) + n : as_int(key);
      if (i >= 0 && i < n) return (*obj.list)[size_t(i)];
      return undefined("list index " + std::to_string(as_int(key)) + " is out of range (the list has " +
                       std::to_string(n) + " items)");
    }
    if (obj.is(Type::kString) && is_numeric(key)) {
      const std::vector<size_t> offsets = code_points(obj.str());
      const int64_t n = int64_t(offsets.size()) - 1;
      const int64_t i = as_int(key) < 0 ? as_int(key) + n : as_int(key);
      if (i >= 0 && i < n) return Value::of(obj.str().substr(offsets[size_t(i)], offsets[size_t(i) + 1] - offsets[size_t(i)]));
      return undefined("string index " + std::to_string(as_int(key)) + " is out of range");
    }
    if (obj.is_map() && key.is(Type::kString)) {
      Value v = jinja::map_get(*obj.map, key.str());
      if (v.is(Type::kUndefined)) v.set_text(std::string("'") + jinja::type_name(obj) + " object' has no key '" + key.str() + "'");
      return v;
    }
    return undefined(std::string("'") + jinja::type_name(obj) + " object' has no item of type " + jinja::type_name(key));
  }

  // Python slicing of a list or a string (by code points): obj[start:stop:step].
  Value slice(const Expr& e) {
    const Value obj = eval(*e.args[0]);
    defined(obj, e.at);
    // jinja2 compiles a slice to a plain Python subscript: its TypeError or ValueError is an
    // error (x[i] without a colon goes through jinja2's getitem instead, undefined on failure).
    // NOTE: jinja2 folds constant expressions, where a failed slice becomes undefined instead;
    // templates slice variables, so this follows the runtime behaviour.
    if (!obj.is(Type::kList) && !obj.is(Type::kString)) {
      fail(e.at, std::string("'") + jinja::type_name(obj) + "' object is not subscriptable");
    }
    int64_t bound[3] = {0, 0, 1};
    bool given[3] = {false, false, false};
    for (int k = 0; k < 3; ++k) {
      if (!e.args[k + 1]) continue;
      const Value v = eval(*e.args[k + 1]);
      if (v.is(Type::kNone)) continue;
      if (!is_numeric(v)) fail(e.at, std::string("slice indices must be integers or none, not ") + jinja::type_name(v));
      bound[k] = as_int(v);
      given[k] = true;
    }
    if (bound[2] == 0) fail(e.at, "slice step cannot be zero");
    const std::vector<size_t> offsets =
        obj.is(Type::kString) ? code_points(obj.str()) : std::vector<size_t>{};
    const int64_t n = obj.is(Type::kList) ? int64_t(obj.list->size()) : int64_t(offsets.size()) - 1;
    const int64_t step = bound[2];
    // Python's PySlice_AdjustIndices.
    const auto adjust = [&](int64_t v, bool is_given, int64_t if_absent) {
      if (!is_given) return if_absent;
      if (v < 0) {
        v += n;
        if (v < 0) v = step < 0 ? -1 : 0;
      } else if (v >= n) {
        v = step < 0 ? n - 1 : n;
      }
      return v;
    };
    const int64_t start = adjust(bound[0], given[0], step < 0 ? n - 1 : 0);
    const int64_t stop = adjust(bound[1], given[1], step < 0 ? -1 : n);
    // Python's slice length, computed in uint64 so a huge step cannot overflow.
    const uint64_t stride = step > 0 ? uint64_t(step) : uint64_t(0) - uint64_t(step);
    const uint64_t span = step > 0 ? (start < stop ? uint64_t(stop - start) : 0) : (stop < start ? uint64_t(start - stop) : 0);
    const uint64_t count = span == 0 ? 0 : (span - 1) / stride + 1;
    List items;
    std::string text;
    for (uint64_t k = 0; k < count; ++k) {
      const size_t i = size_t(step > 0 ? start + int64_t(k * stride) : start - int64_t(k * stride));
      if (obj.is(Type::kList)) items.push_back((*obj.list)[i]);
      else text.append(obj.str(), offsets[i], offsets[i + 1] - offsets[i]);
    }
    return obj.is(Type::kList) ? Value::of(std::move(items)) : Value::of(std::move(text));
  }

  [[noreturn]] void bad_operands(const Expr& e, const Value& a, const Value& b) const {
    fail(e.at, "unsupported operand types for " + e.name + ": '" + jinja::type_name(a) + "' and '" +
                   jinja::type_name(b) + "'");
  }

  Value binary(const Expr& e) {
    const Value a = eval(*e.args[0]);
    const Value b = eval(*e.args[1]);
    const std::string& op = e.name;
    if (op == "~") return Value::of(checked_size(str(a, e.at) + str(b, e.at), e.at));
    if (op == "==") return Value::of(jinja::equal(a, b, &budget_));
    if (op == "!=") return Value::of(!jinja::equal(a, b, &budget_));
    if (op == "in" || op == "not in") return Value::of(contains(b, a, e) == (op == "in"));
    defined(a, e.at);
    defined(b, e.at);
    if (op == "<" || op == ">" || op == "<=" || op == ">=") {
      const int order = compare(a, b, e);
      if (op == "<") return Value::of(order < 0);
      if (op == ">") return Value::of(order > 0);
      if (op == "<=") return Value::of(order <= 0);
      return Value::of(order >= 0);
    }
    if (is_numeric(a) && is_numeric(b)) {
      int64_t r = 0;
      const int64_t x = as_int(a), y = as_int(b);
      bool overflow = false;
      if (op == "+") overflow = __builtin_add_overflow(x, y, &r);
      else if (op == "-") overflow = __builtin_sub_overflow(x, y, &r);
      else if (op == "*") overflow = __builtin_mul_overflow(x, y, &r);
      else if (op == "%") {
        if (y == 0) fail(e.at, "integer modulo by zero");
        r = (x == INT64_MIN && y == -1) ? 0 : x % y;
        if (r != 0 && ((r < 0) != (y < 0))) r += y;  // Python: the result has the divisor's sign
      }
      if (overflow) fail(e.at, "integer overflow in " + op);
      return Value::of(r);
    }
    if (op == "+" && a.is(Type::kString) && b.is(Type::kString)) return Value::of(checked_size(a.str() + b.str(), e.at));
    if (op == "+" && a.is(Type::kList) && b.is(Type::kList)) {
      check_list_size(a.list->size() + b.list->size(), e.at);
      budget_.charge(a.list->size() + b.list->size());
      List items = *a.list;
      items.insert(items.end(), b.list->begin(), b.list->end());
      return Value::of(std::move(items));
    }
    if (op == "*" && (a.is(Type::kList) || b.is(Type::kList)) && (is_numeric(a) || is_numeric(b))) {
      const List& items = a.is(Type::kList) ? *a.list : *b.list;
      const int64_t times = std::max<int64_t>(0, as_int(a.is(Type::kList) ? b : a));
      if (times > 0) check_list_size(items.size() > jinja::kMaxListItems / uint64_t(times) ? jinja::kMaxListItems + 1 : items.size() * uint64_t(times), e.at);
      List out;
      for (int64_t k = 0; k < times; ++k) out.insert(out.end(), items.begin(), items.end());
      budget_.charge(out.size());
      return Value::of(std::move(out));
    }
    if (op == "%" && a.is(Type::kString)) fail(e.at, "printf-style string formatting ('...' % x) is not supported");
    if (op == "*" && (a.is(Type::kString) || b.is(Type::kString)) && (is_numeric(a) || is_numeric(b))) {
      const std::string& s = a.is(Type::kString) ? a.str() : b.str();
      const int64_t times = std::max<int64_t>(0, as_int(a.is(Type::kString) ? b : a));
      if (times > 0 && s.size() > jinja::kMaxRenderBytes / uint64_t(times)) fail(e.at, "a string grew past the limit");
      std::string out;
      for (int64_t k = 0; k < times; ++k) out += s;
      return Value::of(checked_size(std::move(out), e.at));
    }
    bad_operands(e, a, b);
  }

  // Python's ordering of two values: numbers, strings, and lists element by element; -1, 0 or 1.
  int compare(const Value& a, const Value& b, const Expr& e) {
    defined(a, e.at);
    defined(b, e.at);
    if (is_numeric(a) && is_numeric(b)) return as_int(a) < as_int(b) ? -1 : as_int(a) > as_int(b) ? 1 : 0;
    if (a.is(Type::kString) && b.is(Type::kString)) {
      budget_.charge(std::min(a.str().size(), b.str().size()));
      const int c = a.str().compare(b.str());  // UTF-8 byte order is code point order
      return c < 0 ? -1 : c > 0 ? 1 : 0;
    }
    if (a.is(Type::kList) && b.is(Type::kList)) {
      for (size_t i = 0; i < a.list->size() && i < b.list->size(); ++i) {
        budget_.charge(1);
        if (jinja::equal((*a.list)[i], (*b.list)[i], &budget_)) continue;
        return compare((*a.list)[i], (*b.list)[i], e);
      }
      return a.list->size() < b.list->size() ? -1 : a.list->size() > b.list->size() ? 1 : 0;
    }
    fail(e.at, "'" + e.name + "' is not supported between '" + jinja::type_name(a) + "' and '" + jinja::type_name(b) + "'");
  }

  bool contains(const Value& container, const Value& x, const Expr& e) {
    switch (container.type) {
      case Type::kUndefined: return false;  // iterates as empty
      case Type::kString:
        if (!x.is(Type::kString)) fail(e.at, std::string("'in <string>' requires a string on the left, not ") + jinja::type_name(x));
        budget_.charge(container.str().size());
        return container.str().find(x.str()) != std::string::npos;
      case Type::kList:
        return std::any_of(container.list->begin(), container.list->end(), [&](const Value& v) { return jinja::equal(v, x, &budget_); });
      case Type::kMap:
        if (x.is(Type::kList) || x.is_map()) fail(e.at, std::string("unhashable type: '") + jinja::type_name(x) + "'");
        return x.is(Type::kString) && !jinja::map_get(*container.map, x.str()).is(Type::kUndefined);
      default: fail(e.at, std::string("argument of type '") + jinja::type_name(container) + "' is not iterable");
    }
  }

  Value filter(const Expr& e) {
    const Value v = eval(*e.args[0]);
    const std::string& f = e.name;
    const Value arg = e.args.size() > 1 ? eval(*e.args[1]) : Value::none();
    if (f == "trim") {
      if (!arg.is(Type::kNone) && !arg.is(Type::kString)) fail(e.at, "trim's argument must be a string");
      const std::string text = str(v, e.at);
      budget_.charge(text.size());
      return Value::of(jinja::python_strip(text, jinja::StripSide::kBoth, arg));
    }
    if (f == "length" || f == "count") {
      switch (v.type) {
        case Type::kUndefined: return Value::of(int64_t(0));
        case Type::kString: return Value::of(int64_t(code_points(v.str()).size() - 1));
        case Type::kList: return Value::of(int64_t(v.list->size()));
        case Type::kMap: return Value::of(int64_t(v.map->size()));
        default: fail(e.at, std::string("object of type '") + jinja::type_name(v) + "' has no length");
      }
    }
    if (f == "tojson") {
      if (v.is(Type::kUndefined) || v.is(Type::kNamespace)) {
        fail(e.at, std::string("tojson: a value of type ") + jinja::type_name(v) + " is not JSON serializable");
      }
      return Value::of(checked_size(jinja::to_json(v, &budget_), e.at));
    }
    if (f == "string") return Value::of(str(v, e.at));
    if (f == "default" || f == "d") return v.is(Type::kUndefined) ? (e.args.size() > 1 ? arg : Value::of(std::string())) : v;
    if (f == "first" || f == "last") {
      List items = as_list(v, e);
      if (items.empty()) return undefined("no " + f + " item: the sequence is empty");
      return f == "first" ? items.front() : items.back();
    }
    if (f == "join") {
      const std::string separator = e.args.size() > 1 ? str(arg, e.at) : "";
      std::string out;
      const List items = as_list(v, e);
      for (size_t k = 0; k < items.size(); ++k) {
        out += (k ? separator : "") + str(items[k], e.at);
        if (out.size() > jinja::kMaxRenderBytes) fail(e.at, "a string grew past the limit");
      }
      return Value::of(checked_size(std::move(out), e.at));
    }
    fail(e.at, "unknown filter '" + f + "'");
  }

  // The items a filter sees when it iterates v (a string's code points, a dict's keys).
  List as_list(const Value& v, const Expr& e) {
    switch (v.type) {
      case Type::kUndefined: return {};
      case Type::kList: return *v.list;
      case Type::kMap: {
        List keys;
        for (const auto& kv : *v.map) keys.push_back(Value::of(kv.first));
        return keys;
      }
      case Type::kString: {
        List chars;
        const std::vector<size_t> at = code_points(v.str());
        check_list_size(at.size() - 1, e.at);
        for (size_t k = 0; k + 1 < at.size(); ++k) chars.push_back(Value::of(v.str().substr(at[k], at[k + 1] - at[k])));
        return chars;
      }
      default: fail(e.at, std::string("'") + jinja::type_name(v) + "' object is not iterable");
    }
  }

  bool test(const std::string& t, const Value& v, const Position& at) const {
    if (t == "defined") return !v.is(Type::kUndefined);
    if (t == "undefined") return v.is(Type::kUndefined);
    if (t == "none") return v.is(Type::kNone);
    if (t == "string") return v.is(Type::kString);
    if (t == "number") return is_numeric(v);
    if (t == "integer") return v.is(Type::kInt);
    if (t == "mapping") return v.is(Type::kMap);
    // jinja2: anything with len() and [] — an undefined value too.
    if (t == "sequence") return v.is(Type::kString) || v.is(Type::kList) || v.is(Type::kMap) || v.is(Type::kUndefined);
    if (t == "iterable") return v.is(Type::kString) || v.is(Type::kList) || v.is(Type::kMap) || v.is(Type::kUndefined);
    if (t == "boolean") return v.is(Type::kBool);
    if (t == "true") return v.is(Type::kBool) && v.boolean;
    if (t == "false") return v.is(Type::kBool) && !v.boolean;
    if (t == "even" || t == "odd") {
      defined(v, at);
      if (!is_numeric(v)) fail(at, std::string("'is ") + t + "' needs a number, not " + jinja::type_name(v));
      return (as_int(v) % 2 == 0) == (t == "even");
    }
    fail(at, "unknown test '" + t + "'");
  }

  Value call(const Expr& e) {
    if (e.name == "raise_exception") {
      const std::string message = str(eval(*e.args[0]), e.at);
      FARTHING_FAIL("chat template ", source_, " raised an error at line ", e.at.line, " column ", e.at.column, ": ",
                    message);
    }
    Map attributes;  // namespace(key=value, ...)
    for (size_t k = 0; k < e.args.size(); ++k) assign(attributes, e.keys[k], eval(*e.args[k]));
    return Value::of(std::move(attributes), Type::kNamespace);
  }

  Value method(const Expr& e) {
    const Value obj = eval(*e.args[0]);
    defined(obj, e.at);
    List args;
    for (size_t k = 1; k < e.args.size(); ++k) args.push_back(eval(*e.args[k]));
    const std::string& m = e.name;
    if (m == "get" && obj.is(Type::kMap)) {  // a dict's; namespace(...) has none
      if (!args[0].is(Type::kString)) return args.size() > 1 ? args[1] : Value::none();
      const Value v = jinja::map_get(*obj.map, args[0].str());
      return v.is(Type::kUndefined) ? (args.size() > 1 ? args[1] : Value::none()) : v;
    }
    if (!obj.is(Type::kString)) {
      fail(e.at, std::string("'") + jinja::type_name(obj) + "' object has no method '" + m + "'");
    }
    const std::string& s = obj.str();
    const auto string_arg = [&](size_t k) -> const std::string& {
      if (!args[k].is(Type::kString)) {
        fail(e.at, "." + m + "() needs a string argument, not " + jinja::type_name(args[k]));
      }
      return args[k].str();
    };
    if (m == "strip" || m == "lstrip" || m == "rstrip") {
      const Value chars = args.empty() ? Value::none() : args[0];
      if (!chars.is(Type::kNone) && !chars.is(Type::kString)) fail(e.at, "." + m + "() needs a string or none");
      const auto side = m == "strip" ? jinja::StripSide::kBoth : m == "lstrip" ? jinja::StripSide::kLeft : jinja::StripSide::kRight;
      budget_.charge(s.size());
      return Value::of(jinja::python_strip(s, side, chars));
    }
    if (m == "startswith") return Value::of(s.compare(0, string_arg(0).size(), string_arg(0)) == 0);
    if (m == "endswith") {
      const std::string& x = string_arg(0);
      return Value::of(s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0);
    }
    budget_.charge(s.size());
    if (m == "split") return split(s, args.empty() || args[0].is(Type::kNone) ? nullptr : &string_arg(0), e.at);
    if (m == "replace") return replace(s, string_arg(0), string_arg(1), e.at);
    fail(e.at, "'str' object has no method '" + m + "'");
  }

  // Python str.split(sep), or str.split() on runs of whitespace when sep is null.
  Value split(const std::string& s, const std::string* sep, const Position& at) {
    List parts;
    if (sep) {
      if (sep->empty()) fail(at, ".split() got an empty separator");
      size_t from = 0;
      for (size_t hit; (hit = s.find(*sep, from)) != std::string::npos; from = hit + sep->size()) {
        parts.push_back(Value::of(s.substr(from, hit - from)));
        check_list_size(parts.size(), at);
      }
      parts.push_back(Value::of(s.substr(from)));
      return Value::of(std::move(parts));
    }
    const std::vector<size_t> offsets = code_points(s);
    std::string word;
    for (size_t k = 0; k + 1 < offsets.size(); ++k) {
      if (jinja::is_python_space(jinja::code_point_at(s, offsets[k]))) {
        if (!word.empty()) parts.push_back(Value::of(std::move(word)));
        check_list_size(parts.size(), at);
        word.clear();
      } else {
        word.append(s, offsets[k], offsets[k + 1] - offsets[k]);
      }
    }
    if (!word.empty()) parts.push_back(Value::of(std::move(word)));
    return Value::of(std::move(parts));
  }

  // Python str.replace(old, new): an empty old inserts new around every code point.
  Value replace(const std::string& s, const std::string& old, const std::string& with, const Position& at) {
    std::string out;
    if (old.empty()) {
      const std::vector<size_t> offsets = code_points(s);
      out = with;
      for (size_t k = 0; k + 1 < offsets.size(); ++k) {
        out.append(s, offsets[k], offsets[k + 1] - offsets[k]);
        out += with;
        if (out.size() > jinja::kMaxRenderBytes) fail(at, "a string grew past the limit");
      }
      return Value::of(checked_size(std::move(out), at));
    }
    size_t from = 0;
    for (size_t hit; (hit = s.find(old, from)) != std::string::npos; from = hit + old.size()) {
      out.append(s, from, hit - from);
      out += with;
      if (out.size() > jinja::kMaxRenderBytes) fail(at, "a string grew past the limit");
    }
    out.append(s, from, std::string::npos);
    return Value::of(checked_size(std::move(out), at));
  }

  const std::string& source_;
  std::vector<Map> scopes_;  // [0]: the template's globals and top-level sets; one per loop iteration after
  std::string out_;
  int64_t steps_ = 0;
  jinja::WorkBudget budget_;
};

}  // namespace

JinjaTemplate::JinjaTemplate(std::string_view text, std::string source)
    : source_(std::move(source)),
      body_(std::make_shared<const std::vector<jinja::Node>>(jinja::parse_template(text, source_))) {}

std::string JinjaTemplate::render(std::span<const ChatMessage> messages, bool add_generation_prompt,
                                  const std::string& bos_token, const std::string& eos_token) const {
  List list;
  for (const ChatMessage& m : messages) {
    list.push_back(Value::of(Map{{"role", Value::of(m.role)}, {"content", Value::of(m.content)}}));
  }
  Map globals = {{"messages", Value::of(std::move(list))},
                 {"bos_token", Value::of(bos_token)},
                 {"eos_token", Value::of(eos_token)},
                 {"add_generation_prompt", Value::of(add_generation_prompt)},
                 {"tools", Value::none()},
                 {"documents", Value::none()}};
  return Renderer(source_, std::move(globals)).run(*body_);
}

}  // namespace farthing::data
