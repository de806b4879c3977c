// bf16.h — fp32 <-> bf16 casts: round-to-nearest-even and stochastic rounding.
//
// bf16 is the top half of an fp32 bit pattern, so both casts are integer arithmetic on
// the low 16 bits. Relies on: host_device.h. Tested by: tests/numerics/test_bf16.cpp
// (exhaustive round trip, ml_dtypes golden) and tests/numerics/test_stochastic_round.cpp.
#pragma once

#include "kernels/numerics/host_device.h"

namespace farthing::numerics {

inline constexpr uint16_t kBf16MaxFinite = 0x7F7F;  // 3.3895e38

FARTHING_HD float bf16_to_f32(uint16_t h) { return bits_to_f32(uint32_t(h) << 16); }

FARTHING_HD bool f32_bits_is_nan(uint32_t bits) { return (bits & 0x7FFFFFFFu) > 0x7F800000u; }

// Round to nearest, ties to even. Finite values that round past the largest bf16 become
// inf (IEEE behaviour, as ml_dtypes and PyTorch). NaN stays NaN, quieted, sign kept.
FARTHING_HD uint16_t f32_to_bf16_rne(float x) {
  const uint32_t bits = f32_to_bits(x);
  if (f32_bits_is_nan(bits)) return uint16_t((bits >> 16) | 0x0040u);
  const uint32_t lsb = (bits >> 16) & 1u;
  return uint16_t((bits + 0x7FFFu + lsb) >> 16);
}

// Stochastic rounding: with r uniform in [0, 2^16), round the magnitude up iff r < low16,
// i.e. up with probability low16 / 2^16, so E[result] = x. Exact values (low16 == 0) never
// move. r is the top 16 of the element's 32 random bits; the comparison "r < threshold"
// is the same convention minifloat.h uses for every other format.
// NOTE: a finite input never becomes inf; it saturates at the largest finite bf16, so a
// weight cannot blow up through rounding alone. NaN and inf pass through unchanged.
FARTHING_HD uint16_t f32_to_bf16_sr(float x, uint32_t random_bits) {
  const uint32_t bits = f32_to_bits(x);
  if ((bits & 0x7F800000u) == 0x7F800000u) {  // inf or NaN
    return f32_bits_is_nan(bits) ? uint16_t((bits >> 16) | 0x0040u) : uint16_t(bits >> 16);
  }
  const uint32_t round_up = (random_bits >> 16) < (bits & 0xFFFFu) ? 1u : 0u;
  const uint32_t rounded = (bits >> 16) + round_up;  // a carry moves into the exponent: still exact
  const uint32_t sign = rounded & 0x8000u;
  const bool became_inf = (rounded & 0x7FFFu) == 0x7F80u;
  return uint16_t(became_inf ? (sign | kBf16MaxFinite) : rounded);
}

}  // namespace farthing::numerics
