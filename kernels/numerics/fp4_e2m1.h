// fp4_e2m1.h — fp32 <-> fp4 E2M1, the element format of MXFP4 and NVFP4 (OCP MX v1.0 §5.3.3).
//
// E2M1: a sign bit, 2 exponent bits (bias 1) and 1 mantissa bit; the 16 codes are
//   0x0..0x7 = +{0, 0.5, 1, 1.5, 2, 3, 4, 6} and 0x8..0xF the same values negated (0x8 is -0).
// No infinity and no NaN. Codes are kept one per uint8_t (low 4 bits); packing two to a byte is a
// storage layout for the GEMM operands, not a numerics question.
//
// Rounding is minifloat.h's single definition (its f32_to_minifloat template with the traits
// below), so E2M1 rounds exactly as fp16/fp8 do:
//   - round to nearest, ties to even code (ml_dtypes' float4_e2m1fn cast, which the goldens pin);
//   - stochastic rounding with 32 random bits per element (stochastic_round.h says where they come
//     from), rounding up with probability (|x| - lower) / gap.
// NOTE: special inputs. Every finite |x| >= 6 becomes ±6 (saturation: E2M1 has nothing larger, and
// MX v1.0 clamps to the element's max normal); ±inf becomes ±6 too, as ml_dtypes does. NaN becomes
// a zero with the NaN's sign (+NaN -> 0x0, -NaN -> 0x8): MX v1.0 leaves NaN -> FP4 to the
// implementation, and the block formats carry a NaN in the block's scale instead (fp4_scales.h),
// so the element's code is never read. ml_dtypes also gives a zero but with the sign flipped
// (+NaN -> 0x8), an artifact of its generic cast for formats without NaN; farthing does not copy it.
// Relies on: host_device.h, minifloat.h. Tested by: tests/numerics/test_fp4.cpp.
#pragma once

#include <cstdint>

#include "kernels/numerics/host_device.h"
#include "kernels/numerics/minifloat.h"

namespace farthing::numerics {

struct Fp4E2M1Traits {
  static constexpr int kExpBits = 2, kManBits = 1;
  static constexpr bool kHasInf = false, kHasNan = false;
  // kInf is never used (no infinity; every E2M1 cast saturates); kNan is the magnitude a NaN
  // input gets, zero (see the header comment).
  static constexpr uint32_t kMaxFinite = 0x7, kInf = 0x7, kNan = 0x0;  // 6.0
};

inline constexpr float kE2M1MaxFinite = 6.0f;
// floor(log2(6)): the largest exponent of an E2M1 value, MX v1.0's emax_elem for FP4.
inline constexpr int kE2M1MaxExp = 2;

// NOTE: always saturating: with no inf or NaN code there is nothing else an overflow could be.
FARTHING_HD uint8_t f32_to_e2m1(float x) {
  return uint8_t(f32_to_minifloat<Fp4E2M1Traits>(x, Rounding::kNearestEven, Overflow::kSaturate, 0));
}
FARTHING_HD uint8_t f32_to_e2m1_sr(float x, uint32_t random_bits) {
  return uint8_t(f32_to_minifloat<Fp4E2M1Traits>(x, Rounding::kStochastic, Overflow::kSaturate, random_bits));
}
// Exact: every E2M1 value is an fp32 value. Bits above the low 4 are ignored.
FARTHING_HD float e2m1_to_f32(uint8_t code) { return minifloat_to_f32<Fp4E2M1Traits>(code & 0xFu); }

}  // namespace farthing::numerics
