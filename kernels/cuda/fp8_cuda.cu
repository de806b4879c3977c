// fp8_cuda.cu — see fp8_cuda.h.
//
// Every scalar step is a kernels/numerics call; the kernels only decide which thread handles
// which element and how tile amaxes are gathered. Reductions are over uint32 |x| bit patterns
// (max is exact and order-free), so the launch geometry can never change a bit of the output.
#include "kernels/cuda/fp8_cuda.h"

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/nn_cuda_common.cuh"
#include "kernels/numerics/bf16.h"
#include "kernels/numerics/fp8_scaling.h"

namespace farthing::kernels {

namespace nm = farthing::numerics;
using cuda_nn::blocks_for;
using cuda_nn::check_launch;
using cuda_nn::warp_max_bits;

namespace {

constexpr int kThreads = 256;
constexpr int64_t kEdge = nm::kFp8TileEdge;

// Element i of the input, widened to fp32 (exact from bf16), as fp8_cpu.cpp's Input.
struct F32In {
  const float* p;
  __device__ float operator()(int64_t i) const { return p[i]; }
};
struct Bf16In {
  const uint16_t* p;
  __device__ float operator()(int64_t i) const { return nm::bf16_to_f32(p[i]); }
};

// The matrix's amax folded into *amax as a max of bits (the caller zeroes it for one matrix's
// alone; an amax is never negative, so its float bits order as |x| bits do).
__device__ void fold_into_matrix_amax(float* amax, uint32_t bits) {
  if (amax != nullptr) atomicMax(reinterpret_cast<unsigned int*>(amax), bits);
}

// kRow1x128: a warp per 1 x 128 tile, four elements a lane held in registers between the amax
// and the cast. Tile t is row t / tiles_per_row; its scale index is t (fp8_scale_index).
template <class In>
__global__ void __launch_bounds__(kThreads)
    quantize_row_tiles_kernel(In x, int64_t rows, int64_t cols, nm::Fp8Format format, int margin, bool power_of_two,
                              uint8_t* codes, float* scale_inv, float* amax) {
  const int64_t tiles_per_row = nm::fp8_ceil_tiles(cols), tiles = rows * tiles_per_row;
  const int lane = int(threadIdx.x & 31u);
  const int64_t warps = (int64_t(gridDim.x) * blockDim.x) >> 5;
  for (int64_t t = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; t < tiles; t += warps) {
    const int64_t r = t / tiles_per_row, c0 = (t % tiles_per_row) * kEdge;
    float v[4];
    uint32_t bits = 0u;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t c = c0 + lane + 32 * j;
      v[j] = c < cols ? x(r * cols + c) : 0.0f;
      if (c < cols) bits = nm::fp8_amax_bits_max(bits, nm::fp8_abs_bits(v[j]));
    }
    bits = warp_max_bits(bits);
    const float scale = nm::fp8_scale_from_amax(nm::bits_to_f32(bits), format, margin, power_of_two);
    if (lane == 0) {
      scale_inv[t] = nm::fp8_scale_inv(scale);
      fold_into_matrix_amax(amax, bits);
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t c = c0 + lane + 32 * j;
      if (c < cols) codes[r * cols + c] = nm::fp8_quantize(v[j], scale, format);
    }
  }
}

// kCol128x1: a thread per 128 x 1 tile (adjacent threads, adjacent columns: coalesced). The
// cast reads the tile a second time, mostly from L1/L2 (a warp's 128 x 32 tile is 16 KiB fp32).
template <class In>
__global__ void __launch_bounds__(kThreads)
    quantize_col_tiles_kernel(In x, int64_t rows, int64_t cols, nm::Fp8Format format, int margin, bool power_of_two,
                              uint8_t* codes, float* scale_inv, float* amax) {
  const int64_t tiles = nm::fp8_ceil_tiles(rows) * cols;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < tiles; t += stride) {
    const int64_t c = t % cols, r0 = (t / cols) * kEdge, r1 = r0 + kEdge < rows ? r0 + kEdge : rows;
    uint32_t bits = 0u;
    for (int64_t r = r0; r < r1; ++r) bits = nm::fp8_amax_bits_max(bits, nm::fp8_abs_bits(x(r * cols + c)));
    const float scale = nm::fp8_scale_from_amax(nm::bits_to_f32(bits), format, margin, power_of_two);
    scale_inv[t] = nm::fp8_scale_inv(scale);  // scale index (r0 / 128) * cols + c == t
    fold_into_matrix_amax(amax, bits);
    for (int64_t r = r0; r < r1; ++r) codes[r * cols + c] = nm::fp8_quantize(x(r * cols + c), scale, format);
  }
}

// kBlock128: a block per 128 x 128 tile; the tile's amax through warp maxima and shared memory,
// then every thread casts its elements (the second read mostly from L1/L2: 64 KiB fp32 a tile).
template <class In>
__global__ void __launch_bounds__(kThreads)
    quantize_block_tiles_kernel(In x, int64_t rows, int64_t cols, nm::Fp8Format format, int margin, bool power_of_two,
                                uint8_t* codes, float* scale_inv, float* amax) {
  __shared__ uint32_t warp_bits[kThreads / 32];
  const int64_t tile_cols = nm::fp8_ceil_tiles(cols), tiles = nm::fp8_ceil_tiles(rows) * tile_cols;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t r0 = (t / tile_cols) * kEdge, c0 = (t % tile_cols) * kEdge;
    const int64_t h = rows - r0 < kEdge ? rows - r0 : kEdge, w = cols - c0 < kEdge ? cols - c0 : kEdge;
    uint32_t bits = 0u;
    for (int64_t i = threadIdx.x; i < h * w; i += blockDim.x) {
      bits = nm::fp8_amax_bits_max(bits, nm::fp8_abs_bits(x((r0 + i / w) * cols + c0 + i % w)));
    }
    bits = warp_max_bits(bits);
    if ((threadIdx.x & 31u) == 0) warp_bits[threadIdx.x >> 5] = bits;
    __syncthreads();
    bits = 0u;
    for (int k = 0; k < kThreads / 32; ++k) bits = nm::fp8_amax_bits_max(bits, warp_bits[k]);
    __syncthreads();  // warp_bits is reused by the next tile
    const float scale = nm::fp8_scale_from_amax(nm::bits_to_f32(bits), format, margin, power_of_two);
    if (threadIdx.x == 0) {
      scale_inv[t] = nm::fp8_scale_inv(scale);
      fold_into_matrix_amax(amax, bits);
    }
    for (int64_t i = threadIdx.x; i < h * w; i += blockDim.x) {
      const int64_t e = (r0 + i / w) * cols + c0 + i % w;
      codes[e] = nm::fp8_quantize(x(e), scale, format);
    }
  }
}

// kTensor, pass 1 of current scaling: the amax bits of all n elements into *amax_bits (zeroed).
template <class In>
__global__ void __launch_bounds__(kThreads) tensor_amax_kernel(In x, int64_t n, uint32_t* amax_bits) {
  uint32_t bits = 0u;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    bits = nm::fp8_amax_bits_max(bits, nm::fp8_abs_bits(x(i)));
  }
  bits = warp_max_bits(bits);
  if ((threadIdx.x & 31u) == 0) atomicMax(amax_bits, bits);
}

// kTensor, pass 2 of current scaling: every thread derives the one scale from the finished amax
// (a pure function, so all agree); block 0's thread 0 writes s_inv and the amax.
template <class In>
__global__ void __launch_bounds__(kThreads)
    tensor_cast_kernel(In x, int64_t n, nm::Fp8Format format, int margin, bool power_of_two,
                       const uint32_t* amax_bits, uint8_t* codes, float* scale_inv, float* amax) {
  const uint32_t bits = *amax_bits;
  const float scale = nm::fp8_scale_from_amax(nm::bits_to_f32(bits), format, margin, power_of_two);
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    scale_inv[0] = nm::fp8_scale_inv(scale);
    if (amax != nullptr) *amax = nm::bits_to_f32(nm::fp8_amax_bits_max(nm::f32_to_bits(*amax), bits));
  }
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    codes[i] = nm::fp8_quantize(x(i), scale, format);
  }
}

// kTensor with a given (delayed) scale: cast and amax in one pass.
template <class In>
__global__ void __launch_bounds__(kThreads)
    tensor_cast_given_kernel(In x, int64_t n, nm::Fp8Format format, const float* given_scale, uint8_t* codes,
                             uint32_t* amax_bits) {
  const float scale = *given_scale;
  uint32_t bits = 0u;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float v = x(i);
    bits = nm::fp8_amax_bits_max(bits, nm::fp8_abs_bits(v));
    codes[i] = nm::fp8_quantize(v, scale, format);
  }
  bits = warp_max_bits(bits);
  if ((threadIdx.x & 31u) == 0) atomicMax(amax_bits, bits);
}

template <int = 0>
__global__ void tensor_given_finish_kernel(const float* given_scale, const uint32_t* amax_bits, float* scale_inv,
                                           float* amax) {
  scale_inv[0] = nm::fp8_scale_inv(*given_scale);
  if (amax != nullptr) *amax = nm::bits_to_f32(nm::fp8_amax_bits_max(nm::f32_to_bits(*amax), *amax_bits));
}

template <class In>
void quantize(const Fp8QuantizeArgs& a, In x, uint32_t* scratch, cudaStream_t stream) {
  const int64_t n = a.rows * a.cols;
  switch (a.tiling) {
    case Fp8Tiling::kTensor:
      FARTHING_CUDA_CHECK(cudaMemsetAsync(scratch, 0, sizeof(uint32_t), stream));
      if (a.given_scale != nullptr) {
        tensor_cast_given_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, n, a.format, a.given_scale, a.codes, scratch);
        check_launch();
        tensor_given_finish_kernel<><<<1, 1, 0, stream>>>(a.given_scale, scratch, a.scale_inv, a.amax);
        check_launch();
      } else {
        // Two passes: the cast needs the whole tensor's amax first.
        tensor_amax_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, n, scratch);
        check_launch();
        tensor_cast_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, n, a.format, a.margin, a.power_of_two, scratch,
                                                                     a.codes, a.scale_inv, a.amax);
        check_launch();
      }
      return;
    case Fp8Tiling::kRow1x128: {
      const int64_t tiles = a.rows * nm::fp8_ceil_tiles(a.cols);
      quantize_row_tiles_kernel<<<blocks_for(tiles * 32), kThreads, 0, stream>>>(
          x, a.rows, a.cols, a.format, a.margin, a.power_of_two, a.codes, a.scale_inv, a.amax);
      break;
    }
    case Fp8Tiling::kCol128x1: {
      const int64_t tiles = nm::fp8_ceil_tiles(a.rows) * a.cols;
      quantize_col_tiles_kernel<<<blocks_for(tiles), kThreads, 0, stream>>>(
          x, a.rows, a.cols, a.format, a.margin, a.power_of_two, a.codes, a.scale_inv, a.amax);
      break;
    }
    case Fp8Tiling::kBlock128: {
      const int64_t tiles = nm::fp8_ceil_tiles(a.rows) * nm::fp8_ceil_tiles(a.cols);
      quantize_block_tiles_kernel<<<unsigned(tiles < 65535 ? tiles : 65535), kThreads, 0, stream>>>(
          x, a.rows, a.cols, a.format, a.margin, a.power_of_two, a.codes, a.scale_inv, a.amax);
      break;
    }
  }
  check_launch();
}

template <bool kBf16>
__global__ void __launch_bounds__(kThreads) dequantize_kernel(Fp8Operand x, void* out) {
  const int64_t n = x.rows * x.cols, stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float s_inv = x.scale_inv[nm::fp8_scale_index(x.tiling, i / x.cols, i % x.cols, x.cols)];
    const float v = nm::fp8_dequantize(x.codes[i], s_inv, x.format);
    if constexpr (kBf16) {
      static_cast<uint16_t*>(out)[i] = nm::f32_to_bf16_rne(v);
    } else {
      static_cast<float*>(out)[i] = v;
    }
  }
}

constexpr int kTransposeTile = 32;

// A 32 x 32 tile through shared memory (one column of padding against bank conflicts), so both
// the reads and the writes are along rows.
template <int = 0>
__global__ void transpose_codes_kernel(const uint8_t* src, uint8_t* dst, int64_t rows, int64_t cols) {
  __shared__ uint8_t tile[kTransposeTile][kTransposeTile + 1];
  const int64_t r0 = int64_t(blockIdx.y) * kTransposeTile, c0 = int64_t(blockIdx.x) * kTransposeTile;
  for (int i = threadIdx.y; i < kTransposeTile; i += blockDim.y) {
    const int64_t r = r0 + i, c = c0 + threadIdx.x;
    if (r < rows && c < cols) tile[i][threadIdx.x] = src[r * cols + c];
  }
  __syncthreads();
  for (int i = threadIdx.y; i < kTransposeTile; i += blockDim.y) {
    const int64_t c = c0 + i, r = r0 + threadIdx.x;  // dst row c, column r
    if (r < rows && c < cols) dst[c * rows + r] = tile[threadIdx.x][i];
  }
}

template <int = 0>
__global__ void copy_scales_kernel(const float* src, int64_t src_o, int64_t src_k, float* dst, int64_t dst_o,
                                   int64_t dst_k, int64_t outer, int64_t inner) {
  const int64_t n = outer * inner, stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const int64_t o = i / inner, k = i % inner;
    dst[o * dst_o + k * dst_k] = src[o * src_o + k * src_k];
  }
}

}  // namespace

size_t fp8_quantize_scratch_bytes(const Fp8QuantizeArgs& args) {
  return args.tiling == Fp8Tiling::kTensor ? sizeof(uint32_t) : 0;
}

void fp8_quantize_cuda(const Fp8QuantizeArgs& args, void* scratch, cudaStream_t stream) {
  // *args.amax is folded into, not reset (fp8_operand.h): the caller zeroes it.
  auto* bits = static_cast<uint32_t*>(scratch);
  if (args.x_f32 != nullptr) {
    quantize(args, F32In{args.x_f32}, bits, stream);
  } else {
    quantize(args, Bf16In{args.x_bf16}, bits, stream);
  }
}

void fp8_dequantize_f32_cuda(const Fp8Operand& x, float* out, cudaStream_t stream) {
  dequantize_kernel<false><<<blocks_for(x.rows * x.cols), kThreads, 0, stream>>>(x, out);
  check_launch();
}

void fp8_dequantize_bf16_cuda(const Fp8Operand& x, uint16_t* out, cudaStream_t stream) {
  dequantize_kernel<true><<<blocks_for(x.rows * x.cols), kThreads, 0, stream>>>(x, out);
  check_launch();
}

void fp8_transpose_codes_cuda(const uint8_t* src, uint8_t* dst, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  const int64_t grid_y = (rows + kTransposeTile - 1) / kTransposeTile, grid_x = (cols + kTransposeTile - 1) / kTransposeTile;
  if (grid_y > 65535) {  // thrown as cuda_check.h does: kernels/cuda links no framework library
    throw Error(error_detail::concat("fp8_transpose_codes_cuda: ", rows, " rows exceed the grid"));
  }
  transpose_codes_kernel<><<<dim3(unsigned(grid_x), unsigned(grid_y)), dim3(kTransposeTile, 8), 0, stream>>>(src, dst, rows,
                                                                                                          cols);
  check_launch();
}

void fp8_copy_scales_cuda(const float* src, int64_t src_o, int64_t src_k, float* dst, int64_t dst_o, int64_t dst_k,
                          int64_t outer, int64_t inner, cudaStream_t stream) {
  if (outer <= 0 || inner <= 0) return;
  copy_scales_kernel<><<<blocks_for(outer * inner), kThreads, 0, stream>>>(src, src_o, src_k, dst, dst_o, dst_k, outer,
                                                                           inner);
  check_launch();
}

}  // namespace farthing::kernels
