// presets.cpp — see presets.h.
#include "models/common/presets.h"

#include <utility>

#include "framework/core/error.h"
#include "models/gpt2/gpt2.h"
#include "models/llama/llama.h"

namespace farthing::models {

namespace {
const std::vector<std::pair<std::string, ModelConfig (*)()>>& table() {
  static const std::vector<std::pair<std::string, ModelConfig (*)()>> t = {
      {"stories260k", &llama_stories260k}, {"smollm2-135m", &smollm2_135m},
      {"smollm2-360m", &smollm2_360m},     {"smollm2-1.7b", &smollm2_1_7b},
      {"llama3.2-1b", &llama3_2_1b},       {"llama3.2-3b", &llama3_2_3b},
      {"llama3.1-8b", &llama3_1_8b},       {"llama3.1-70b", &llama3_1_70b},
      {"qwen2.5-0.5b", &qwen2_5_0_5b},     {"qwen2.5-1.5b", &qwen2_5_1_5b},
      {"qwen2.5-7b", &qwen2_5_7b},         {"qwen3-0.6b", &qwen3_0_6b},
      {"qwen3-1.7b", &qwen3_1_7b},         {"qwen3-4b", &qwen3_4b},
      {"qwen3-8b", &qwen3_8b},             {"gpt2-124m", &gpt2_124m},
      {"gpt2-355m", &gpt2_355m},           {"gpt2-774m", &gpt2_774m},
      {"gpt2-1.5b", &gpt2_1_5b},           {"gemma3-1b", &gemma3_1b},
      {"gemma3-4b", &gemma3_4b},
  };
  return t;
}
}  // namespace

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const auto& [name, fn] : table()) names.push_back(name);
  return names;
}

ModelConfig preset_config(const std::string& name) {
  std::string known;
  for (const auto& [n, fn] : table()) {
    if (n == name) return fn();
    known += (known.empty() ? "" : ", ") + n;
  }
  FARTHING_FAIL("unknown model preset '", name, "'; known presets: ", known);
}

TransformerSpec make_spec(const ModelConfig& config) {
  return config.family == ModelFamily::kGpt2 ? gpt2_spec(config) : llama_spec(config);
}

}  // namespace farthing::models
