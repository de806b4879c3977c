// nn_cuda_common.cuh — launch geometry, fixed-order block reductions and the deterministic
// two-level column sum shared by the model-op kernels (norm, bias, cross-entropy, attention).
//
// Every reduction here has an order fixed by the code alone (block size, chunk size), never by
// the device, the scheduler or atomics, so an op repeats bit for bit on the same GPU. Block
// sizes are powers of two (the tree halves them).
// Relies on: the CUDA runtime, cuda_check.h. Used by: kernels/cuda/*_cuda.cu (model ops).
// Tested by: tests/kernels/test_nn_ops_parity.cpp (through every op that reduces).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/cuda_check.h"
#include "kernels/numerics/fp8_scaling.h"

namespace farthing::kernels::cuda_nn {

inline constexpr int kThreads = 256;  // elementwise and per-row kernels

// Grid for a grid-stride loop over n items: enough blocks to fill an H200 many times over,
// capped so the grid's x dimension stays valid; the loop covers the rest.
inline unsigned blocks_for(int64_t n, int threads = kThreads) {
  const int64_t blocks = (n + threads - 1) / threads;
  return unsigned(blocks < 1 ? 1 : (blocks > 65535 ? 65535 : blocks));
}

inline void check_launch() { FARTHING_CUDA_CHECK(cudaGetLastError()); }

// Sum of v over the block, the same value returned to every thread: a halving tree over shared
// memory (blockDim.x a power of two), so the order is fixed by blockDim.x alone.
template <class T>
__device__ T block_sum(T v, T* shared) {
  const unsigned t = threadIdx.x;
  shared[t] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) shared[t] = shared[t] + shared[t + s];
    __syncthreads();
  }
  const T result = shared[0];
  __syncthreads();
  return result;
}

// Max over the block (exact in any order), NaN skipped as std::max over a left fold skips it
// when it is not first.
__device__ inline float block_max(float v, float* shared) {
  const unsigned t = threadIdx.x;
  shared[t] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) shared[t] = fmaxf(shared[t], shared[t + s]);
    __syncthreads();
  }
  const float result = shared[0];
  __syncthreads();
  return result;
}

// Warp sum / max with an xor butterfly: each level adds a lane's value and its partner's in
// either order, and IEEE addition is commutative, so every lane ends with the same bits.
__device__ inline float warp_sum(float v) {
  for (int m = 16; m > 0; m >>= 1) v += __shfl_xor_sync(0xffffffffu, v, m);
  return v;
}
__device__ inline float warp_max(float v) {
  for (int m = 16; m > 0; m >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, m));
  return v;
}
// The largest of the lanes' |x| bit patterns (FP8 / FP4 amaxes, kernels/numerics/fp8_scaling.h):
// an unsigned max, exact in any order, the same in every lane.
__device__ inline uint32_t warp_max_bits(uint32_t v) {
  for (int m = 16; m > 0; m >>= 1) v = numerics::fp8_amax_bits_max(v, __shfl_xor_sync(0xffffffffu, v, m));
  return v;
}

// Column sums, deterministic and without atomics: dst[col] += sum over rows r of term(r, col).
// Rows are cut into chunks of kColumnChunkRows; one thread sums its column over a chunk in row
// order into partial[chunk][col], and a second kernel adds the chunks in chunk order. With a
// single chunk the first kernel adds straight into dst in row order: the CPU's order exactly.
inline constexpr int64_t kColumnChunkRows = 64;
__host__ __device__ inline int64_t column_chunks(int64_t n) { return (n + kColumnChunkRows - 1) / kColumnChunkRows; }
// Scratch (floats) column_sum_accumulate needs for n rows of c columns.
inline int64_t column_sum_scratch_floats(int64_t n, int64_t c) { return column_chunks(n) > 1 ? column_chunks(n) * c : 0; }

// CUDA's limit on grid.y. More chunks than that (over 4M rows) are looped over by the blocks
// (chunk y, y + gridDim.y, ...): each chunk still has one block and one partial, so the sum
// is the same whatever grid.y is.
inline constexpr int64_t kMaxGridY = 65535;

template <class Term>
__global__ void column_partials_kernel(float* dst, float* partial, int64_t n, int64_t c, Term term) {
  const int64_t col = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= c) return;
  if (partial == nullptr) {  // one chunk: accumulate into dst in row order, as the CPU
    float acc = dst[col];
    for (int64_t r = 0; r < n; ++r) acc += term(r, col);
    dst[col] = acc;
    return;
  }
  const int64_t chunks = column_chunks(n);
  for (int64_t chunk = blockIdx.y; chunk < chunks; chunk += gridDim.y) {
    const int64_t r0 = chunk * kColumnChunkRows;
    const int64_t r1 = r0 + kColumnChunkRows < n ? r0 + kColumnChunkRows : n;
    float acc = 0.0f;
    for (int64_t r = r0; r < r1; ++r) acc += term(r, col);
    partial[chunk * c + col] = acc;
  }
}

// dst[col] += the chunk partials, added in chunk order. (A template only so that every file
// that includes this header can launch it without relocatable device code.)
template <int = 0>
__global__ void column_finish_kernel(float* dst, const float* partial, int64_t chunks, int64_t c) {
  const int64_t col = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= c) return;
  float acc = partial[col];
  for (int64_t k = 1; k < chunks; ++k) acc += partial[k * c + col];
  dst[col] += acc;
}

// max_grid_y: kMaxGridY; a test lowers it to reach the loop over chunks at small sizes.
template <class Term>
void column_sum_accumulate(float* dst, float* scratch, int64_t n, int64_t c, Term term, cudaStream_t stream,
                           int64_t max_grid_y = kMaxGridY) {
  if (n <= 0 || c <= 0) return;
  const int64_t chunks = column_chunks(n);
  constexpr int kColThreads = 128;
  const dim3 grid(unsigned((c + kColThreads - 1) / kColThreads), unsigned(chunks < max_grid_y ? chunks : max_grid_y));
  column_partials_kernel<<<grid, kColThreads, 0, stream>>>(dst, chunks > 1 ? scratch : nullptr, n, c, term);
  check_launch();
  if (chunks > 1) {
    column_finish_kernel<><<<blocks_for(c, kColThreads), kColThreads, 0, stream>>>(dst, scratch, chunks, c);
    check_launch();
  }
}

}  // namespace farthing::kernels::cuda_nn
