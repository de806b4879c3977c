// jinja_value.cpp — see jinja_value.h.
#include "framework/data/jinja_value.h"

#include <algorithm>
#include <cstdio>

#include "framework/core/error.h"
#include "framework/data/utf8.h"

namespace farthing::data::jinja {

namespace {

// Python's str.isprintable for the code points text holds in practice: controls, the
// separators other than ' ' and the common format characters are not printable. (Other
// unassigned or private-use code points print as themselves here but as escapes in Python.)
bool is_python_printable(uint32_t cp) {
  if (cp < 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0xAD || cp == 0x1680) return false;
  if ((cp >= 0x2000 && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202F) || (cp >= 0x205F && cp <= 0x206F)) return false;
  if (cp == 0x3000 || cp == 0xFEFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
  return true;
}

std::string hex_escape(uint32_t cp) {
  char buf[16];
  if (cp < 0x100) std::snprintf(buf, sizeof buf, "\\x%02x", cp);
  else if (cp < 0x10000) std::snprintf(buf, sizeof buf, "\\u%04x", cp);
  else std::snprintf(buf, sizeof buf, "\\U%08x", cp);
  return buf;
}

// Python repr(str): single quotes unless the text has ' and no ".
std::string repr_string(std::string_view s) {
  const bool dq = s.find('\'') != std::string_view::npos && s.find('"') == std::string_view::npos;
  const char quote = dq ? '"' : '\'';
  std::string out(1, quote);
  for (size_t i = 0; i < s.size();) {
    const size_t len = utf8_char_len(s, i);
    const uint32_t cp = code_point_at(s, i);
    if (cp == '\\' || cp == uint32_t(quote)) out += '\\', out += char(cp);
    else if (cp == '\n') out += "\\n";
    else if (cp == '\r') out += "\\r";
    else if (cp == '\t') out += "\\t";
    else if (cp != 0xFFFFFFFFu && !is_python_printable(cp)) out += hex_escape(cp);
    else out.append(s.substr(i, len));
    i += len;
  }
  return out + quote;
}

std::string repr(const Value& v, WorkBudget* budget) {
  if (v.is(Value::Type::kString)) {
    if (budget) budget->charge(v.str().size());
    return repr_string(v.str());
  }
  return v.is(Value::Type::kUndefined) ? "Undefined" : to_str(v, budget);
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (uint8_t(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(uint8_t(c)));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace

void WorkBudget::charge(size_t bytes) {
  used += bytes;
  FARTHING_CHECK(used <= limit, "chat template ", source, ": rendering did more than ", limit,
                 " bytes of string work (a runaway loop?)");
}

const char* type_name(const Value& v) {
  switch (v.type) {
    case Value::Type::kUndefined: return "undefined";
    case Value::Type::kNone: return "NoneType";
    case Value::Type::kBool: return "bool";
    case Value::Type::kInt: return "int";
    case Value::Type::kString: return "str";
    case Value::Type::kList: return "list";
    case Value::Type::kMap: return "dict";
    case Value::Type::kNamespace: return "namespace";
  }
  return "?";
}

bool truthy(const Value& v) {
  switch (v.type) {
    case Value::Type::kUndefined:
    case Value::Type::kNone: return false;
    case Value::Type::kBool: return v.boolean;
    case Value::Type::kInt: return v.integer != 0;
    case Value::Type::kString: return !v.str().empty();
    case Value::Type::kList: return !v.list->empty();
    case Value::Type::kMap: return !v.map->empty();
    case Value::Type::kNamespace: return true;
  }
  return false;
}

std::string to_str(const Value& v, WorkBudget* budget) {
  switch (v.type) {
    case Value::Type::kUndefined: return "";
    case Value::Type::kNone: return "None";
    case Value::Type::kBool: return v.boolean ? "True" : "False";
    case Value::Type::kInt: return std::to_string(v.integer);
    case Value::Type::kString: return v.str();
    case Value::Type::kList: {
      std::string out = "[";
      for (size_t i = 0; i < v.list->size(); ++i) {
        out += (i ? ", " : "") + repr((*v.list)[i], budget);
        if (budget) budget->charge(2);
      }
      return out + "]";
    }
    case Value::Type::kMap:
    case Value::Type::kNamespace: {
      std::string out = v.is(Value::Type::kNamespace) ? "<Namespace {" : "{";
      for (size_t i = 0; i < v.map->size(); ++i) {
        out += (i ? ", " : "") + repr_string((*v.map)[i].first) + ": " + repr((*v.map)[i].second, budget);
        if (budget) budget->charge(4 + (*v.map)[i].first.size());
      }
      return out + (v.is(Value::Type::kNamespace) ? "}>" : "}");
    }
  }
  return "";
}

bool equal(const Value& a, const Value& b, WorkBudget* budget) {
  using T = Value::Type;
  const auto numeric = [](const Value& v) { return v.is(T::kInt) || v.is(T::kBool); };
  if (numeric(a) && numeric(b)) {
    return (a.is(T::kInt) ? a.integer : int64_t(a.boolean)) == (b.is(T::kInt) ? b.integer : int64_t(b.boolean));
  }
  if (a.type != b.type) return false;
  switch (a.type) {
    case T::kUndefined:
    case T::kNone: return true;
    case T::kString:
      if (a.text == b.text) return true;
      if (budget) budget->charge(std::min(a.str().size(), b.str().size()));
      return a.str() == b.str();
    case T::kList:
      if (a.list->size() != b.list->size()) return false;
      for (size_t i = 0; i < a.list->size(); ++i) {
        if (budget) budget->charge(1);
        if (!equal((*a.list)[i], (*b.list)[i], budget)) return false;
      }
      return true;
    case T::kMap:
      if (a.map->size() != b.map->size()) return false;
      for (const auto& entry : *a.map) {
        const auto it = std::find_if(b.map->begin(), b.map->end(), [&](const auto& kv) { return kv.first == entry.first; });
        if (budget) budget->charge(1 + entry.first.size());
        if (it == b.map->end() || !equal(entry.second, it->second, budget)) return false;
      }
      return true;
    case T::kNamespace: return a.map == b.map;
    default: return false;
  }
}

std::string to_json(const Value& v, WorkBudget* budget) {
  switch (v.type) {
    case Value::Type::kNone: return "null";
    case Value::Type::kBool: return v.boolean ? "true" : "false";
    case Value::Type::kInt: return std::to_string(v.integer);
    case Value::Type::kString:
      if (budget) budget->charge(v.str().size());
      return json_string(v.str());
    case Value::Type::kList: {
      std::string out = "[";
      for (size_t i = 0; i < v.list->size(); ++i) {
        out += (i ? ", " : "") + to_json((*v.list)[i], budget);
        if (budget) budget->charge(2);
      }
      return out + "]";
    }
    case Value::Type::kMap: {
      std::string out = "{";
      for (size_t i = 0; i < v.map->size(); ++i) {
        out += (i ? ", " : "") + json_string((*v.map)[i].first) + ": " + to_json((*v.map)[i].second, budget);
        if (budget) budget->charge(4 + (*v.map)[i].first.size());
      }
      return out + "}";
    }
    default: FARTHING_FAIL("tojson: a value of type ", type_name(v), " is not JSON serializable");
  }
}

uint32_t code_point_at(std::string_view s, size_t pos) {
  const auto b = [&](size_t k) { return uint32_t(uint8_t(s[pos + k])); };
  switch (utf8_char_len(s, pos)) {
    case 2: return ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
    case 3: return ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
    case 4: return ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
    default: return b(0) < 0x80 ? b(0) : 0xFFFFFFFFu;
  }
}

Value map_get(const Map& map, std::string_view key) {
  for (const auto& [k, v] : map) {
    if (k == key) return v;
  }
  return Value{};
}

bool is_python_space(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

std::vector<size_t> code_point_offsets(std::string_view s) {
  std::vector<size_t> offsets;
  for (size_t i = 0; i < s.size(); i += utf8_char_len(s, i)) offsets.push_back(i);
  offsets.push_back(s.size());
  return offsets;
}

std::string python_strip(std::string_view s, StripSide side, const Value& chars) {
  const std::vector<size_t> at = code_point_offsets(s);
  const std::vector<size_t> set = chars.is(Value::Type::kString) ? code_point_offsets(chars.str()) : std::vector<size_t>{};
  const auto strippable = [&](size_t k) {
    const std::string_view c = s.substr(at[k], at[k + 1] - at[k]);
    if (!chars.is(Value::Type::kString)) return is_python_space(code_point_at(s, at[k]));
    for (size_t j = 0; j + 1 < set.size(); ++j) {
      if (std::string_view(chars.str()).substr(set[j], set[j + 1] - set[j]) == c) return true;
    }
    return false;
  };
  size_t begin = 0, end = at.size() - 1;  // code point indices
  if (side != StripSide::kRight) while (begin < end && strippable(begin)) ++begin;
  if (side != StripSide::kLeft) while (end > begin && strippable(end - 1)) --end;
  return std::string(s.substr(at[begin], at[end] - at[begin]));
}

}  // namespace farthing::data::jinja
