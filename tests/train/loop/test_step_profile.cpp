// test_step_profile.cpp — train.profile: ops on real training steps (trainer.h, step_profile.h,
// train/plan/step_profile_report.h), stories260K from a preset on random tokens:
//   - every step's busy and idle time add up to its wall time;
//   - a sleep between two ops is the largest idle gap, named by the ops on either side;
//   - the op kinds' call counts per phase are the model's, counted from its structure here (L
//     blocks, A micro-batches, blocks recomputed in backward, the loss in chunks of R rows);
//   - on the strict device, profiling off adds no host work to a step (the device's own counts:
//     readbacks, synchronizations, allocations), and profiling on adds exactly the one wait per
//     step that reading a GPU's event clock costs;
//   - the table and profile.json carry the phases, the ops and their roofline figures.
// Relies on: train/loop/trainer.h, train/plan/step_profile_report.h, backend/strict_device_backend.h,
// tests/train/loop/trainer_test_support.h.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>
#include <fstream>

#include "framework/backend/profiling_backend.h"
#include "framework/backend/strict_device_backend.h"
#include "train/loop/trainer.h"
#include "train/plan/step_profile_report.h"
#include "tests/train/loop/trainer_test_support.h"

namespace farthing::train {
namespace {

constexpr int64_t kLayers = 5;  // stories260K
constexpr int64_t kAccum = 2, kChunkRows = 16, kRows = 2 * 32;  // micro_batch 2 x seq 32
constexpr int64_t kChunks = (kRows + kChunkRows - 1) / kChunkRows;

recipe::RunConfig profiled_run(const testing::TempDir& dir, int64_t steps) {
  recipe::RunConfig config = testing::tiny_token_run(dir.path, steps);
  config.train.profile = recipe::StepProfileMode::kOps;
  config.train.grad_accum = kAccum;
  config.train.precision = recipe::Precision::kBf16;
  config.model.activation_checkpointing = models::Checkpointing::kPerBlock;
  config.model.loss_chunk_rows = kChunkRows;
  return config;
}

// Calls per step of `kind` in `phase` (0 when it never ran there).
double calls_per_step(const StepProfileTotals& t, const char* kind, OpPhase phase) {
  for (const OpKindTotals& o : t.ops) {
    if (o.kind == kind && o.phase == phase) return double(o.calls) / double(t.steps);
  }
  return 0.0;
}

TEST(StepProfile, CallCountsAreTheModelsAndTimeAddsUp) {
  testing::TempDir dir("step_profile_counts");
  Trainer trainer(profiled_run(dir, 3), testing::world(), TrainerOutput{.progress = false});
  ASSERT_NE(trainer.step_profile(), nullptr);
  for (int s = 0; s < 3; ++s) trainer.train_step();
  const RunStepProfile& p = *trainer.step_profile();
  EXPECT_EQ(p.first_step.steps, 1);
  ASSERT_EQ(p.steady.steps, 2);
  const StepProfileTotals& t = p.steady;
  EXPECT_NEAR(t.busy_seconds + t.idle_seconds, t.wall_seconds, 1e-9 * t.wall_seconds);
  double phases = 0.0;
  for (double s : t.phase_seconds) phases += s;
  EXPECT_NEAR(phases, t.busy_seconds, 1e-9 * t.busy_seconds);

  const double L = kLayers, A = kAccum, R = kChunks;
  EXPECT_EQ(calls_per_step(t, "embedding forward", OpPhase::kForward), A);
  EXPECT_EQ(calls_per_step(t, "norm forward", OpPhase::kForward), (2 * L + 1) * A);  // two per block, the final one
  EXPECT_EQ(calls_per_step(t, "attention forward", OpPhase::kForward), L * A);
  EXPECT_EQ(calls_per_step(t, "gemm", OpPhase::kForward), 4 * L * A);  // qkv, out, gate|up, down
  EXPECT_EQ(calls_per_step(t, "norm forward", OpPhase::kRecompute), 2 * L * A);
  EXPECT_EQ(calls_per_step(t, "attention forward", OpPhase::kRecompute), L * A);
  EXPECT_EQ(calls_per_step(t, "gemm", OpPhase::kRecompute), 4 * L * A);
  EXPECT_EQ(calls_per_step(t, "cross-entropy", OpPhase::kHeadLoss), R * A);
  EXPECT_EQ(calls_per_step(t, "gemm", OpPhase::kHeadLoss), 3 * R * A);  // logits, then dx and dW per chunk
  EXPECT_EQ(calls_per_step(t, "attention backward", OpPhase::kBackward), L * A);
  EXPECT_EQ(calls_per_step(t, "norm backward", OpPhase::kBackward), (2 * L + 1) * A);
  EXPECT_EQ(calls_per_step(t, "gemm", OpPhase::kBackward), 8 * L * A);  // dx and dW of each linear
  EXPECT_EQ(calls_per_step(t, "embedding backward", OpPhase::kBackward), A);
  EXPECT_EQ(calls_per_step(t, "attention forward", OpPhase::kBackward), 0.0) << "recomputation counted as backward";
  EXPECT_GT(calls_per_step(t, "optimizer step", OpPhase::kOptimizer), 0.0);
  EXPECT_GT(t.phase_seconds[size_t(OpPhase::kGradients)], 0.0) << "the kept gradients' copies and sums";
  EXPECT_FALSE(t.largest_gaps.empty());

  // The table and the file, with the roofline's figures for the kinds it models.
  const StepProfileContext context = step_profile_context(trainer.config(), trainer.model().config(), 1, "cpu", "");
  const std::string table = step_profile_table(p, context);
  for (const char* want : {"recompute", "head and loss", "attention backward", "largest idle gaps", "GB/s"}) {
    EXPECT_NE(table.find(want), std::string::npos) << want << " missing from:\n" << table;
  }
  const nlohmann::json j = step_profile_json(p, context);
  EXPECT_EQ(j["steady_steps"], 2);
  EXPECT_NEAR(double(j["per_step"]["busy_s"]) + double(j["per_step"]["idle_s"]), double(j["per_step"]["wall_s"]),
              1e-9 * double(j["per_step"]["wall_s"]));
  bool gemm_rate = false, norm_bandwidth = false;
  for (const auto& op : j["ops"]) {
    gemm_rate |= op["kind"] == "gemm" && double(op["tflops"]) > 0.0;
    norm_bandwidth |= op["kind"] == "norm forward" && double(op["gb_per_s"]) > 0.0;
    EXPECT_TRUE(op["roofline_s"].is_null()) << "a CPU has no datasheet roofline";
  }
  EXPECT_TRUE(gemm_rate);
  EXPECT_TRUE(norm_bandwidth);
  // On a GPU each GEMM plan's record joins the file (the trainer copies them in); none here.
  EXPECT_TRUE(j["gemm_plans"].is_array() && j["gemm_plans"].empty()) << "no GEMM plans off a GPU";
  RunStepProfile planned = p;
  planned.gemm_plans.push_back({.key = "dense bf16 m 2 n 4 k 8 lda 8 ldb 4 ldc 4 trans NN out f32 align 16",
                                .algorithm = "algo 6 tile 18 stages 22 cluster 2 swizzle 0 custom 0 split_k 1",
                                .tflops = 2.5,
                                .candidate_tflops = {1.5, 2.5},
                                .how = "the book's choice: candidate 2 of 2 here"});
  const nlohmann::json with_plan = step_profile_json(planned, context);
  ASSERT_EQ(with_plan["gemm_plans"].size(), 1u);
  EXPECT_EQ(with_plan["gemm_plans"][0]["key"], planned.gemm_plans[0].key);
  EXPECT_EQ(with_plan["gemm_plans"][0]["algorithm"], planned.gemm_plans[0].algorithm);
  EXPECT_EQ(with_plan["gemm_plans"][0]["tflops"], 2.5);
  EXPECT_EQ(with_plan["gemm_plans"][0]["candidate_tflops"], nlohmann::json({1.5, 2.5}));
  EXPECT_EQ(with_plan["gemm_plans"][0]["how"], planned.gemm_plans[0].how);
  const StepProfileContext on_h200 =
      step_profile_context(trainer.config(), trainer.model().config(), 1, "cuda:0", "NVIDIA H200");
  ASSERT_NE(on_h200.roofline, nullptr);
  EXPECT_STREQ(on_h200.roofline->name, "h200");
  std::printf("%s", table.c_str());
}

TEST(StepProfile, ASleepBetweenTwoOpsIsTheLargestGapBetweenThem) {
  ProfilingBackend backend(backend_for(Device::cpu()));
  const ProfilingBackend::Install install(backend);
  std::vector<float> x(4096, 1.0f), y(4096, 2.0f);
  NnOps& ops = backend_for(Device::cpu()).nn();
  RunStepProfile run;
  constexpr double kSleep = 0.05;
  for (int64_t step = 1; step <= 2; ++step) {
    backend.profiler().begin_step();
    {
      const OpPhaseScope phase(OpPhase::kBackward);
      ops.zero(x.data(), int64_t(x.size()));
      ops.accumulate(x.data(), y.data(), int64_t(x.size()));
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(kSleep));
    {
      const OpPhaseScope phase(OpPhase::kGradients);
      ops.copy(y.data(), x.data(), int64_t(x.size()));
      ops.zero(x.data(), int64_t(x.size()));
    }
    run.add(backend.profiler().end_step(), step);
  }
  ASSERT_EQ(run.steady.steps, 1);
  ASSERT_FALSE(run.steady.largest_gaps.empty());
  const IdleGap& largest = run.steady.largest_gaps.front();
  EXPECT_EQ(largest.after, "accumulate");
  EXPECT_EQ(largest.before, "copy");
  EXPECT_EQ(largest.phase, OpPhase::kGradients);
  EXPECT_EQ(largest.step, 2);
  EXPECT_GE(largest.seconds, kSleep);
  EXPECT_GE(run.steady.idle_seconds, kSleep);
  EXPECT_LT(run.steady.phase_seconds[size_t(OpPhase::kGradients)], kSleep) << "the sleep counted as an op";
}

// Per-step counts of the strict device over steps 2..4 of a run.
StrictDeviceBackend::HostWaitCounts strict_counts_per_step(recipe::StepProfileMode mode) {
  testing::TempDir dir("step_profile_strict");
  recipe::RunConfig config = testing::tiny_token_run(dir.path, 4);
  config.train.device = recipe::TrainDevice::kStrict;
  config.train.precision = recipe::Precision::kBf16;
  config.train.max_grad_norm = 1.0;
  config.train.profile = mode;
  auto& strict = static_cast<StrictDeviceBackend&>(backend_for(Device::strict()));
  Trainer trainer(config, testing::world(), TrainerOutput{.progress = false});
  EXPECT_EQ(trainer.step_profile() != nullptr, mode == recipe::StepProfileMode::kOps);
  trainer.train_step();
  const StrictDeviceBackend::HostWaitCounts before = strict.host_wait_counts();
  for (int s = 0; s < 3; ++s) trainer.train_step();
  const StrictDeviceBackend::HostWaitCounts after = strict.host_wait_counts();
  return {(after.readbacks - before.readbacks) / 3, (after.synchronizations - before.synchronizations) / 3,
          (after.allocations - before.allocations) / 3, after.pool_growths - before.pool_growths};
}

TEST(StepProfile, OffAddsNoHostWorkOnTheStrictDeviceAndOnAddsOneWait) {
  const StrictDeviceBackend::HostWaitCounts off = strict_counts_per_step(recipe::StepProfileMode::kOff);
  const StrictDeviceBackend::HostWaitCounts on = strict_counts_per_step(recipe::StepProfileMode::kOps);
  std::printf("per step, profile off: %lld readbacks, %lld synchronizations, %lld allocations; on: %lld, %lld, %lld\n",
              (long long)off.readbacks, (long long)off.synchronizations, (long long)off.allocations,
              (long long)on.readbacks, (long long)on.synchronizations, (long long)on.allocations);
  // Off: the step's own budget (test_step_host_waits.cpp): its two results, read at its end.
  EXPECT_EQ(off.waits(), 2);
  EXPECT_EQ(off.synchronizations, 0);
  // On: the same readbacks and allocations, and one synchronize to read the clock's marks.
  EXPECT_EQ(on.readbacks, off.readbacks);
  EXPECT_EQ(on.allocations, off.allocations);
  EXPECT_EQ(on.synchronizations, off.synchronizations + 1);
}

}  // namespace
}  // namespace farthing::train
