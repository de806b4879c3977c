// rope_cuda.cu — see rope_cuda.h. One thread per (row, head, pair) in a grid-stride loop.
#include "kernels/cuda/rope_cuda.h"

#include "kernels/cuda/act_storage.cuh"
#include "kernels/cuda/nn_cuda_common.cuh"
#include "kernels/numerics/rope_rotate.h"

namespace farthing::kernels {

namespace {

using cuda_nn::kThreads;

template <class T>
__global__ void __launch_bounds__(kThreads)
rope_kernel(T* x, int64_t rows, RowPositions pos, int64_t heads, int64_t head_dim, int64_t stride, const float* cos,
            const float* sin, float sign) {
  const int64_t half = head_dim / 2, count = rows * heads * half;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < count; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = e % half, rh = e / half, h = rh % heads, r = rh / heads;
    const int64_t angle = pos.of(r) * half + i;
    T* v = x + r * stride + h * head_dim;
    float a, b;
    numerics::rope_rotate_f32(cuda_nn::load_f32(v + i), cuda_nn::load_f32(v + i + half), cos[angle],
                              sign * sin[angle], a, b);
    cuda_nn::store_f32(v + i, a);
    cuda_nn::store_f32(v + i + half, b);
  }
}

template <class T>
void rope_launch(T* x, int64_t rows, RowPositions pos, int64_t heads, int64_t head_dim, int64_t stride, const float* cos,
                 const float* sin, bool inverse, cudaStream_t stream) {
  const int64_t count = rows * heads * (head_dim / 2);
  if (count <= 0) return;
  rope_kernel<<<cuda_nn::blocks_for(count), kThreads, 0, stream>>>(x, rows, pos, heads, head_dim, stride, cos, sin,
                                                                   inverse ? -1.0f : 1.0f);
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
