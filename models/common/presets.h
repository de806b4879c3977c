// presets.h — every model preset by name ("gpt2-124m", "smollm2-135m", ...), and the
// family dispatch from a config to its TransformerSpec.
// Relies on: models/llama, models/gpt2. Tested by: tests/models/test_flat_layout.cpp, tests/train/recipe/test_recipe_files.cpp.
#pragma once

#include <string>
#include <vector>

#include "models/common/model_config.h"
#include "models/common/transformer_spec.h"

namespace farthing::models {

// Lower-case preset names, in a fixed order.
std::vector<std::string> preset_names();
// Throws farthing::Error listing the known names when `name` is unknown.
ModelConfig preset_config(const std::string& name);
// llama_spec or gpt2_spec by config.family.
TransformerSpec make_spec(const ModelConfig& config);

}  // namespace farthing::models
