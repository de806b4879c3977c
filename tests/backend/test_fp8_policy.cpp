// test_fp8_policy.cpp — FP8 scaling as policy (framework/backend/fp8_policy.h): the name tables
// a recipe reads, the tiling and format of each tensor role, and delayed scaling's amax history
// (scales from the history as it stood before the step, newest-first shifting, max vs most
// recent, skipped steps dropped, checkpoint round trip).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string_view>
#include <utility>
#include <vector>

#include "framework/backend/fp8_policy.h"
#include "framework/core/error.h"

namespace farthing {
namespace {

namespace nm = farthing::numerics;

TEST(Fp8Policy, NameTablesNameEveryValueOnce) {
  // The recipe parses and prints the fp8 section through these tables (recipe/run_config.h);
  // tests/train/recipe check the refusals of unknown names.
  const std::vector<std::string_view> scalings = {"block", "tensor_current", "tensor_delayed"};
  for (size_t i = 0; i < kFp8ScalingNames.size(); ++i) {
    EXPECT_EQ(kFp8ScalingNames[i].second, scalings[i]);
    EXPECT_EQ(int(kFp8ScalingNames[i].first), int(i));
    EXPECT_EQ(fp8_scaling_name(kFp8ScalingNames[i].first), scalings[i]);
  }
  EXPECT_EQ(kFp8FormatNames[0], std::make_pair(Fp8Format::kE4M3, std::string_view("e4m3")));
  EXPECT_EQ(kFp8FormatNames[1], std::make_pair(Fp8Format::kE5M2, std::string_view("e5m2")));
  EXPECT_EQ(kFp8AmaxComputeNames[1], std::make_pair(Fp8AmaxCompute::kMostRecent, std::string_view("most_recent")));
  EXPECT_EQ(kFp8LayersNames[1], std::make_pair(Fp8Layers::kMlp, std::string_view("mlp")));
  EXPECT_EQ(kFp8LayersNames.size(), 3u);
  EXPECT_EQ(kFp8AmaxComputeNames.size(), 2u);
}

TEST(Fp8Policy, BlockScalingTilesFollowTheReducedDimension) {
  Fp8Recipe r;  // block, DeepSeek-V3
  EXPECT_EQ(fp8_tiling_of(r, Fp8Role::kWeight, false), Fp8Tiling::kBlock128);
  EXPECT_EQ(fp8_tiling_of(r, Fp8Role::kWeight, true), Fp8Tiling::kBlock128);
  EXPECT_EQ(fp8_tiling_of(r, Fp8Role::kInput, false), Fp8Tiling::kRow1x128);
  EXPECT_EQ(fp8_tiling_of(r, Fp8Role::kGradOutput, false), Fp8Tiling::kRow1x128);
  EXPECT_EQ(fp8_tiling_of(r, Fp8Role::kInput, true), Fp8Tiling::kCol128x1);
  EXPECT_EQ(fp8_tiling_of(r, Fp8Role::kGradOutput, true), Fp8Tiling::kCol128x1);
  for (Fp8Scaling s : {Fp8Scaling::kTensorCurrent, Fp8Scaling::kTensorDelayed}) {
    r.scaling = s;
    for (Fp8Role role : {Fp8Role::kInput, Fp8Role::kWeight, Fp8Role::kGradOutput}) {
      EXPECT_EQ(fp8_tiling_of(r, role, false), Fp8Tiling::kTensor);
      EXPECT_EQ(fp8_tiling_of(r, role, true), Fp8Tiling::kTensor);
    }
  }
  r.grad_output = Fp8Format::kE5M2;  // Transformer Engine's hybrid
  EXPECT_EQ(fp8_format_of(r, Fp8Role::kGradOutput), Fp8Format::kE5M2);
  EXPECT_EQ(fp8_format_of(r, Fp8Role::kInput), Fp8Format::kE4M3);
}

TEST(Fp8AmaxHistoryTest, ScalesComeFromEarlierStepsOnly) {
  Fp8Recipe r;
  r.scaling = Fp8Scaling::kTensorDelayed;
  Fp8AmaxHistory h(2, 3);
  // No history yet: the caller scales the first step from the tensor itself (has_history false).
  EXPECT_FALSE(h.has_history(0));
  EXPECT_EQ(h.scale(0, r, Fp8Format::kE4M3), 1.0f);
  h.observe(0, 3.0f);
  h.observe(0, -7.0f);  // amaxes are magnitudes: |x|
  h.observe(1, 0.5f);
  EXPECT_EQ(h.scale(0, r, Fp8Format::kE4M3), 1.0f) << "this step's amaxes must not be used before it ends";
  h.end_step();
  EXPECT_TRUE(h.has_history(0));
  // 448 / 7 = 64, a power of two already.
  EXPECT_EQ(h.scale(0, r, Fp8Format::kE4M3), nm::fp8_scale_from_amax(7.0f, Fp8Format::kE4M3, 0, true));
  EXPECT_EQ(h.scale(0, r, Fp8Format::kE4M3), 64.0f);
  EXPECT_EQ(h.scale(1, r, Fp8Format::kE4M3), 512.0f);  // 448 / 0.5 = 896, floored to 512
  EXPECT_EQ(h.entries()[0], 7.0f);
  EXPECT_EQ(h.entries()[3], 0.5f);
}

TEST(Fp8AmaxHistoryTest, HistoryShiftsNewestFirstAndForgetsBeyondItsLength) {
  Fp8Recipe r;
  r.scaling = Fp8Scaling::kTensorDelayed;
  Fp8AmaxHistory h(1, 3);
  for (float a : {100.0f, 1.0f, 2.0f}) {
    h.observe(0, a);
    h.end_step();
  }
  EXPECT_EQ(h.entries(), (std::vector<float>{2.0f, 1.0f, 100.0f}));
  EXPECT_EQ(h.scale(0, r, Fp8Format::kE4M3), nm::fp8_scale_from_amax(100.0f, Fp8Format::kE4M3, 0, true));
  r.amax_compute = Fp8AmaxCompute::kMostRecent;
  EXPECT_EQ(h.scale(0, r, Fp8Format::kE4M3), nm::fp8_scale_from_amax(2.0f, Fp8Format::kE4M3, 0, true));
  r.amax_compute = Fp8AmaxCompute::kMax;
  h.observe(0, 4.0f);
  h.end_step();  // 100 falls out of the window
  EXPECT_EQ(h.entries(), (std::vector<float>{4.0f, 2.0f, 1.0f}));
  EXPECT_EQ(h.scale(0, r, Fp8Format::kE4M3), nm::fp8_scale_from_amax(4.0f, Fp8Format::kE4M3, 0, true));
}

TEST(Fp8AmaxHistoryTest, ASkippedStepLeavesNoTrace) {
  Fp8Recipe r;
  r.scaling = Fp8Scaling::kTensorDelayed;
  Fp8AmaxHistory h(1, 4);
  h.observe(0, 8.0f);
  h.end_step();
  const std::vector<float> before = h.entries();
  h.observe(0, std::numeric_limits<float>::quiet_NaN());
  h.observe(0, std::numeric_limits<float>::infinity());
  h.discard_step();
  EXPECT_EQ(h.entries(), before);
  h.end_step();  // an empty step records amax 0, which never raises the max
  EXPECT_EQ(h.scale(0, r, Fp8Format::kE4M3), nm::fp8_scale_from_amax(8.0f, Fp8Format::kE4M3, 0, true));
}

TEST(Fp8AmaxHistoryTest, ANaNAmaxDominatesTheStepMax) {
  Fp8AmaxHistory h(1, 2);
  h.observe(0, 5.0f);
  h.observe(0, std::numeric_limits<float>::quiet_NaN());
  h.observe(0, 6.0f);
  EXPECT_GT(h.step_amax_bits()[0], 0x7F800000u) << "a NaN seen in the step must survive later maxes";
}

TEST(Fp8AmaxHistoryTest, EntriesRoundTripAndWrongSizesAreRefused) {
  Fp8AmaxHistory h(2, 2);
  h.set_entries({1.0f, 2.0f, 3.0f, 4.0f});
  Fp8AmaxHistory copy(2, 2);
  copy.set_entries(h.entries());
  Fp8Recipe r;
  EXPECT_EQ(copy.scale(1, r, Fp8Format::kE5M2), h.scale(1, r, Fp8Format::kE5M2));
  EXPECT_THROW(copy.set_entries({1.0f}), Error);
  EXPECT_THROW(Fp8AmaxHistory(1, 0), Error);
}

}  // namespace
}  // namespace farthing
