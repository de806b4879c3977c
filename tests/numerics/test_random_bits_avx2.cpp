// test_random_bits_avx2.cpp — fill_random_bits_cpu (kernels/cpu/random_bits_cpu.cpp: AVX2
// Philox where built, the word transpose fused into its stores) gives
// numerics::random_bits_for_element's bits for every element: every count 0..256 at begins
// that sit at each phase of a Philox group of four and of a set of eight groups, group
// counters that carry into the counter's high word, and several keys.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/cpu/random_bits_cpu.h"
#include "kernels/numerics/stochastic_round.h"

namespace nm = farthing::numerics;
using farthing::kernels::fill_random_bits_cpu;
using farthing::kernels::kRandomBitsChunk;

namespace {

void expect_matches(nm::RandomKey key, uint64_t begin, int count) {
  std::vector<uint32_t> bits(size_t(kRandomBitsChunk) + 1, 0xDEADBEEFu);
  fill_random_bits_cpu(key, begin, count, bits.data());
  for (int i = 0; i < count; ++i) {
    ASSERT_EQ(bits[size_t(i)], nm::random_bits_for_element(key, begin + uint64_t(i)))
        << "begin " << begin << " count " << count << " element " << i;
  }
  ASSERT_EQ(bits[size_t(count)], 0xDEADBEEFu) << "wrote past count " << count << " at begin " << begin;
}

}  // namespace

TEST(RandomBitsCpu, MatchesScalarDefinitionAtAwkwardBeginsAndCounts) {
  const nm::RandomKey keys[] = {{0, 0, nm::RandomPurpose::kWeightCast},
                                {0xC0FFEE12345678ull, 7, nm::RandomPurpose::kMasterFreeUpdate},
                                {~0ull, ~0u, nm::RandomPurpose::kTest}};
  // Group counters around 2^32 (the carry into the counter's high word) and 2^64 - 1.
  const uint64_t bases[] = {0, 256 * 1000, (uint64_t(1) << 34) - 4 * 40, ~uint64_t(0) - 4 * 300};
  for (const nm::RandomKey& key : keys) {
    for (uint64_t base : bases) {
      for (uint64_t phase = 0; phase < 37; ++phase) {
        for (int count = 0; count <= kRandomBitsChunk; ++count) expect_matches(key, base + phase, count);
      }
    }
  }
}
