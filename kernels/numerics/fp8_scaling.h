// fp8_scaling.h — how a tensor is scaled into FP8 and back: the scalar definitions shared by
// the CPU emulation (kernels/cpu/fp8_cpu.h) and the CUDA kernels.
//
// Convention (Transformer Engine's): a tile of values x gets a scale s, its codes are
// q = fp8(x * s) (round to nearest even, saturating at the format's max), and it reads back as
// q * s_inv with s_inv = 1 / s. The scale comes from the tile's amax, the largest |x|:
//     s = max_finite(format) / amax / 2^margin, floored to a power of two when asked.
// A power-of-two scale makes the rescaling exact both ways (and the dequantized value q * s_inv
// has at most 4 significant bits, exact in bf16 and fp32), which is what lets the CPU emulate an
// FP8 GEMM exactly. Where the policy picks tiles and scales: framework/backend/fp8_policy.h.
//
// The amax is a max over the |x| bit patterns as unsigned integers: for non-negative floats
// that order is the numeric one, and a NaN (bits above +inf) wins, so a tile with a NaN has a NaN
// amax whatever the order of the reduction, on every backend. A NaN or infinite amax, or one of
// zero, gives the scale 1: the NaN then reaches the loss, and the step is skipped as non-finite.
// Relies on: host_device.h, minifloat.h. Tested by: tests/numerics/test_fp8_scaling.cpp.
#pragma once

#include <cstdint>

#include "kernels/numerics/host_device.h"
#include "kernels/numerics/minifloat.h"

namespace farthing::numerics {

enum class Fp8Format : uint8_t { kE4M3, kE5M2 };

// Which elements share one scale, for a row-major (rows, cols) matrix.
//   kTensor:    the whole tensor (per-tensor scaling);
//   kRow1x128:  1 x 128 tiles along each row (activations and gradients reduced over columns);
//   kCol128x1:  128 x 1 tiles down each column (the same tensors reduced over rows: wgrad);
//   kBlock128:  128 x 128 blocks (weights, which are reduced over either axis).
// Tiles at the right and bottom edges are cut short (dimensions need not be multiples of 128).
enum class Fp8Tiling : uint8_t { kTensor, kRow1x128, kCol128x1, kBlock128 };

inline constexpr int64_t kFp8TileEdge = 128;

FARTHING_HD float fp8_max_finite(Fp8Format format) { return format == Fp8Format::kE4M3 ? 448.0f : 57344.0f; }

FARTHING_HD int64_t fp8_ceil_tiles(int64_t n) { return (n + kFp8TileEdge - 1) / kFp8TileEdge; }

// Tiles along rows and along columns: scales are stored row-major over (tile_rows, tile_cols).
FARTHING_HD int64_t fp8_tile_rows(Fp8Tiling tiling, int64_t rows) {
  return tiling == Fp8Tiling::kTensor ? 1 : tiling == Fp8Tiling::kRow1x128 ? rows : fp8_ceil_tiles(rows);
}
FARTHING_HD int64_t fp8_tile_cols(Fp8Tiling tiling, int64_t cols) {
  return tiling == Fp8Tiling::kTensor ? 1 : tiling == Fp8Tiling::kCol128x1 ? cols : fp8_ceil_tiles(cols);
}
FARTHING_HD int64_t fp8_scale_count(Fp8Tiling tiling, int64_t rows, int64_t cols) {
  return fp8_tile_rows(tiling, rows) * fp8_tile_cols(tiling, cols);
}
// The scale index of element (r, c).
FARTHING_HD int64_t fp8_scale_index(Fp8Tiling tiling, int64_t r, int64_t c, int64_t cols) {
  const int64_t tr = tiling == Fp8Tiling::kTensor ? 0 : tiling == Fp8Tiling::kRow1x128 ? r : r / kFp8TileEdge;
  const int64_t tc = tiling == Fp8Tiling::kTensor ? 0 : tiling == Fp8Tiling::kCol128x1 ? c : c / kFp8TileEdge;
  return tr * fp8_tile_cols(tiling, cols) + tc;
}

// |x| as ordered bits; the amax of a tile is the max of these (start from 0: +0.0).
FARTHING_HD uint32_t fp8_abs_bits(float x) { return f32_to_bits(x) & 0x7FFFFFFFu; }
FARTHING_HD uint32_t fp8_amax_bits_max(uint32_t a, uint32_t b) { return a > b ? a : b; }

// The largest power of two <= s, for finite s >= 2^-126 (clears the mantissa).
FARTHING_HD float fp8_floor_pow2(float s) { return bits_to_f32(f32_to_bits(s) & 0xFF800000u); }

// The scale for a tile of this amax (see the header comment). The margin is applied to the format's
// max before dividing (exact: a power of two), so it still counts where max / amax alone would
// overflow fp32. Scales are clamped to [2^-126, 2^126], so s and s_inv are both normal floats (no
// flush-to-zero mode can touch them); the upper clamp acts for amaxes below max * 2^-(126+margin).
FARTHING_HD float fp8_scale_from_amax(float amax, Fp8Format format, int margin, bool power_of_two) {
  const uint32_t bits = f32_to_bits(amax) & 0x7FFFFFFFu;
  if (bits == 0u || bits >= 0x7F800000u) return 1.0f;  // zero, infinite or NaN
  // 2^-margin, exact (margins are small integers), as a product so no libm call is involved.
  const float step = bits_to_f32(uint32_t(127 - margin) << 23);
  float s = (fp8_max_finite(format) * step) / bits_to_f32(bits);
  const float kMaxScale = bits_to_f32(uint32_t(127 + 126) << 23);  // 2^126
  const float kMinScale = bits_to_f32(uint32_t(127 - 126) << 23);  // 2^-126
  s = s > kMaxScale ? kMaxScale : s;
  s = s < kMinScale ? kMinScale : s;
  return power_of_two ? fp8_floor_pow2(s) : s;
}

// s_inv = 1 / s (exact when s is a power of two).
FARTHING_HD float fp8_scale_inv(float scale) { return 1.0f / scale; }

FARTHING_HD uint8_t fp8_quantize(float x, float scale, Fp8Format format) {
  const float scaled = x * scale;
  return format == Fp8Format::kE4M3 ? f32_to_e4m3(scaled, Overflow::kSaturate) : f32_to_e5m2(scaled, Overflow::kSaturate);
}

FARTHING_HD float fp8_decode(uint8_t code, Fp8Format format) {
  return format == Fp8Format::kE4M3 ? e4m3_to_f32(code) : e5m2_to_f32(code);
}

FARTHING_HD float fp8_dequantize(uint8_t code, float scale_inv, Fp8Format format) {
  return fp8_decode(code, format) * scale_inv;
}

}  // namespace farthing::numerics
