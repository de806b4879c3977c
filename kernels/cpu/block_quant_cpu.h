// block_quant_cpu.h — 8-bit block-wise quantize/dequantize over arrays on the host.
//
// One OpenMP task per 256-element block: absmax, then codes, each by the scalar definitions
// in numerics/block_quant.h. src[0] sits on a block boundary; the last block may be short.
// Tested by: tests/numerics/test_block_quant.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

namespace farthing::kernels {

void block_quantize_cpu(const float* map, bool signed_map, const float* src, uint8_t* codes,
                        float* absmax, size_t n);
void block_dequantize_cpu(const float* map, const uint8_t* codes, const float* absmax, float* dst,
                          size_t n);

}  // namespace farthing::kernels
