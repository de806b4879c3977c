// recipe.h — a recipe YAML (plus `--set section.key=value` overrides) becomes a validated
// RunConfig, and a RunConfig becomes YAML again (the resolved recipe stored in the run
// directory and in every checkpoint).
//
// Every error is a farthing::Error that names the recipe file, the line:column of the offending
// key or value (or the --set text that gave it), the key, the value and what was expected.
// Paths (model.path, model.tokenizer, data.train, data.eval) are kept exactly as written and
// never checked for existence here: the trainer resolves and opens them with its own errors.
// Relies on: yaml-cpp, models/common/presets.h (preset names and shapes).
// Tested by: tests/train/recipe/.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "train/recipe/run_config.h"

namespace farthing::recipe {

// Reads the YAML file at `path`, applies `overrides` ("optimizer.lr=3e-4", as given to
// `--set`; later ones win; values are YAML scalars), converts and validates.
RunConfig load_recipe(const std::filesystem::path& path, const std::vector<std::string>& overrides = {});

// The same from text; `source_name` stands for the file in messages and in RunConfig::source.
RunConfig parse_recipe_text(const std::string& yaml, const std::string& source_name,
                            const std::vector<std::string>& overrides = {});

// Checks every value and every combination (ranges, enums, model preset/path, impossible
// pairings such as optimizer_in_backward with grad_accum > 1). Uses config.key_locations to
// say where a bad value came from. Throws farthing::Error on the first problem.
void validate_run_config(const RunConfig& config);

// A key and where its value came from, as every recipe error starts: "data.train at
// recipe.yaml:9:10", "data.train at --set data.train=x.jsonl", or "data.train (default; ...)".
std::string key_origin(const RunConfig& config, const std::string& key);

// Every key of every section, in run_config.h's order, with a comment header.
// parse_recipe_text(resolved_recipe_yaml(c), ...) gives back c's sections exactly.
std::string resolved_recipe_yaml(const RunConfig& config);

}  // namespace farthing::recipe
