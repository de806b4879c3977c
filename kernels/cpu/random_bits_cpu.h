// random_bits_cpu.h — stochastic-rounding bits for a run of consecutive elements, fast.
//
// Fills bits[i] with numerics::random_bits_for_element(key, global_begin + i) for a run of at
// most kRandomBitsChunk elements: whole Philox groups in a vectorized pass (hand-written AVX2
// where the CPU has it: Philox is ~all of a stochastic-rounding cast's cost), the partial
// groups at either end one element at a time. The bits are those of the one definition in
// numerics/, whatever path computes them.
// Tested by: tests/numerics/test_random_bits_avx2.cpp (every count at every begin phase vs the
// scalar definition), tests/numerics/test_stochastic_round.cpp (casts vs the scalar definition),
// tests/optim/test_step_scalar_parity.cpp (the fused AdamW step vs the scalar definitions).
#pragma once

#include <cstdint>

#include "kernels/numerics/stochastic_round.h"

namespace farthing::kernels {

inline constexpr int kRandomBitsChunk = 256;

void fill_random_bits_cpu(numerics::RandomKey key, uint64_t global_begin, int count, uint32_t* bits);

}  // namespace farthing::kernels
