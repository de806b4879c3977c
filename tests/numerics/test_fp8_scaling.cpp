// test_fp8_scaling.cpp — the scalar FP8 scaling definitions (kernels/numerics/fp8_scaling.h),
// which the CPU emulation and the CUDA kernels share, so a wrong rule here is wrong everywhere.
//
// 1. Every E4M3 and E5M2 code (all 256 of each) through decode -> rescale -> quantize ->
//    dequantize, with scales 1, 2^-7, 2^10 and the non-power-of-two 448/3.7: the code comes back
//    for every finite code; with a power-of-two scale the value comes back exactly, with the other
//    one within one fp32 rounding of the exact rescale; NaN stays NaN; values beyond the range and
//    infinities saturate at ±max (448 / 57344); ties go to the even code. The amax reduction is
//    numeric on finite values and NaN-dominant in any order.
// 2. fp8_scale_from_amax: zero, NaN and infinite amax give 1; margins divide by 2^margin;
//    power-of-two flooring; the clamps at tiny and huge amax (with s_inv normal, as the header
//    promises); the margin still applies where max / amax overflows fp32; scale * amax never
//    exceeds the format's max (every significand of one binade, and random amaxes over the whole
//    fp32 range), nor max / 2^margin.
// 3. Tile geometry: fp8_scale_count / fp8_scale_index for every tiling on dimensions that are not
//    multiples of 128, against tiles enumerated from the tiling's definition (edge tiles cut short).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/numerics/fp8_scaling.h"
#include "tests/support/test_support.h"

namespace farthing::numerics {
namespace {

constexpr Fp8Format kFormats[] = {Fp8Format::kE4M3, Fp8Format::kE5M2};
constexpr Fp8Tiling kTilings[] = {Fp8Tiling::kTensor, Fp8Tiling::kRow1x128, Fp8Tiling::kCol128x1,
                                  Fp8Tiling::kBlock128};

const char* name(Fp8Format f) { return f == Fp8Format::kE4M3 ? "E4M3" : "E5M2"; }
const char* name(Fp8Tiling t) {
  return t == Fp8Tiling::kTensor ? "kTensor" : t == Fp8Tiling::kRow1x128 ? "kRow1x128"
                                           : t == Fp8Tiling::kCol128x1  ? "kCol128x1"
                                                                        : "kBlock128";
}

// The format's codes: max finite magnitude code, and whether a code is NaN / infinite.
uint8_t max_code(Fp8Format f) { return f == Fp8Format::kE4M3 ? 0x7E : 0x7B; }
bool is_nan_code(uint8_t c, Fp8Format f) {
  const uint8_t a = c & 0x7F;
  return f == Fp8Format::kE4M3 ? a == 0x7F : a > 0x7C;
}
bool is_inf_code(uint8_t c, Fp8Format f) { return f == Fp8Format::kE5M2 && (c & 0x7F) == 0x7C; }

bool is_pow2(float s) { return s > 0 && std::isfinite(s) && (f32_to_bits(s) & 0x7FFFFFu) == 0u; }

// ---------------------------------------------------------------------------------------------
// 1. Every code, several scales.

TEST(Fp8Scaling, FormatMaxima) {
  EXPECT_EQ(fp8_max_finite(Fp8Format::kE4M3), 448.0f);
  EXPECT_EQ(fp8_max_finite(Fp8Format::kE5M2), 57344.0f);
  for (Fp8Format f : kFormats) EXPECT_EQ(fp8_decode(max_code(f), f), fp8_max_finite(f)) << name(f);
}

TEST(Fp8Scaling, EveryCodeRoundTripsThroughEveryScale) {
  const float scales[] = {1.0f, 0x1p-7f, 0x1p10f, 448.0f / 3.7f};
  for (Fp8Format f : kFormats) {
    for (float s : scales) {
      const float s_inv = fp8_scale_inv(s);
      const bool pow2 = is_pow2(s);
      if (pow2) {
        ASSERT_EQ(double(s) * double(s_inv), 1.0) << "1/s of a power of two is exact";
      }
      int finite = 0;
      for (int ci = 0; ci < 256; ++ci) {
        const uint8_t code = uint8_t(ci);
        const float v = fp8_decode(code, f);
        // The tensor value that this code stands for at scale s.
        const float x = v * s_inv;
        const uint8_t q = fp8_quantize(x, s, f);
        if (is_nan_code(code, f)) {
          ASSERT_TRUE(std::isnan(v)) << name(f) << " code " << ci;
          EXPECT_TRUE(is_nan_code(q, f)) << name(f) << " s " << s << " NaN code " << ci << " -> " << int(q);
          EXPECT_TRUE(std::isnan(fp8_dequantize(q, s_inv, f)));
          continue;
        }
        if (is_inf_code(code, f)) {  // E5M2 ±inf: the saturating cast gives ±max
          ASSERT_TRUE(std::isinf(v));
          EXPECT_EQ(q, uint8_t((code & 0x80) | max_code(f))) << name(f) << " s " << s << " inf code " << ci;
          continue;
        }
        ++finite;
        ASSERT_TRUE(std::isfinite(v));
        EXPECT_EQ(q, code) << name(f) << " s " << s << " code " << ci << " value " << v;
        const float back = fp8_dequantize(q, s_inv, f);
        if (pow2) {
          // Exact both ways: the dequantized value is the code's value rescaled, bit for bit.
          EXPECT_EQ(f32_to_bits(back), f32_to_bits(x)) << name(f) << " s " << s << " code " << ci;
          EXPECT_EQ(double(back) * double(s), double(v)) << name(f) << " s " << s << " code " << ci;
        } else {
          // One fp32 rounding of s_inv and one of the product: within 2 * 2^-24 relative.
          const double exact = double(v) / double(s);
          EXPECT_LE(std::fabs(double(back) - exact), 2.0 * 0x1p-24 * std::fabs(exact) * 1.0000001)
              << name(f) << " s " << s << " code " << ci;
        }
      }
      EXPECT_EQ(finite, f == Fp8Format::kE4M3 ? 254 : 248) << name(f);
    }
  }
}

TEST(Fp8Scaling, BeyondRangeAndInfinitiesSaturateNanStaysNan) {
  const float scales[] = {1.0f, 0x1p-7f, 0x1p10f, 448.0f / 3.7f};
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (Fp8Format f : kFormats) {
    const float max = fp8_max_finite(f);
    for (float s : scales) {
      const float s_inv = fp8_scale_inv(s);
      // Scaled values x * s past max (past the midpoint to the next, nonexistent code too), then
      // inputs whose scaled product is huge or overflows fp32, and infinities.
      std::vector<float> inputs;
      for (float y : {max * 1.0625f, max * 1.25f, max * 2.0f, max * 1e6f}) inputs.push_back(y * s_inv);
      for (float x : {1e30f, std::numeric_limits<float>::max(), inf}) inputs.push_back(x);
      for (float x0 : inputs) {
        for (float sign : {1.0f, -1.0f}) {
          const float x = sign * x0;
          const uint8_t q = fp8_quantize(x, s, f);
          const uint8_t want = uint8_t((sign < 0 ? 0x80 : 0x00) | max_code(f));
          EXPECT_EQ(q, want) << name(f) << " s " << s << " x " << x;
          EXPECT_EQ(fp8_dequantize(q, s_inv, f), sign * max * s_inv) << name(f) << " s " << s << " x " << x;
        }
      }
      for (float x : {nan, -nan, bits_to_f32(0x7F800001u), bits_to_f32(0xFFFFFFFFu)}) {
        const uint8_t q = fp8_quantize(x, s, f);
        EXPECT_TRUE(is_nan_code(q, f)) << name(f) << " s " << s << " NaN input -> code " << int(q);
        EXPECT_TRUE(std::isnan(fp8_dequantize(q, s_inv, f)));
      }
    }
  }
}

TEST(Fp8Scaling, TiesGoToTheEvenCode) {
  for (Fp8Format f : kFormats) {
    for (float s : {1.0f, 0x1p-7f, 0x1p10f}) {
      const float s_inv = fp8_scale_inv(s);
      for (int ci = 0; ci < int(max_code(f)); ++ci) {  // consecutive positive finite codes ci, ci + 1
        const float lo = fp8_decode(uint8_t(ci), f), hi = fp8_decode(uint8_t(ci + 1), f);
        const float mid = (lo + hi) * 0.5f;  // exact: one more bit than the format has
        ASSERT_EQ(double(mid), (double(lo) + double(hi)) / 2);
        const uint8_t even = uint8_t(ci % 2 == 0 ? ci : ci + 1);
        EXPECT_EQ(fp8_quantize(mid * s_inv, s, f), even) << name(f) << " s " << s << " between codes " << ci;
        EXPECT_EQ(fp8_quantize(-mid * s_inv, s, f), uint8_t(0x80 | even)) << name(f) << " s " << s;
      }
    }
  }
}

// The amax: the max of |x| as ordered bits. NaN beats everything (+inf included) whatever the
// order of the reduction, -0 counts as 0, and the order among finite values is the numeric one.
TEST(Fp8Scaling, AmaxBitsAreNumericAndNanDominantInAnyOrder) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(fp8_abs_bits(-0.0f), 0u);
  EXPECT_EQ(fp8_abs_bits(-3.5f), f32_to_bits(3.5f));
  test::SplitMix64 rng(77);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<float> v;
    for (int i = 0; i < 9; ++i) v.push_back(float(rng.normal()) * std::ldexp(1.0f, int(rng.next() % 60) - 30));
    v.push_back(trial % 2 ? -inf : inf);
    const bool with_nan = trial % 3 != 0;
    if (with_nan) v.push_back(trial % 4 ? std::numeric_limits<float>::quiet_NaN() : bits_to_f32(0xFF800001u));
    double want = 0;
    for (float x : v) want = std::isnan(x) ? want : std::max(want, std::fabs(double(x)));
    for (int order = 0; order < 6; ++order) {  // the NaN and the inf at different places
      for (size_t i = v.size() - 1; i > 0; --i) std::swap(v[i], v[size_t(rng.next() % (i + 1))]);
      uint32_t m = 0;
      for (float x : v) m = fp8_amax_bits_max(m, fp8_abs_bits(x));
      const float amax = bits_to_f32(m);
      if (with_nan) {
        ASSERT_TRUE(std::isnan(amax)) << "trial " << trial << " order " << order;
      } else {
        ASSERT_EQ(double(amax), want) << "trial " << trial;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// 2. fp8_scale_from_amax.

TEST(Fp8ScaleFromAmax, ZeroNanAndInfiniteAmaxGiveOne) {
  const float inf = std::numeric_limits<float>::infinity();
  const float specials[] = {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(),
                            bits_to_f32(0x7F800001u), bits_to_f32(0xFFC00000u)};
  for (Fp8Format f : kFormats) {
    for (int margin : {0, 1, 5, 32}) {
      for (bool pow2 : {false, true}) {
        for (float a : specials) {
          EXPECT_EQ(f32_to_bits(fp8_scale_from_amax(a, f, margin, pow2)), f32_to_bits(1.0f))
              << name(f) << " margin " << margin << " pow2 " << pow2 << " amax bits " << std::hex << f32_to_bits(a);
        }
      }
    }
  }
}

TEST(Fp8ScaleFromAmax, PlainValues) {
  // max / amax, in fp32.
  EXPECT_EQ(fp8_scale_from_amax(448.0f, Fp8Format::kE4M3, 0, false), 1.0f);
  EXPECT_EQ(fp8_scale_from_amax(1.0f, Fp8Format::kE4M3, 0, false), 448.0f);
  EXPECT_EQ(fp8_scale_from_amax(1.0f, Fp8Format::kE5M2, 0, false), 57344.0f);
  EXPECT_EQ(fp8_scale_from_amax(3.7f, Fp8Format::kE4M3, 0, false), 448.0f / 3.7f);
  EXPECT_EQ(fp8_scale_from_amax(-3.7f, Fp8Format::kE4M3, 0, false), 448.0f / 3.7f) << "the sign is ignored";
  // Floored to a power of two: 448 -> 256, 57344 -> 32768, 448 / 3.7 = 121.08 -> 64.
  EXPECT_EQ(fp8_scale_from_amax(1.0f, Fp8Format::kE4M3, 0, true), 256.0f);
  EXPECT_EQ(fp8_scale_from_amax(1.0f, Fp8Format::kE5M2, 0, true), 32768.0f);
  EXPECT_EQ(fp8_scale_from_amax(3.7f, Fp8Format::kE4M3, 0, true), 64.0f);
  EXPECT_EQ(fp8_scale_from_amax(448.0f, Fp8Format::kE4M3, 0, true), 1.0f);
  EXPECT_EQ(fp8_scale_from_amax(449.0f, Fp8Format::kE4M3, 0, true), 0.5f);
  // Margins divide by 2^margin: 448 / 3.7 / 4, and (pow2) 64 / 4.
  EXPECT_EQ(fp8_scale_from_amax(3.7f, Fp8Format::kE4M3, 2, false), 448.0f / 3.7f / 4.0f);
  EXPECT_EQ(fp8_scale_from_amax(3.7f, Fp8Format::kE4M3, 2, true), 16.0f);
  EXPECT_EQ(fp8_scale_from_amax(1.0f, Fp8Format::kE5M2, 3, true), 4096.0f);
}

TEST(Fp8ScaleFromAmax, MarginsAndPowerOfTwoFloorOverRandomAmaxes) {
  test::SplitMix64 rng(0xF8F8);
  for (int i = 0; i < 200000; ++i) {
    // amax with a random significand and an exponent in [-60, 60]: no clamp is reached.
    const float amax = std::ldexp(1.0f + rng.uniform(), int(rng.next() % 121) - 60);
    for (Fp8Format f : kFormats) {
      const float s0 = fp8_scale_from_amax(amax, f, 0, false);
      ASSERT_EQ(s0, fp8_max_finite(f) / amax) << "margin 0: max / amax in fp32, amax " << amax;
      for (int margin : {1, 3, 8}) {
        const float s = fp8_scale_from_amax(amax, f, margin, false);
        ASSERT_EQ(double(s), std::ldexp(double(s0), -margin)) << name(f) << " amax " << amax << " margin " << margin;
      }
      for (int margin : {0, 2}) {
        const float s = fp8_scale_from_amax(amax, f, margin, false);
        const float p = fp8_scale_from_amax(amax, f, margin, true);
        ASSERT_TRUE(is_pow2(p)) << name(f) << " amax " << amax << " -> " << p;
        ASSERT_TRUE(p <= s && s < 2 * p) << name(f) << " amax " << amax << ": " << p << " is not the floor of " << s;
      }
    }
  }
}

TEST(Fp8ScaleFromAmax, ClampsAtTinyAndHugeAmax) {
  const float kMaxScale = 0x1p126f, kMinScale = 0x1p-126f;
  // max / amax above 2^126 (the first three overflow fp32 outright).
  const float tiny[] = {bits_to_f32(1u), 1e-40f, 1e-38f, 0x1p-120f};
  for (Fp8Format f : kFormats) {
    for (bool pow2 : {false, true}) {
      for (float a : tiny) {
        const float s = fp8_scale_from_amax(a, f, 0, pow2);
        EXPECT_EQ(s, kMaxScale) << name(f) << " amax " << a;
        EXPECT_TRUE(std::isfinite(fp8_scale_inv(s)) && fp8_scale_inv(s) > 0);
        EXPECT_LE(double(s) * double(a), double(fp8_max_finite(f))) << "the clamp only lowers the scale";
      }
      // Even divided by 2^4, max / (smallest subnormal) is far above 2^126.
      EXPECT_EQ(fp8_scale_from_amax(bits_to_f32(1u), f, 4, pow2), kMaxScale) << name(f);
      // Just inside: max / amax = 2^126 exactly is kept.
      const float a126 = fp8_max_finite(f) * 0x1p-126f;
      EXPECT_EQ(fp8_scale_from_amax(a126, f, 0, pow2), 0x1p126f) << name(f);
      // Huge amax: max / FLT_MAX is still normal, but with a large margin it underflows and is
      // clamped to 2^-126, whose inverse 2^126 is finite.
      const float big = std::numeric_limits<float>::max();
      const float s_big = fp8_scale_from_amax(big, f, 0, pow2);
      EXPECT_GE(s_big, kMinScale);
      EXPECT_LE(big * s_big, fp8_max_finite(f));
      for (int margin : {24, 32}) {
        const float s = fp8_scale_from_amax(big, f, margin, pow2);
        EXPECT_EQ(s, kMinScale) << name(f) << " margin " << margin;
        EXPECT_EQ(fp8_scale_inv(s), 0x1p126f);
      }
    }
  }
}

// The clamped scale's inverse must be normal: 1 / 2^127 = 2^-127 would be below FLT_MIN (2^-126),
// subnormal, and flushed to zero wherever denormals are (CUDA's ftz, DAZ on the host).
TEST(Fp8ScaleFromAmax, ClampedScaleHasNormalInverse) {
  for (Fp8Format f : kFormats) {
    for (bool pow2 : {false, true}) {
      const float s = fp8_scale_from_amax(1e-40f, f, 0, pow2);
      EXPECT_TRUE(std::isnormal(fp8_scale_inv(s)))
          << name(f) << ": s = " << s << ", s_inv = " << fp8_scale_inv(s) << " is subnormal";
    }
  }
}

// s = max / amax / 2^margin, clamped to [2^-126, 2^126]: where max / amax overflows fp32 but
// max / amax / 2^margin does not reach 2^126, the definition gives the margin-reduced value.
TEST(Fp8ScaleFromAmax, MarginAppliesWhenMaxOverAmaxOverflowsFp32) {
  for (Fp8Format f : kFormats) {
    // max = 1.75 * 2^e (448 = 1.75 * 2^8, 57344 = 1.75 * 2^15); amax = 2^(e - 129) makes
    // max / amax = 1.75 * 2^129 > FLT_MAX, and / 2^4 = 1.75 * 2^125 < 2^126.
    const int e = f == Fp8Format::kE4M3 ? 8 : 15;
    const float amax = std::ldexp(1.0f, e - 129);
    ASSERT_TRUE(std::isinf(fp8_max_finite(f) / amax));
    EXPECT_EQ(fp8_scale_from_amax(amax, f, 4, false), std::ldexp(1.75f, 125)) << name(f);
    EXPECT_EQ(fp8_scale_from_amax(amax, f, 4, true), std::ldexp(1.0f, 125)) << name(f);
  }
}

// scale * amax against a bound. With a power-of-two scale the product is exact and never passes
// the bound. With other scales max / amax is rounded to nearest, so scale * amax = max * (1 + d)
// with |d| < 2^-24: the exact product, and the fp32 product the quantizer computes, may pass the
// bound by one fp32 step (448 -> 448.00003), which the saturating cast then maps to the top code
// (checked in ScaleTimesAmaxNeverExceedsMaxEverySignificand). Returns "" or the violation.
std::string scaled_amax_violation(float amax, Fp8Format f, int margin, bool pow2, double bound) {
  const float s = fp8_scale_from_amax(amax, f, margin, pow2);
  const double exact = double(s) * double(amax);
  const bool ok = pow2 ? exact <= bound
                       : (exact < bound * (1 + 0x1p-24) &&
                          amax * s <= std::nextafter(float(bound), std::numeric_limits<float>::infinity()));
  if (ok) return "";
  std::ostringstream out;
  out << name(f) << " amax " << amax << " (bits 0x" << std::hex << f32_to_bits(amax) << std::dec << ") margin "
      << margin << (pow2 ? " pow2" : "") << ": scale " << s << ", scale * amax = " << exact << " > " << bound;
  return out.str();
}

TEST(Fp8ScaleFromAmax, ScaleTimesAmaxNeverExceedsMaxEverySignificand) {
  // The quotient's rounding depends only on amax's significand (away from the clamps), and a
  // margin is an exact power-of-two factor: one binade, all 2^23 significands, covers every case.
  int64_t violations = 0;
  std::string first;
  for (uint32_t m = 0; m < (1u << 23); ++m) {
    const float amax = bits_to_f32((127u << 23) | m);
    for (Fp8Format f : kFormats) {
      for (bool pow2 : {false, true}) {
        const std::string v = scaled_amax_violation(amax, f, 0, pow2, fp8_max_finite(f));
        if (!v.empty() && violations++ == 0) first = v;
        // The largest element lands on the top code without a margin when the scale is not
        // floored, and within [max / 2, max] when it is (amax * s > max / 2, rounded).
        const float top = fp8_decode(fp8_quantize(amax, fp8_scale_from_amax(amax, f, 0, pow2), f), f);
        const bool lands = pow2 ? (top >= fp8_max_finite(f) / 2 && top <= fp8_max_finite(f)) : top == fp8_max_finite(f);
        if (!lands && violations++ == 0) first = std::string(name(f)) + " amax " + std::to_string(amax) + " lands on " + std::to_string(top);
      }
    }
  }
  EXPECT_EQ(violations, 0) << "first: " << first;
}

TEST(Fp8ScaleFromAmax, ScaleTimesAmaxNeverExceedsMaxRandomAmaxes) {
  // Any positive finite fp32 amax (subnormals and the clamp regions included): the scale is in
  // the clamp range, a power of two when asked, and scale * amax stays within the format's max.
  test::SplitMix64 rng(0xA3A3);
  int64_t violations = 0;
  std::string first;
  for (int i = 0; i < 500000; ++i) {
    const float amax = bits_to_f32(uint32_t(rng.next() % 0x7F7FFFFFull) + 1u);
    for (Fp8Format f : kFormats) {
      for (int margin : {0, 1, 4}) {
        for (bool pow2 : {false, true}) {
          const float s = fp8_scale_from_amax(amax, f, margin, pow2);
          ASSERT_TRUE(s >= 0x1p-126f && s <= 0x1p126f) << "amax " << amax << " -> " << s;
          if (pow2) {
            ASSERT_TRUE(is_pow2(s)) << "amax " << amax << " -> " << s;
          }
          const std::string v = scaled_amax_violation(amax, f, margin, pow2, fp8_max_finite(f));
          if (!v.empty() && violations++ == 0) first = v;
        }
      }
    }
  }
  EXPECT_EQ(violations, 0) << "first: " << first;
}

TEST(Fp8ScaleFromAmax, ScaleTimesAmaxWithinMarginRandomAmaxes) {
  // The margin's promise, max / 2^margin, over the same range. (The lower clamp 2^-126 would
  // break it only for amax > max * 2^(122 - margin), beyond FLT_MAX for these margins.)
  test::SplitMix64 rng(0xB4B4);
  int64_t violations = 0;
  std::string first;
  for (int i = 0; i < 500000; ++i) {
    const float amax = bits_to_f32(uint32_t(rng.next() % 0x7F7FFFFFull) + 1u);
    for (Fp8Format f : kFormats) {
      for (int margin : {1, 4}) {
        for (bool pow2 : {false, true}) {
          const double bound = std::ldexp(double(fp8_max_finite(f)), -margin);
          const std::string v = scaled_amax_violation(amax, f, margin, pow2, bound);
          if (!v.empty() && violations++ == 0) first = v;
        }
      }
    }
  }
  EXPECT_EQ(violations, 0) << "first: " << first;
}

// ---------------------------------------------------------------------------------------------
// 3. Tile geometry.

// The tiles from the tiling's definition: the row range and column range of tile (tr, tc).
struct TileGrid {
  int64_t tile_rows, tile_cols;
  int64_t row_extent, col_extent;  // nominal extents (edge tiles are cut short)
};
TileGrid grid(Fp8Tiling t, int64_t rows, int64_t cols) {
  auto ceil128 = [](int64_t n) { return (n + 127) / 128; };
  switch (t) {
    case Fp8Tiling::kTensor: return {1, 1, rows, cols};
    case Fp8Tiling::kRow1x128: return {rows, ceil128(cols), 1, 128};
    case Fp8Tiling::kCol128x1: return {ceil128(rows), cols, 128, 1};
    case Fp8Tiling::kBlock128: return {ceil128(rows), ceil128(cols), 128, 128};
  }
  return {};
}

TEST(Fp8TileGeometry, CountAndIndexOnRaggedShapes) {
  const int64_t shapes[][2] = {{1, 1}, {130, 200}, {257, 129}, {128, 128}, {127, 256}, {1, 300}, {300, 1}};
  for (Fp8Tiling t : kTilings) {
    for (const auto& sh : shapes) {
      const int64_t rows = sh[0], cols = sh[1];
      const TileGrid g = grid(t, rows, cols);
      const int64_t count = fp8_scale_count(t, rows, cols);
      ASSERT_EQ(fp8_tile_rows(t, rows), g.tile_rows) << name(t) << " " << rows << " x " << cols;
      ASSERT_EQ(fp8_tile_cols(t, cols), g.tile_cols) << name(t) << " " << rows << " x " << cols;
      ASSERT_EQ(count, g.tile_rows * g.tile_cols) << name(t) << " " << rows << " x " << cols;
      // Walk the tiles: each element of tile (tr, tc) maps to index tr * tile_cols + tc, and the
      // edge tiles hold only what is left of the matrix.
      std::vector<int64_t> hits(size_t(count), 0);
      int64_t covered = 0;
      for (int64_t tr = 0; tr < g.tile_rows; ++tr) {
        for (int64_t tc = 0; tc < g.tile_cols; ++tc) {
          const int64_t r0 = tr * g.row_extent, r1 = std::min(rows, r0 + g.row_extent);
          const int64_t c0 = tc * g.col_extent, c1 = std::min(cols, c0 + g.col_extent);
          ASSERT_LT(r0, r1);
          ASSERT_LT(c0, c1);
          for (int64_t r = r0; r < r1; ++r) {
            for (int64_t c = c0; c < c1; ++c) {
              const int64_t idx = fp8_scale_index(t, r, c, cols);
              ASSERT_EQ(idx, tr * g.tile_cols + tc)
                  << name(t) << " " << rows << " x " << cols << " element (" << r << ", " << c << ")";
              ++hits[size_t(idx)];
              ++covered;
            }
          }
          EXPECT_EQ(hits[size_t(tr * g.tile_cols + tc)], (r1 - r0) * (c1 - c0));
        }
      }
      EXPECT_EQ(covered, rows * cols);
      for (int64_t i = 0; i < count; ++i) EXPECT_GT(hits[size_t(i)], 0) << name(t) << " tile " << i << " is empty";
    }
  }
}

TEST(Fp8TileGeometry, SpotValues) {
  // 130 x 200: 1x128 tiles -> 130 rows x 2 column tiles; 128x1 -> 2 x 200; blocks -> 2 x 2.
  EXPECT_EQ(fp8_scale_count(Fp8Tiling::kTensor, 130, 200), 1);
  EXPECT_EQ(fp8_scale_count(Fp8Tiling::kRow1x128, 130, 200), 260);
  EXPECT_EQ(fp8_scale_count(Fp8Tiling::kCol128x1, 130, 200), 400);
  EXPECT_EQ(fp8_scale_count(Fp8Tiling::kBlock128, 130, 200), 4);
  EXPECT_EQ(fp8_scale_count(Fp8Tiling::kBlock128, 257, 129), 6);
  for (Fp8Tiling t : kTilings) EXPECT_EQ(fp8_scale_count(t, 1, 1), 1) << name(t);
  EXPECT_EQ(fp8_scale_index(Fp8Tiling::kRow1x128, 129, 199, 200), 129 * 2 + 1);
  EXPECT_EQ(fp8_scale_index(Fp8Tiling::kCol128x1, 129, 199, 200), 1 * 200 + 199);
  EXPECT_EQ(fp8_scale_index(Fp8Tiling::kBlock128, 256, 128, 129), 2 * 2 + 1);
  EXPECT_EQ(fp8_scale_index(Fp8Tiling::kBlock128, 127, 127, 129), 0);
  EXPECT_EQ(fp8_scale_index(Fp8Tiling::kTensor, 256, 128, 129), 0);
}

}  // namespace
}  // namespace farthing::numerics
