// minifloat.h — fp32 <-> narrow IEEE-like formats (fp16, fp8 e4m3fn, fp8 e5m2; fp4 e2m1's traits
// live in fp4_e2m1.h).
//
// One definition of rounding for every narrow format: the fp32 significand is shifted to
// the target's quantum (the spacing at that exponent, subnormals included) and the bits
// shifted out decide the rounding: ties-to-even for round-to-nearest, a comparison with
// 32 random bits for stochastic rounding. Formats differ only in their traits below.
// Relies on: host_device.h. Tested by: tests/numerics/test_minifloat.cpp (all codes, ml_dtypes
// goldens on 1M+ values and edge cases), tests/numerics/test_stochastic_round.cpp and
// tests/numerics/test_fp4.cpp (e2m1 through the same template).
#pragma once

#include "kernels/numerics/host_device.h"

namespace farthing::numerics {

// Traits of a format with a sign bit, kExpBits exponent bits and kManBits mantissa bits.
// kNan is the code a NaN input encodes to; where the format has no NaN (kHasNan false: fp4 e2m1)
// it is an ordinary code that decodes as itself.
struct Fp16Traits {
  static constexpr int kExpBits = 5, kManBits = 10;
  static constexpr bool kHasInf = true, kHasNan = true;
  static constexpr uint32_t kMaxFinite = 0x7BFF, kInf = 0x7C00, kNan = 0x7E00;  // 65504
};
// e4m3fn: no infinities; exponent 15 with mantissa 111 is the only NaN, so 448 is the max.
struct Fp8E4M3Traits {
  static constexpr int kExpBits = 4, kManBits = 3;
  static constexpr bool kHasInf = false, kHasNan = true;
  static constexpr uint32_t kMaxFinite = 0x7E, kInf = 0x7F, kNan = 0x7F;  // 448; kInf unused
};
struct Fp8E5M2Traits {
  static constexpr int kExpBits = 5, kManBits = 2;
  static constexpr bool kHasInf = true, kHasNan = true;
  static constexpr uint32_t kMaxFinite = 0x7B, kInf = 0x7C, kNan = 0x7E;  // 57344
};

enum class Rounding : uint8_t { kNearestEven, kStochastic };

// The rounding core shared by round-to-nearest and stochastic rounding.
// Returns the target code (sign in bit kExpBits + kManBits).
// Written as straight-line integer code with selects (no early returns), so the CPU loops
// vectorize it and GPU warps never diverge.
// NOTE: stochastic rounding rounds up with probability rem / 2^shift resolved to 2^-32:
// for shifts above 32 (values far below the smallest subnormal) the threshold is floored,
// an error below 2^-32 in probability. Finite inputs saturate at ±max finite under SR
// whatever the overflow mode, because SR exists to keep updates unbiased, not to make inf.
template <class F>
FARTHING_HD uint32_t f32_to_minifloat(float x, Rounding rounding, Overflow overflow,
                                      uint32_t random_bits) {
  constexpr int kBias = (1 << (F::kExpBits - 1)) - 1;
  constexpr int kMinNormalExp = 1 - kBias;
  constexpr uint32_t kSignBit = 1u << (F::kExpBits + F::kManBits);
  const uint32_t bits = f32_to_bits(x);
  const uint32_t sign = (bits >> 31) ? kSignBit : 0u;
  const uint32_t abs_bits = bits & 0x7FFFFFFFu;
  // x = significand * 2^(exp - 23), with the implicit bit for normal fp32 values.
  const int biased = int(abs_bits >> 23);
  const uint32_t significand = (biased == 0 ? 0u : 0x800000u) | (abs_bits & 0x7FFFFFu);
  const int exp = (biased == 0 ? 1 : biased) - 127;
  // Quantum of the target at this magnitude: 2^(exp - M) when normal, fixed when subnormal.
  const int target_exp = exp > kMinNormalExp ? exp : kMinNormalExp;
  const int shift = (target_exp - F::kManBits) - (exp - 23);  // >= 23 - M
  // significand < 2^24, so from shift 31 on nothing is left above the quantum.
  const int kept_shift = shift < 31 ? shift : 31;
  const uint32_t q = significand >> kept_shift;
  const uint32_t rem = significand - (q << kept_shift);
  uint32_t round_up;
  if (rounding == Rounding::kNearestEven) {
    // Half a quantum is 2^(shift - 1), above any remainder once shift >= 25.
    const uint32_t half = 1u << (kept_shift - 1);
    round_up = (rem > half || (rem == half && (q & 1u))) ? 1u : 0u;
  } else {
    // Round up iff r < rem * 2^(32 - shift): probability rem / 2^shift.
    const uint32_t threshold = shift <= 32 ? rem << (32 - (shift < 32 ? shift : 32))
                                           : rem >> (shift - 32 < 31 ? shift - 32 : 31);
    round_up = random_bits < threshold ? 1u : 0u;
  }
  // q includes the implicit bit for normals, so a mantissa carry lands in the exponent
  // field by itself, and q == 2^M from a subnormal becomes the smallest normal.
  const uint32_t code = (uint32_t(target_exp - kMinNormalExp) << F::kManBits) + q + round_up;
  const bool saturate = overflow == Overflow::kSaturate || rounding == Rounding::kStochastic;
  const uint32_t overflowed = saturate ? F::kMaxFinite : (F::kHasInf ? F::kInf : F::kNan);
  const uint32_t inf_code = overflow == Overflow::kSaturate ? F::kMaxFinite
                                                            : (F::kHasInf ? F::kInf : F::kNan);
  uint32_t result = code > F::kMaxFinite ? overflowed : code;
  result = abs_bits == 0x7F800000u ? inf_code : result;
  result = abs_bits > 0x7F800000u ? F::kNan : result;
  return sign | result;
}

// Exact decode: every narrow value is an fp32 value. Straight-line, like the encoder.
template <class F>
FARTHING_HD float minifloat_to_f32(uint32_t code) {
  constexpr int kBias = (1 << (F::kExpBits - 1)) - 1;
  constexpr uint32_t kExpMask = (1u << F::kExpBits) - 1u;
  constexpr uint32_t kManMask = (1u << F::kManBits) - 1u;
  const uint32_t sign = (code >> (F::kExpBits + F::kManBits)) & 1u;
  const uint32_t exp_field = (code >> F::kManBits) & kExpMask;
  const uint32_t man = code & kManMask;
  const uint32_t abs_code = code & ((1u << (F::kExpBits + F::kManBits)) - 1u);
  // Subnormal: man * 2^(1 - bias - M), a small integer times a power of two: exact.
  const float quantum = bits_to_f32(uint32_t(127 + 1 - kBias - F::kManBits) << 23);
  const uint32_t subnormal_bits = f32_to_bits(float(man) * quantum);
  const uint32_t normal_bits = ((exp_field + uint32_t(127 - kBias)) << 23) | (man << (23 - F::kManBits));
  uint32_t abs_bits = exp_field == 0 ? subnormal_bits : normal_bits;
  if (F::kHasInf) {
    const uint32_t special = man == 0 ? 0x7F800000u : (0x7FC00000u | (man << (23 - F::kManBits)));
    abs_bits = exp_field == kExpMask ? special : abs_bits;
  } else if (F::kHasNan) {
    abs_bits = abs_code == F::kNan ? 0x7FC00000u : abs_bits;
  }
  return bits_to_f32((sign << 31) | abs_bits);
}

// Named casts, so call sites read like the format they produce.
FARTHING_HD uint16_t f32_to_fp16_rne(float x) {
  return uint16_t(f32_to_minifloat<Fp16Traits>(x, Rounding::kNearestEven, Overflow::kToInfOrNan, 0));
}
FARTHING_HD uint16_t f32_to_fp16_sr(float x, uint32_t random_bits) {
  return uint16_t(f32_to_minifloat<Fp16Traits>(x, Rounding::kStochastic, Overflow::kSaturate, random_bits));
}
FARTHING_HD float fp16_to_f32(uint16_t h) { return minifloat_to_f32<Fp16Traits>(h); }

FARTHING_HD uint8_t f32_to_e4m3(float x, Overflow overflow) {
  return uint8_t(f32_to_minifloat<Fp8E4M3Traits>(x, Rounding::kNearestEven, overflow, 0));
}
FARTHING_HD uint8_t f32_to_e4m3_sr(float x, uint32_t random_bits) {
  return uint8_t(f32_to_minifloat<Fp8E4M3Traits>(x, Rounding::kStochastic, Overflow::kSaturate, random_bits));
}
FARTHING_HD float e4m3_to_f32(uint8_t c) { return minifloat_to_f32<Fp8E4M3Traits>(c); }

FARTHING_HD uint8_t f32_to_e5m2(float x, Overflow overflow) {
  return uint8_t(f32_to_minifloat<Fp8E5M2Traits>(x, Rounding::kNearestEven, overflow, 0));
}
FARTHING_HD uint8_t f32_to_e5m2_sr(float x, uint32_t random_bits) {
  return uint8_t(f32_to_minifloat<Fp8E5M2Traits>(x, Rounding::kStochastic, Overflow::kSaturate, random_bits));
}
FARTHING_HD float e5m2_to_f32(uint8_t c) { return minifloat_to_f32<Fp8E5M2Traits>(c); }

}  // namespace farthing::numerics
