// test_exp_f32.cpp — numerics::exp_f32 against the correctly rounded e^x (computed in double):
// at most 2 ulp over 10^7 points spread over the whole finite range (subnormal results
// included), exact at 0, and the special values (inf, NaN, overflow, underflow) right.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernels/numerics/exp_f32.h"

namespace farthing::numerics {
namespace {

int64_t ordered(float x) {
  int32_t i;
  std::memcpy(&i, &x, 4);
  return i < 0 ? -int64_t(i & 0x7FFFFFFF) : int64_t(i);
}

int64_t ulp_distance(float a, float b) { return std::llabs(ordered(a) - ordered(b)); }

TEST(ExpF32, WithinTwoUlpOfTheCorrectlyRoundedValueEverywhere) {
  int64_t worst = 0;
  float worst_x = 0.0f;
  constexpr int kPoints = 10'000'000;
  for (int i = 0; i <= kPoints; ++i) {
    const float x = -104.0f + 193.0f * float(i) / float(kPoints);  // [-104, 89]
    const float want = float(std::exp(double(x)));
    const float got = exp_f32(x);
    const int64_t d = ulp_distance(got, want);
    if (d > worst) {
      worst = d;
      worst_x = x;
    }
  }
  // Small arguments, where e^x ~ 1 + x: every float in [-2^-10, 2^-10] around zero, sampled.
  for (float x = -0.0009765625f; x <= 0.0009765625f; x += 1.1e-7f) {
    const int64_t d = ulp_distance(exp_f32(x), float(std::exp(double(x))));
    if (d > worst) {
      worst = d;
      worst_x = x;
    }
  }
  std::printf("max error %lld ulp at x = %.9g\n", (long long)worst, double(worst_x));
  EXPECT_LE(worst, 2) << "at x = " << worst_x;
}

TEST(ExpF32, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(exp_f32(0.0f), 1.0f);
  EXPECT_EQ(exp_f32(-0.0f), 1.0f);
  EXPECT_EQ(exp_f32(inf), inf);
  EXPECT_EQ(exp_f32(-inf), 0.0f);
  EXPECT_TRUE(std::isnan(exp_f32(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(exp_f32(88.8f), inf);
  EXPECT_EQ(exp_f32(1000.0f), inf);
  EXPECT_EQ(exp_f32(-104.0f), 0.0f);
  EXPECT_EQ(exp_f32(-1000.0f), 0.0f);
  EXPECT_TRUE(std::isfinite(exp_f32(88.72f)));  // the largest finite results stay finite
  EXPECT_LE(ulp_distance(exp_f32(88.72f), float(std::exp(double(88.72f)))), 2);
  EXPECT_GT(exp_f32(-100.0f), 0.0f);                    // subnormal results, not flushed
  EXPECT_LE(ulp_distance(exp_f32(-100.0f), float(std::exp(-100.0))), 2);
}

}  // namespace
}  // namespace farthing::numerics
