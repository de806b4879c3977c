// fp4_block.h — quantize and dequantize one FP4 block: MXFP4 (32 elements, E8M0 scale) and NVFP4
// (16 elements, E4M3 scale, plus the tensor's fp32 scale), each with round-to-nearest-even or
// stochastic rounding of the elements. The scale rules and the NaN/inf/zero-block policy are
// fp4_scales.h's; this file only loops them over a block.
//
// A block may be shorter than its nominal size (a tensor's tail): the amax is taken over the n
// elements given. Element codes are one per byte. The block's amax is the max of |x| as ordered
// bits (fp8_scaling.h), so a NaN anywhere gives a NaN amax whatever the order of the reduction.
// Stochastic rounding draws the 32 random bits of element i from (key, first_index + i), the
// element's index in the global flat space (stochastic_round.h): the same element rounds the same
// way however the tensor is cut into blocks, threads or ranks. Scales are never rounded
// stochastically (they come from the amax, which SR would not make unbiased anyway).
// NOTE: E[dequantized] = x under SR only where x * multiplier lies within ±6; the MX floor rule can
// put a block's largest elements in (6, 8), and an E4M3 block scale rounded down can put them just
// above 6: those saturate to ±6 in both roundings.
// Relies on: fp4_e2m1.h, fp4_scales.h, fp8_scaling.h (the amax as bits), stochastic_round.h.
// Tested by: tests/numerics/test_fp4.cpp.
#pragma once

#include <cstdint>

#include "kernels/numerics/fp4_e2m1.h"
#include "kernels/numerics/fp4_scales.h"
#include "kernels/numerics/fp8_scaling.h"
#include "kernels/numerics/host_device.h"
#include "kernels/numerics/stochastic_round.h"

namespace farthing::numerics {

inline constexpr int kMxfp4BlockElems = 32;
inline constexpr int kNvfp4BlockElems = 16;

// max |x| over n elements, NaN-dominant (see fp8_scaling.h).
FARTHING_HD float fp4_block_amax(const float* x, int n) {
  uint32_t amax_bits = 0u;
  for (int i = 0; i < n; ++i) amax_bits = fp8_amax_bits_max(amax_bits, fp8_abs_bits(x[i]));
  return bits_to_f32(amax_bits);
}

// One element of a block whose encode multiplier is known. A NaN multiplier (a NaN block) gives
// code 0; a zero multiplier gives ±0.
FARTHING_HD uint8_t fp4_encode_element(float x, float multiplier) {
  return multiplier == multiplier ? f32_to_e2m1(x * multiplier) : uint8_t(0);
}
FARTHING_HD uint8_t fp4_encode_element_sr(float x, float multiplier, uint32_t random_bits) {
  return multiplier == multiplier ? f32_to_e2m1_sr(x * multiplier, random_bits) : uint8_t(0);
}

// --- MXFP4 ------------------------------------------------------------------------------------

// Returns the block's E8M0 scale code; writes n element codes.
FARTHING_HD uint8_t mxfp4_quantize_block(const float* x, int n, uint8_t* codes) {
  const uint8_t scale = mxfp4_scale_from_amax(fp4_block_amax(x, n));
  const float multiplier = mxfp4_encode_multiplier(scale);
  for (int i = 0; i < n; ++i) codes[i] = fp4_encode_element(x[i], multiplier);
  return scale;
}

// As mxfp4_quantize_block, the elements rounded stochastically; x[0] is global element first_index.
FARTHING_HD uint8_t mxfp4_quantize_block_sr(const float* x, int n, uint8_t* codes, RandomKey key,
                                            uint64_t first_index) {
  const uint8_t scale = mxfp4_scale_from_amax(fp4_block_amax(x, n));
  const float multiplier = mxfp4_encode_multiplier(scale);
  for (int i = 0; i < n; ++i) {
    codes[i] = fp4_encode_element_sr(x[i], multiplier, random_bits_for_element(key, first_index + uint64_t(i)));
  }
  return scale;
}

// Exact (E2M1 value times a power of two), except that 6 * 2^127 overflows to inf for the
// codes 253 and 254, which the encoder never makes. A NaN scale's block reads as the canonical
// NaN, so the CPU and the GPU store the same bits (host_device.h).
FARTHING_HD float mxfp4_dequantize_element(uint8_t code, uint8_t scale_code) {
  return canonical_nan(e2m1_to_f32(code) * e8m0_to_f32(scale_code));
}

FARTHING_HD void mxfp4_dequantize_block(const uint8_t* codes, int n, uint8_t scale_code, float* out) {
  for (int i = 0; i < n; ++i) out[i] = mxfp4_dequantize_element(codes[i], scale_code);
}

// --- NVFP4 ------------------------------------------------------------------------------------

// Returns the block's E4M3 scale code; writes n element codes. global_encode_scale is
// nvfp4_global_encode_scale(amax of the whole tensor).
FARTHING_HD uint8_t nvfp4_quantize_block(const float* x, int n, float global_encode_scale, uint8_t* codes) {
  const uint8_t scale = nvfp4_block_scale(fp4_block_amax(x, n), global_encode_scale);
  const float multiplier = nvfp4_encode_multiplier(scale, nvfp4_global_decode_scale(global_encode_scale));
  for (int i = 0; i < n; ++i) codes[i] = fp4_encode_element(x[i], multiplier);
  return scale;
}

FARTHING_HD uint8_t nvfp4_quantize_block_sr(const float* x, int n, float global_encode_scale, uint8_t* codes,
                                            RandomKey key, uint64_t first_index) {
  const uint8_t scale = nvfp4_block_scale(fp4_block_amax(x, n), global_encode_scale);
  const float multiplier = nvfp4_encode_multiplier(scale, nvfp4_global_decode_scale(global_encode_scale));
  for (int i = 0; i < n; ++i) {
    codes[i] = fp4_encode_element_sr(x[i], multiplier, random_bits_for_element(key, first_index + uint64_t(i)));
  }
  return scale;
}

// (E2M1 value * block scale) * s_dec: the first product is exact (at most 6 significant bits, in
// the normal range), the second rounds once.
FARTHING_HD float nvfp4_dequantize_element(uint8_t code, uint8_t scale_code, float global_decode_scale) {
  return canonical_nan((e2m1_to_f32(code) * e4m3_to_f32(scale_code)) * global_decode_scale);
}

FARTHING_HD void nvfp4_dequantize_block(const uint8_t* codes, int n, uint8_t scale_code, float global_decode_scale,
                                        float* out) {
  for (int i = 0; i < n; ++i) out[i] = nvfp4_dequantize_element(codes[i], scale_code, global_decode_scale);
}

}  // namespace farthing::numerics
