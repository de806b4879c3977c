// recipe_scalar.h — one YAML value into one RunConfig field, type-checked, and one field back
// into YAML text that reads back to the identical value (the resolved recipe relies on it).
//
// Accepted: numbers as C++ from_chars reads them (2e-5, 0.9, 1234; a leading '+' too), whole
// numbers for integer fields, YAML 1.1 booleans (true/false/yes/no/on/off), any scalar for
// strings (an empty value is ""), a name of the enum's table for enums (EnumNames; anything else
// is refused with the names and the nearest one). Lists and maps are rejected for every key.
// Relies on: yaml-cpp, recipe_keys.h, closest_name.h. Tested by: tests/train/recipe/ (type errors, round trip).
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "train/recipe/recipe_keys.h"
#include "train/recipe/run_config.h"

namespace farthing::recipe {

// Sets key's field of `config` from `value`. `location` ("recipe.yaml:7:7" or
// "--set optimizer.lr=fast") goes into the error: "optimizer.lr at recipe.yaml:7:7 is 'fast',
// expected a number".
void set_field_from_yaml(const RecipeKey& key, const YAML::Node& value, const std::string& location, RunConfig& config);

// The field as YAML text: strings plain when that is unambiguous, else double-quoted and
// escaped; numbers in their shortest exact form; enums by their name.
std::string field_to_yaml(const RecipeKey& key, const RunConfig& config);

// Shortest decimal text that parses back to exactly `value` (std::to_chars).
std::string number_text(double value);

}  // namespace farthing::recipe
