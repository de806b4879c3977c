// block_quant_cuda.h — 8-bit block-wise quantize/dequantize on a CUDA device.
//
// The same operations as kernels/cpu/block_quant_cpu.h on device pointers, queued on `stream`:
// one 256-thread CUDA block per 256-element quantization block, each element by the scalar
// definitions in numerics/block_quant.h, so codes and absmax are bitwise the CPU's.
// `map_device` is the 256-entry dynamic map (numerics/dynamic_map.h) already in device memory.
// src[0] sits on a block boundary; the last block may be short.
// Relies on: numerics/block_quant.h, the CUDA runtime.
// Tested by: tests/kernels/test_cuda_parity.cpp (bitwise against the CPU backend).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace farthing::kernels {

void block_quantize_cuda(const float* map_device, bool signed_map, const float* src, uint8_t* codes,
                         float* absmax, size_t n, cudaStream_t stream);
void block_dequantize_cuda(const float* map_device, const uint8_t* codes, const float* absmax,
                           float* dst, size_t n, cudaStream_t stream);

}  // namespace farthing::kernels
