// block_quant_cpu.cpp — see block_quant_cpu.h.
#include "kernels/cpu/block_quant_cpu.h"

#include <algorithm>

#include "kernels/numerics/block_quant.h"

namespace farthing::kernels {

namespace nm = farthing::numerics;

void block_quantize_cpu(const float* map, bool signed_map, const float* src, uint8_t* codes,
                        float* absmax, size_t n) {
  const int64_t blocks = int64_t((n + nm::kQuantBlockElems - 1) / nm::kQuantBlockElems);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    const size_t begin = size_t(b) * nm::kQuantBlockElems;
    const int count = int(std::min<size_t>(nm::kQuantBlockElems, n - begin));
    const float block_max = nm::block_absmax(src + begin, count);
    absmax[b] = block_max;
    const float* x = src + begin;
    uint8_t* out = codes + begin;
#pragma omp simd
    for (int i = 0; i < count; ++i) out[i] = nm::quantize_with_absmax(map, signed_map, x[i], block_max);
  }
}

void block_dequantize_cpu(const float* map, const uint8_t* codes, const float* absmax, float* dst,
                          size_t n) {
  const int64_t blocks = int64_t((n + nm::kQuantBlockElems - 1) / nm::kQuantBlockElems);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    const size_t begin = size_t(b) * nm::kQuantBlockElems;
    const int count = int(std::min<size_t>(nm::kQuantBlockElems, n - begin));
    const float block_max = absmax[b];
#pragma omp simd
    for (int i = 0; i < count; ++i) {
      dst[begin + size_t(i)] = nm::dequantize_with_absmax(map, codes[begin + size_t(i)], block_max);
    }
  }
}

}  // namespace farthing::kernels
