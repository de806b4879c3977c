// fp4_cuda.cu — see fp4_cuda.h.
#include "kernels/cuda/fp4_cuda.h"

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/nn_cuda_common.cuh"
#include "kernels/numerics/bf16.h"
#include "kernels/numerics/fp4_block.h"
#include "kernels/numerics/fp4_lt_layout.h"
#include "kernels/numerics/fp4_scale_rules.h"
#include "kernels/numerics/hadamard.h"

namespace farthing::kernels {

namespace nm = farthing::numerics;
using cuda_nn::blocks_for;
using cuda_nn::check_launch;
using cuda_nn::warp_max_bits;

namespace {

constexpr int kThreads = 256;

#define FARTHING_GRID_STRIDE(i, n)                                                            \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += int64_t(gridDim.x) * blockDim.x)

// 1. Element (r, c) of the operand, read through the transpose and widened (exact from bf16).
__global__ void __launch_bounds__(kThreads)
    gather_kernel(const float* x_f32, const uint16_t* x_bf16, int64_t rows, int64_t cols, bool transposed, float* out) {
  FARTHING_GRID_STRIDE(i, rows * cols) {
    const int64_t r = i / cols, c = i % cols;
    const int64_t at = transposed ? c * rows + r : i;
    out[i] = x_f32 != nullptr ? x_f32[at] : nm::bf16_to_f32(x_bf16[at]);
  }
}

// 2. Each row's full chunks of n columns through the random Hadamard transform, a thread a chunk.
__global__ void __launch_bounds__(kThreads)
    hadamard_kernel(float* x, int64_t rows, int64_t cols, const float* signs, int n) {
  const int64_t chunks_per_row = cols / n;
  FARTHING_GRID_STRIDE(t, rows * chunks_per_row) {
    nm::random_hadamard_chunk(x + (t / chunks_per_row) * cols + (t % chunks_per_row) * n, signs, n);
  }
}

// 3. The amax bits of all n elements into *amax_bits (zeroed first).
__global__ void __launch_bounds__(kThreads) tensor_amax_kernel(const float* x, int64_t n, uint32_t* amax_bits) {
  uint32_t bits = 0u;
  FARTHING_GRID_STRIDE(i, n) { bits = nm::fp8_amax_bits_max(bits, nm::fp8_abs_bits(x[i])); }
  bits = warp_max_bits(bits);
  if ((threadIdx.x & 31u) == 0) atomicMax(amax_bits, bits);
}

// The tensor's encode scale, from the finished amax (E4M3), or 1 (E8M0: no amax pass).
__device__ float encode_scale_of(Fp4Scale scale, const uint32_t* amax_bits) {
  return scale == Fp4Scale::kE4M3 ? fp4_tensor_encode_scale(scale, nm::bits_to_f32(*amax_bits)) : 1.0f;
}

// 4. A thread per block of `band` rows x `block` columns (band 1, or block for 2D tiles): the
// amax of its rows' segments, and its scale code written to each of its rows.
__global__ void __launch_bounds__(kThreads)
    block_scales_kernel(const float* x, int64_t rows, int64_t cols, int block, int64_t band, Fp4Scale scale,
                        const uint32_t* amax_bits, uint8_t* scales) {
  const int64_t bpr = fp4_blocks_per_row(cols, block), bands = (rows + band - 1) / band;
  const float encode_scale = encode_scale_of(scale, amax_bits);
  FARTHING_GRID_STRIDE(t, bands * bpr) {
    const int64_t r0 = (t / bpr) * band, r1 = r0 + band < rows ? r0 + band : rows, b = t % bpr, c0 = b * block;
    const int n = int(cols - c0 < block ? cols - c0 : block);
    uint32_t m = 0u;
    for (int64_t r = r0; r < r1; ++r) {
      m = nm::fp8_amax_bits_max(m, nm::f32_to_bits(nm::fp4_block_amax(x + r * cols + c0, n)));
    }
    const uint8_t code = fp4_block_scale_code(scale, nm::bits_to_f32(m), encode_scale);
    for (int64_t r = r0; r < r1; ++r) scales[r * bpr + b] = code;
  }
}

// 5. A thread per element.
__global__ void __launch_bounds__(kThreads)
    encode_kernel(const float* x, int64_t rows, int64_t cols, int block, Fp4Scale scale, const uint32_t* amax_bits,
                  const uint8_t* scales, bool stochastic, bool sr_prescale, nm::RandomKey key, uint64_t first_index,
                  uint8_t* codes, float* decode_scale) {
  const int64_t bpr = fp4_blocks_per_row(cols, block);
  const float encode = encode_scale_of(scale, amax_bits);
  const float s_dec = fp4_tensor_decode_scale(scale, encode, false);  // without the pre-scale
  if (blockIdx.x == 0 && threadIdx.x == 0) *decode_scale = fp4_tensor_decode_scale(scale, encode, sr_prescale);
  FARTHING_GRID_STRIDE(i, rows * cols) {
    const float multiplier =
        fp4_element_multiplier(scale, scales[(i / cols) * bpr + (i % cols) / block], s_dec, sr_prescale);
    codes[i] = stochastic ? nm::fp4_encode_element_sr(x[i], multiplier,
                                                      nm::random_bits_for_element(key, first_index + uint64_t(i)))
                          : nm::fp4_encode_element(x[i], multiplier);
  }
}

__global__ void __launch_bounds__(kThreads)
    dequantize_unscaled_bf16_kernel(const uint8_t* codes, const uint8_t* scales, int64_t rows, int64_t cols, int block,
                                    Fp4Scale scale, uint16_t* out) {
  const int64_t bpr = fp4_blocks_per_row(cols, block);
  FARTHING_GRID_STRIDE(i, rows * cols) {
    out[i] = nm::f32_to_bf16_rne(fp4_element_unscaled(scale, codes[i], scales[(i / cols) * bpr + (i % cols) / block]));
  }
}

__global__ void __launch_bounds__(kThreads)
    gemm_epilogue_kernel(float* c, const float* product, const float* a_decode, const float* b_decode, int64_t count,
                         bool accumulate) {
  const float alpha = fp4_gemm_alpha(*a_decode, *b_decode);
  FARTHING_GRID_STRIDE(i, count) { c[i] = fp4_gemm_output(c[i], alpha, product[i], accumulate); }
}

__global__ void __launch_bounds__(kThreads) pack_codes_kernel(const uint8_t* codes, int64_t pairs, uint8_t* packed) {
  FARTHING_GRID_STRIDE(j, pairs) { packed[j] = nm::fp4_lt_pack_pair(codes[2 * j], codes[2 * j + 1]); }
}

// A thread per scale of the padded matrix (padded rows and blocks write zero).
__global__ void __launch_bounds__(kThreads)
    tile_scales_kernel(const uint8_t* scales, int64_t rows, int64_t blocks, uint8_t* tiled) {
  const int64_t padded_blocks = nm::fp4_lt_round_up(blocks, nm::kFp4LtTileBlocks);
  const int64_t padded_rows = nm::fp4_lt_round_up(rows, nm::kFp4LtTileRows);
  FARTHING_GRID_STRIDE(t, padded_rows * padded_blocks) {
    const int64_t r = t / padded_blocks, b = t % padded_blocks;
    tiled[nm::fp4_lt_scale_offset(r, b, blocks)] = r < rows && b < blocks ? scales[r * blocks + b] : uint8_t(0);
  }
}

#undef FARTHING_GRID_STRIDE

}  // namespace

void fp4_quantize_cuda(const Fp4QuantizeArgs& a, void* scratch, cudaStream_t stream) {
  const int64_t n = a.rows * a.cols;
  float* x = a.workspace;
  gather_kernel<<<blocks_for(n), kThreads, 0, stream>>>(a.x_f32, a.x_bf16, a.rows, a.cols, a.transposed, x);
  check_launch();
  if (a.rht_size > 0 && a.cols >= a.rht_size) {
    hadamard_kernel<<<blocks_for(a.rows * (a.cols / a.rht_size)), kThreads, 0, stream>>>(x, a.rows, a.cols, a.rht_signs,
                                                                                        a.rht_size);
    check_launch();
  }
  auto* amax_bits = static_cast<uint32_t*>(scratch);
  if (a.scale == Fp4Scale::kE4M3) {
    FARTHING_CUDA_CHECK(cudaMemsetAsync(amax_bits, 0, sizeof(uint32_t), stream));
    tensor_amax_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, n, amax_bits);
    check_launch();
  }
  const int64_t band = a.block_2d ? a.block : 1;
  const int64_t block_tasks = (a.rows + band - 1) / band * fp4_blocks_per_row(a.cols, a.block);
  block_scales_kernel<<<blocks_for(block_tasks), kThreads, 0, stream>>>(x, a.rows, a.cols, a.block, band, a.scale,
                                                                         amax_bits, a.scales);
  check_launch();
  encode_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, a.rows, a.cols, a.block, a.scale, amax_bits, a.scales,
                                                         a.stochastic, a.sr_prescale, a.key, a.first_index, a.codes,
                                                         a.decode_scale);
  check_launch();
}

void fp4_dequantize_unscaled_bf16_cuda(const Fp4Operand& x, uint16_t* out, cudaStream_t stream) {
  dequantize_unscaled_bf16_kernel<<<blocks_for(x.rows * x.cols), kThreads, 0, stream>>>(x.codes, x.scales, x.rows,
                                                                                        x.cols, x.block, x.scale, out);
  check_launch();
}

void fp4_gemm_epilogue_cuda(float* c, const float* product, const float* a_decode_scale, const float* b_decode_scale,
                            int64_t count, bool accumulate, cudaStream_t stream) {
  gemm_epilogue_kernel<<<blocks_for(count), kThreads, 0, stream>>>(c, product, a_decode_scale, b_decode_scale, count,
                                                                   accumulate);
  check_launch();
}

void fp4_pack_codes_cuda(const uint8_t* codes, int64_t count, uint8_t* packed, cudaStream_t stream) {
  pack_codes_kernel<<<blocks_for(count / 2), kThreads, 0, stream>>>(codes, count / 2, packed);
  check_launch();
}

void fp4_tile_scales_cuda(const uint8_t* scales, int64_t rows, int64_t blocks, uint8_t* tiled, cudaStream_t stream) {
  const int64_t padded = nm::fp4_lt_scale_bytes(rows, blocks);
  tile_scales_kernel<<<blocks_for(padded), kThreads, 0, stream>>>(scales, rows, blocks, tiled);
  check_launch();
}

}  // namespace farthing::kernels
