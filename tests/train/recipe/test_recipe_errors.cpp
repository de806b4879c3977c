// test_recipe_errors.cpp — every way a recipe can be wrong gives an error that names the file,
// the line (and column), the key, the value and what was expected.
// Covers: train/recipe/recipe_load.cpp, recipe_scalar.cpp, recipe_validate.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "train/recipe/recipe.h"
#include "recipe_test_util.h"

namespace farthing::recipe::test {
namespace {

TEST(RecipeErrors, BaseRecipeIsValid) {
  const VariedRecipe r = recipe_with("train", "steps", "10");
  const RunConfig c = parse_recipe_text(r.yaml, "recipe.yaml");
  EXPECT_EQ(c.train.steps, 10);
  EXPECT_EQ(c.model.path, "models/SmolLM2-135M");
  EXPECT_EQ(c.data.train, "data/train.txt");
  EXPECT_EQ(c.key_locations.at("train.steps"), "recipe.yaml:10:10");
  EXPECT_EQ(r.location(), "recipe.yaml:10:10");
}

// The example of the issue, written out by hand so the 1-based line:column is pinned.
TEST(RecipeErrors, WrongTypeNamesFileLineColumnKeyValueAndType) {
  const std::string yaml =
      "model:\n"
      "  path: models/SmolLM2-135M\n"
      "data:\n"
      "  train: data/train.txt\n"
      "optimizer:\n"
      "  state: 8bit\n"
      "  lr: fast\n";
  EXPECT_NE(parse_error(yaml).find("optimizer.lr at recipe.yaml:7:7 is 'fast', expected a number"), std::string::npos)
      << parse_error(yaml);
}

TEST(RecipeErrors, WrongTypesOfEveryKind) {
  struct Case {
    const char *section, *key, *value, *expected;
  };
  for (const Case& c : {Case{"train", "steps", "10.5", "expected a whole number"},
                        Case{"train", "steps", "many", "expected a whole number"},
                        Case{"distributed", "zero_stage", "99999999999", "expected a whole number"},
                        Case{"train", "seed", "-1", "expected a whole number >= 0"},
                        Case{"data", "shuffle", "maybe", "expected true or false"},
                        Case{"optimizer", "beta1", "[0.9, 0.95]", "is a list, expected a number"},
                        Case{"optimizer", "eps", "{a: 1}", "is a map, expected a number"},
                        Case{"optimizer", "lr", "", "is empty, expected a number"},
                        Case{"optimizer", "lr", "~", "is empty, expected a number"},
                        Case{"optimizer", "lr", ".nan", "is '.nan', expected a number"},
                        Case{"model", "path", "[a, b]", "is a list, expected a single value"}}) {
    const VariedRecipe r = recipe_with(c.section, c.key, c.value);
    const std::string path = std::string(c.section) + "." + c.key;
    expect_contains(parse_error(r.yaml), {path + " at recipe.yaml:" + std::to_string(r.line), c.expected});
  }
}

TEST(RecipeErrors, MalformedYamlGivesYamlCppMessageFileAndLine) {
  const std::string yaml =
      "model:\n"
      "  path: models/SmolLM2-135M\n"
      "data:\n"
      "  train: [data/train.txt\n"
      "optimizer:\n"
      "  lr: 1e-5\n";
  const std::string message = parse_error(yaml);
  expect_contains(message, {"recipe.yaml:", "malformed YAML", "end of sequence"});
  const std::string bad_indent =
      "model:\n"
      "  path: models/SmolLM2-135M\n"
      "   tokenizer: x\n";
  expect_contains(parse_error(bad_indent), {"recipe.yaml:3:", "malformed YAML", "illegal map value"});
}

TEST(RecipeErrors, TopLevelMustBeAMapOfSections) {
  expect_contains(parse_error("- model\n- data\n"),
                  {"recipe.yaml:1:1", "is a list, expected a map of sections", "model, data, optimizer"});
  expect_contains(parse_error("model:\n  - path\n"),
                  {"section 'model' at recipe.yaml:1:1", "is a list", "valid keys of model: preset, path"});
}

TEST(RecipeErrors, UnknownSectionSuggestsTheClosest) {
  std::string yaml = recipe_with("train", "steps", "10").yaml + "optimiser:\n  lr: 1e-5\n";
  expect_contains(parse_error(yaml), {"'optimiser' at recipe.yaml:13:1", "is not a recipe section",
                                      "did you mean 'optimizer'?", "valid sections: model, data, optimizer"});
  expect_contains(parse_error("zzzzzzzzzz: 1\n"), {"'zzzzzzzzzz' at recipe.yaml:1:1", "valid sections"});
  EXPECT_EQ(parse_error("zzzzzzzzzz: 1\n").find("did you mean"), std::string::npos);
}

TEST(RecipeErrors, UnknownKeySuggestsTheClosestAndListsTheSection) {
  const VariedRecipe r = recipe_with("optimizer", "weight_decy", "0.1");
  expect_contains(
      parse_error(r.yaml),
      {"optimizer.weight_decy at recipe.yaml:" + std::to_string(r.line) + ":3", "not a key of section optimizer",
       "did you mean 'weight_decay'?",
       "valid keys of optimizer: name, lr, beta1, beta2, eps, weight_decay, state, master, weight_rounding"});
}

TEST(RecipeErrors, RepeatedKeysAndSectionsAreRefused) {
  const std::string twice_key = "model:\n  path: a\n  path: b\ndata:\n  train: t.txt\n";
  expect_contains(parse_error(twice_key), {"model.path at recipe.yaml:3:3", "given twice", "first at recipe.yaml:2:3"});
  const std::string twice_section = "model:\n  path: a\ndata:\n  train: t.txt\nmodel:\n  tokenizer: t\n";
  expect_contains(parse_error(twice_section), {"section 'model' at recipe.yaml:5:1", "given twice"});
}

TEST(RecipeErrors, EveryEnumListsItsValues) {
  struct Case {
    const char *section, *key, *expected;
  };
  for (const Case& c :
       {Case{"train", "precision", "fp32|bf16|fp16"}, Case{"optimizer", "state", "f32|bf16|8bit|4bit"},
        Case{"optimizer", "master", "f32|remainder16|none"}, Case{"optimizer", "weight_rounding", "nearest|stochastic"},
        Case{"optimizer", "name", "adamw"}, Case{"schedule", "kind", "constant|linear_warmup|cosine|linear"},
        Case{"model", "activation_checkpointing", "none|per_block"}, Case{"data", "format", "auto|text|jsonl|tokens"},
        Case{"train", "nonfinite", "skip|fail"}, Case{"train", "grad_dtype", "auto|fp32|bf16"},
        Case{"train", "gemm_algorithm", "heuristic|timed"}}) {
    const VariedRecipe r = recipe_with(c.section, c.key, "bogus");
    expect_contains(parse_error(r.yaml), {std::string(c.section) + "." + c.key + " at " + r.location(),
                                          "is 'bogus', expected " + std::string(c.expected)});
  }
  const VariedRecipe typo = recipe_with("optimizer", "state", "8bti");
  expect_contains(parse_error(typo.yaml), {"did you mean '8bit'?"});
  const VariedRecipe timing = recipe_with("train", "gemm_algorithm", "timd");
  expect_contains(parse_error(timing.yaml), {"did you mean 'timed'?"});
}

TEST(RecipeErrors, Fp8FormatNamesAreNotPrecisions) {
  const VariedRecipe r = recipe_with("train", "precision", "fp8_e4m3");
  expect_contains(parse_error(r.yaml), {"train.precision at " + r.location(), "is 'fp8_e4m3'",
                                        "expected fp32|bf16|fp16|fp8", "fp8.input, fp8.weight, fp8.grad_output"});
}

TEST(RecipeErrors, Fp8SectionKeysNameTheKeyValueAndWhatIsExpected) {
  const VariedRecipe scaling = recipe_with("fp8", "scaling", "delayed");
  expect_contains(parse_error(scaling.yaml), {"fp8.scaling at " + scaling.location(), "is 'delayed'",
                                              "expected block|tensor_current|tensor_delayed"});
  const VariedRecipe format = recipe_with("fp8", "grad_output", "e4m4");
  expect_contains(parse_error(format.yaml), {"fp8.grad_output at " + format.location(), "expected e4m3|e5m2"});
  const VariedRecipe margin = recipe_with("fp8", "margin", "33");
  expect_contains(parse_error(margin.yaml), {"fp8.margin at " + margin.location(), "is 33", "0..32"});
  const VariedRecipe history = recipe_with("fp8", "amax_history_len", "0");
  expect_contains(parse_error(history.yaml), {"fp8.amax_history_len at " + history.location(), "is 0", "1..1024"});
}

TEST(RecipeErrors, RangesNameTheKeyValueAndBound) {
  struct Case {
    const char *section, *key, *value, *expected;
  };
  for (const Case& c : {Case{"optimizer", "lr", "0", "expected a number > 0"},
                        Case{"optimizer", "lr", "-1e-5", "expected a number > 0"},
                        Case{"optimizer", "lr", "nan", "expected a number > 0"},
                        Case{"optimizer", "lr", "inf", "expected a number > 0"},
                        Case{"optimizer", "beta1", "1", "expected a number in [0, 1)"},
                        Case{"optimizer", "beta2", "-0.1", "expected a number in [0, 1)"},
                        Case{"optimizer", "eps", "0", "expected a number > 0"},
                        Case{"optimizer", "weight_decay", "-0.01", "expected a number >= 0"},
                        Case{"optimizer", "weight_decay", "1e6", "expected lr * weight_decay < 1"},
                        Case{"data", "seq_len", "0", "expected a whole number >= 1"},
                        Case{"data", "eval_fraction", "1", "expected a number in [0, 1)"},
                        Case{"data", "eval_fraction", "-0.5", "expected a number in [0, 1)"},
                        Case{"train", "micro_batch", "0", "expected a whole number >= 1"},
                        Case{"train", "grad_accum", "0", "expected a whole number >= 1"},
                        Case{"train", "steps", "0", "expected a whole number >= 1"},
                        Case{"train", "max_grad_norm", "-1", "expected a number >= 0"},
                        Case{"train", "log_every", "-1", "expected a whole number >= 0"},
                        Case{"train", "eval_every", "-1", "expected a whole number >= 0"},
                        Case{"train", "eval_batches", "-1", "expected a whole number >= 0"},
                        Case{"distributed", "zero_stage", "0", "expected 1, 2 or 3"},
                        Case{"distributed", "zero_stage", "4", "expected 1, 2 or 3"},
                        Case{"distributed", "collective_timeout_s", "-1", "expected seconds >= 0"},
                        Case{"distributed", "reduce", "fast", "expected ordered|native"},
                        Case{"distributed", "collective_timeout_s", ".inf", "expected a number"},
                        Case{"distributed", "reduce_bucket_mib", "-0.5", "expected MiB >= 0"},
                        Case{"distributed", "reduce_bucket_mib", "lots", "expected a number"},
                        Case{"checkpoint", "keep_last", "-1", "expected a whole number >= 0"},
                        Case{"checkpoint", "save_every", "-1", "expected a whole number >= 0"},
                        Case{"checkpoint", "save_timeout_s", "-1", "expected seconds >= 0"},
                        Case{"checkpoint", "save_timeout_s", ".inf", "expected a number"},
                        Case{"checkpoint", "run_dir", "\"\"", "is empty, expected a directory"},
                        Case{"schedule", "min_ratio", "1.5", "expected a number in [0, 1]"},
                        Case{"schedule", "min_ratio", "-0.1", "expected a number in [0, 1]"},
                        Case{"schedule", "warmup_steps", "-1", "expected a whole number >= 0"},
                        Case{"model", "loss_chunk_rows", "-1", "expected a whole number >= 1"},
                        Case{"model", "init_std", "0", "expected a number > 0"},
                        Case{"loss_scale", "initial", "0", "expected a number > 0"},
                        Case{"loss_scale", "growth_factor", "1", "expected a number > 1"},
                        Case{"loss_scale", "backoff_factor", "1", "expected a number in (0, 1)"},
                        Case{"loss_scale", "growth_interval", "0", "expected a whole number >= 1"}}) {
    const VariedRecipe r = recipe_with(c.section, c.key, c.value);
    const std::string message = parse_error(r.yaml);
    expect_contains(message, {std::string(c.section) + "." + c.key + " at " + r.location(), c.expected});
  }
}

TEST(RecipeErrors, WarmupMustFitInTheRun) {
  // train.steps defaults to 100 and is not in the recipe: the message says so.
  const VariedRecipe r = recipe_with("schedule", "warmup_steps", "100");
  expect_contains(parse_error(r.yaml), {"schedule.warmup_steps at " + r.location(), "is 100", "expected fewer than",
                                        "train.steps (default; not set in the train section at recipe.yaml:", "(100)",
                                        "cosine schedule decays"});
  std::string yaml = recipe_with("schedule", "kind", "linear_warmup").yaml;
  yaml.replace(yaml.find("schedule:\n"), 10, "schedule:\n  warmup_steps: 101\n");
  expect_contains(parse_error(yaml), {"schedule.warmup_steps at recipe.yaml:", "is 101", "expected at most"});
  std::string constant = recipe_with("schedule", "kind", "constant").yaml;
  constant.replace(constant.find("schedule:\n"), 10, "schedule:\n  warmup_steps: 10\n");
  expect_contains(parse_error(constant), {"schedule.kind at recipe.yaml:", "'constant'", "schedule.warmup_steps at",
                                          "is 10", "a constant schedule has no warmup"});
}

TEST(RecipeErrors, ModelNeedsExactlyOneOfPresetAndPath) {
  const std::string neither = "data:\n  train: t.txt\nmodel:\n  tokenizer: tok.json\n";
  expect_contains(parse_error(neither), {"model.preset (default; not set in the model section at recipe.yaml:3:1)",
                                         "model.path are both empty", "stories260k", "smollm2-135m"});
  const VariedRecipe both = recipe_with("model", "preset", "smollm2-135m");
  expect_contains(parse_error(both.yaml), {"model.preset at " + both.location(), "model.path at recipe.yaml:3:9",
                                           "give model.preset or model.path, not both"});
}

TEST(RecipeErrors, PresetMustBeKnown) {
  std::string yaml = "model:\n  preset: smollm-135m\n  tokenizer: tok.json\ndata:\n  train: t.txt\n";
  expect_contains(parse_error(yaml), {"model.preset at recipe.yaml:2:11", "is 'smollm-135m'", "expected a known preset",
                                      "did you mean 'smollm2-135m'?", "known presets: stories260k"});
  const RunConfig ok = parse_recipe_text(
      "model:\n  preset: smollm2-135m\n  tokenizer: tok.json\ndata:\n  train: t.txt\n", "recipe.yaml");
  EXPECT_EQ(ok.model.preset, "smollm2-135m");
}

TEST(RecipeErrors, PresetWithTextDataNeedsATokenizer) {
  const std::string yaml = "model:\n  preset: stories260k\ndata:\n  train: shakespeare.txt\n";
  expect_contains(parse_error(yaml), {"model.tokenizer (default; not set in the model section at recipe.yaml:1:1)",
                                      "is empty, expected a tokenizer", "data.train at recipe.yaml:4:10"});
  // Token files carry ids already: no tokenizer needed.
  EXPECT_NO_THROW(parse_recipe_text("model:\n  preset: stories260k\ndata:\n  train: shakespeare.tok\n", "recipe.yaml"));
}

TEST(RecipeErrors, SeqLenMustFitThePresetContext) {
  const std::string yaml = "model:\n  preset: gpt2-124m\n  tokenizer: gpt2/\ndata:\n  train: t.txt\n  seq_len: 2048\n";
  expect_contains(parse_error(yaml),
                  {"data.seq_len at recipe.yaml:6:12", "is 2048", "expected at most 1024", "model.preset 'gpt2-124m'"});
}

TEST(RecipeErrors, DataTrainIsRequired) {
  const std::string yaml = "model:\n  path: m/\ndata:\n  seq_len: 128\n";
  expect_contains(parse_error(yaml), {"data.train (default; not set in the data section at recipe.yaml:3:1)",
                                      "is missing, expected the training file"});
  expect_contains(parse_error("model:\n  path: m/\n"), {"data.train (default; recipe.yaml has no data section)"});
}

TEST(RecipeErrors, MasterAndRoundingMustAgree) {
  // No master with round-to-nearest is pure bf16 training: allowed (the trainer notes that it
  // loses small updates; farthing bench precision measures how many).
  std::string none_nearest = recipe_with("optimizer", "master", "none").yaml;
  none_nearest.replace(none_nearest.find("optimizer:\n"), 11, "optimizer:\n  weight_rounding: nearest\n");
  const RunConfig pure_bf16 = parse_recipe_text(none_nearest, "recipe.yaml");
  EXPECT_EQ(pure_bf16.optimizer.master, optim::MasterMode::kNone);
  EXPECT_EQ(pure_bf16.optimizer.weight_rounding, optim::WeightRounding::kNearest);
  // weight_rounding defaults to stochastic: the message says where that default came from.
  const VariedRecipe remainder = recipe_with("optimizer", "master", "remainder16");
  expect_contains(parse_error(remainder.yaml), {"optimizer.master at " + remainder.location(), "'remainder16'",
                                                "optimizer.weight_rounding (default; not set in the optimizer section",
                                                "expected weight_rounding 'nearest'"});
}

TEST(RecipeErrors, OptimizerInBackwardRefusesWhatNeedsAllGradientsFirst) {
  auto with_oib = [](const std::string& extra_train_lines) {
    std::string yaml = recipe_with("train", "optimizer_in_backward", "true").yaml;
    yaml.replace(yaml.find("  optimizer_in_backward"), 0, extra_train_lines);
    return yaml;
  };
  const std::string ok_lines = "  max_grad_norm: 0\n  nonfinite: fail\n";
  EXPECT_NO_THROW(parse_recipe_text(with_oib(ok_lines), "recipe.yaml"));
  expect_contains(parse_error(with_oib(ok_lines + "  grad_accum: 4\n")),
                  {"train.optimizer_in_backward at recipe.yaml:", "is true", "train.grad_accum at recipe.yaml:", "is 4",
                   "expected grad_accum 1"});
  expect_contains(parse_error(with_oib("  nonfinite: fail\n")),
                  {"train.max_grad_norm (default; not set in the train section", "is 1",
                   "clipping needs the global gradient norm", "expected max_grad_norm 0"});
  expect_contains(parse_error(with_oib(ok_lines + "  precision: fp16\n")),
                  {"train.precision at recipe.yaml:", "'fp16'", "loss scaler must see every gradient",
                   "expected precision bf16 or fp32"});
  expect_contains(parse_error(with_oib("  max_grad_norm: 0\n")),
                  {"train.nonfinite (default;", "'skip'", "expected nonfinite 'fail'"});
}

// Every conflict of one recipe comes in the same error, each with where its keys were set, and
// one --set line that resolves them all (turning on optimizer_in_backward in the 8B
// recipe took one run per conflict). The suggested line, applied, must give a valid recipe.
TEST(RecipeErrors, EveryConflictInOneErrorWithOneSetLineForAll) {
  std::string yaml = recipe_with("train", "optimizer_in_backward", "true").yaml;
  yaml.replace(yaml.find("  optimizer_in_backward"), 0, "  grad_accum: 4\n  precision: fp16\n");
  yaml.replace(yaml.find("optimizer:\n") + 11, 0, "  master: remainder16\n");
  // max_grad_norm (1) and nonfinite (skip) conflict through their defaults.
  const std::string message = parse_error(yaml);
  expect_contains(message, {"5 settings of the recipe conflict:",
                            "train.grad_accum at recipe.yaml:", "is 4", "expected grad_accum 1",
                            "train.max_grad_norm (default; not set in the train section", "expected max_grad_norm 0",
                            "train.precision at recipe.yaml:", "expected precision bf16 or fp32",
                            "train.nonfinite (default;", "expected nonfinite 'fail'",
                            "optimizer.master at recipe.yaml:", "expected weight_rounding 'nearest'"});
  EXPECT_EQ(std::count(message.begin(), message.end(), '\n'), 6) << "one line per conflict, then the --set line:\n"
                                                                  << message;
  const std::string all = "--set optimizer.weight_rounding=nearest --set train.grad_accum=1 "
                          "--set train.max_grad_norm=0 --set train.precision=bf16 --set train.nonfinite=fail";
  expect_contains(message, {"\nto resolve them all: " + all});
  // Not every conflict has optimizer_in_backward=false as its way out, so none is offered.
  EXPECT_EQ(message.find("optimizer_in_backward=false"), std::string::npos) << message;
  EXPECT_NO_THROW(parse_recipe_text(yaml, "recipe.yaml",
                                    {"optimizer.weight_rounding=nearest", "train.grad_accum=1", "train.max_grad_norm=0",
                                     "train.precision=bf16", "train.nonfinite=fail"}));

  // Conflicts that share their way out offer it; a single conflict stays on one line.
  const std::string oib_with_defaults = recipe_with("train", "optimizer_in_backward", "true").yaml;
  const std::string oib_only = parse_error(oib_with_defaults);
  expect_contains(oib_only, {"2 settings of the recipe conflict:", "\nto resolve them all: "
                             "--set train.max_grad_norm=0 --set train.nonfinite=fail "
                             "(or --set train.optimizer_in_backward=false)"});
  const std::string one = parse_error(oib_with_defaults, {"train.nonfinite=fail"});
  expect_contains(one, {"expected max_grad_norm 0", "; to resolve it: --set train.max_grad_norm=0 "
                        "(or --set train.optimizer_in_backward=false)"});
  EXPECT_EQ(one.find('\n'), std::string::npos) << one;
}

TEST(RecipeErrors, ConfigBuiltInCodeNamesTheKeyWithoutALocation) {
  RunConfig c;
  c.model.path = "m/";
  c.data.train = "t.txt";
  EXPECT_NO_THROW(validate_run_config(c));
  c.optimizer.lr = -1;
  try {
    validate_run_config(c);
    ADD_FAILURE() << "no error";
  } catch (const farthing::Error& e) {
    expect_contains(e.what(), {"optimizer.lr is -1, expected a number > 0"});
  }
}

TEST(RecipeErrors, LoadRecipeNamesTheFilePath) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "farthing_test_recipe_errors";
  std::filesystem::create_directories(dir);
  const std::filesystem::path file = dir / "bad.yaml";
  std::ofstream(file) << recipe_with("optimizer", "lr", "fast").yaml;
  try {
    load_recipe(file);
    ADD_FAILURE() << "no error";
  } catch (const farthing::Error& e) {
    expect_contains(e.what(), {"optimizer.lr at " + file.string() + ":6:7 is 'fast', expected a number"});
  }
  try {
    load_recipe(dir / "missing.yaml");
    ADD_FAILURE() << "no error";
  } catch (const farthing::Error& e) {
    expect_contains(e.what(), {"cannot read recipe " + (dir / "missing.yaml").string()});
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace farthing::recipe::test
