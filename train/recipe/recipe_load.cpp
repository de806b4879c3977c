// recipe_load.cpp — YAML text (and --set overrides) to a validated RunConfig: load_recipe and
// parse_recipe_text of recipe.h.
//
// Three passes, so that every error can say where it came from: collect (section, key, value,
// "file:line:column") entries from the YAML tree, rejecting unknown or repeated keys; append
// the overrides as entries located at their --set text (the last entry for a key wins, so an
// override may replace a badly typed YAML value); convert each surviving entry into its field.
// Then validate_run_config() checks values and combinations, reading the recorded locations.
// Relies on: yaml-cpp, recipe_keys.h, recipe_scalar.h, closest_name.h.
// Tested by: tests/train/recipe/test_recipe_errors.cpp, test_recipe_overrides.cpp.
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <variant>

#include "framework/core/error.h"
#include "train/recipe/closest_name.h"
#include "train/recipe/recipe.h"
#include "train/recipe/recipe_keys.h"
#include "train/recipe/recipe_scalar.h"

namespace farthing::recipe {

namespace {

// One key's value and where it was given.
struct Entry {
  const RecipeKey* key;
  YAML::Node value;
  std::string location;  // "recipe.yaml:7:7" or "--set optimizer.lr=3e-4"
};

// yaml-cpp counts lines and columns from 0; editors and compilers count from 1.
std::string mark_text(const std::string& source, const YAML::Mark& mark) {
  if (mark.is_null()) return source;
  return source + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

// A null value (`key:` with nothing after it) is marked at the next token, often on the next
// line; point at its key instead.
std::string value_location(const std::string& source, const YAML::Node& key, const YAML::Node& value) {
  return mark_text(source, value.IsNull() || value.Mark().is_null() ? key.Mark() : value.Mark());
}

const char* yaml_kind(const YAML::Node& node) {
  if (node.IsMap()) return "a map";
  if (node.IsSequence()) return "a list";
  if (node.IsScalar()) return "a single value";
  return "empty";
}

YAML::Node parse_yaml(const std::string& text, const std::string& source) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    FARTHING_FAIL(mark_text(source, e.mark), ": malformed YAML: ", e.msg,
                  " (check the indentation and the `key: value` syntax at that line)");
  }
}

std::string key_text(const YAML::Node& key, const std::string& source, const char* what) {
  FARTHING_CHECK(key.IsScalar(), "a ", what, " name at ", mark_text(source, key.Mark()), " is ", yaml_kind(key),
                 ", expected a plain name");
  return key.Scalar();
}

// The (section, key) entries of the YAML tree, in file order. Also records where each section
// starts, under the section's name, so "data.train is missing" can point at the data section.
std::vector<Entry> collect_entries(const YAML::Node& root, const std::string& source,
                                   std::map<std::string, std::string>& section_locations) {
  std::vector<Entry> entries;
  if (!root || root.IsNull()) return entries;
  FARTHING_CHECK(root.IsMap(), "recipe ", source, " at ", mark_text(source, root.Mark()), " is ", yaml_kind(root),
                 ", expected a map of sections (", join_names(recipe_sections(), ", "), ")");
  for (const auto& section_item : root) {
    const std::string section = key_text(section_item.first, source, "section");
    const std::string section_at = mark_text(source, section_item.first.Mark());
    FARTHING_CHECK(!recipe_key_names(section).empty(), "'", section, "' at ", section_at, " is not a recipe section",
                   did_you_mean(section, recipe_sections()), "; valid sections: ", join_names(recipe_sections(), ", "));
    const auto [previous, inserted] = section_locations.emplace(section, section_at);
    FARTHING_CHECK(inserted, "section '", section, "' at ", section_at, " is given twice (first at ", previous->second,
                   "); merge the two into one");
    const YAML::Node& keys = section_item.second;
    if (!keys || keys.IsNull()) continue;  // `train:` with nothing under it: all defaults
    FARTHING_CHECK(keys.IsMap(), "section '", section, "' at ", section_at, " is ", yaml_kind(keys),
                   ", expected a map of keys (indented `key: value` lines); valid keys of ", section, ": ",
                   join_names(recipe_key_names(section), ", "));
    std::map<std::string, std::string> seen;
    for (const auto& key_item : keys) {
      const std::string name = key_text(key_item.first, source, "key");
      const std::string key_at = mark_text(source, key_item.first.Mark());
      const RecipeKey* key = find_recipe_key(section, name);
      const std::vector<std::string> valid = recipe_key_names(section);
      FARTHING_CHECK(key != nullptr, section, ".", name, " at ", key_at, " is not a key of section ", section,
                     did_you_mean(name, valid), "; valid keys of ", section, ": ", join_names(valid, ", "));
      const auto [first, is_new] = seen.emplace(name, key_at);
      FARTHING_CHECK(is_new, section, ".", name, " at ", key_at, " is given twice (first at ", first->second,
                     "); keep one");
      entries.push_back({key, key_item.second, value_location(source, key_item.first, key_item.second)});
    }
  }
  return entries;
}

// "section.key=value" (as given to --set) as an entry located at its --set text.
Entry override_entry(const std::string& text) {
  const std::string where = "--set " + text;
  const size_t equals = text.find('=');
  FARTHING_CHECK(equals != std::string::npos, where, ": expected section.key=value, e.g. --set optimizer.lr=3e-4");
  const std::string path = text.substr(0, equals);
  const size_t dot = path.find('.');
  const std::string section = path.substr(0, dot);
  const std::vector<std::string> valid = recipe_key_names(section);
  FARTHING_CHECK(!valid.empty(), where, ": '", section, "' is not a recipe section",
                 did_you_mean(section, recipe_sections()), "; valid sections: ", join_names(recipe_sections(), ", "),
                 " (write --set section.key=value)");
  FARTHING_CHECK(dot != std::string::npos, where, ": '", path, "' names a section, not a key; valid keys of ", section,
                 ": ", join_names(valid, ", "), " (write --set ", section, ".KEY=value)");
  const std::string name = path.substr(dot + 1);
  const RecipeKey* key = find_recipe_key(section, name);
  FARTHING_CHECK(key != nullptr, where, ": '", path, "' is not a key of section ", section, did_you_mean(name, valid),
                 "; valid keys of ", section, ": ", join_names(valid, ", "));
  const std::string value_text = text.substr(equals + 1);
  // Jinja text (an inline data.chat_template) starts with '{', which YAML reads as a map or
  // refuses: a string key takes unquoted text holding "{%" or "{{" as it is (YAML-quoted text
  // is still read as YAML, so its escapes work).
  RunConfig probe;
  const bool quoted = !value_text.empty() && (value_text.front() == '"' || value_text.front() == '\'');
  const bool jinja_text = std::holds_alternative<std::string*>(key->field(probe)) && !quoted &&
                          (value_text.find("{%") != std::string::npos || value_text.find("{{") != std::string::npos);
  if (jinja_text) return {key, YAML::Node(value_text), where};
  YAML::Node value;
  try {
    value = YAML::Load(value_text);
  } catch (const YAML::Exception& e) {
    FARTHING_FAIL(where, ": the value '", value_text, "' is not a YAML scalar: ", e.msg, " (quote it, e.g. --set ",
                  path, "='\"...\"')");
  }
  return {key, value, where};
}

}  // namespace

RunConfig parse_recipe_text(const std::string& yaml, const std::string& source_name,
                            const std::vector<std::string>& overrides) {
  RunConfig config;
  config.source = source_name;
  std::vector<Entry> entries = collect_entries(parse_yaml(yaml, source_name), source_name, config.key_locations);
  for (const std::string& text : overrides) entries.push_back(override_entry(text));

  // The last entry of each key wins: an override replaces the file's value before it is read.
  std::map<std::string, size_t> last_entry;
  for (size_t i = 0; i < entries.size(); ++i) last_entry[entries[i].key->path()] = i;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    if (last_entry.at(e.key->path()) != i) continue;
    set_field_from_yaml(*e.key, e.value, e.location, config);
    config.key_locations[e.key->path()] = e.location;
  }
  validate_run_config(config);
  return config;
}

RunConfig load_recipe(const std::filesystem::path& path, const std::vector<std::string>& overrides) {
  std::ifstream in(path, std::ios::binary);
  FARTHING_CHECK(in.good(), "cannot read recipe ", path.string(), ": ", std::strerror(errno),
                 " (give the path of a recipe YAML, e.g. recipes/stories/260k_full_single_device.yaml)");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_recipe_text(text.str(), path.string(), overrides);
}

}  // namespace farthing::recipe
