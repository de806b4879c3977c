// scale_add_cuda.cu — see scale_add_cuda.h. A grid-stride loop, one element per iteration.
#include "kernels/cuda/scale_add_cuda.h"

#include "kernels/cuda/act_storage.cuh"
#include "kernels/cuda/nn_cuda_common.cuh"
#include "kernels/numerics/scale_add.h"

namespace farthing::kernels {

namespace nm = farthing::numerics;
using cuda_nn::kThreads;
using cuda_nn::load_f32;
using cuda_nn::store_f32;

namespace {

template <class T>
__global__ void __launch_bounds__(kThreads) scale_add_kernel(T* out, const T* x, float s, const T* a, int64_t count) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    store_f32(out + i, nm::scale_add_f32(load_f32(x + i), s, a != nullptr ? load_f32(a + i) : -0.0f));
  }
}

template <class T>
void scale_add_launch(T* out, const T* x, float s, const T* a, int64_t count, cudaStream_t stream) {
  if (count <= 0) return;
  scale_add_kernel<<<cuda_nn::blocks_for(count), kThreads, 0, stream>>>(out, x, s, a, count);
  cuda_nn::check_launch();
}

}  // namespace

void scale_add_cuda(float* out, const float* x, float s, const float* a, int64_t count, cudaStream_t stream) {
  scale_add_launch(out, x, s, a, count, stream);
}
void scale_add_cuda(uint16_t* out, const uint16_t* x, float s, const uint16_t* a, int64_t count, cudaStream_t stream) {
  scale_add_launch(out, x, s, a, count, stream);
}

}  // namespace farthing::kernels
