// test_bf16.cpp — fp32 <-> bf16 round-to-nearest-even (kernels/numerics/bf16.h), bit for bit.
//
// Exhaustive round trip over all 65,536 bf16 patterns, and f32 -> bf16 against ml_dtypes on 2^20
// SplitMix64 inputs and on every edge input. Relies on: the goldens in tests/data/numerics,
// written by `python3 tools/goldens/gen_numerics_goldens.py` (its docstring has the layout and
// the random-input recipe repeated in random_inputs() below).
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/numerics/bf16.h"
#include "tests/numerics/numerics_goldens.h"
#include "tests/support/test_support.h"

namespace farthing::numerics {
namespace {

constexpr size_t kRandomCount = test::kNumericsRandomCount;

std::vector<uint32_t> random_inputs() { return test::numerics_random_inputs(); }

template <class T>
std::vector<T> load_golden(const char* name, size_t count) {
  return test::load_numerics_golden<T>(name, count);
}

using EdgeCase = test::NumericsEdgeCase;

std::vector<EdgeCase> load_edge_cases() { return test::load_numerics_edge_cases(); }

bool bf16_is_nan(uint16_t h) { return (h & 0x7FFFu) > 0x7F80u; }

// Counts mismatches and keeps the first, so a failure shows how many and one example.
struct Mismatches {
  size_t count = 0;
  std::string first;
  void add(const char* what, uint32_t input, uint32_t expected, uint32_t actual) {
    if (count++ == 0) {
      char buf[160];
      std::snprintf(buf, sizeof buf,
                    "first mismatch (%s): input 0x%08X expected 0x%04X actual 0x%04X", what, input,
                    expected, actual);
      first = buf;
    }
  }
};

// NOTE: a NaN input must give a NaN, but its payload is not compared: IEEE 754 leaves the
// payload of a converted NaN to the implementation (ml_dtypes keeps the top payload bits,
// numpy's hardware path and CUDA's cvt give a canonical NaN), and farthing promises only a quiet
// NaN with the input's sign (checked separately below).
void check_bf16(Mismatches& m, const char* what, uint32_t input, uint16_t expected) {
  const uint16_t actual = f32_to_bf16_rne(bits_to_f32(input));
  const bool ok = bf16_is_nan(expected) ? bf16_is_nan(actual) : actual == expected;
  if (!ok) m.add(what, input, expected, actual);
}

TEST(Bf16, EveryPatternDecodesExactlyAndRoundTrips) {
  Mismatches decode, round_trip;
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const float x = bf16_to_f32(uint16_t(h));
    if (f32_to_bits(x) != h << 16) decode.add("decode", h, h << 16, f32_to_bits(x));
    const uint16_t back = f32_to_bf16_rne(x);
    const bool ok = bf16_is_nan(uint16_t(h)) ? bf16_is_nan(back) : back == h;
    if (!ok) round_trip.add("round trip", h, h, back);
  }
  EXPECT_EQ(decode.count, 0u) << decode.first;
  EXPECT_EQ(round_trip.count, 0u) << round_trip.first;
}

TEST(Bf16, RneMatchesMlDtypesOnRandomInputs) {
  const std::vector<uint32_t> inputs = random_inputs();
  const std::vector<uint16_t> golden = load_golden<uint16_t>("f32_to_bf16_rne.u16", kRandomCount);
  ASSERT_EQ(golden.size(), inputs.size());
  Mismatches m;
  for (size_t i = 0; i < inputs.size(); ++i) check_bf16(m, "random", inputs[i], golden[i]);
  EXPECT_EQ(m.count, 0u) << m.first;
}

TEST(Bf16, RneMatchesMlDtypesOnEdgeInputs) {
  const std::vector<EdgeCase> cases = load_edge_cases();
  ASSERT_GT(cases.size(), 1000u);
  Mismatches m;
  for (const EdgeCase& c : cases) check_bf16(m, "edge", c.input, c.bf16);
  EXPECT_EQ(m.count, 0u) << m.first;
}

// Every fp32 NaN (all 2 x (2^23 - 1) patterns): a quiet bf16 NaN with the input's sign, even
// when the payload lies only in the 16 bits that bf16 drops.
TEST(Bf16, EveryNanInputGivesQuietNanWithItsSign) {
  Mismatches m;
  for (uint32_t sign : {0u, 0x80000000u}) {
    for (uint32_t payload = 1; payload <= 0x7FFFFFu; ++payload) {
      const uint32_t input = sign | 0x7F800000u | payload;
      const uint16_t actual = f32_to_bf16_rne(bits_to_f32(input));
      const bool ok = bf16_is_nan(actual) && (actual & 0x0040u) != 0 &&
                      (actual & 0x8000u) == (input >> 16 & 0x8000u);
      if (!ok) m.add("NaN", input, (input >> 16 & 0x8000u) | 0x7FC0u, actual);
    }
  }
  EXPECT_EQ(m.count, 0u) << m.first;
}

TEST(Bf16, KnownValues) {
  EXPECT_EQ(f32_to_bf16_rne(1.0f), 0x3F80u);
  EXPECT_EQ(f32_to_bf16_rne(1.0f + 1e-4f), 0x3F80u);  // the update a bf16 weight cannot absorb
  EXPECT_EQ(f32_to_bf16_rne(bits_to_f32(0x3F808000u)), 0x3F80u);  // tie, even lower neighbour
  EXPECT_EQ(f32_to_bf16_rne(bits_to_f32(0x3F818000u)), 0x3F82u);  // tie, odd lower neighbour
  EXPECT_EQ(f32_to_bf16_rne(bits_to_f32(0x7F7F7FFFu)), kBf16MaxFinite);
  EXPECT_EQ(f32_to_bf16_rne(bits_to_f32(0x7F7F8000u)), 0x7F80u);  // midpoint to overflow: inf
  EXPECT_EQ(f32_to_bf16_rne(bits_to_f32(0xFF7F8000u)), 0xFF80u);
  EXPECT_EQ(f32_to_bf16_rne(-0.0f), 0x8000u);
}

}  // namespace
}  // namespace farthing::numerics
