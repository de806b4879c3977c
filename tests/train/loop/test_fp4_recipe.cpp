// test_fp4_recipe.cpp — the FP4 recipes as policy (framework/backend/fp4_policy.h) and how a run
// asks for them (train.precision nvfp4 | mxfp4, the nvfp4 / mxfp4 sections; the CUDA refusal).
//
// 1. Each section defaults to its paper's recipe, and a --set overrides one knob of it only.
// 2. Which GEMMs are FP4, which get the Hadamard transform, which operands round stochastically
//    and which are 2D-scaled, for both papers and the ablations.
// 3. How many last blocks stay bf16 (rounded up; none at 0, all at 1).
// 4. A CUDA device below sm_100 (no FP4 tensor cores) is refused in one line unless
//    train.fp4_gpu_emulation opts in; sm_100 and later, and the CPU, are never refused.
// 5. The 3/4 pre-scale (sr_prescale) is mxfp4's default and refused with e4m3 scales.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "framework/backend/fp4_policy.h"
#include "framework/core/error.h"
#include "train/recipe/recipe.h"
#include "train/loop/model_options.h"

namespace farthing {
namespace {

const std::string kRecipe = "model:\n  path: models/SmolLM2-135M\ndata:\n  train: data/train.txt\n";

recipe::RunConfig parse(const std::vector<std::string>& overrides) {
  return recipe::parse_recipe_text(kRecipe, "recipe.yaml", overrides);
}

TEST(Fp4Policy, SectionsDefaultToThePapers) {
  const recipe::RunConfig c = parse({"train.precision=nvfp4"});
  EXPECT_EQ(c.nvfp4, kNvfp4Paper);
  EXPECT_EQ(c.mxfp4, kMxfp4Paper);
  EXPECT_EQ(train::fp4_recipe_of(c), &c.nvfp4);
  const recipe::RunConfig m = parse({"train.precision=mxfp4"});
  EXPECT_EQ(train::fp4_recipe_of(m), &m.mxfp4);
  EXPECT_EQ(train::fp4_recipe_of(parse({"train.precision=fp8"})), nullptr);
  const recipe::RunConfig o = parse({"train.precision=nvfp4", "nvfp4.rht=none"});
  Fp4Recipe expected = kNvfp4Paper;
  expected.rht = Fp4Rht::kNone;
  EXPECT_EQ(o.nvfp4, expected);
  EXPECT_EQ(o.mxfp4, kMxfp4Paper);
}

TEST(Fp4Policy, Nvfp4Paper) {
  const Fp4Recipe& r = kNvfp4Paper;
  EXPECT_EQ(r.block, 16);
  EXPECT_EQ(r.scale, Fp4Scale::kE4M3);
  for (Fp4Gemm g : {Fp4Gemm::kForward, Fp4Gemm::kDgrad, Fp4Gemm::kWgrad}) EXPECT_TRUE(fp4_gemm_in_fp4(r, g));
  EXPECT_FALSE(fp4_uses_rht(r, Fp4Gemm::kForward));
  EXPECT_FALSE(fp4_uses_rht(r, Fp4Gemm::kDgrad));
  EXPECT_TRUE(fp4_uses_rht(r, Fp4Gemm::kWgrad));
  EXPECT_TRUE(fp4_rounds_stochastically(r, Fp4Gemm::kDgrad, Fp4OperandRole::kGradOutput));
  EXPECT_TRUE(fp4_rounds_stochastically(r, Fp4Gemm::kWgrad, Fp4OperandRole::kGradOutput));
  EXPECT_FALSE(fp4_rounds_stochastically(r, Fp4Gemm::kDgrad, Fp4OperandRole::kWeight));
  EXPECT_FALSE(fp4_rounds_stochastically(r, Fp4Gemm::kWgrad, Fp4OperandRole::kInput));
  EXPECT_FALSE(fp4_rounds_stochastically(r, Fp4Gemm::kForward, Fp4OperandRole::kInput));
  EXPECT_TRUE(fp4_block_2d(r, Fp4OperandRole::kWeight));
  EXPECT_FALSE(fp4_block_2d(r, Fp4OperandRole::kInput));
  EXPECT_FALSE(fp4_block_2d(r, Fp4OperandRole::kGradOutput));
}

TEST(Fp4Policy, Mxfp4Paper) {
  const Fp4Recipe& r = kMxfp4Paper;
  EXPECT_EQ(r.block, 32);
  EXPECT_EQ(r.scale, Fp4Scale::kE8M0);
  EXPECT_FALSE(fp4_gemm_in_fp4(r, Fp4Gemm::kForward));
  EXPECT_TRUE(fp4_gemm_in_fp4(r, Fp4Gemm::kDgrad));
  EXPECT_TRUE(fp4_gemm_in_fp4(r, Fp4Gemm::kWgrad));
  EXPECT_TRUE(fp4_uses_rht(r, Fp4Gemm::kDgrad));
  EXPECT_TRUE(fp4_uses_rht(r, Fp4Gemm::kWgrad));
  for (Fp4OperandRole role : {Fp4OperandRole::kInput, Fp4OperandRole::kWeight, Fp4OperandRole::kGradOutput}) {
    EXPECT_TRUE(fp4_rounds_stochastically(r, Fp4Gemm::kWgrad, role));
    EXPECT_FALSE(fp4_block_2d(r, role));
  }
  EXPECT_EQ(fp4_bf16_last_blocks(r, 30), 0);
  EXPECT_TRUE(r.sr_prescale);  // Tseng et al.'s 3/4, so no SR operand clips
  EXPECT_FALSE(kNvfp4Paper.sr_prescale);
}

TEST(Fp4Policy, ThreeQuarterPrescaleIsForE8M0Only) {
  EXPECT_FALSE(parse({"train.precision=mxfp4", "mxfp4.sr_prescale=false"}).mxfp4.sr_prescale);
  try {
    parse({"train.precision=nvfp4", "nvfp4.sr_prescale=true"});
    FAIL() << "nvfp4.sr_prescale with e4m3 scales was accepted";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("nvfp4.sr_prescale"), std::string::npos) << what;
    EXPECT_NE(what.find("e8m0"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
  EXPECT_TRUE(parse({"train.precision=nvfp4", "nvfp4.scale=e8m0", "nvfp4.sr_prescale=true"}).nvfp4.sr_prescale);
}

TEST(Fp4Policy, Ablations) {
  Fp4Recipe r = kNvfp4Paper;
  r.sr = Fp4Sr::kNone;
  r.rht = Fp4Rht::kNone;
  for (Fp4Gemm g : {Fp4Gemm::kForward, Fp4Gemm::kDgrad, Fp4Gemm::kWgrad}) {
    EXPECT_FALSE(fp4_uses_rht(r, g));
    EXPECT_FALSE(fp4_rounds_stochastically(r, g, Fp4OperandRole::kGradOutput));
  }
}

TEST(Fp4Policy, Bf16LastBlocksRoundUp) {
  Fp4Recipe r = kNvfp4Paper;  // 0.15
  EXPECT_EQ(fp4_bf16_last_blocks(r, 5), 1);
  EXPECT_EQ(fp4_bf16_last_blocks(r, 30), 5);   // 4.5 -> 5
  EXPECT_EQ(fp4_bf16_last_blocks(r, 62), 10);  // 9.3 -> 10
  r.bf16_last_fraction = 0.2;
  EXPECT_EQ(fp4_bf16_last_blocks(r, 5), 1);  // 0.2 * 5 is 1.0000000000000002 in binary
  r.bf16_last_fraction = 0.0;
  EXPECT_EQ(fp4_bf16_last_blocks(r, 30), 0);
  r.bf16_last_fraction = 1.0;
  EXPECT_EQ(fp4_bf16_last_blocks(r, 30), 30);
}

std::string device_error(const recipe::RunConfig& c, Device d, int cc) {
  try {
    train::check_fp4_device(c, d, cc);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Fp4Policy, CudaIsRefusedInOneLineUnlessEmulationIsAsked) {
  const recipe::RunConfig c = parse({"train.precision=nvfp4"});
  const std::string hopper = device_error(c, Device::cuda(0), 90);
  EXPECT_NE(hopper.find("FP4 tensor cores"), std::string::npos) << hopper;
  EXPECT_NE(hopper.find("sm_90"), std::string::npos) << hopper;
  EXPECT_NE(hopper.find("train.fp4_gpu_emulation"), std::string::npos) << hopper;
  EXPECT_EQ(hopper.find('\n'), std::string::npos) << hopper;
  EXPECT_EQ(device_error(parse({"train.precision=mxfp4"}), Device::cuda(0), 100), "");  // cuBLASLt FP4
  EXPECT_EQ(device_error(c, Device::cuda(0), 120), "");
  EXPECT_EQ(device_error(parse({"train.precision=nvfp4", "train.fp4_gpu_emulation=true"}), Device::cuda(0), 90), "");
  EXPECT_EQ(device_error(c, Device::cpu(), 0), "");
  EXPECT_EQ(device_error(parse({"train.precision=bf16"}), Device::cuda(0), 90), "");
}

}  // namespace
}  // namespace farthing
