// rope_cuda.cu — see rope_cuda.h. One thread per (row, head, eight pairs) in a grid-stride loop.
#include "kernels/cuda/rope_cuda.h"

#include "kernels/cuda/act_storage.cuh"
#include "kernels/cuda/nn_cuda_common.cuh"
#include "kernels/cuda/vec8.cuh"
#include "kernels/numerics/error.h"
#include "kernels/numerics/rope_rotate.h"

namespace farthing::kernels {

namespace {

using cuda_nn::kThreads;

using cuda_nn::kVec;

// Rows on grid.y (looped past its limit); grid.x strides over a row's (head, group of eight
// pairs) items, split with one 32-bit division per eight pairs (the host checks that a row's
// items fit). Pair i of a head is (v[i], v[i + half]) with angle pos * half + i; the two halves
// and the tables are read eight at a time, with 16-byte accesses where aligned (vec8.cuh).
template <class T>
__global__ void __launch_bounds__(kThreads)
rope_kernel(T* x, int64_t rows, RowPositions pos, int32_t heads, int32_t head_dim, int64_t stride, const float* cos,
            const float* sin, float sign, bool aligned) {
  const int32_t half = head_dim / 2, groups = (half + kVec - 1) / kVec, items = heads * groups;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const int64_t angle0 = pos.of(r) * half;
    for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < items; e += int64_t(gridDim.x) * blockDim.x) {
      const int32_t h = int32_t(e) / groups, g = int32_t(e) - h * groups;
      T* v = x + r * stride + int64_t(h) * head_dim;
      float lo[kVec], hi[kVec], c[kVec], s[kVec];
      const int k = cuda_nn::load_group_f32(v, g, half, aligned, lo);
      cuda_nn::load_group_f32(v + half, g, half, aligned, hi);
      cuda_nn::load_group_f32(cos + angle0, g, half, aligned, c);
      cuda_nn::load_group_f32(sin + angle0, g, half, aligned, s);
      for (int j = 0; j < k; ++j) numerics::rope_rotate_f32(lo[j], hi[j], c[j], sign * s[j], lo[j], hi[j]);
      cuda_nn::store_group_f32(v, g, k, aligned, lo);
      cuda_nn::store_group_f32(v + half, g, k, aligned, hi);
    }
  }
}

template <class T>
void rope_launch(T* x, int64_t rows, RowPositions pos, int64_t heads, int64_t head_dim, int64_t stride, const float* cos,
                 const float* sin, bool inverse, cudaStream_t stream) {
  const int64_t half = head_dim / 2, items = heads * ((half + kVec - 1) / kVec);
  if (rows <= 0 || items <= 0) return;
  if (items >= (int64_t(1) << 31) || head_dim >= (int64_t(1) << 31)) {
    throw Error(error_detail::concat("rope_apply_cuda: ", heads, " heads of dimension ", head_dim,
                                     " exceed the kernel's 32-bit index within a row"));
  }
  // Every group of eight starts 16-byte aligned when the rows, heads and halves do and the tables'
  // rows (half floats, from cos and sin) do.
  const bool aligned = half % kVec == 0 && stride % kVec == 0 && cuda_nn::vec8_aligned(x) &&
                       cuda_nn::vec8_aligned(cos) && cuda_nn::vec8_aligned(sin);
  const dim3 grid(cuda_nn::blocks_for(items), unsigned(rows < cuda_nn::kMaxGridY ? rows : cuda_nn::kMaxGridY));
  rope_kernel<<<grid, kThreads, 0, stream>>>(x, rows, pos, int32_t(heads), int32_t(head_dim), stride, cos, sin,
                                             inverse ? -1.0f : 1.0f, aligned);
  cuda_nn::check_launch();
}

}  // namespace

void rope_apply_cuda(float* x, int64_t rows, RowPositions pos, int64_t heads, int64_t head_dim, int64_t stride,
                     const float* cos, const float* sin, bool inverse, cudaStream_t stream) {
  rope_launch(x, rows, pos, heads, head_dim, stride, cos, sin, inverse, stream);
}
void rope_apply_cuda(uint16_t* x, int64_t rows, RowPositions pos, int64_t heads, int64_t head_dim, int64_t stride,
                     const float* cos, const float* sin, bool inverse, cudaStream_t stream) {
  rope_launch(x, rows, pos, heads, head_dim, stride, cos, sin, inverse, stream);
}

}  // namespace farthing::kernels
