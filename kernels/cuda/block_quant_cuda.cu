// block_quant_cuda.cu — see block_quant_cuda.h.
//
// Quantize: one CUDA block of 256 threads per 256-element quantization block (grid-stride over
// blocks); the block's absmax is a warp-shuffle plus shared-memory reduction, then every thread
// codes its own element with numerics::quantize_with_absmax against a shared-memory copy of
// the map. Dequantize: a grid-stride elementwise loop over the same shared map.
#include "kernels/cuda/block_quant_cuda.h"

#include <algorithm>

#include "kernels/cuda/cuda_check.h"
#include "kernels/numerics/block_quant.h"

namespace farthing::kernels {

namespace nm = farthing::numerics;

namespace {

constexpr unsigned kThreadsPerBlock = nm::kQuantBlockElems;
constexpr unsigned kWarps = kThreadsPerBlock / 32;
constexpr unsigned kMapEntries = 256;
static_assert(kThreadsPerBlock == kMapEntries && kThreadsPerBlock % 32 == 0,
              "each thread stages one map entry and owns one element of a quantization block");
// NOTE: every block's result is a pure function of its 256 inputs, so the grid size chosen
// here can never change a bit of the output.
constexpr uint64_t kMaxBlocks = 1u << 15;

unsigned blocks_for(uint64_t work_items) {
  return unsigned(std::min<uint64_t>((work_items + kThreadsPerBlock - 1) / kThreadsPerBlock, kMaxBlocks));
}

// NOTE: numerics::block_absmax_bits as a parallel reduction, bit for bit: the max of the
// |x| bit patterns (sign cleared). Unsigned max is exact and order-free, so the reduction order
// cannot matter, and a NaN anywhere wins with the same payload as on the CPU (fmaxf on the
// float values would drop it instead). Inactive threads of a short last block contribute 0,
// the scalar's starting value.
__device__ float block_absmax_reduce(uint32_t abs_bits, uint32_t* warp_max) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    abs_bits = max(abs_bits, __shfl_xor_sync(0xFFFFFFFFu, abs_bits, offset));
  }
  if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = abs_bits;
  __syncthreads();
  uint32_t block_max = warp_max[0];
#pragma unroll
  for (unsigned w = 1; w < kWarps; ++w) block_max = max(block_max, warp_max[w]);
  return nm::bits_to_f32(block_max);
}

__global__ void __launch_bounds__(kThreadsPerBlock)
    block_quantize_kernel(const float* __restrict__ map_device, bool signed_map,
                          const float* __restrict__ src, uint8_t* __restrict__ codes,
                          float* __restrict__ absmax, size_t n, uint64_t blocks) {
  __shared__ float map[kMapEntries];
  __shared__ uint32_t warp_max[kWarps];
  map[threadIdx.x] = map_device[threadIdx.x];  // visible after the first __syncthreads below
  for (uint64_t b = blockIdx.x; b < blocks; b += gridDim.x) {
    const size_t begin = size_t(b) * kThreadsPerBlock;
    const size_t i = begin + threadIdx.x;
    const bool active = i < n;  // false only in a short last block
    const float x = active ? src[i] : 0.0f;
    const uint32_t abs_bits = active ? nm::f32_to_bits(x) & 0x7FFFFFFFu : 0u;
    const float block_max = block_absmax_reduce(abs_bits, warp_max);
    if (threadIdx.x == 0) absmax[b] = block_max;
    if (active) codes[i] = nm::quantize_with_absmax(map, signed_map, x, block_max);
    __syncthreads();  // warp_max is rewritten by the next block's reduction
  }
}

__global__ void __launch_bounds__(kThreadsPerBlock)
    block_dequantize_kernel(const float* __restrict__ map_device, const uint8_t* __restrict__ codes,
                            const float* __restrict__ absmax, float* __restrict__ dst, size_t n) {
  __shared__ float map[kMapEntries];
  map[threadIdx.x] = map_device[threadIdx.x];
  __syncthreads();
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    dst[i] = nm::dequantize_with_absmax(map, codes[i], absmax[i / nm::kQuantBlockElems]);
  }
}

}  // namespace

void block_quantize_cuda(const float* map_device, bool signed_map, const float* src, uint8_t* codes,
                         float* absmax, size_t n, cudaStream_t stream) {
  if (n == 0) return;
  const uint64_t blocks = (uint64_t(n) + nm::kQuantBlockElems - 1) / nm::kQuantBlockElems;
  block_quantize_kernel<<<blocks_for(n), kThreadsPerBlock, 0, stream>>>(map_device, signed_map, src,
                                                                         codes, absmax, n, blocks);
  FARTHING_CUDA_CHECK(cudaGetLastError());
}

void block_dequantize_cuda(const float* map_device, const uint8_t* codes, const float* absmax,
                           float* dst, size_t n, cudaStream_t stream) {
  if (n == 0) return;
  block_dequantize_kernel<<<blocks_for(n), kThreadsPerBlock, 0, stream>>>(map_device, codes, absmax,
                                                                          dst, n);
  FARTHING_CUDA_CHECK(cudaGetLastError());
}

}  // namespace farthing::kernels
