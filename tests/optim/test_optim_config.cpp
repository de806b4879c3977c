// test_optim_config.cpp — bad configurations fail with clear messages; LR schedules; global
// norm clipping folded into the step; loss-scale unscaling; non-finite gradient counting and
// the step's refusal; clipping and the skip decided on the device, bitwise the host's; default
// parameter groups; state load rejects a mismatched optimizer.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "framework/core/error.h"
#include "framework/optim/adamw.h"
#include "framework/optim/lr_schedule.h"
#include "framework/optim/optim_state_io.h"
#include "framework/optim/param_groups.h"
#include "tests/optim/optim_test_util.h"

namespace farthing::test {
namespace {

using optim::OptimizerConfig;
using optim::ShardSpec;

OptimizerConfig simple_config(optim::StateFormat format = optim::StateFormat::kF32) {
  OptimizerConfig c;
  c.groups = {{"g", {1e-3, 0.9, 0.999, 1e-8, 0.01}, format}};
  c.ranges = {{"w", 0, 8192, 0}};
  return c;
}

// Expects construction to throw farthing::Error whose message contains every fragment.
void expect_error(const OptimizerConfig& c, const std::vector<ShardSpec>& shards,
                  std::initializer_list<const char*> fragments) {
  try {
    optim::AdamW opt(c, shards);
    ADD_FAILURE() << "no error; expected one mentioning '" << *fragments.begin() << "'";
  } catch (const Error& e) {
    const std::string what = e.what();
    for (const char* f : fragments) EXPECT_NE(what.find(f), std::string::npos) << "'" << f << "' not in: " << what;
  }
}

TEST(OptimConfig, BadConfigurationsFailClearly) {
  const std::vector<ShardSpec> shard = {{0, 8192}};
  OptimizerConfig c = simple_config();
  c.groups[0].hyper.beta1 = 1.0;
  expect_error(c, shard, {"param group 0 'g'", "beta1 (1)", "[0, 1)"});
  c = simple_config();
  c.groups[0].hyper.eps = 0.0;
  expect_error(c, shard, {"eps (0)", "> 0"});
  c = simple_config();
  c.groups[0].hyper.lr = -1.0;
  expect_error(c, shard, {"lr (-1)"});
  c = simple_config();
  c.ranges[0].group = 3;
  expect_error(c, shard, {"'w'", "group 3", "1 groups"});
  c = simple_config();
  c.ranges = {{"a", 0, 5000, 0}, {"b", 4000, 5000, 0}};
  expect_error(c, shard, {"'a'", "'b'", "overlap"});
  c = simple_config(optim::StateFormat::kBlock8);
  c.ranges = {{"a", 100, 5000, 0}};
  expect_error(c, shard, {"'a'", "8-bit", "offset 100", "multiple of the quantization block (256)"});
  expect_error(simple_config(), {{100, 8092}}, {"shard 0", "global offset 100", "multiple"});
  expect_error(simple_config(), {{0, 1000}, {1024, 1024}}, {"shard 0", "1000 elements", "multiple of 256"});
  expect_error(simple_config(), {{0, 4096}, {2048, 4096}}, {"shards 0", "overlap"});
  c = simple_config();
  c.groups.clear();
  expect_error(c, shard, {"no parameter groups"});
  EXPECT_THROW(optim::parse_state_format("int4"), Error);
  EXPECT_EQ(optim::parse_state_format("8bit"), optim::StateFormat::kBlock8);
}

TEST(OptimConfig, NoMasterWithRoundToNearestIsAllowed) {
  // Pure bf16 training: the update is rounded to nearest, so updates below half a spacing are
  // lost (test_sr_vs_rn measures it); valid, as the other trainers allow it.
  optim::OptimizerConfig c = simple_config();
  c.master_mode = optim::MasterMode::kNone;
  c.weight_rounding = optim::WeightRounding::kNearest;
  EXPECT_NO_THROW(optim::validate_optimizer_config(c, {{0, 20736}}));
}

TEST(OptimConfig, SmallAndPinnedRangesKeepF32State) {
  OptimizerConfig c = simple_config(optim::StateFormat::kBlock8);
  c.ranges = {{"big", 0, 8192, 0}, {"small", 8192, 4095, 0}, {"embed", 12544, 8192, 0, true}};
  EXPECT_EQ(optim::effective_state_format(c, c.ranges[0]), optim::StateFormat::kBlock8);
  EXPECT_EQ(optim::effective_state_format(c, c.ranges[1]), optim::StateFormat::kF32);
  EXPECT_EQ(optim::effective_state_format(c, c.ranges[2]), optim::StateFormat::kF32);
  // A small range may start anywhere: its state is not blocked.
  c.ranges[1].global_offset = 8200;
  EXPECT_NO_THROW(optim::validate_optimizer_config(c, {{0, 20736}}));
}

TEST(OptimConfig, DefaultGroupsExemptNormsAndBiases) {
  const auto groups = optim::default_param_groups({1e-5, 0.9, 0.999, 1e-8, 0.1}, optim::StateFormat::kBlock8);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[optim::kDecayGroup].hyper.weight_decay, 0.1);
  EXPECT_EQ(groups[optim::kNoDecayGroup].hyper.weight_decay, 0.0);
  EXPECT_EQ(optim::default_group_of("layers.0.attn.wq.weight", 2), optim::kDecayGroup);
  EXPECT_EQ(optim::default_group_of("layers.0.attn_norm.weight", 1), optim::kNoDecayGroup);
  EXPECT_EQ(optim::default_group_of("layers.0.mlp.up.bias", 1), optim::kNoDecayGroup);
  EXPECT_EQ(optim::default_group_of("final_norm", 2), optim::kNoDecayGroup);
}

TEST(LrSchedule, Shapes) {
  using optim::LrSchedule;
  using optim::LrScheduleKind;
  using optim::lr_multiplier;
  EXPECT_EQ(lr_multiplier(LrSchedule{}, 1), 1.0);
  EXPECT_EQ(lr_multiplier(LrSchedule{}, 100000), 1.0);
  const LrSchedule warm{LrScheduleKind::kLinearWarmup, 10, 0, 0.0};
  EXPECT_DOUBLE_EQ(lr_multiplier(warm, 1), 0.1);
  EXPECT_DOUBLE_EQ(lr_multiplier(warm, 5), 0.5);
  EXPECT_DOUBLE_EQ(lr_multiplier(warm, 10), 1.0);
  EXPECT_DOUBLE_EQ(lr_multiplier(warm, 1000), 1.0);
  const LrSchedule cosine{LrScheduleKind::kCosine, 10, 110, 0.1};
  EXPECT_DOUBLE_EQ(lr_multiplier(cosine, 5), 0.5);
  EXPECT_DOUBLE_EQ(lr_multiplier(cosine, 10), 1.0);
  EXPECT_NEAR(lr_multiplier(cosine, 60), 0.1 + 0.9 * 0.5, 1e-15);  // halfway through the decay
  EXPECT_NEAR(lr_multiplier(cosine, 110), 0.1, 1e-15);
  EXPECT_NEAR(lr_multiplier(cosine, 500), 0.1, 1e-15);             // stays at the floor
  const LrSchedule linear{LrScheduleKind::kLinearDecay, 0, 100, 0.0};
  EXPECT_DOUBLE_EQ(lr_multiplier(linear, 1), 0.99);
  EXPECT_DOUBLE_EQ(lr_multiplier(linear, 50), 0.5);
  EXPECT_DOUBLE_EQ(lr_multiplier(linear, 100), 0.0);
  for (int64_t s = 2; s <= 120; ++s) EXPECT_LE(lr_multiplier(cosine, s), lr_multiplier(cosine, s - 1) + (s <= 10 ? 1 : 0));
  EXPECT_THROW(optim::validate_lr_schedule({LrScheduleKind::kCosine, 100, 50, 0.0}), Error);
  EXPECT_THROW(optim::validate_lr_schedule({LrScheduleKind::kConstant, 0, 0, 1.5}), Error);
  EXPECT_THROW(lr_multiplier(LrSchedule{}, 0), Error);
  EXPECT_EQ(optim::parse_lr_schedule_kind("cosine"), LrScheduleKind::kCosine);
  EXPECT_THROW(optim::parse_lr_schedule_kind("exp"), Error);
}

// Fills grads with values whose global norm is known.
void fill_grads(ShardBuffers& b, double scale) {
  const std::vector<float> g = normal_values(7, size_t(b.numel), 1e-2);
  for (int64_t i = 0; i < b.numel; ++i) b.g_f32()[i] = float(double(g[size_t(i)]) * scale);
}

TEST(GradClip, NormClipAndLossScaleFoldIntoTheStep) {
  const int64_t n = 8192;
  ShardBuffers a(n, DType::kF32), b(n, DType::kF32);
  fill_grads(a, 1.0);
  double ss = 0.0;
  for (int64_t i = 0; i < n; ++i) ss += double(a.g_f32()[i]) * double(a.g_f32()[i]);
  const double norm = std::sqrt(ss);

  optim::AdamW clipped(simple_config(), {{0, uint64_t(n)}}), prescaled(simple_config(), {{0, uint64_t(n)}});
  const std::vector<float> init = normal_values(8, size_t(n), 0.02);
  for (ShardBuffers* s : {&a, &b}) set_weights_rn(*s, init.data());
  clipped.init_master(0, a.w());
  prescaled.init_master(0, b.w());

  optim::GradOptions clip;
  clip.max_grad_norm = norm / 4.0;
  const optim::GradReport report = clipped.inspect_grads(std::vector<Tensor>{a.g()}, clip);
  EXPECT_NEAR(report.grad_norm, norm, 1e-12 * norm);
  EXPECT_NEAR(report.clip_factor, clip.max_grad_norm / (norm + 1e-6), 1e-12);
  // Clipping folded into the step == the same step on gradients pre-multiplied by the factor
  // (g * float(factor) rounds identically in both), bit for bit.
  const float factor = float(report.grad_scale);
  for (int64_t i = 0; i < n; ++i) b.g_f32()[i] = a.g_f32()[i] * factor;
  std::vector<Tensor> wa{a.w()}, ga{a.g()}, wb{b.w()}, gb{b.g()};
  clipped.step(wa, ga, report, 1.0);
  prescaled.step(wb, gb, prescaled.inspect_grads(gb), 1.0);
  EXPECT_EQ(0, std::memcmp(clipped.master(0), prescaled.master(0), size_t(n) * 4));
  EXPECT_EQ(0, std::memcmp(a.w_bits(), b.w_bits(), size_t(n) * 2));

  // A loss scale of 2^10 on the gradients, unscaled by the step: identical to unscaled grads.
  optim::AdamW unscaled(simple_config(), {{0, uint64_t(n)}}), scaled(simple_config(), {{0, uint64_t(n)}});
  for (ShardBuffers* s : {&a, &b}) set_weights_rn(*s, init.data());
  unscaled.init_master(0, a.w());
  scaled.init_master(0, b.w());
  fill_grads(a, 1.0);
  fill_grads(b, 1024.0);
  optim::GradOptions loss_scaled;
  loss_scaled.loss_scale = 1024.0;
  const optim::GradReport rs = scaled.inspect_grads(gb, loss_scaled);
  EXPECT_NEAR(rs.grad_norm, norm, 1e-12 * norm);
  unscaled.step(wa, ga, unscaled.inspect_grads(ga), 1.0);
  scaled.step(wb, gb, rs, 1.0);
  EXPECT_EQ(0, std::memcmp(unscaled.master(0), scaled.master(0), size_t(n) * 4));
}

TEST(GradClip, NonFiniteGradientsAreCountedAndTheStepRefuses) {
  const int64_t n = 8192;
  ShardBuffers a(n, DType::kBF16);
  optim::AdamW opt(simple_config(optim::StateFormat::kBlock8), {{0, uint64_t(n)}});
  opt.init_master(0, a.w());
  a.g_bf16()[3] = 0x7FC0;     // NaN
  a.g_bf16()[4000] = 0x7F80;  // +inf
  a.g_bf16()[8191] = 0xFF80;  // -inf
  a.g_bf16()[10] = 0x3F80;    // 1.0
  std::vector<Tensor> w{a.w()}, g{a.g()};
  int reduce_calls = 0;
  opt.set_reduce_hook([&](std::span<double> values) {  // a world of one, but counted
    ++reduce_calls;
    EXPECT_EQ(values.size(), 2u);
  });
  const optim::GradReport report = opt.inspect_grads(g);
  EXPECT_EQ(reduce_calls, 1);
  EXPECT_EQ(report.nonfinite, 3);
  EXPECT_FALSE(std::isfinite(report.grad_norm));
  const std::vector<optim::SavedStateEntry> before = optim::save_optimizer_state(opt);
  try {
    opt.step(w, g, report, 1.0);
    ADD_FAILURE() << "the step took non-finite gradients";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("3 non-finite"), std::string::npos) << e.what();
  }
  // Nothing moved: the step counter and every byte of state are as before.
  const std::vector<optim::SavedStateEntry> after = optim::save_optimizer_state(opt);
  ASSERT_EQ(before.size(), after.size());
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(before[i].bytes, after[i].bytes) << before[i].name;
  EXPECT_EQ(opt.steps_taken(), 0);
}

// Clipping and the skip decided by the kernels from the gradient sums in the device's memory
// (step_clipped_on_device, no host wait before the step) against inspect_grads + step on the host:
// the same state, bit for bit, and the same diagnostics, over three steps with the clip active and a
// loss scale; then non-finite gradients, which the kernels skip without changing a byte.
TEST(GradClip, ClippedOnTheDeviceIsTheHostsStepBitForBit) {
  const int64_t n = 8192;
  ShardBuffers a(n, DType::kF32), b(n, DType::kF32);
  optim::AdamW on_host(simple_config(optim::StateFormat::kBlock8), {{0, uint64_t(n)}});
  optim::AdamW on_device(simple_config(optim::StateFormat::kBlock8), {{0, uint64_t(n)}});
  ASSERT_TRUE(on_device.can_clip_on_device());
  const std::vector<float> init = normal_values(8, size_t(n), 0.02);
  for (ShardBuffers* s : {&a, &b}) set_weights_rn(*s, init.data());
  on_host.init_master(0, a.w());
  on_device.init_master(0, b.w());
  std::vector<Tensor> wa{a.w()}, ga{a.g()}, wb{b.w()}, gb{b.g()};
  optim::GradOptions options;
  options.loss_scale = 256.0;
  for (int step = 1; step <= 3; ++step) {
    fill_grads(a, 256.0 * step);
    fill_grads(b, 256.0 * step);
    options.max_grad_norm = 0.1 / step;  // the unscaled norm is about 0.9 * step: clipped every step
    const optim::GradReport report = on_host.inspect_grads(ga, options);
    ASSERT_LT(report.clip_factor, 1.0);
    const optim::StepDiagnostics host = on_host.step(wa, ga, report, 1.0);
    on_device.step_clipped_on_device(wb, gb, options, 1.0);
    const optim::StepDiagnostics device = on_device.finish_step();
    EXPECT_EQ(device.step, host.step);
    EXPECT_EQ(device.grad_norm, host.grad_norm) << "step " << step;
    EXPECT_EQ(device.clip_factor, host.clip_factor) << "step " << step;
    EXPECT_EQ(device.nonfinite_grads, 0);
    EXPECT_EQ(device.weights_unchanged, host.weights_unchanged) << "step " << step;
    EXPECT_EQ(device.update_rms_ratio, host.update_rms_ratio) << "step " << step;
    EXPECT_EQ(0, std::memcmp(a.w_bits(), b.w_bits(), size_t(n) * 2)) << "step " << step;
    const std::vector<optim::SavedStateEntry> sh = optim::save_optimizer_state(on_host);
    const std::vector<optim::SavedStateEntry> sd = optim::save_optimizer_state(on_device);
    ASSERT_EQ(sh.size(), sd.size());
    for (size_t i = 0; i < sh.size(); ++i) EXPECT_EQ(sh[i].bytes, sd[i].bytes) << sh[i].name << ", step " << step;
  }

  b.g_f32()[17] = std::numeric_limits<float>::quiet_NaN();
  b.g_f32()[5000] = std::numeric_limits<float>::infinity();
  const std::vector<optim::SavedStateEntry> before = optim::save_optimizer_state(on_device);
  const std::vector<uint16_t> weights_before(b.w_bits(), b.w_bits() + n);
  on_device.step_clipped_on_device(wb, gb, options, 1.0);
  const optim::StepDiagnostics skipped = on_device.finish_step();
  EXPECT_EQ(skipped.nonfinite_grads, 2);
  EXPECT_EQ(skipped.elements, 0) << "a skipped step adds no partials";
  EXPECT_EQ(on_device.steps_taken(), 3) << "a skipped step leaves the step counter";
  EXPECT_EQ(0, std::memcmp(weights_before.data(), b.w_bits(), size_t(n) * 2));
  const std::vector<optim::SavedStateEntry> after = optim::save_optimizer_state(on_device);
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(before[i].bytes, after[i].bytes) << before[i].name;

  on_device.set_reduce_hook([](std::span<double>) {});  // sums to reduce over ranks: the host decides
  EXPECT_FALSE(on_device.can_clip_on_device());
}

TEST(OptimConfig, StepChecksItsArguments) {
  const int64_t n = 8192;
  ShardBuffers a(n, DType::kF32);
  optim::AdamW opt(simple_config(), {{0, uint64_t(n)}});
  std::vector<Tensor> w{a.w()}, g{a.g()};
  const optim::GradReport report = opt.inspect_grads(g);
  try {
    opt.step(w, g, report, 1.0);
    ADD_FAILURE() << "stepped without a master";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("init_master(0"), std::string::npos) << e.what();
  }
  opt.init_master(0, a.w());
  std::vector<Tensor> wrong{a.g()};
  EXPECT_THROW(opt.step(wrong, g, report, 1.0), Error);            // f32 weights
  EXPECT_THROW(opt.step(w, std::vector<Tensor>{}, report, 1.0), Error);  // no grads
  EXPECT_THROW(opt.step(w, g, report, std::nan("")), Error);
  EXPECT_NO_THROW(opt.step(w, g, report, 1.0));
  // A state saved by one configuration does not load into another.
  optim::AdamW other(simple_config(optim::StateFormat::kBlock8), {{0, uint64_t(n)}});
  EXPECT_THROW(optim::load_optimizer_state(other, optim::save_optimizer_state(opt)), Error);
}

}  // namespace
}  // namespace farthing::test
