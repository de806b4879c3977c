// test_fp4.cpp — the FP4 formats (kernels/numerics/fp4_e2m1.h, fp4_scales.h, fp4_block.h), bit for
// bit against ml_dtypes, and stochastic rounding's properties.
//
// 1. E2M1: every code decodes as ml_dtypes' float4_e2m1fn does and encodes back to itself; round to
//    nearest even matches ml_dtypes on every tie between E2M1 values and 2 fp32 ulps either side,
//    ±6 saturation, tiny and subnormal inputs, inf, NaN (farthing's signed zero) and 4,096 random
//    inputs.
// 2. E8M0: every code decodes as ml_dtypes' float8_e8m0fnu; the floor encode of every exponent;
//    MX v1.0's block scale on every power of two and its neighbours, 0, inf, NaN, random amaxes.
// 3. Whole blocks: MXFP4 and NVFP4 scale and element codes against the golden blocks (random blocks
//    over the exponent range, element and E4M3-scale ties, saturating blocks, zero blocks, subnormal
//    scales, block scales that underflow, NaN/inf blocks, tails, and NVFP4 blocks on which an
//    algebraically equal but differently rounded form of the scale formula gives other codes), and
//    what they dequantize to.
// 4. Stochastic rounding: exact values never move, only the two neighbours, unbiased over 2^20 keys,
//    and keyed by the element's global index whatever the blocks are processed in.
// Relies on: the goldens in tests/data/numerics written by `python3 tools/goldens/gen_fp4_goldens.py`
// (its docstring has the layout).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/numerics/fp4_block.h"
#include "kernels/numerics/fp4_e2m1.h"
#include "kernels/numerics/fp4_scales.h"
#include "kernels/numerics/stochastic_round.h"
#include "tests/numerics/numerics_goldens.h"
#include "tests/support/test_support.h"

namespace farthing::numerics {
namespace {

constexpr float kE2M1Magnitudes[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

bool f32_is_nan(uint32_t bits) { return (bits & 0x7FFFFFFFu) > 0x7F800000u; }
float pow2(int e) { return std::ldexp(1.0f, e); }

// A golden file with a header: 8 magic bytes, uint32 count, uint32 record size. Returns the records'
// bytes, one vector per record; a bad header or size is a test failure.
std::vector<std::vector<uint8_t>> load_records(const std::string& name, const char* magic, uint32_t record_bytes) {
  const std::vector<uint8_t> bytes = test::read_file_bytes(test::test_data_dir() / "numerics" / name);
  if (bytes.size() < 16 || std::memcmp(bytes.data(), magic, 8) != 0) {
    ADD_FAILURE() << name << ": bad header";
    return {};
  }
  uint32_t count = 0, size = 0;
  std::memcpy(&count, bytes.data() + 8, 4);
  std::memcpy(&size, bytes.data() + 12, 4);
  if (size != record_bytes || bytes.size() != 16 + size_t(count) * size) {
    ADD_FAILURE() << name << ": " << bytes.size() << " bytes do not hold " << count << " records of " << record_bytes;
    return {};
  }
  std::vector<std::vector<uint8_t>> records;
  for (uint32_t i = 0; i < count; ++i) {
    const uint8_t* rec = bytes.data() + 16 + size_t(i) * size;
    records.emplace_back(rec, rec + size);
  }
  return records;
}

uint32_t u32_at(const std::vector<uint8_t>& rec, size_t offset) {
  uint32_t v = 0;
  std::memcpy(&v, rec.data() + offset, 4);
  return v;
}

// --- E2M1 ---------------------------------------------------------------------------------------

TEST(Fp4E2M1, DecodeOfEveryCodeMatchesReference) {
  const std::vector<uint32_t> golden = test::load_numerics_golden<uint32_t>("e2m1_to_f32.u32", 16);
  ASSERT_EQ(golden.size(), 16u);
  for (uint32_t c = 0; c < 16; ++c) {
    EXPECT_EQ(f32_to_bits(e2m1_to_f32(uint8_t(c))), golden[c]) << "code " << c;
    const float expected = (c & 8u ? -1.0f : 1.0f) * kE2M1Magnitudes[c & 7u];
    EXPECT_EQ(f32_to_bits(e2m1_to_f32(uint8_t(c))), f32_to_bits(expected)) << "code " << c;
  }
  EXPECT_EQ(e2m1_to_f32(0xF7), 6.0f);  // bits above the low 4 are ignored
}

TEST(Fp4E2M1, EncodeOfDecodeIsIdentityOnEveryCode) {
  for (uint32_t c = 0; c < 16; ++c) {
    EXPECT_EQ(f32_to_e2m1(e2m1_to_f32(uint8_t(c))), c) << "code " << c;  // -0 -> 0x8 included
  }
}

TEST(Fp4E2M1, RoundToNearestEvenMatchesReference) {
  const auto records = load_records("fp4_e2m1_rne.bin", "FNFP4E01", 8);
  ASSERT_GT(records.size(), 4000u);
  size_t mismatches = 0;
  for (const auto& rec : records) {
    const uint32_t input = u32_at(rec, 0);
    const uint8_t got = f32_to_e2m1(bits_to_f32(input));
    if (got != rec[4] && mismatches++ < 5) {
      ADD_FAILURE() << "input 0x" << std::hex << input << " (" << bits_to_f32(input) << "): expected "
                    << int(rec[4]) << " got " << int(got);
    }
  }
  EXPECT_EQ(mismatches, 0u);
}

// The policy of fp4_e2m1.h, spelled out: ties to even, saturation, inf, NaN.
TEST(Fp4E2M1, TiesSaturationAndSpecials) {
  // Each tie goes to the neighbour whose code is even.
  const float ties[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  const uint8_t even[] = {0x0, 0x2, 0x2, 0x4, 0x4, 0x6, 0x6};
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ(f32_to_e2m1(ties[i]), even[i]) << ties[i];
    EXPECT_EQ(f32_to_e2m1(-ties[i]), even[i] | 0x8) << -ties[i];
  }
  for (float big : {6.0f, 6.5f, 7.0f, 8.0f, 1e30f, 3.4028235e38f, INFINITY}) {
    EXPECT_EQ(f32_to_e2m1(big), 0x7) << big;
    EXPECT_EQ(f32_to_e2m1(-big), 0xF) << -big;
  }
  EXPECT_EQ(f32_to_e2m1(NAN), 0x0);
  EXPECT_EQ(f32_to_e2m1(-NAN), 0x8);
  EXPECT_EQ(f32_to_e2m1(bits_to_f32(0x7F800001u)), 0x0);  // signalling NaN
  EXPECT_EQ(f32_to_e2m1(bits_to_f32(0x00000001u)), 0x0);  // fp32 subnormal
  EXPECT_EQ(f32_to_e2m1(-0.0f), 0x8);
}

// --- E8M0 and the MX scale ----------------------------------------------------------------------

TEST(Fp4E8M0, DecodeOfEveryCodeMatchesReference) {
  const std::vector<uint32_t> golden = test::load_numerics_golden<uint32_t>("e8m0_to_f32.u32", 256);
  ASSERT_EQ(golden.size(), 256u);
  for (uint32_t c = 0; c < 256; ++c) {
    const uint32_t got = f32_to_bits(e8m0_to_f32(uint8_t(c)));
    if (f32_is_nan(golden[c])) {
      EXPECT_TRUE(f32_is_nan(got)) << "code " << c;
    } else {
      EXPECT_EQ(got, golden[c]) << "code " << c;
      EXPECT_EQ(bits_to_f32(got), std::ldexp(1.0f, int(c) - 127)) << "code " << c;
    }
  }
}

TEST(Fp4E8M0, FloorEncodeOfEveryExponent) {
  for (uint32_t c = 0; c < 255; ++c) {
    const float s = e8m0_to_f32(uint8_t(c));
    EXPECT_EQ(f32_to_e8m0_floor(s), c) << "code " << c;
    // Anything in [2^e, 2^(e+1)) floors to 2^e (from 2^-126 up; below, everything clamps to code 0).
    if (c >= 1) {
      EXPECT_EQ(f32_to_e8m0_floor(std::nextafter(2.0f * s, 0.0f)), c) << "code " << c;
      EXPECT_EQ(f32_to_e8m0_floor(s * 1.5f), c) << "code " << c;
    }
  }
  EXPECT_EQ(f32_to_e8m0_floor(0.0f), 0u);
  EXPECT_EQ(f32_to_e8m0_floor(bits_to_f32(1u)), 0u);
  EXPECT_EQ(f32_to_e8m0_floor(INFINITY), kE8M0Nan);
  EXPECT_EQ(f32_to_e8m0_floor(NAN), kE8M0Nan);
  EXPECT_EQ(f32_to_e8m0_floor(-4.0f), 129u);  // the sign is ignored
}

TEST(Fp4MxScale, MatchesReference) {
  const auto records = load_records("fp4_mx_scale.bin", "FNFP4S01", 8);
  ASSERT_GT(records.size(), 800u);
  size_t mismatches = 0;
  for (const auto& rec : records) {
    const uint32_t amax = u32_at(rec, 0);
    const uint8_t got = mxfp4_scale_from_amax(bits_to_f32(amax));
    if (got != rec[4] && mismatches++ < 5) {
      ADD_FAILURE() << "amax 0x" << std::hex << amax << ": expected " << int(rec[4]) << " got " << int(got);
    }
  }
  EXPECT_EQ(mismatches, 0u);
  // Spot values: amax 6 -> 2^0 (6 / 1 fits), amax 8 -> 2^1, amax 1 -> 2^-2.
  EXPECT_EQ(mxfp4_scale_from_amax(6.0f), 127u);
  EXPECT_EQ(mxfp4_scale_from_amax(8.0f), 128u);
  EXPECT_EQ(mxfp4_scale_from_amax(1.0f), 125u);
  EXPECT_EQ(mxfp4_scale_from_amax(0.0f), 0u);
}

// The encode multiplier is exactly 1 / X for every code the encoder can make, and a normal float.
TEST(Fp4MxScale, EncodeMultiplierIsTheExactReciprocal) {
  for (uint32_t c = 0; c <= 252; ++c) {
    const float m = mxfp4_encode_multiplier(uint8_t(c));
    EXPECT_TRUE(std::isnormal(m)) << "code " << c;
    EXPECT_EQ(double(m) * double(e8m0_to_f32(uint8_t(c))), 1.0) << "code " << c;
  }
  EXPECT_EQ(mxfp4_encode_multiplier(254), pow2(-127));
  EXPECT_TRUE(std::isnan(mxfp4_encode_multiplier(kE8M0Nan)));
}

// --- blocks -------------------------------------------------------------------------------------

TEST(Fp4Mxfp4Block, MatchesReference) {
  const auto records = load_records("fp4_mxfp4_blocks.bin", "FNFP4M01", 164);
  ASSERT_GT(records.size(), 50u);
  int index = 0;
  for (const auto& rec : records) {
    const int n = rec[0];
    ASSERT_TRUE(n >= 1 && n <= kMxfp4BlockElems);
    float x[kMxfp4BlockElems];
    for (int i = 0; i < n; ++i) x[i] = bits_to_f32(u32_at(rec, 4 + 4 * size_t(i)));
    uint8_t codes[kMxfp4BlockElems] = {};
    const uint8_t scale = mxfp4_quantize_block(x, n, codes);
    EXPECT_EQ(int(scale), int(rec[1])) << "block " << index;
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(int(codes[i]), int(rec[132 + size_t(i)])) << "block " << index << " element " << i << " x=" << x[i];
    }
    // Dequantized: exactly the code's value times 2^(scale - 127); a NaN block is all canonical NaN.
    float out[kMxfp4BlockElems];
    mxfp4_dequantize_block(codes, n, scale, out);
    for (int i = 0; i < n; ++i) {
      if (scale == kE8M0Nan) {
        EXPECT_EQ(f32_to_bits(out[i]), kCanonicalNanBits) << "block " << index;
      } else {
        EXPECT_EQ(double(out[i]), double(e2m1_to_f32(codes[i])) * std::ldexp(1.0, int(scale) - 127))
            << "block " << index << " element " << i;
      }
    }
    ++index;
  }
}

TEST(Fp4Nvfp4Block, MatchesReference) {
  const auto records = load_records("fp4_nvfp4_blocks.bin", "FNFP4N01", 92);
  ASSERT_GT(records.size(), 90u);
  int index = 0;
  for (const auto& rec : records) {
    const int n = rec[0];
    ASSERT_TRUE(n >= 1 && n <= kNvfp4BlockElems);
    const float tensor_amax = bits_to_f32(u32_at(rec, 4));
    const float s_enc = nvfp4_global_encode_scale(tensor_amax);
    EXPECT_EQ(f32_to_bits(s_enc), u32_at(rec, 8)) << "block " << index << " tensor amax " << tensor_amax;
    float x[kNvfp4BlockElems];
    for (int i = 0; i < n; ++i) x[i] = bits_to_f32(u32_at(rec, 12 + 4 * size_t(i)));
    uint8_t codes[kNvfp4BlockElems] = {};
    const uint8_t scale = nvfp4_quantize_block(x, n, s_enc, codes);
    EXPECT_EQ(int(scale), int(rec[1])) << "block " << index;
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(int(codes[i]), int(rec[76 + size_t(i)])) << "block " << index << " element " << i << " x=" << x[i];
    }
    // Dequantized: (value * block scale) * s_dec, the first product exact.
    const float s_dec = nvfp4_global_decode_scale(s_enc);
    float out[kNvfp4BlockElems];
    nvfp4_dequantize_block(codes, n, scale, s_dec, out);
    for (int i = 0; i < n; ++i) {
      if (scale == kE4M3NanCode) {
        EXPECT_EQ(f32_to_bits(out[i]), kCanonicalNanBits) << "block " << index;
      } else {
        const double exact = double(e2m1_to_f32(codes[i])) * double(e4m3_to_f32(scale));
        EXPECT_EQ(double(float(exact)), exact);
        EXPECT_EQ(f32_to_bits(out[i]), f32_to_bits(float(exact) * s_dec)) << "block " << index;
      }
    }
    ++index;
  }
}

TEST(Fp4Nvfp4, GlobalScaleRules) {
  EXPECT_EQ(nvfp4_global_encode_scale(2688.0f), 1.0f);
  EXPECT_EQ(nvfp4_global_encode_scale(1.0f), 2688.0f);
  EXPECT_EQ(nvfp4_global_encode_scale(0.0f), 1.0f);
  EXPECT_EQ(nvfp4_global_encode_scale(-0.0f), 1.0f);
  EXPECT_EQ(nvfp4_global_encode_scale(INFINITY), 1.0f);
  EXPECT_EQ(nvfp4_global_encode_scale(NAN), 1.0f);
  EXPECT_EQ(nvfp4_global_encode_scale(1e-38f), pow2(126));  // 2688 / 1e-38 overflows: capped
  EXPECT_TRUE(std::isnormal(nvfp4_global_decode_scale(nvfp4_global_encode_scale(bits_to_f32(1u)))));
  // The tensor's largest block gets the largest E4M3 scale (448) when its amax is the tensor's.
  for (float amax : {1.0f, 3.3f, 1e-20f, 7e30f}) {
    EXPECT_EQ(nvfp4_block_scale(amax, nvfp4_global_encode_scale(amax)), 0x7Eu) << amax;
  }
}

TEST(Fp4Blocks, ZeroAndNonFiniteBlocks) {
  float x[kMxfp4BlockElems] = {};
  x[3] = -0.0f;
  uint8_t codes[kMxfp4BlockElems];
  float out[kMxfp4BlockElems];
  // A zero block: the smallest scale (2^-127) or a zero E4M3 scale, every element ±0.
  EXPECT_EQ(mxfp4_quantize_block(x, kMxfp4BlockElems, codes), 0u);
  for (int i = 0; i < kMxfp4BlockElems; ++i) EXPECT_EQ(codes[i], i == 3 ? 0x8 : 0x0);
  mxfp4_dequantize_block(codes, kMxfp4BlockElems, 0, out);
  for (int i = 0; i < kMxfp4BlockElems; ++i) EXPECT_EQ(out[i], 0.0f);
  EXPECT_EQ(nvfp4_quantize_block(x, kNvfp4BlockElems, nvfp4_global_encode_scale(0.0f), codes), 0u);
  for (int i = 0; i < kNvfp4BlockElems; ++i) EXPECT_EQ(codes[i], i == 3 ? 0x8 : 0x0);
  // NaN or inf anywhere: the NaN scale, codes 0, and every element dequantizes to the canonical NaN.
  for (float special : {NAN, INFINITY, -INFINITY}) {
    for (int i = 0; i < kMxfp4BlockElems; ++i) x[i] = 0.1f * float(i);
    x[9] = special;
    EXPECT_EQ(mxfp4_quantize_block(x, kMxfp4BlockElems, codes), kE8M0Nan);
    for (int i = 0; i < kMxfp4BlockElems; ++i) EXPECT_EQ(codes[i], 0u);
    mxfp4_dequantize_block(codes, kMxfp4BlockElems, kE8M0Nan, out);
    for (int i = 0; i < kMxfp4BlockElems; ++i) EXPECT_EQ(f32_to_bits(out[i]), kCanonicalNanBits);
    EXPECT_EQ(nvfp4_quantize_block(x, kNvfp4BlockElems, 1.0f, codes), kE4M3NanCode);
    for (int i = 0; i < kNvfp4BlockElems; ++i) EXPECT_EQ(codes[i], 0u);
    nvfp4_dequantize_block(codes, kNvfp4BlockElems, kE4M3NanCode, 1.0f, out);
    for (int i = 0; i < kNvfp4BlockElems; ++i) EXPECT_EQ(f32_to_bits(out[i]), kCanonicalNanBits);
  }
}

// --- stochastic rounding ------------------------------------------------------------------------

// The neighbour of x's magnitude toward zero (SR with bits that never round up) and away from it.
float toward_zero(float x) { return e2m1_to_f32(f32_to_e2m1_sr(x, 0xFFFFFFFFu)); }
float away_from_zero(float x) {
  const uint8_t c = f32_to_e2m1_sr(x, 0xFFFFFFFFu);
  return (c & 7u) == 7u ? e2m1_to_f32(c) : e2m1_to_f32(uint8_t(c + 1));
}

TEST(Fp4StochasticRound, ExactValuesNeverMove) {
  for (uint32_t c = 0; c < 16; ++c) {
    for (uint32_t r : {0u, 1u, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFEu, 0xFFFFFFFFu}) {
      EXPECT_EQ(f32_to_e2m1_sr(e2m1_to_f32(uint8_t(c)), r), c) << "code " << c << " r " << r;
    }
  }
  // Saturation and specials as in round to nearest.
  EXPECT_EQ(f32_to_e2m1_sr(6.5f, 0), 0x7);
  EXPECT_EQ(f32_to_e2m1_sr(-INFINITY, 0), 0xF);
  EXPECT_EQ(f32_to_e2m1_sr(NAN, 0), 0x0);
}

TEST(Fp4StochasticRound, OnlyEverTheTwoNeighbours) {
  test::SplitMix64 rng(35);
  int failures = 0;
  for (int i = 0; i < 200000; ++i) {
    const float x = (rng.uniform() * 2.0f - 1.0f) * 6.0f * (i % 3 == 0 ? 0.1f : 1.0f);
    const float lower = toward_zero(x), upper = away_from_zero(x);
    EXPECT_LE(std::fabs(lower), std::fabs(x));
    EXPECT_GE(std::fabs(upper), std::fabs(x));
    const float got = e2m1_to_f32(f32_to_e2m1_sr(x, uint32_t(rng.next())));
    if (got != lower && got != upper && failures++ < 5) {
      ADD_FAILURE() << "SR(" << x << ") = " << got << ", neighbours " << lower << " and " << upper;
    }
  }
  EXPECT_EQ(failures, 0);
}

// The mean of 2^20 draws (elements 0 .. 2^20-1 of one key) lies within 4 sigma of x, sigma =
// gap * sqrt(p (1 - p) / N).
TEST(Fp4StochasticRound, UnbiasedOverManyDraws) {
  constexpr int kDraws = 1 << 20;
  std::vector<float> xs = {0.01f, 0.3f, 0.7f, 1.1f, 1.3f, 1.9f, 2.2f, 2.9f, 3.7f, 5.5f, 5.99f, 1e-6f};
  for (float& x : std::vector<float>(xs)) xs.push_back(-x);
  const RandomKey key{0xF4F4, 7, RandomPurpose::kTest};
  for (float x : xs) {
    const double lower = toward_zero(x), upper = away_from_zero(x);
    const double gap = std::fabs(upper - lower);
    const double p = (std::fabs(double(x)) - std::fabs(lower)) / gap;
    double sum = 0.0;
    for (uint64_t i = 0; i < kDraws; ++i) sum += e2m1_to_f32(f32_to_e2m1_sr(x, random_bits_for_element(key, i)));
    const double mean = sum / kDraws;
    const double sigma = gap * std::sqrt(p * (1.0 - p) / kDraws);
    EXPECT_LE(std::fabs(mean - double(x)), 4.0 * sigma + 1e-12) << "x=" << x << " mean=" << mean << " p=" << p;
  }
}

// A block quantized with SR under many keys dequantizes to x on average, element by element (the
// block's amax maps to 5 after scaling, so nothing saturates).
TEST(Fp4StochasticRound, BlockMeanIsUnbiased) {
  constexpr int kDraws = 1 << 14;
  test::SplitMix64 rng(36);
  float x[kMxfp4BlockElems];
  for (float& v : x) v = (rng.uniform() * 2.0f - 1.0f) * 5.0f * pow2(-20);
  x[0] = 5.0f * pow2(-20);
  std::vector<double> mx_sum(kMxfp4BlockElems, 0.0), nv_sum(kNvfp4BlockElems, 0.0);
  const float s_enc = nvfp4_global_encode_scale(x[0] * 4.0f);
  const float s_dec = nvfp4_global_decode_scale(s_enc);
  for (uint32_t k = 0; k < kDraws; ++k) {
    const RandomKey key{77, k, RandomPurpose::kTest};
    uint8_t codes[kMxfp4BlockElems];
    const uint8_t mx_scale = mxfp4_quantize_block_sr(x, kMxfp4BlockElems, codes, key, 1000);
    for (int i = 0; i < kMxfp4BlockElems; ++i) mx_sum[size_t(i)] += mxfp4_dequantize_element(codes[i], mx_scale);
    const uint8_t nv_scale = nvfp4_quantize_block_sr(x, kNvfp4BlockElems, s_enc, codes, key, 1000);
    for (int i = 0; i < kNvfp4BlockElems; ++i) nv_sum[size_t(i)] += nvfp4_dequantize_element(codes[i], nv_scale, s_dec);
  }
  // The largest gap between E2M1 values is 2 (4 -> 6); scaled back, 2 * X. sigma <= gap / 2 / sqrt(N).
  const double mx_gap = 2.0 * e8m0_to_f32(mxfp4_scale_from_amax(x[0]));
  for (int i = 0; i < kMxfp4BlockElems; ++i) {
    EXPECT_NEAR(mx_sum[size_t(i)] / kDraws, x[i], 5.0 * mx_gap / 2.0 / std::sqrt(double(kDraws))) << "mx element " << i;
  }
  const double nv_gap = 2.0 * double(e4m3_to_f32(nvfp4_block_scale(x[0], s_enc))) * s_dec;
  for (int i = 0; i < kNvfp4BlockElems; ++i) {
    EXPECT_NEAR(nv_sum[size_t(i)] / kDraws, x[i], 5.0 * nv_gap / 2.0 / std::sqrt(double(kDraws))) << "nv element " << i;
  }
}

// Element i of the tensor draws the bits of global index offset + i, whatever order or grouping the
// blocks are processed in: the whole tensor at once, in reverse, or in chunks of odd block counts
// each told its own offset; and every element equals the scalar definition with its own index.
TEST(Fp4StochasticRound, KeyedByGlobalIndexNotByLayout) {
  constexpr size_t kElems = 32 * 37 + 5;  // a short tail block
  constexpr uint64_t kOffset = 987654321;  // not a multiple of 4 or of the block size
  test::SplitMix64 rng(37);
  std::vector<float> x(kElems);
  for (float& v : x) v = float(rng.normal()) * 3.0f;
  const RandomKey key{2025, 3, RandomPurpose::kTest};
  const float s_enc = nvfp4_global_encode_scale(12.0f);
  for (int block : {kMxfp4BlockElems, kNvfp4BlockElems}) {
    const size_t blocks = (kElems + size_t(block) - 1) / size_t(block);
    auto quantize = [&](size_t b, std::vector<uint8_t>& codes, std::vector<uint8_t>& scales) {
      const size_t begin = b * size_t(block);
      const int n = int(std::min(size_t(block), kElems - begin));
      scales[b] = block == kMxfp4BlockElems
                      ? mxfp4_quantize_block_sr(&x[begin], n, &codes[begin], key, kOffset + begin)
                      : nvfp4_quantize_block_sr(&x[begin], n, s_enc, &codes[begin], key, kOffset + begin);
    };
    std::vector<uint8_t> forward(kElems), reverse(kElems), chunked(kElems), again(kElems);
    std::vector<uint8_t> s_forward(blocks), s_reverse(blocks), s_chunked(blocks), s_again(blocks);
    for (size_t b = 0; b < blocks; ++b) quantize(b, forward, s_forward);
    for (size_t b = blocks; b-- > 0;) quantize(b, reverse, s_reverse);
    for (size_t b = 0, step = 1; b < blocks; b += step, step = step * 2 + 1) {
      for (size_t c = b; c < std::min(blocks, b + step); ++c) quantize(c, chunked, s_chunked);
    }
    for (size_t b = 0; b < blocks; ++b) quantize(b, again, s_again);
    EXPECT_EQ(forward, reverse) << block;
    EXPECT_EQ(forward, chunked) << block;
    EXPECT_EQ(forward, again) << block;  // same index, same result
    EXPECT_EQ(s_forward, s_reverse) << block;
    size_t differs_from_rne = 0;
    for (size_t i = 0; i < kElems; ++i) {
      const size_t b = i / size_t(block);
      const float m = block == kMxfp4BlockElems
                          ? mxfp4_encode_multiplier(s_forward[b])
                          : nvfp4_encode_multiplier(s_forward[b], nvfp4_global_decode_scale(s_enc));
      ASSERT_EQ(forward[i], f32_to_e2m1_sr(x[i] * m, random_bits_for_element(key, kOffset + i))) << block << " i=" << i;
      differs_from_rne += forward[i] != f32_to_e2m1(x[i] * m) ? 1 : 0;
    }
    EXPECT_GT(differs_from_rne, kElems / 10) << "SR should often differ from round to nearest";
  }
}

}  // namespace
}  // namespace farthing::numerics
