// test_optim_memory.cpp — bytes per parameter measured by the memory tracker for the three
// configurations of docs/design.md §6 (and 8-bit state with Transformer Engine's 16-bit
// master remainders), against memory_plan's prediction.
#include <gtest/gtest.h>

#include <cstdio>

#include "framework/optim/adamw.h"
#include "framework/optim/memory_plan.h"
#include "tests/optim/optim_test_util.h"

namespace farthing::test {
namespace {

constexpr int64_t kN = 1 << 20;

struct Case {
  const char* name;
  optim::StateFormat state;
  optim::MasterMode master;
  optim::WeightRounding rounding;
  double expected_total;  // docs/design.md §6
};

int64_t tracked(MemoryCategory c) { return memory_tracker(Device::cpu()).snapshot().current_bytes[size_t(c)]; }

TEST(OptimMemory, MeasuredBytesPerParameter) {
  const Case cases[] = {
      {"fp32 state + fp32 master", optim::StateFormat::kF32, optim::MasterMode::kF32,
       optim::WeightRounding::kNearest, 16.0},
      {"8-bit state + fp32 master", optim::StateFormat::kBlock8, optim::MasterMode::kF32,
       optim::WeightRounding::kNearest, 10.03125},
      {"8-bit state + 16-bit remainders", optim::StateFormat::kBlock8, optim::MasterMode::kRemainder16,
       optim::WeightRounding::kNearest, 8.03125},
      {"8-bit state, no master, SR", optim::StateFormat::kBlock8, optim::MasterMode::kNone,
       optim::WeightRounding::kStochastic, 6.03125},
      {"4-bit state, no master, SR", optim::StateFormat::kBlock4, optim::MasterMode::kNone,
       optim::WeightRounding::kStochastic, 5.0625},
  };
  const MemoryCategory categories[] = {MemoryCategory::kWeights, MemoryCategory::kGrads, MemoryCategory::kMaster,
                                       MemoryCategory::kOptimizerState};
  for (const Case& c : cases) {
    int64_t before[4];
    for (int k = 0; k < 4; ++k) before[k] = tracked(categories[k]);
    optim::OptimizerConfig config;
    config.groups = {{"all", {}, c.state}};
    config.ranges = {{"w", 0, uint64_t(kN), 0}};
    config.master_mode = c.master;
    config.weight_rounding = c.rounding;
    ShardBuffers shard(kN, DType::kBF16);
    optim::AdamW opt(config, {{0, uint64_t(kN)}});
    double per_param[4];
    for (int k = 0; k < 4; ++k) per_param[k] = double(tracked(categories[k]) - before[k]) / double(kN);
    const double total = per_param[0] + per_param[1] + per_param[2] + per_param[3];
    const optim::BytesPerParam plan = optim::bytes_per_param(c.state, c.master);
    std::printf("%-28s measured %.4f B/param (weights %.2f, grads %.2f, master %.2f, moments %.4f); "
                "plan %.4f\n", c.name, total, per_param[0], per_param[1], per_param[2], per_param[3], plan.total());
    EXPECT_DOUBLE_EQ(per_param[0], plan.weights) << c.name;
    EXPECT_DOUBLE_EQ(per_param[1], plan.grads) << c.name;
    EXPECT_DOUBLE_EQ(per_param[2], plan.master) << c.name;
    EXPECT_NEAR(per_param[3], plan.moments, 1e-4) << c.name << ": only 64-byte alignment may differ";
    EXPECT_NEAR(total, c.expected_total, 1e-3) << c.name;
    // Beside the state, the optimizer keeps its step's partial sums (a few dozen bytes) on the device.
    const int64_t sums = optim::AdamW::planned_bytes(config, {{0, uint64_t(kN)}}).step_sums;
    EXPECT_GT(sums, 0);
    EXPECT_EQ(opt.state_bytes() + sums, int64_t(double(kN) * (per_param[2] + per_param[3]) + 0.5)) << c.name;
  }
}

}  // namespace
}  // namespace farthing::test
