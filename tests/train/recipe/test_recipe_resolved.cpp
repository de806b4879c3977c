// test_recipe_resolved.cpp — resolved_recipe_yaml writes every key, and parsing it back gives
// the identical config (what lets a run be repeated from its run_dir/recipe.yaml alone).
// Covers: train/recipe/recipe_resolved.cpp, recipe_scalar.cpp (field_to_yaml, number_text).
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <limits>
#include <string>

#include "train/recipe/recipe.h"
#include "train/recipe/recipe_keys.h"
#include "recipe_test_util.h"

namespace farthing::recipe::test {
namespace {

// The YAML after the comment header (which names the source and so differs between copies).
std::string body_of(const std::string& yaml) { return yaml.substr(yaml.find("\nmodel:")); }

void expect_same_sections(const RunConfig& a, const RunConfig& b) {
  EXPECT_TRUE(a.model == b.model);
  EXPECT_TRUE(a.data == b.data);
  EXPECT_TRUE(a.optimizer == b.optimizer);
  EXPECT_TRUE(a.schedule == b.schedule);
  EXPECT_TRUE(a.loss_scale == b.loss_scale);
  EXPECT_TRUE(a.fp8 == b.fp8);
  EXPECT_TRUE(a.nvfp4 == b.nvfp4);
  EXPECT_TRUE(a.mxfp4 == b.mxfp4);
  EXPECT_TRUE(a.train == b.train);
  EXPECT_TRUE(a.checkpoint == b.checkpoint);
  EXPECT_TRUE(a.distributed == b.distributed);
  EXPECT_TRUE(a.metrics == b.metrics);
}

// Every field away from its default, with awkward strings and numbers that have no short
// decimal form.
RunConfig unusual_config() {
  RunConfig c;
  c.source = "unusual";
  c.model.path = "weights dir/with \"quotes\", a \\ backslash: # not a comment\ttab é";
  c.model.tokenizer = "yes";  // a YAML 1.1 boolean word must stay a string
  c.model.activation_checkpointing = models::Checkpointing::kPerBlock;
  c.model.loss_chunk_rows = 17;
  c.model.init_std = 1.0 / 3.0;
  c.data.train = "~";  // YAML's null spelled as a path
  c.data.eval = "eval.jsonl";
  c.data.format = DataFormat::kJsonl;
  c.data.eval_fraction = 0.1;
  c.data.seq_len = 4097;
  c.data.shuffle = false;
  c.data.add_bos = false;
  c.data.add_eos = false;
  c.data.chat_template = "chatml";
  c.optimizer.lr = 3.0000000000000004e-4;
  c.optimizer.beta1 = 0.8999999999999999;
  c.optimizer.beta2 = 0.95;
  c.optimizer.eps = 1e-300;
  c.optimizer.weight_decay = 0.0;
  c.optimizer.state = optim::StateFormat::kBlock4;
  c.optimizer.master = optim::MasterMode::kRemainder16;
  c.optimizer.weight_rounding = optim::WeightRounding::kNearest;
  c.optimizer.embedding_f32_state = false;
  c.optimizer.offload = optim::Offload::kHost;
  c.optimizer.offload_ring_units = 5;
  c.schedule.kind = optim::LrScheduleKind::kLinearDecay;
  c.schedule.warmup_steps = 12;
  c.schedule.min_ratio = 0.0;
  c.loss_scale.initial = 1024.5;
  c.loss_scale.growth_factor = 1.5;
  c.loss_scale.backoff_factor = 0.25;
  c.loss_scale.growth_interval = 77;
  c.fp8.scaling = Fp8Scaling::kTensorDelayed;
  c.fp8.input = Fp8Format::kE5M2;
  c.fp8.grad_output = Fp8Format::kE5M2;
  c.fp8.margin = 3;
  c.fp8.power_of_two_scales = false;
  c.fp8.amax_history_len = 5;
  c.fp8.amax_compute = Fp8AmaxCompute::kMostRecent;
  c.fp8.layers = Fp8Layers::kAttention;
  c.nvfp4 = Fp4Recipe{32, Fp4Scale::kE8M0, Fp4WeightScaling::k1D, Fp4Gemms::kBackward, Fp4Rht::kBackward, 64,
                      Fp4Sr::kBackward, 1.0 / 3.0, true};
  c.mxfp4 = Fp4Recipe{16, Fp4Scale::kE4M3, Fp4WeightScaling::k2D, Fp4Gemms::kAll, Fp4Rht::kNone, 256, Fp4Sr::kNone, 0.7,
                      false};
  c.train.steps = 1000000000000;
  c.train.micro_batch = 3;
  c.train.grad_accum = 5;
  c.train.max_grad_norm = 0.0;
  c.train.precision = Precision::kFp16;
  c.train.grad_dtype = GradDtype::kFp32;
  c.train.fp4_gpu_emulation = true;
  c.train.deterministic_attention = false;
  c.train.gemm_algorithm = GemmAlgorithmChoice::kTimed;
  c.model.bf16_activations = false;
  c.train.seed = std::numeric_limits<uint64_t>::max();
  c.train.eval_every = 9;
  c.train.eval_batches = 0;
  c.train.log_every = 10;
  c.train.nonfinite = Nonfinite::kFail;
  c.train.profile = StepProfileMode::kOps;
  c.checkpoint.run_dir = "runs/x y";
  c.checkpoint.save_every = 250;
  c.checkpoint.keep_last = 0;
  c.checkpoint.save_final = false;
  c.checkpoint.save_timeout_s = 12.5;
  c.distributed.zero_stage = 3;
  c.metrics.tensorboard = false;
  return c;
}

TEST(RecipeResolved, UnusualConfigRoundTripsExactly) {
  const RunConfig c = unusual_config();
  validate_run_config(c);
  const std::string yaml = resolved_recipe_yaml(c);
  const RunConfig back = parse_recipe_text(yaml, "resolved.yaml");
  expect_same_sections(c, back);
  EXPECT_EQ(body_of(resolved_recipe_yaml(back)), body_of(yaml));
  EXPECT_NE(yaml.find("# From: unusual\n"), std::string::npos);
}

TEST(RecipeResolved, DefaultsRoundTripAndEveryKeyIsWritten) {
  const RunConfig c = parse_recipe_text(recipe_with("train", "steps", "10").yaml, "recipe.yaml");
  const std::string yaml = resolved_recipe_yaml(c);
  expect_same_sections(c, parse_recipe_text(yaml, "resolved.yaml"));
  const YAML::Node root = YAML::Load(yaml);
  size_t keys_seen = 0;
  for (const RecipeKey& key : recipe_keys()) {
    const YAML::Node value = root[std::string(key.section)][std::string(key.name)];
    EXPECT_TRUE(value.IsDefined() && value.IsScalar()) << key.path() << " missing from:\n" << yaml;
    ++keys_seen;
  }
  EXPECT_EQ(keys_seen, 91u);  // every field of run_config.h (a new field must join recipe_keys.cpp)
  size_t written = 0;
  for (const auto& section : root) written += section.second.size();
  EXPECT_EQ(written, keys_seen);
}

TEST(RecipeResolved, ChangingOneFieldChangesTheYaml) {
  // Guards the round-trip test itself: a field the writer skipped would still compare equal
  // when it holds its default, so move each field and check the YAML moves with it.
  RunConfig base = unusual_config();
  const std::string base_yaml = resolved_recipe_yaml(base);
  RunConfig changed = base;
  changed.optimizer.eps = 2e-300;
  EXPECT_NE(resolved_recipe_yaml(changed), base_yaml);
  changed = base;
  changed.train.seed = 0;
  EXPECT_NE(resolved_recipe_yaml(changed), base_yaml);
  changed = base;
  changed.data.add_eos = true;
  EXPECT_NE(resolved_recipe_yaml(changed), base_yaml);
}

}  // namespace
}  // namespace farthing::recipe::test
