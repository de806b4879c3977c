// block_quant4.h — 4-bit block-wise quantization of optimizer moments (torchao's 4-bit
// AdamW layout): 128 consecutive elements of the global flat space share one fp32 absmax;
// each element is the 4-bit index of the nearest of 16 map values to x / absmax.
// Maps (docs/numerics.md §3): signed = bitsandbytes' create_dynamic_map(signed=True,
// max_exponent_bits=3, total_bits=4) (7 negatives, 0, 7 positives, 1.0); unsigned =
// linspace(0, 1, 17)[1:] (no zero, so v never dequantizes to 0 in a non-zero block).
// Relies on: host_device.h, dynamic_map.h (torch's fp32 linspace, host only).
// Tested by: tests/optim/test_adamw_8bit.cpp (4-bit vs fp32 twin), test_optim_partition.cpp.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>

#include "kernels/numerics/dynamic_map.h"
#include "kernels/numerics/host_device.h"

namespace farthing::numerics {

inline constexpr int kQuant4BlockElems = 128;
using DynamicMap4 = std::array<float, 16>;

// Host only: the finished tables are passed to the kernels.
inline DynamicMap4 make_dynamic_map_4bit(MapSign sign) {
  DynamicMap4 map{};
  if (sign == MapSign::kUnsigned) {
    for (int k = 1; k <= 16; ++k) map[size_t(k - 1)] = float(k) * 0.0625f;  // exact: k/16
    return map;
  }
  constexpr int kMaxExponentBits = 3;
  std::vector<float> values;
  for (int i = 0; i < kMaxExponentBits; ++i) {
    const int n = (1 << i) + 1;
    const std::vector<float> bounds = dynamic_map_detail::torch_linspace_f32(n);
    const float scale = float(std::pow(10.0, double(i - (kMaxExponentBits - 1))));
    for (int j = 0; j + 1 < n; ++j) {
      const float mean = (bounds[size_t(j)] + bounds[size_t(j + 1)]) / 2.0f;
      values.push_back(mean * scale);
      values.push_back(mean * -scale);
    }
  }
  values.push_back(0.0f);
  values.push_back(1.0f);
  std::sort(values.begin(), values.end());
  std::copy(values.begin(), values.end(), map.begin());
  return map;
}

// Nearest of 16 sorted map values: the number of midpoints strictly below x, so an exact
// midpoint goes to the lower value and NaN to code 0.
// NOTE: fifteen compares and no table search or gather: it vectorizes as written, and gives
// the same answer on every backend. No sign fix (torchao's 4-bit state has none): a tiny
// negative m may code as 0.
FARTHING_HD uint8_t map4_nearest(const float* map, float x) {
  int code = 0;
  for (int k = 0; k < 15; ++k) code += x > (map[k] + map[k + 1]) * 0.5f ? 1 : 0;
  return uint8_t(code);
}

// Quantizes one value of a block whose absmax is known; an all-zero block codes as 0 and
// dequantizes to 0 whatever the map. x / absmax is an IEEE division (see block_quant.h).
FARTHING_HD uint8_t quantize4_with_absmax(const float* map, float x, float absmax) {
  return map4_nearest(map, absmax == 0.0f ? 0.0f : x / absmax);
}

}  // namespace farthing::numerics
