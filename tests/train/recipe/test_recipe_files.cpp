// test_recipe_files.cpp — every recipe in recipes/ parses, validates and round-trips; each
// opens with the exact command that runs it, comments every knob, is named
// <family>/<size>_<method>.yaml, appears in recipes/README.md; every model preset has a recipe;
// each states `farthing plan`'s memory figures (tools/recipe_memory_comments.py), within 5%.
// The folder is globbed at run time (FARTHING_RECIPES_DIR), so new recipes are checked with no edit here.
// Covers: recipes/**, train/recipe/recipe_load.cpp, recipe_validate.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "train/recipe/recipe.h"
#include "train/plan/memory_estimate.h"
#include "models/common/presets.h"

namespace farthing::recipe::test {
namespace {

// The YAML after the comment header (which names the source and so differs between copies).
std::string body_of(const std::string& yaml) { return yaml.substr(yaml.find("\nmodel:")); }

const std::filesystem::path kRecipesDir = FARTHING_RECIPES_DIR;

// Where each preset's recipes live: recipes/<family>/<size>_*.yaml. A preset missing here
// fails PresetsHaveRecipes, so a new preset cannot arrive without its recipes.
const std::map<std::string, std::pair<std::string, std::string>> kPresetFolders = {
    {"stories260k", {"stories", "260k"}},  {"smollm2-135m", {"smollm2", "135m"}}, {"smollm2-360m", {"smollm2", "360m"}},
    {"smollm2-1.7b", {"smollm2", "1.7b"}}, {"llama3.2-1b", {"llama3_2", "1b"}},   {"llama3.2-3b", {"llama3_2", "3b"}},
    {"llama3.1-8b", {"llama3_1", "8b"}},   {"llama3.1-70b", {"llama3_1", "70b"}}, {"qwen2.5-0.5b", {"qwen2_5", "0.5b"}},
    {"qwen2.5-1.5b", {"qwen2_5", "1.5b"}}, {"qwen2.5-7b", {"qwen2_5", "7b"}},     {"gpt2-124m", {"gpt2", "124m"}},
    {"gpt2-355m", {"gpt2", "355m"}},       {"gpt2-774m", {"gpt2", "774m"}},       {"gpt2-1.5b", {"gpt2", "1.5b"}},
    {"qwen3-0.6b", {"qwen3", "0.6b"}},     {"qwen3-1.7b", {"qwen3", "1.7b"}},     {"qwen3-4b", {"qwen3", "4b"}},
    {"qwen3-8b", {"qwen3", "8b"}},         {"gemma3-1b", {"gemma3", "1b"}},       {"gemma3-4b", {"gemma3", "4b"}},
};

std::vector<std::filesystem::path> recipe_files() {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(kRecipesDir)) {
    if (entry.is_regular_file() && entry.path().extension() == ".yaml") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string repo_relative(const std::filesystem::path& file) {
  return "recipes/" + std::filesystem::relative(file, kRecipesDir).generic_string();
}

TEST(RecipeFiles, ThereAreRecipes) { EXPECT_GE(recipe_files().size(), kPresetFolders.size()); }

TEST(RecipeFiles, EveryRecipeParsesValidatesAndRoundTrips) {
  for (const auto& file : recipe_files()) {
    SCOPED_TRACE(file.string());
    RunConfig c;
    try {
      c = load_recipe(file);
    } catch (const farthing::Error& e) {
      ADD_FAILURE() << e.what();
      continue;
    }
    const RunConfig back = parse_recipe_text(resolved_recipe_yaml(c), "resolved.yaml");
    EXPECT_EQ(body_of(resolved_recipe_yaml(back)), body_of(resolved_recipe_yaml(c)));
    EXPECT_TRUE(c.model == back.model && c.data == back.data && c.optimizer == back.optimizer &&
                c.schedule == back.schedule && c.loss_scale == back.loss_scale && c.train == back.train &&
                c.checkpoint == back.checkpoint && c.distributed == back.distributed);
  }
}

TEST(RecipeFiles, EveryRecipeStartsWithTheCommandThatRunsIt) {
  for (const auto& file : recipe_files()) {
    SCOPED_TRACE(file.string());
    const std::vector<std::string> lines = lines_of(read_text(file));
    ASSERT_FALSE(lines.empty());
    const std::string& first = lines[0];
    EXPECT_EQ(first.rfind("# ", 0), 0u) << first;
    EXPECT_NE(first.find("build/bin/farthing train " + repo_relative(file)), std::string::npos) << first;
    const bool sharded = file.filename().string().find("_full_sharded") != std::string::npos;
    EXPECT_EQ(first.find("mpirun -np ") != std::string::npos, sharded) << first;
  }
}

// A knob is an indented `key: value` line; its comment is on the same line or just above.
TEST(RecipeFiles, EveryKnobIsCommented) {
  for (const auto& file : recipe_files()) {
    SCOPED_TRACE(file.string());
    const std::vector<std::string> lines = lines_of(read_text(file));
    for (size_t i = 0; i < lines.size(); ++i) {
      const std::string& line = lines[i];
      if (line.rfind("  ", 0) != 0 || line.find_first_not_of(' ') == std::string::npos) continue;
      if (line[line.find_first_not_of(' ')] == '#') continue;
      const bool trailing = line.find(" # ") != std::string::npos;
      const bool above = i > 0 && lines[i - 1].find_first_not_of(' ') != std::string::npos &&
                         lines[i - 1][lines[i - 1].find_first_not_of(' ')] == '#';
      EXPECT_TRUE(trailing || above) << "line " << i + 1 << " has no comment: " << line;
    }
  }
}

TEST(RecipeFiles, NamesFollowFamilySizeMethod) {
  std::vector<std::string> families;
  for (const auto& [preset, where] : kPresetFolders) families.push_back(where.first);
  for (const auto& file : recipe_files()) {
    SCOPED_TRACE(file.string());
    const std::string family = file.parent_path().filename().string();
    EXPECT_EQ(file.parent_path().parent_path(), kRecipesDir);
    EXPECT_NE(std::find(families.begin(), families.end(), family), families.end());
    const std::string stem = file.stem().string();
    std::string method = stem.substr(stem.find('_') + 1);
    // A _fp8 suffix: the same run with FP8 linear layers (train.precision fp8).
    if (method.ends_with("_fp8")) method.resize(method.size() - 4);
    // An _offload suffix: the same model with the optimizer on the host (optimizer.offload host).
    if (method.ends_with("_offload")) method.resize(method.size() - 8);
    // An _h200 suffix: the same batch cut for one H200's memory (farthing plan --fit h200).
    if (method.ends_with("_h200")) method.resize(method.size() - 5);
    // full_cpu_demo: the README's main job (tools/demo.sh), sized for a 2-core CPU.
    EXPECT_TRUE(method == "full_single_device" || method == "full_sharded" || method == "full_cpu_demo") << stem;
  }
}

TEST(RecipeFiles, PresetsHaveRecipesThatNameThem) {
  for (const std::string& preset : models::preset_names()) {
    SCOPED_TRACE(preset);
    ASSERT_TRUE(kPresetFolders.count(preset)) << "add the preset's folder to kPresetFolders and write its recipes";
    const auto& [family, size] = kPresetFolders.at(preset);
    int found = 0;
    for (const auto& file : recipe_files()) {
      if (file.parent_path().filename() != family || file.stem().string().rfind(size + "_", 0) != 0) continue;
      ++found;
      // Fine-tune recipes give model.path only; the preset they correspond to is still named.
      EXPECT_NE(read_text(file).find(preset), std::string::npos) << file << " never names " << preset;
    }
    EXPECT_GE(found, 1);
  }
}

TEST(RecipeFiles, ReadmeListsEveryRecipe) {
  const std::string readme = read_text(kRecipesDir / "README.md");
  for (const auto& file : recipe_files()) {
    EXPECT_NE(readme.find(std::filesystem::relative(file, kRecipesDir).generic_string()), std::string::npos)
        << repo_relative(file) << " is not in recipes/README.md";
  }
}

// "65.9 GiB" -> bytes (format_bytes' units).
double parse_bytes(const std::string& number, const std::string& unit) {
  const double scale = unit == "GiB" ? double(1 << 30) : unit == "MiB" ? double(1 << 20) : unit == "KiB" ? 1024.0 : 1.0;
  return std::stod(number) * scale;
}

// The memory comment's figures come from the same estimate as `farthing plan` (a changed trainer
// that was not followed by tools/recipe_memory_comments.py fails here).
TEST(RecipeFiles, MemoryCommentsStatePlansFigures) {
  const std::regex header(R"(# Memory per rank \(farthing plan --preset ([a-z0-9.\-]+)(?: --world-size (\d+))?\))");
  const std::regex figure(R"((model state|training step peak|while building) ([0-9.]+) (GiB|MiB|KiB|B)\b)");
  for (const auto& file : recipe_files()) {
    SCOPED_TRACE(repo_relative(file));
    const std::string text = read_text(file);
    std::smatch m;
    ASSERT_TRUE(std::regex_search(text, m, header)) << "no '# Memory per rank (farthing plan ...' comment; run "
                                                       "tools/recipe_memory_comments.py";
    const std::string preset = m[1];
    const int world = m[2].matched ? std::stoi(m[2]) : 1;
    const RunConfig config = load_recipe(file.string());
    const train::MemoryEstimate e = train::estimate_memory(config, models::preset_config(preset), world);
    const std::map<std::string, double> planned = {{"model state", double(e.model_state_bytes())},
                                                   {"training step peak", double(e.step_peak_bytes)},
                                                   {"while building", double(e.load_peak_bytes)}};
    std::map<std::string, double> stated;
    const std::string block = text.substr(size_t(m.position(0)), 400);  // the comment's three lines
    for (auto it = std::sregex_iterator(block.begin(), block.end(), figure); it != std::sregex_iterator(); ++it) {
      stated[(*it)[1]] = parse_bytes((*it)[2], (*it)[3]);
    }
    for (const auto& [what, bytes] : planned) {
      ASSERT_TRUE(stated.count(what)) << "the memory comment does not state the " << what;
      EXPECT_NEAR(stated[what], bytes, 0.05 * bytes) << what << ": the comment says " << stated[what]
                                                     << " B, plan says " << bytes << " B";
    }
  }
}

}  // namespace
}  // namespace farthing::recipe::test
