// recipe_scalar.cpp — see recipe_scalar.h.
#include "train/recipe/recipe_scalar.h"

#include <charconv>
#include <cstdio>
#include <limits>

#include "framework/core/error.h"
#include "train/recipe/closest_name.h"

namespace farthing::recipe {

namespace {

const char* node_kind(const YAML::Node& node) {
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a map";
  return "not a single value";
}

// from_chars over the whole text; a leading '+' is allowed because YAML allows it.
template <class T>
bool parse_whole(const std::string& text, T& out) {
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  if (begin != end && *begin == '+') ++begin;
  if (begin == end) return false;
  const auto [stop, error] = std::from_chars(begin, end, out);
  return error == std::errc() && stop == end;
}

struct Reader {
  const RecipeKey& key;
  const YAML::Node& value;
  const std::string& location;

  [[noreturn]] void fail(const std::string& got, const char* expected) const {
    FARTHING_FAIL(key.path(), " at ", location, " is ", got, ", expected ", expected);
  }
  std::string text(const char* expected) const {
    if (value.IsNull()) fail("empty", expected);
    if (!value.IsScalar()) fail(node_kind(value), expected);
    return value.Scalar();
  }
  std::string quoted(const std::string& s) const { return "'" + s + "'"; }

  void operator()(std::string* field) const {
    if (value.IsNull()) {
      *field = "";
      return;
    }
    *field = text("a single value (a string)");
  }
  void operator()(double* field) const {
    const std::string s = text("a number");
    if (!parse_whole(s, *field)) fail(quoted(s), "a number");
  }
  void operator()(int64_t* field) const {
    const std::string s = text("a whole number");
    if (!parse_whole(s, *field)) fail(quoted(s), "a whole number");
  }
  void operator()(int* field) const {
    const std::string s = text("a whole number");
    if (!parse_whole(s, *field)) fail(quoted(s), "a whole number (at most 2147483647)");
  }
  void operator()(uint64_t* field) const {
    const std::string s = text("a whole number >= 0");
    if (!parse_whole(s, *field)) fail(quoted(s), "a whole number >= 0 (at most 18446744073709551615)");
  }
  void operator()(bool* field) const {
    const std::string s = text("true or false");
    if (!YAML::convert<bool>::decode(value, *field)) fail(quoted(s), "true or false");
  }
  // An enum is parsed here, once: a name of its table, else "expected a|b|c" and the nearest
  // name. An empty value is the name '' (refused like any unknown one).
  void operator()(const EnumRef& field) const {
    const std::string s = value.IsNull() ? std::string() : text("a single value (a string)");
    if (field.set(s)) return;
    const std::vector<std::string> names = field.names();
    if (key.path() == "train.precision" && (s == "fp8_e4m3" || s == "fp8_e5m2")) {
      FARTHING_FAIL(key.path(), " at ", location, " is '", s, "', expected ", join_names(names, "|"),
                    "; with fp8, the format of each tensor role is set in the fp8 section (fp8.input, "
                    "fp8.weight, fp8.grad_output)");
    }
    FARTHING_FAIL(key.path(), " at ", location, " is '", s, "', expected ", join_names(names, "|"),
                  did_you_mean(s, names));
  }
};

// Plain (unquoted) when YAML reads the text back unchanged as a scalar: names, numbers-like
// words and relative paths such as `8bit` or `models/SmolLM2-135M`. The reader keeps any
// scalar's text for a string field, so `yes` or `1e-5` stay strings; only YAML's null
// spellings would read back as "" and must be quoted.
bool plain_is_safe(const std::string& s) {
  if (s.empty() || s == "null" || s == "Null" || s == "NULL" || s.front() == '-') return false;
  for (const char ch : s) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
                    ch == '.' || ch == '/' || ch == '-' || ch == '+';
    if (!ok) return false;
  }
  return true;
}

std::string double_quoted(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto byte = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (byte < 0x20 || byte == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
      out += escaped;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

}  // namespace

void set_field_from_yaml(const RecipeKey& key, const YAML::Node& value, const std::string& location,
                         RunConfig& config) {
  std::visit(Reader{key, value, location}, key.field(config));
}

std::string number_text(double value) {
  char buffer[64];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
  FARTHING_CHECK(error == std::errc(), "could not format the number ", value);
  return std::string(buffer, end);
}

std::string field_to_yaml(const RecipeKey& key, const RunConfig& config) {
  // The accessor only takes the field's address (it is shared with the parser, which writes);
  // nothing is written through it here.
  RunConfig& readable = const_cast<RunConfig&>(config);
  struct Writer {
    std::string operator()(std::string* f) const { return (*this)(*f); }
    std::string operator()(double* f) const { return number_text(*f); }
    std::string operator()(int64_t* f) const { return std::to_string(*f); }
    std::string operator()(int* f) const { return std::to_string(*f); }
    std::string operator()(uint64_t* f) const { return std::to_string(*f); }
    std::string operator()(bool* f) const { return *f ? "true" : "false"; }
    std::string operator()(const EnumRef& f) const { return (*this)(std::string(f.name())); }
    std::string operator()(const std::string& s) const { return plain_is_safe(s) ? s : double_quoted(s); }
  };
  return std::visit(Writer{}, key.field(readable));
}

}  // namespace farthing::recipe
