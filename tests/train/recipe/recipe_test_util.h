// recipe_test_util.h — a small valid recipe to vary one key at a time, and the error text of a
// recipe that must fail. Shared by the tests in tests/train/recipe/.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "framework/core/error.h"
#include "train/recipe/recipe.h"

namespace farthing::recipe::test {

// A recipe in which `section.key: value` is the first line of its section.
struct VariedRecipe {
  std::string yaml;
  int line = 0;          // 1-based line of the varied key
  int value_column = 0;  // 1-based column where its value starts
  std::string location() const { return "recipe.yaml:" + std::to_string(line) + ":" + std::to_string(value_column); }
};

// Every section present (empty ones too, which mean "all defaults"); model.path and
// data.train set so the base recipe is valid. A varied key replaces the base value of the same key.
inline VariedRecipe recipe_with(const std::string& section, const std::string& key, const std::string& value) {
  const std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>> base = {
      {"model", {{"path", "models/SmolLM2-135M"}}},
      {"data", {{"train", "data/train.txt"}}},
      {"optimizer", {}},
      {"schedule", {}},
      {"loss_scale", {}},
      {"fp8", {}},
      {"train", {}},
      {"checkpoint", {}},
      {"distributed", {}},
  };
  VariedRecipe r;
  int line = 0;
  auto add = [&](const std::string& text) {
    r.yaml += text + "\n";
    ++line;
  };
  for (const auto& [name, keys] : base) {
    add(name + ":");
    if (name == section) {
      add("  " + key + ": " + value);
      r.line = line;
      r.value_column = int(key.size()) + 5;
    }
    for (const auto& [k, v] : keys) {
      if (!(name == section && k == key)) add("  " + k + ": " + v);
    }
  }
  return r;
}

// The message of the farthing::Error that parsing throws ("" and a test failure when none).
inline std::string parse_error(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  try {
    parse_recipe_text(yaml, "recipe.yaml", overrides);
  } catch (const farthing::Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an error from:\n" << yaml;
  return "";
}

inline void expect_contains(const std::string& message, std::initializer_list<std::string> parts) {
  for (const std::string& part : parts) {
    EXPECT_NE(message.find(part), std::string::npos) << "missing '" << part << "' in:\n" << message;
  }
}

}  // namespace farthing::recipe::test
