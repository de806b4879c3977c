// dynamic_map.h — bitsandbytes' 8-bit "dynamic" quantization maps, built from their recipe.
//
// create_dynamic_map(signed, max_exponent_bits=7, total_bits=8): for i = 0..6 take
// n = 2^i + 1 (signed) or 2^(i+1) + 1 (unsigned) points linspace(0.1, 1, n) in fp32,
// their pairwise midpoints, times 10^(i-6) (and the negatives when signed); add 0 and 1; sort.
// Host only: backends receive the finished 256-entry table.
// Relies on: nothing but <cmath>. Tested by: tests/numerics/test_dynamic_map.cpp, bitwise
// against ../shared/golden/bnb_dynamic_map_{signed,unsigned}.txt.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

namespace farthing::numerics {

using DynamicMap = std::array<float, 256>;

enum class MapSign : uint8_t { kSigned, kUnsigned };

namespace dynamic_map_detail {

// torch.linspace(0.1, 1, n) in fp32 as the CPU kernel that produced bitsandbytes' tables
// computes it: step = (1 - 0.1) / (n - 1); the first half counts up from 0.1, the second
// half down from 1.0; full 16-element stretches are two 8-wide vectors whose first element
// is computed like the scalar tail and the rest as base + k * step.
// NOTE: the scalar form `start + step * idx` was compiled into a fused multiply-add and the
// vector `base + k * step` was not. Only this exact mixture reproduces the golden maps bit for
// bit (checked against every other combination of vector width and contraction), so the fma
// below is deliberate and the plain products stay separate statements.
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

inline DynamicMap make_dynamic_map(MapSign sign) {
  constexpr int kMaxExponentBits = 7;
  std::vector<float> values;
  values.reserve(256);
  for (int i = 0; i < kMaxExponentBits; ++i) {
    const int n = sign == MapSign::kSigned ? (1 << i) + 1 : (1 << (i + 1)) + 1;
    const std::vector<float> bounds = dynamic_map_detail::torch_linspace_f32(n);
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
