// geglu_cuda.cu — see geglu_cuda.h. Grid-stride loops, one channel pair (gate, up) per iteration.
#include "kernels/cuda/geglu_cuda.h"

#include "kernels/cuda/act_storage.cuh"
#include "kernels/cuda/nn_cuda_common.cuh"
#include "kernels/numerics/activations.h"

namespace farthing::kernels {

namespace nm = farthing::numerics;
using cuda_nn::kThreads;
using cuda_nn::load_f32;
using cuda_nn::store_f32;

namespace {

template <class Out, class In>
__global__ void __launch_bounds__(kThreads) geglu_forward_kernel(Out* act, const In* gu, int64_t n, int64_t h) {
  const int64_t count = n * h;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < count; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = e / h, i = e - r * h;
    const In* g = gu + r * 2 * h;
    store_f32(act + e, nm::geglu_f32(load_f32(g + i), load_f32(g + h + i)));
  }
}

// T: every array's storage (fp32, or bf16 throughout under bf16 activations).
template <class T>
__global__ void __launch_bounds__(kThreads) geglu_backward_kernel(T* dgu, const T* dact, const T* gu, int64_t n, int64_t h) {
  const int64_t count = n * h;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < count; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = e / h, i = e - r * h;
    const T* g = gu + r * 2 * h;
    float dg, du;
    nm::geglu_grad_f32(load_f32(dact + e), load_f32(g + i), load_f32(g + h + i), dg, du);
    store_f32(dgu + r * 2 * h + i, dg);
    store_f32(dgu + r * 2 * h + h + i, du);
  }
}

template <class Out, class In>
void geglu_forward_launch(Out* act, const In* gu, int64_t n, int64_t h, cudaStream_t stream) {
  if (n * h <= 0) return;
  geglu_forward_kernel<<<cuda_nn::blocks_for(n * h), kThreads, 0, stream>>>(act, gu, n, h);
  cuda_nn::check_launch();
}

template <class T>
void geglu_backward_launch(T* dgu, const T* dact, const T* gu, int64_t n, int64_t h, cudaStream_t stream) {
  if (n * h <= 0) return;
  geglu_backward_kernel<<<cuda_nn::blocks_for(n * h), kThreads, 0, stream>>>(dgu, dact, gu, n, h);
  cuda_nn::check_launch();
}

}  // namespace

void geglu_forward_cuda(float* act, const float* gu, int64_t n, int64_t h, cudaStream_t stream) {
  geglu_forward_launch(act, gu, n, h, stream);
}
void geglu_forward_cuda(uint16_t* act, const float* gu, int64_t n, int64_t h, cudaStream_t stream) {
  geglu_forward_launch(act, gu, n, h, stream);
}
void geglu_forward_cuda(uint16_t* act, const uint16_t* gu, int64_t n, int64_t h, cudaStream_t stream) {
  geglu_forward_launch(act, gu, n, h, stream);
}
void geglu_backward_cuda(float* dgu, const float* dact, const float* gu, int64_t n, int64_t h, cudaStream_t stream) {
  geglu_backward_launch(dgu, dact, gu, n, h, stream);
}
void geglu_backward_cuda(uint16_t* dgu, const uint16_t* dact, const uint16_t* gu, int64_t n, int64_t h,
                         cudaStream_t stream) {
  geglu_backward_launch(dgu, dact, gu, n, h, stream);
}

}  // namespace farthing::kernels
