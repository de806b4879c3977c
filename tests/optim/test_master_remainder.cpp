// test_master_remainder.cpp — Transformer Engine's 16-bit master remainders (docs/numerics.md §7):
// the split is lossless on every fp32 pattern, the bf16 weight is round-to-nearest (ties away
// from zero), and an AdamW run with remainders reproduces the fp32-master run bit for bit.
#include <gtest/gtest.h>

#include <cstdio>

#include "framework/optim/adamw.h"
#include "kernels/numerics/master_remainder.h"
#include "tests/optim/optim_test_util.h"

namespace farthing::test {
namespace {

TEST(MasterRemainder, SplitIsLosslessAndRoundsToNearest) {
  SplitMix64 rng(77);
  int64_t ties = 0;
  // Random patterns of every kind, then every low half of two highs (one even, one odd).
  auto check = [&](uint32_t bits) {
    const float x = numerics::bits_to_f32(bits);
    const numerics::MasterSplit s = numerics::master_split(x);
    ASSERT_EQ(numerics::f32_to_bits(numerics::master_combine(s.weight, s.remainder)), bits) << std::hex << bits;
    if ((bits & 0x7F800000u) == 0x7F800000u) return;  // inf/NaN: lossless is all we promise
    if ((bits & 0xFFFFu) == 0x8000u) {
      ++ties;  // ties go away from zero
      ASSERT_EQ(s.weight, uint16_t((bits >> 16) + 1)) << std::hex << bits;
    } else if (s.weight != 0x7F80u && s.weight != 0xFF80u) {
      ASSERT_EQ(s.weight, numerics::f32_to_bf16_rne(x)) << std::hex << bits;
    }
  };
  for (int i = 0; i < (1 << 20); ++i) check(uint32_t(rng.next() >> 32));
  for (uint32_t low = 0; low < 0x10000u; ++low) {
    check(0x3F800000u | low);  // 1.0 .. (even high half)
    check(0x3F810000u | low);  // odd high half
    check(0xBC230000u | low);  // negative
  }
  EXPECT_GE(ties, 3);
}

TEST(MasterRemainder, AdamWWithRemaindersEqualsTheFp32MasterRun) {
  constexpr int64_t kN = 200000;
  auto make = [](optim::MasterMode mode) {
    optim::OptimizerConfig c;
    c.groups = {{"g", {1e-4, 0.9, 0.999, 1e-8, 0.01}, optim::StateFormat::kBlock8}};
    c.ranges = {{"w", 0, uint64_t(kN), 0}};
    c.master_mode = mode;
    return c;
  };
  optim::AdamW full(make(optim::MasterMode::kF32), {{0, uint64_t(kN)}});
  optim::AdamW rem(make(optim::MasterMode::kRemainder16), {{0, uint64_t(kN)}});
  ShardBuffers a(kN, DType::kBF16), b(kN, DType::kBF16);
  const std::vector<float> init = normal_values(41, size_t(kN), 0.02);
  const Tensor init_t(const_cast<float*>(init.data()), DType::kF32, Shape{kN});
  const Tensor wa = a.w(), wb = b.w();
  full.init_master(0, init_t, &wa);
  rem.init_master(0, init_t, &wb);
  for (int t = 1; t <= 20; ++t) {
    const std::vector<float> g = normal_values(900 + uint64_t(t), size_t(kN), 1e-3);
    for (int64_t i = 0; i < kN; ++i) a.g_bf16()[i] = b.g_bf16()[i] = numerics::f32_to_bf16_rne(g[size_t(i)]);
    step_once(full, {&a});
    const optim::StepDiagnostics d = step_once(rem, {&b});
    int64_t weight_differences = 0;
    for (int64_t i = 0; i < kN; ++i) {
      const float master = numerics::master_combine(b.w_bits()[i], rem.master_remainder(0)[i]);
      ASSERT_EQ(numerics::f32_to_bits(master), numerics::f32_to_bits(full.master(0)[i])) << "step " << t << " elem " << i;
      weight_differences += a.w_bits()[i] != b.w_bits()[i];  // RNE vs ties-away: exact ties only
    }
    EXPECT_LE(weight_differences, kN / 1000) << "step " << t;
    if (t == 1 || t == 20) {
      std::printf("step %2d: masters bit-identical; bf16 weights differing from the RNE cast: %lld of %lld; "
                  "unchanged %.4f\n", t, (long long)weight_differences, (long long)kN, d.unchanged_fraction);
    }
  }
}

TEST(MasterRemainder, RejectsStochasticWeights) {
  optim::OptimizerConfig c;
  c.groups = {{"g", {}, optim::StateFormat::kF32}};
  c.ranges = {{"w", 0, 1024, 0}};
  c.master_mode = optim::MasterMode::kRemainder16;
  c.weight_rounding = optim::WeightRounding::kStochastic;
  EXPECT_THROW(optim::AdamW(c, {{0, 1024}}), Error);
  EXPECT_EQ(optim::parse_master_mode("remainder16"), optim::MasterMode::kRemainder16);
}

}  // namespace
}  // namespace farthing::test
