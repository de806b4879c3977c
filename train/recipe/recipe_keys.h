// recipe_keys.h — the schema of a recipe: its sections, the keys of each and the RunConfig field
// each key fills (an enum field brings its accepted names: EnumNames, enum_names.h).
//
// Parsing and enum names (recipe_load.cpp, recipe_scalar.cpp), --set overrides and the
// resolved YAML (recipe_resolved.cpp) all read this one table, so a field added to
// run_config.h and listed here is parsed, checked, written back and round-trip tested with no
// other edit. YAML keys are the field names (run_config.h promises that).
// Relies on: run_config.h, enum_names.h. Tested by: tests/train/recipe/ (every key round-trips).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "train/recipe/enum_names.h"
#include "train/recipe/run_config.h"

namespace farthing::recipe {

// The field a key fills; the alternative held says its C++ type (and so its YAML type). Enum
// fields, whatever their enum, are an EnumRef: a name from their table.
using FieldRef = std::variant<std::string*, double*, int64_t*, int*, uint64_t*, bool*, EnumRef>;

// &field as a FieldRef (RECIPE_KEY's accessor): enums through their names table.
template <class T>
FieldRef field_ref(T* field) {
  if constexpr (std::is_enum_v<T>) {
    return EnumRef(field);
  } else {
    return field;
  }
}

struct RecipeKey {
  std::string_view section;               // "optimizer"
  std::string_view name;                  // "lr"
  FieldRef (*field)(RunConfig& config);   // &config.optimizer.lr

  std::string path() const { return std::string(section) + "." + std::string(name); }
};

// Section names in YAML order (model, data, optimizer, ...).
const std::vector<std::string>& recipe_sections();
// Every key, grouped by section, in run_config.h's order.
const std::vector<RecipeKey>& recipe_keys();
// nullptr when `section`.`name` is not a key.
const RecipeKey* find_recipe_key(std::string_view section, std::string_view name);
// The key names of one section ("" list when the section is unknown).
std::vector<std::string> recipe_key_names(std::string_view section);

}  // namespace farthing::recipe
