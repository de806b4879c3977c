// recipe_resolved.cpp — resolved_recipe_yaml (recipe.h): a RunConfig as a complete recipe,
// every key of every section with the value the run actually used. The trainer writes it to
// runs/<name>/recipe.yaml and into each checkpoint, so a run can be repeated from it alone.
// Relies on: recipe_keys.h (key order), recipe_scalar.h (exact text of each value).
// Tested by: tests/train/recipe/test_recipe_resolved.cpp (round trip through parse_recipe_text).
#include <string>

#include "train/recipe/recipe.h"
#include "train/recipe/recipe_keys.h"
#include "train/recipe/recipe_scalar.h"

namespace farthing::recipe {

namespace {

// A comment must stay on one line whatever the source path holds.
std::string one_line(std::string s) {
  for (char& ch : s) {
    if (ch == '\n' || ch == '\r') ch = ' ';
  }
  return s;
}

}  // namespace

std::string resolved_recipe_yaml(const RunConfig& config) {
  std::string out =
      "# Resolved recipe: every key with the value the run used (defaults filled in, --set overrides\n"
      "# applied). The meaning of each key: train/recipe/run_config.h.\n";
  if (!config.source.empty()) out += "# From: " + one_line(config.source) + "\n";
  std::string section;
  for (const RecipeKey& key : recipe_keys()) {
    if (key.section != section) {
      section = key.section;
      out += "\n" + section + ":\n";
    }
    out += "  " + std::string(key.name) + ": " + field_to_yaml(key, config) + "\n";
  }
  return out;
}

}  // namespace farthing::recipe
