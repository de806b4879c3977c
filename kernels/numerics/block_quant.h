// block_quant.h — 8-bit block-wise quantization with a dynamic map (bitsandbytes-compatible).
//
// 256 consecutive elements of the global flat space share one fp32 absmax; each element is
// the 8-bit index of the map value nearest to x / absmax. Blocks are aligned to global
// indices, so any split of an array into shards that are multiples of 256 quantizes alike.
// Relies on: host_device.h, dynamic_map.h (the tables). Tested by:
// tests/numerics/test_block_quant.cpp (error bounds, zero blocks, NaN, tails, shard invariance).
#pragma once

#include "kernels/numerics/host_device.h"

namespace farthing::numerics {

inline constexpr int kQuantBlockElems = 256;

// Nearest code in a sorted 256-entry map: bitsandbytes' CUDA rule (quantize_2D), written once.
// A binary search from pivot 127 with steps 64, 32, ..., 1 leaves pivot p with
// map[p-1] < x <= map[p+1]; then x goes to the neighbour on its side only when strictly
// beyond the midpoint, so exact midpoints stay at p (which makes ties go to the even code).
// NOTE: bitsandbytes has three nearest searches that disagree on ties; this is the one its
// blockwise optimizer kernels use, and farthing uses it on every backend.
FARTHING_HD uint8_t dynamic_map_nearest(const float* map, float x) {
  int pivot = 127;
  for (int step = 64; step > 0; step >>= 1) pivot += x > map[pivot] ? step : -step;
  const float value = map[pivot];
  const bool above = x > value;
  const int upper = pivot < 255 ? pivot + 1 : 255;
  const int lower = pivot > 0 ? pivot - 1 : 0;
  const int neighbour = above ? upper : lower;
  const float midpoint = (map[neighbour] + value) * 0.5f;
  const bool beyond = above ? x > midpoint : x < midpoint;
  return uint8_t(beyond ? neighbour : pivot);
}

// Quantizes one value of a block whose absmax is known.
// NOTE: x / absmax is an IEEE division (bitsandbytes uses the approximate __fdividef); the
// correctly rounded quotient is what makes CPU and GPU codes bitwise equal.
// For a signed map (first moment) a code whose sign differs from x's is moved one step
// toward x's sign, as bitsandbytes does, so m never flips sign through quantization.
// An all-zero block (absmax 0) codes every element as the map's zero.
FARTHING_HD uint8_t quantize_with_absmax(const float* map, bool signed_map, float x, float absmax) {
  const uint8_t zero_code = signed_map ? 127 : 0;
  const float normalized = absmax == 0.0f ? 0.0f : x / absmax;
  const int code = dynamic_map_nearest(map, normalized);
  const bool sign_differs = signed_map && (f32_to_bits(map[code]) >> 31) != (f32_to_bits(x) >> 31);
  const int fixed = sign_differs ? (x > 0.0f ? code + 1 : code - 1) : code;
  return absmax == 0.0f ? zero_code : uint8_t(fixed);
}

// The map's values are finite, so only a NaN or inf absmax (a poisoned block) makes a NaN here:
// then 0 * inf or the absmax's own payload, which differ by backend; every NaN becomes the
// canonical one (host_device.h).
FARTHING_HD float dequantize_with_absmax(const float* map, uint8_t code, float absmax) {
  return canonical_nan(map[code] * absmax);
}

// max |x| over n values, as the largest |x| bit pattern: for non-negative floats the bit
// order is the value order, and every NaN pattern lies above +inf, so a NaN anywhere in the
// block makes the absmax NaN (a poisoned block stays visible instead of being hidden).
// NOTE: an integer max is also what vectorizes on the CPU and reduces cheaply on the GPU;
// both backends reduce these same bit patterns, so even the NaN payload agrees.
FARTHING_HD uint32_t block_absmax_bits(const float* x, int n) {
  uint32_t max_bits = 0;
  for (int i = 0; i < n; ++i) {
    const uint32_t abs_bits = f32_to_bits(x[i]) & 0x7FFFFFFFu;
    max_bits = abs_bits > max_bits ? abs_bits : max_bits;
  }
  return max_bits;
}

FARTHING_HD float block_absmax(const float* x, int n) { return bits_to_f32(block_absmax_bits(x, n)); }

}  // namespace farthing::numerics
