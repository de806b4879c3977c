// stochastic_round.h — where stochastic rounding gets its random bits.
//
// The bits for element i depend only on (seed, step, purpose, i): Philox4x32-10 with
// key = seed and counter = (i / 4 as 64 bits, step, purpose); word i % 4 of the output
// belongs to element i. So the same run rounds the same way on CPU or GPU, with any thread
// count, kernel geometry, shard layout or world size. (llm.c derived its bits from thread
// and block ids and had to patch duplicated seeds twice; this cannot happen here.)
// Relies on: philox.h, bf16.h, minifloat.h. Tested by: tests/numerics/test_stochastic_round.cpp.
#pragma once

#include "kernels/numerics/bf16.h"
#include "kernels/numerics/minifloat.h"
#include "kernels/numerics/philox.h"

namespace farthing::numerics {

// What the random bits are for, so two uses in one step never share bits.
enum class RandomPurpose : uint32_t {
  kWeightCast = 1,       // master -> bf16 working weights, once per optimizer step
  kMasterFreeUpdate = 2, // bf16 weight updated in place without a master
  kFp4Gradient = 3,      // FP4 operands rounded stochastically (fp4_linears.h)
  kHadamardSigns = 4,    // the random signs of the FP4 recipes' Hadamard transform (hadamard.h)
  kTest = 0xFFFFFFFFu,
};

struct RandomKey {
  uint64_t seed = 0;
  uint32_t step = 0;
  RandomPurpose purpose = RandomPurpose::kWeightCast;
};

// The four random words shared by elements 4g .. 4g+3.
FARTHING_HD Philox4x32 random_words_for_group(RandomKey key, uint64_t group) {
  const Philox4x32 counter{{uint32_t(group), uint32_t(group >> 32), key.step, uint32_t(key.purpose)}};
  return philox4x32_10(counter, uint32_t(key.seed), uint32_t(key.seed >> 32));
}

// 32 random bits for one element of the global flat space.
FARTHING_HD uint32_t random_bits_for_element(RandomKey key, uint64_t global_index) {
  return random_words_for_group(key, global_index >> 2).v[global_index & 3u];
}

}  // namespace farthing::numerics
