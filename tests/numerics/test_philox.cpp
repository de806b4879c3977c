// test_philox.cpp — Philox4x32-10 against the Random123 known-answer vectors, and the
// per-element bit assignment that makes stochastic rounding layout-free.
#include <gtest/gtest.h>

#include "kernels/numerics/philox.h"
#include "kernels/numerics/stochastic_round.h"

namespace nm = farthing::numerics;

struct PhiloxKat {
  uint32_t counter[4];
  uint32_t key[2];
  uint32_t expected[4];
};

// From Random123's kat_vectors (philox4x32 10 ...): counter, key, expected output.
constexpr PhiloxKat kKats[] = {
    {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
};

TEST(Philox, MatchesRandom123KnownAnswers) {
  for (const PhiloxKat& kat : kKats) {
    const nm::Philox4x32 counter{{kat.counter[0], kat.counter[1], kat.counter[2], kat.counter[3]}};
    const nm::Philox4x32 out = nm::philox4x32_10(counter, kat.key[0], kat.key[1]);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(out.v[i], kat.expected[i]) << "word " << i;
  }
}

TEST(Philox, ElementBitsDependOnIndexStepPurposeAndSeed) {
  const nm::RandomKey key{12345, 7, nm::RandomPurpose::kWeightCast};
  const uint32_t base = nm::random_bits_for_element(key, 1000);
  EXPECT_EQ(base, nm::random_bits_for_element(key, 1000));  // a pure function
  EXPECT_NE(base, nm::random_bits_for_element(key, 1001));
  EXPECT_NE(base, nm::random_bits_for_element({12346, 7, key.purpose}, 1000));
  EXPECT_NE(base, nm::random_bits_for_element({12345, 8, key.purpose}, 1000));
  EXPECT_NE(base, nm::random_bits_for_element({12345, 7, nm::RandomPurpose::kMasterFreeUpdate}, 1000));
  // Indices beyond 2^32 use the high counter word rather than wrapping onto low indices.
  EXPECT_NE(nm::random_bits_for_element(key, 5), nm::random_bits_for_element(key, 5 + (uint64_t(1) << 34)));
}

TEST(Philox, ElementBitsAreRoughlyUniform) {
  // Each of the 32 bit positions should be set about half the time over many elements.
  const nm::RandomKey key{42, 1, nm::RandomPurpose::kTest};
  constexpr int kDraws = 1 << 16;
  int ones[32] = {};
  for (uint64_t i = 0; i < kDraws; ++i) {
    const uint32_t r = nm::random_bits_for_element(key, i);
    for (int b = 0; b < 32; ++b) ones[b] += (r >> b) & 1u;
  }
  // Binomial(65536, 1/2) has sigma 128; 6 sigma bounds a false alarm below 1e-8 per bit.
  for (int b = 0; b < 32; ++b) EXPECT_NEAR(ones[b], kDraws / 2, 6 * 128) << "bit " << b;
}
