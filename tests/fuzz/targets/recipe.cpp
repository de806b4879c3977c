// Fuzz target: recipe YAML (parse_recipe_text) and its validation; lines "#!set KEY=VALUE" of the
// input (YAML comments) also become --set overrides. A recipe that loads must also come back
// from its resolved YAML (the form stored in every run directory and checkpoint).
#include <sstream>
#include <string>
#include <vector>

#include "train/recipe/recipe.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> overrides;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("#!set ", 0) == 0) overrides.push_back(line.substr(6));
  }
  farthing::fuzz::guarded([&] {
    const farthing::recipe::RunConfig config = farthing::recipe::parse_recipe_text(text, "fuzz.yaml", overrides);
    farthing::recipe::validate_run_config(config);
    const std::string resolved = farthing::recipe::resolved_recipe_yaml(config);
    try {
      farthing::recipe::parse_recipe_text(resolved, "resolved.yaml");
    } catch (const farthing::Error& e) {
      std::fprintf(stderr, "fuzz: a recipe that loads does not load back from its resolved YAML: %s\n%s\n", e.what(),
                   resolved.c_str());
      std::abort();
    }
  });
  return 0;
}
