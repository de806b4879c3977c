// closest_name.h — "did you mean ...?" for misspelt keys, sections, enum values and presets.
// Relies on: nothing. Tested by: tests/train/recipe/test_recipe_errors.cpp (unknown-key cases).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace farthing::recipe {

// Levenshtein distance (insertions, deletions, substitutions, each costing 1).
size_t edit_distance(std::string_view a, std::string_view b);

// The candidate nearest to `name`, or "" when even the nearest is too far to be a typo
// (more than max(2, |name| / 3) edits).
std::string closest_name(std::string_view name, const std::vector<std::string>& candidates);

// " (did you mean 'preset'?)" or "" when closest_name finds nothing.
std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates);

// Candidates joined by `separator`.
std::string join_names(const std::vector<std::string>& names, std::string_view separator);

}  // namespace farthing::recipe
