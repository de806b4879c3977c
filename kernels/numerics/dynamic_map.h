// dynamic_map.h — bitsandbytes' 8-bit "dynamic" quantization maps, built from their recipe.
//
// create_dynamic_map(signed, max_exponent_bits=7, total_bits=8): for i = 0..6 take
// n = 2^i + 1 (signed) or 2^(i+1) + 1 (unsigned) points linspace(0.1, 1, n) in fp32,
// their pairwise midpoints, times 10^(i-6) (and the negatives when signed); add 0 and 1; sort.
// The recipe's values depend on torch's fp32 linspace, which changed between torch 1.13 and
// torch 2.x: the maps differ by one or two ulps in 42 (signed) and 43 (unsigned) of 256 entries.
// farthing's 8-bit optimizer state uses the torch 1.13 map (kStateDynamicMap; docs/precision.md
// says why) and every checkpoint names it (docs/checkpoint_format.md); the torch 2.x map is
// built here too, to show which one farthing uses and how little they differ.
// Host only: backends receive the finished 256-entry table.
// Relies on: nothing but <cmath>. Tested by: tests/numerics/test_dynamic_map.cpp, bitwise
// against bitsandbytes' own tables under torch 1.13 (golden/bnb_dynamic_map_*.txt in the tests'
// reference folder, skipped without it) and
// tests/data/numerics/bnb_dynamic_map_torch2_{signed,unsigned}.txt (bitsandbytes 0.50.2 under
// torch 2.15; tools/goldens/gen_dynamic_map_goldens.py).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <vector>

namespace farthing::numerics {

using DynamicMap = std::array<float, 256>;

enum class MapSign : uint8_t { kSigned, kUnsigned };

// Whose fp32 linspace the map's boundaries come from.
enum class MapLinspace : uint8_t {
  kTorch1_13,  // torch 1.13's CPU kernel: a mixture of fused and unfused steps (below)
  kTorch2,     // torch 2.x's CPU kernel: every point a fused multiply-add
};

// The map farthing's 8-bit optimizer state is coded with, and its name in checkpoints.
inline constexpr MapLinspace kStateDynamicMap = MapLinspace::kTorch1_13;
inline constexpr std::string_view dynamic_map_name(MapLinspace linspace) {
  return linspace == MapLinspace::kTorch1_13 ? "bitsandbytes-dynamic-torch1.13" : "bitsandbytes-dynamic-torch2";
}

namespace dynamic_map_detail {

// torch.linspace(0.1, 1, n) in fp32 as torch 1.13's CPU kernel computes it (the one that produced
// bitsandbytes' torch 1.13 tables): step = (1 - 0.1) / (n - 1); the first half counts up from 0.1, the second
// half down from 1.0; full 16-element stretches are two 8-wide vectors whose first element
// is computed like the scalar tail and the rest as base + k * step.
// NOTE: the scalar form `start + step * idx` was compiled into a fused multiply-add and the
// vector `base + k * step` was not. Only this exact mixture reproduces the golden maps bit for
// bit (checked against every other combination of vector width and contraction), so the fma
// below is deliberate and the plain products stay separate statements.
// torch 2.x (checked against torch 2.15 for every n the maps use): start + step * idx for the
// first half, end - step * (n - idx - 1) for the second, each one fused multiply-add, whatever
// the vector width.
inline std::vector<float> torch2_linspace_f32(int n) {
  const float start = 0.1f, end = 1.0f;
  const float step = (end - start) / float(n - 1);
  const int halfway = n / 2;
  std::vector<float> out(static_cast<size_t>(n));
  for (int idx = 0; idx < n; ++idx) {
    out[size_t(idx)] = idx < halfway ? std::fma(step, float(idx), start) : std::fma(-step, float(n - idx - 1), end);
  }
  return out;
}

inline std::vector<float> torch_linspace_f32(int n) {
  const float start = 0.1f, end = 1.0f;
  const float step = (end - start) / float(n - 1);
  const int halfway = n / 2;
  auto scalar_at = [&](int idx) {
    return idx < halfway ? std::fma(step, float(idx), start)
                         : std::fma(-step, float(n - idx - 1), end);
  };
  std::vector<float> out(static_cast<size_t>(n));
  constexpr int kVectorWidth = 8;
  const int vector_end = n / (2 * kVectorWidth) * (2 * kVectorWidth);
  int idx = 0;
  for (; idx < vector_end; idx += kVectorWidth) {
    const float base = scalar_at(idx);
    for (int k = 0; k < kVectorWidth; ++k) {
      const float k_step = float(k) * step;
      out[size_t(idx + k)] = base + k_step;
    }
  }
  for (; idx < n; ++idx) out[size_t(idx)] = scalar_at(idx);
  return out;
}

}  // namespace dynamic_map_detail

inline DynamicMap make_dynamic_map(MapSign sign, MapLinspace linspace = kStateDynamicMap) {
  constexpr int kMaxExponentBits = 7;
  std::vector<float> values;
  values.reserve(256);
  for (int i = 0; i < kMaxExponentBits; ++i) {
    const int n = sign == MapSign::kSigned ? (1 << i) + 1 : (1 << (i + 1)) + 1;
    const std::vector<float> bounds = linspace == MapLinspace::kTorch1_13 ? dynamic_map_detail::torch_linspace_f32(n)
                                                                           : dynamic_map_detail::torch2_linspace_f32(n);
    const float scale = float(std::pow(10.0, double(i - (kMaxExponentBits - 1))));
    for (int j = 0; j + 1 < n; ++j) {
      const float mean = (bounds[size_t(j)] + bounds[size_t(j + 1)]) / 2.0f;
      values.push_back(mean * scale);
      if (sign == MapSign::kSigned) values.push_back(mean * -scale);
    }
  }
  values.push_back(0.0f);
  values.push_back(1.0f);
  std::sort(values.begin(), values.end());
  DynamicMap map{};
  std::copy(values.begin(), values.end(), map.begin());
  return map;
}

// The index of 0.0 in each map: what an all-zero block is coded as.
inline constexpr uint8_t kSignedMapZeroCode = 127;
inline constexpr uint8_t kUnsignedMapZeroCode = 0;

}  // namespace farthing::numerics
