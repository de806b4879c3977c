// test_minifloat.cpp — fp32 <-> fp16 / fp8 e4m3fn / fp8 e5m2 (kernels/numerics/minifloat.h),
// bit for bit.
//
// For each format: decode of every code against numpy / ml_dtypes, encode(decode(c)) == c,
// round-to-nearest-even against the reference on 2^20 SplitMix64 inputs and every edge input
// (non-saturating), saturating mode as the reference clamped to ±max finite, and the spot values
// of docs/numerics.md §1. Relies on: the goldens in tests/data/numerics, written by
// `python3 tools/goldens/gen_numerics_goldens.py` (its docstring has the layout and the
// random-input recipe repeated in random_inputs() below).
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "kernels/numerics/minifloat.h"
#include "tests/numerics/numerics_goldens.h"
#include "tests/support/test_support.h"

namespace farthing::numerics {
namespace {

constexpr size_t kRandomCount = test::kNumericsRandomCount;

std::vector<uint32_t> random_inputs() { return test::numerics_random_inputs(); }

// Golden file of `count` little-endian codes of T, widened to uint32.
template <class T>
std::vector<uint32_t> load_golden(const std::string& name, size_t count) {
  const std::vector<T> codes = test::load_numerics_golden<T>(name, count);
  return std::vector<uint32_t>(codes.begin(), codes.end());
}

// One edge input with the expected code of each format (edge_cases.bin).
// An edge input and its expected codes, widened to uint32 for the format-generic checks.
struct EdgeCase {
  uint32_t input;
  uint32_t fp16, e4m3, e5m2;
};

std::vector<EdgeCase> load_edge_cases() {
  std::vector<EdgeCase> cases;
  for (const test::NumericsEdgeCase& c : test::load_numerics_edge_cases()) {
    cases.push_back({c.input, c.fp16, c.e4m3, c.e5m2});
  }
  return cases;
}

// What the tests need to know about one format.
struct Format {
  const char* name;
  const char* encode_golden;  // f32 -> code, round to nearest even, non-saturating
  const char* decode_golden;  // code -> f32 bits, one per code
  int code_bytes;
  uint32_t sign_bit;
  uint32_t max_finite;  // magnitude code
  uint32_t quiet_bit;   // top mantissa bit, set on a quiet NaN; 0 where there is no such notion
  uint32_t EdgeCase::*edge_expected;
  uint32_t (*encode)(float x, Overflow overflow);
  float (*decode)(uint32_t code);
  bool (*is_nan)(uint32_t code);

  uint32_t code_count() const { return sign_bit << 1; }
};

const Format kFp16{
    "fp16", "f32_to_fp16_rne.u16", "fp16_to_f32.u32", 2, 0x8000u, Fp16Traits::kMaxFinite, 0x0200u,
    &EdgeCase::fp16,
    [](float x, Overflow o) -> uint32_t {
      // The named cast is the non-saturating one; saturation goes through the template.
      if (o == Overflow::kToInfOrNan) return f32_to_fp16_rne(x);
      return f32_to_minifloat<Fp16Traits>(x, Rounding::kNearestEven, o, 0);
    },
    [](uint32_t c) { return fp16_to_f32(uint16_t(c)); },
    [](uint32_t c) { return (c & 0x7FFFu) > 0x7C00u; }};

const Format kE4m3{
    "e4m3fn", "f32_to_e4m3fn_rne.u8", "e4m3fn_to_f32.u32", 1, 0x80u, Fp8E4M3Traits::kMaxFinite, 0u,
    &EdgeCase::e4m3,
    [](float x, Overflow o) -> uint32_t { return f32_to_e4m3(x, o); },
    [](uint32_t c) { return e4m3_to_f32(uint8_t(c)); },
    [](uint32_t c) { return (c & 0x7Fu) == 0x7Fu; }};

const Format kE5m2{
    "e5m2", "f32_to_e5m2_rne.u8", "e5m2_to_f32.u32", 1, 0x80u, Fp8E5M2Traits::kMaxFinite, 0x02u,
    &EdgeCase::e5m2,
    [](float x, Overflow o) -> uint32_t { return f32_to_e5m2(x, o); },
    [](uint32_t c) { return e5m2_to_f32(uint8_t(c)); },
    [](uint32_t c) { return (c & 0x7Fu) > 0x7Cu; }};

bool f32_is_nan(uint32_t bits) { return (bits & 0x7FFFFFFFu) > 0x7F800000u; }

// Counts mismatches and keeps the first, so a failure shows how many and one example.
struct Mismatches {
  size_t count = 0;
  std::string first;
  void add(const char* what, uint32_t input, uint32_t expected, uint32_t actual, int hex_digits) {
    if (count++ == 0) {
      char buf[160];
      std::snprintf(buf, sizeof buf,
                    "first mismatch (%s): input 0x%08X expected 0x%0*X actual 0x%0*X", what, input,
                    hex_digits, expected, hex_digits, actual);
      first = buf;
    }
  }
};

// NOTE: where the expected value is a NaN only NaN-ness is compared, not the payload: IEEE 754
// leaves the payload of a converted NaN to the implementation (numpy's software and F16C paths,
// ml_dtypes and CUDA's cvt each pick their own), and farthing promises only a quiet NaN with the
// input's sign (EveryNanInputGivesQuietNanWithItsSign checks that).
bool same_code(const Format& f, uint32_t expected, uint32_t actual) {
  return f.is_nan(expected) ? f.is_nan(actual) : actual == expected;
}

// The saturating cast is the non-saturating reference with overflow clamped: a non-NaN input
// whose reference is inf or NaN becomes ±max finite; a NaN input stays NaN.
uint32_t saturated(const Format& f, uint32_t input, uint32_t reference) {
  if (f32_is_nan(input)) return reference;
  const uint32_t magnitude = reference & (f.sign_bit - 1u);
  if (magnitude <= f.max_finite) return reference;
  return ((input >> 31) ? f.sign_bit : 0u) | f.max_finite;
}

// So that gtest names the format instead of printing a pointer.
void PrintTo(const Format* f, std::ostream* os) { *os << f->name; }

class Minifloat : public ::testing::TestWithParam<const Format*> {};

TEST_P(Minifloat, DecodeOfEveryCodeMatchesReference) {
  const Format& f = *GetParam();
  const std::vector<uint32_t> golden = load_golden<uint32_t>(f.decode_golden, f.code_count());
  ASSERT_EQ(golden.size(), f.code_count());
  Mismatches m;
  for (uint32_t c = 0; c < f.code_count(); ++c) {
    const uint32_t actual = f32_to_bits(f.decode(c));
    const bool ok = f32_is_nan(golden[c]) ? f32_is_nan(actual) : actual == golden[c];
    if (!ok) m.add("decode", c, golden[c], actual, 8);
  }
  EXPECT_EQ(m.count, 0u) << f.name << ": " << m.count << " codes; " << m.first;
}

TEST_P(Minifloat, EncodeOfDecodeIsIdentityOnEveryNonNanCode) {
  const Format& f = *GetParam();
  Mismatches m;
  for (uint32_t c = 0; c < f.code_count(); ++c) {
    if (f.is_nan(c)) continue;
    const float x = f.decode(c);
    const uint32_t actual = f.encode(x, Overflow::kToInfOrNan);
    if (actual != c) m.add("non-saturating", f32_to_bits(x), c, actual, 2 * f.code_bytes);
    // Saturation changes nothing on finite codes.
    const bool finite = (c & (f.sign_bit - 1u)) <= f.max_finite;
    const uint32_t sat = f.encode(x, Overflow::kSaturate);
    if (finite && sat != c) m.add("saturating", f32_to_bits(x), c, sat, 2 * f.code_bytes);
  }
  EXPECT_EQ(m.count, 0u) << f.name << ": " << m.count << " codes; " << m.first;
}

TEST_P(Minifloat, RneMatchesReferenceOnRandomInputs) {
  const Format& f = *GetParam();
  const int digits = 2 * f.code_bytes;
  const std::vector<uint32_t> inputs = random_inputs();
  const std::vector<uint32_t> golden = f.code_bytes == 2
                                           ? load_golden<uint16_t>(f.encode_golden, kRandomCount)
                                           : load_golden<uint8_t>(f.encode_golden, kRandomCount);
  ASSERT_EQ(golden.size(), inputs.size());
  Mismatches non_sat, sat;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const float x = bits_to_f32(inputs[i]);
    const uint32_t actual = f.encode(x, Overflow::kToInfOrNan);
    if (!same_code(f, golden[i], actual)) {
      non_sat.add("non-saturating", inputs[i], golden[i], actual, digits);
    }
    const uint32_t expected_sat = saturated(f, inputs[i], golden[i]);
    const uint32_t actual_sat = f.encode(x, Overflow::kSaturate);
    if (!same_code(f, expected_sat, actual_sat)) {
      sat.add("saturating", inputs[i], expected_sat, actual_sat, digits);
    }
  }
  EXPECT_EQ(non_sat.count, 0u) << f.name << ": " << non_sat.count << " inputs; " << non_sat.first;
  EXPECT_EQ(sat.count, 0u) << f.name << ": " << sat.count << " inputs; " << sat.first;
}

TEST_P(Minifloat, RneMatchesReferenceOnEdgeInputs) {
  const Format& f = *GetParam();
  const int digits = 2 * f.code_bytes;
  const std::vector<EdgeCase> cases = load_edge_cases();
  ASSERT_GT(cases.size(), 1000u);
  Mismatches non_sat, sat;
  for (const EdgeCase& c : cases) {
    const float x = bits_to_f32(c.input);
    const uint32_t expected = c.*f.edge_expected;
    const uint32_t actual = f.encode(x, Overflow::kToInfOrNan);
    if (!same_code(f, expected, actual)) {
      non_sat.add("non-saturating", c.input, expected, actual, digits);
    }
    const uint32_t expected_sat = saturated(f, c.input, expected);
    const uint32_t actual_sat = f.encode(x, Overflow::kSaturate);
    if (!same_code(f, expected_sat, actual_sat)) {
      sat.add("saturating", c.input, expected_sat, actual_sat, digits);
    }
  }
  EXPECT_EQ(non_sat.count, 0u) << f.name << ": " << non_sat.count << " inputs; " << non_sat.first;
  EXPECT_EQ(sat.count, 0u) << f.name << ": " << sat.count << " inputs; " << sat.first;
}

// Every fp32 NaN (all 2 x (2^23 - 1) patterns), in both overflow modes: a quiet NaN with the
// input's sign (e4m3fn has a single NaN per sign).
TEST_P(Minifloat, EveryNanInputGivesQuietNanWithItsSign) {
  const Format& f = *GetParam();
  const int digits = 2 * f.code_bytes;
  Mismatches m;
  for (Overflow o : {Overflow::kToInfOrNan, Overflow::kSaturate}) {
    for (uint32_t sign : {0u, 0x80000000u}) {
      for (uint32_t payload = 1; payload <= 0x7FFFFFu; ++payload) {
        const uint32_t input = sign | 0x7F800000u | payload;
        const uint32_t actual = f.encode(bits_to_f32(input), o);
        const uint32_t want_sign = sign ? f.sign_bit : 0u;
        const bool quiet = (actual & f.quiet_bit) == f.quiet_bit;
        if (!f.is_nan(actual) || !quiet || (actual & f.sign_bit) != want_sign) {
          m.add("NaN", input, want_sign | (f.max_finite + 1) | f.quiet_bit, actual, digits);
        }
      }
    }
  }
  EXPECT_EQ(m.count, 0u) << f.name << ": " << m.count << " inputs; " << m.first;
}

INSTANTIATE_TEST_SUITE_P(Formats, Minifloat, ::testing::Values(&kFp16, &kE4m3, &kE5m2),
                         [](const ::testing::TestParamInfo<const Format*>& info) {
                           return std::string(info.param->name);
                         });

// docs/numerics.md §1 by hand, independent of the goldens.
TEST(MinifloatKnownValues, E4m3) {
  EXPECT_EQ(f32_to_e4m3(448.0f, Overflow::kToInfOrNan), 0x7Eu);   // max finite
  EXPECT_EQ(f32_to_e4m3(464.0f, Overflow::kToInfOrNan), 0x7Eu);   // midpoint to 480: ties to even
  EXPECT_EQ(f32_to_e4m3(465.0f, Overflow::kToInfOrNan), 0x7Fu);   // overflow: NaN (no inf)
  EXPECT_EQ(f32_to_e4m3(465.0f, Overflow::kSaturate), 0x7Eu);
  EXPECT_EQ(f32_to_e4m3(-465.0f, Overflow::kToInfOrNan), 0xFFu);
  EXPECT_EQ(f32_to_e4m3(-465.0f, Overflow::kSaturate), 0xFEu);
  EXPECT_EQ(f32_to_e4m3(1.0f / 0.0f, Overflow::kToInfOrNan), 0x7Fu);
  EXPECT_EQ(f32_to_e4m3(-1.0f / 0.0f, Overflow::kSaturate), 0xFEu);
  EXPECT_EQ(f32_to_e4m3(0x1.0p-9f, Overflow::kToInfOrNan), 0x01u);  // smallest subnormal
  EXPECT_EQ(f32_to_e4m3(0x1.0p-10f, Overflow::kToInfOrNan), 0x00u); // tie with 0: to even
  EXPECT_EQ(f32_to_e4m3(0x1.8p-9f, Overflow::kToInfOrNan), 0x02u);  // tie, odd lower neighbour
  EXPECT_EQ(e4m3_to_f32(0x7E), 448.0f);
  EXPECT_EQ(e4m3_to_f32(0x08), 0x1.0p-6f);  // smallest normal
}

TEST(MinifloatKnownValues, E5m2) {
  EXPECT_EQ(f32_to_e5m2(57344.0f, Overflow::kToInfOrNan), 0x7Bu);  // max finite
  EXPECT_EQ(f32_to_e5m2(61439.0f, Overflow::kToInfOrNan), 0x7Bu);
  EXPECT_EQ(f32_to_e5m2(61440.0f, Overflow::kToInfOrNan), 0x7Cu);  // midpoint, odd max: inf
  EXPECT_EQ(f32_to_e5m2(61440.0f, Overflow::kSaturate), 0x7Bu);
  EXPECT_EQ(f32_to_e5m2(-61440.0f, Overflow::kToInfOrNan), 0xFCu);
  EXPECT_EQ(f32_to_e5m2(1.0f / 0.0f, Overflow::kToInfOrNan), 0x7Cu);
  EXPECT_EQ(f32_to_e5m2(1.0f / 0.0f, Overflow::kSaturate), 0x7Bu);
  EXPECT_EQ(f32_to_e5m2(0x1.0p-16f, Overflow::kToInfOrNan), 0x01u);  // smallest subnormal
  EXPECT_EQ(e5m2_to_f32(0x7B), 57344.0f);
}

TEST(MinifloatKnownValues, Fp16) {
  EXPECT_EQ(f32_to_fp16_rne(65504.0f), 0x7BFFu);  // max finite
  EXPECT_EQ(f32_to_fp16_rne(65519.0f), 0x7BFFu);
  EXPECT_EQ(f32_to_fp16_rne(65520.0f), 0x7C00u);  // midpoint, odd max: inf
  EXPECT_EQ(f32_to_minifloat<Fp16Traits>(65520.0f, Rounding::kNearestEven, Overflow::kSaturate, 0),
            0x7BFFu);
  EXPECT_EQ(f32_to_fp16_rne(0x1.0p-24f), 0x0001u);  // smallest subnormal
  EXPECT_EQ(f32_to_fp16_rne(0x1.0p-25f), 0x0000u);  // tie with 0: to even
  EXPECT_EQ(f32_to_fp16_rne(-0.0f), 0x8000u);
  EXPECT_EQ(fp16_to_f32(0x7BFF), 65504.0f);
  EXPECT_EQ(fp16_to_f32(0x0400), 0x1.0p-14f);  // smallest normal
}

}  // namespace
}  // namespace farthing::numerics
