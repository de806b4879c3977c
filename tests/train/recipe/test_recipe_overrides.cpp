// test_recipe_overrides.cpp — `--set section.key=value`: applied after the file, type-checked
// and validated like the file's own values, with errors that quote the --set text.
// Covers: train/recipe/recipe_load.cpp (override_entry), recipe_scalar.cpp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "train/recipe/recipe.h"
#include "recipe_test_util.h"

namespace farthing::recipe::test {
namespace {

const std::string kRecipe = recipe_with("optimizer", "lr", "2e-5").yaml;

TEST(RecipeOverrides, ReplaceFileValuesAndAddMissingOnes) {
  const RunConfig c = parse_recipe_text(
      kRecipe, "recipe.yaml",
      {"optimizer.lr=3e-4", "train.steps=7", "data.shuffle=false", "model.tokenizer=tok/tokenizer.json",
       "optimizer.state=f32", "train.seed=18446744073709551615"});
  EXPECT_EQ(c.optimizer.lr, 3e-4);
  EXPECT_EQ(c.train.steps, 7);
  EXPECT_FALSE(c.data.shuffle);
  EXPECT_EQ(c.model.tokenizer, "tok/tokenizer.json");
  EXPECT_EQ(c.optimizer.state, optim::StateFormat::kF32);
  EXPECT_EQ(c.train.seed, 18446744073709551615ull);
  EXPECT_EQ(c.key_locations.at("optimizer.lr"), "--set optimizer.lr=3e-4");
  EXPECT_EQ(c.key_locations.at("model.path"), "recipe.yaml:2:9");
}

TEST(RecipeOverrides, LaterOverridesWin) {
  const RunConfig c = parse_recipe_text(kRecipe, "recipe.yaml", {"train.steps=5", "train.steps=9"});
  EXPECT_EQ(c.train.steps, 9);
  EXPECT_EQ(c.key_locations.at("train.steps"), "--set train.steps=9");
}

TEST(RecipeOverrides, ValuesAreYamlScalars) {
  const RunConfig c = parse_recipe_text(kRecipe, "recipe.yaml",
                                        {"model.path=\"dir with: colon # and hash\"", "data.eval=", "data.add_bos=no"});
  EXPECT_EQ(c.model.path, "dir with: colon # and hash");
  EXPECT_EQ(c.data.eval, "");
  EXPECT_FALSE(c.data.add_bos);
  expect_contains(parse_error(kRecipe, {"model.path=[a, b"}), {"--set model.path=[a, b", "is not a YAML scalar"});
  expect_contains(parse_error(kRecipe, {"model.path=a: b"}),
                  {"model.path at --set model.path=a: b is a map, expected a single value"});
}

TEST(RecipeOverrides, JinjaTextNeedsNoQuotes) {
  // YAML would read a bare "{% ... %}" as a map (or refuse it): a string key takes it as text.
  const std::string jinja = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}";
  EXPECT_EQ(parse_recipe_text(kRecipe, "recipe.yaml", {"data.chat_template=" + jinja}).data.chat_template, jinja);
  EXPECT_EQ(parse_recipe_text(kRecipe, "recipe.yaml", {"data.chat_template={{ bos_token }}"}).data.chat_template,
            "{{ bos_token }}");
  // YAML-quoted text is still YAML: its quotes go, its escapes work.
  EXPECT_EQ(parse_recipe_text(kRecipe, "recipe.yaml", {"data.chat_template=\"{{ m }}\\n\""}).data.chat_template,
            "{{ m }}\n");
  // Only string keys: a number key with Jinja text is still a type error.
  expect_contains(parse_error(kRecipe, {"optimizer.lr={{ lr }}"}), {"optimizer.lr at --set optimizer.lr={{ lr }}"});
}

TEST(RecipeOverrides, AnOverrideMayReplaceABadFileValue) {
  const std::string bad = recipe_with("optimizer", "lr", "fast").yaml;
  EXPECT_EQ(parse_recipe_text(bad, "recipe.yaml", {"optimizer.lr=1e-4"}).optimizer.lr, 1e-4);
}

TEST(RecipeOverrides, AreTypeChecked) {
  expect_contains(parse_error(kRecipe, {"optimizer.lr=fast"}),
                  {"optimizer.lr at --set optimizer.lr=fast is 'fast', expected a number"});
  expect_contains(parse_error(kRecipe, {"train.steps=1.5"}),
                  {"train.steps at --set train.steps=1.5 is '1.5', expected a whole number"});
  expect_contains(parse_error(kRecipe, {"data.shuffle=2"}),
                  {"data.shuffle at --set data.shuffle=2 is '2', expected true or false"});
}

TEST(RecipeOverrides, AreValidated) {
  expect_contains(parse_error(kRecipe, {"optimizer.lr=-1"}),
                  {"optimizer.lr at --set optimizer.lr=-1 is -1, expected a number > 0"});
  expect_contains(parse_error(kRecipe, {"train.precision=fp4"}),
                  {"train.precision at --set train.precision=fp4", "expected fp32|bf16|fp16|fp8"});
  expect_contains(parse_error(kRecipe, {"fp8.layers=head"}),
                  {"fp8.layers at --set fp8.layers=head", "expected all|mlp|attention"});
  expect_contains(parse_error(kRecipe, {"train.optimizer_in_backward=true", "train.max_grad_norm=0"}),
                  {"train.optimizer_in_backward at --set train.optimizer_in_backward=true", "train.nonfinite (default;",
                   "expected nonfinite 'fail'"});
}

TEST(RecipeOverrides, UnknownKeyNamesTheSetTextAndListsTheSection) {
  expect_contains(parse_error(kRecipe, {"optimizer.lrr=1e-4"}),
                  {"--set optimizer.lrr=1e-4", "'optimizer.lrr' is not a key of section optimizer",
                   "did you mean 'lr'?", "valid keys of optimizer: name, lr, beta1, beta2, eps"});
  expect_contains(parse_error(kRecipe, {"optimiser.lr=1e-4"}),
                  {"--set optimiser.lr=1e-4", "'optimiser' is not a recipe section", "did you mean 'optimizer'?",
                   "valid sections: model, data, optimizer"});
  expect_contains(parse_error(kRecipe, {"train=5"}),
                  {"--set train=5", "names a section, not a key", "valid keys of train: steps, micro_batch"});
  expect_contains(parse_error(kRecipe, {"optimizer.lr"}), {"--set optimizer.lr", "expected section.key=value"});
}

}  // namespace
}  // namespace farthing::recipe::test
