// activation_cuda.cu — see activation_cuda.h. Grid-stride loops; one element (or channel pair
// for SwiGLU) per iteration.
#include "kernels/cuda/activation_cuda.h"

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
__global__ void __launch_bounds__(kThreads) gelu_forward_kernel(Out* out, const In* x, int64_t count) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    store_f32(out + i, nm::gelu_tanh_f32(load_f32(x + i)));
  }
}

// T: every array's storage (fp32, or bf16 throughout under bf16 activations).
template <class T>
__global__ void __launch_bounds__(kThreads) gelu_backward_kernel(T* dx, const T* dout, const T* x, int64_t count) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    store_f32(dx + i, load_f32(dout + i) * nm::gelu_tanh_grad_f32(load_f32(x + i)));
  }
}

template <class Out, class In>
__global__ void __launch_bounds__(kThreads) swiglu_forward_kernel(Out* act, const In* gu, int64_t n, int64_t h) {
  const int64_t count = n * h;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < count; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = e / h, i = e - r * h;
    const In* g = gu + r * 2 * h;
    store_f32(act + e, nm::swiglu_f32(load_f32(g + i), load_f32(g + h + i)));
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads) swiglu_backward_kernel(T* dgu, const T* dact, const T* gu, int64_t n, int64_t h) {
  const int64_t count = n * h;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < count; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = e / h, i = e - r * h;
    const T* g = gu + r * 2 * h;
    float dg, du;
    nm::swiglu_grad_f32(load_f32(dact + e), load_f32(g + i), load_f32(g + h + i), dg, du);
    store_f32(dgu + r * 2 * h + i, dg);
    store_f32(dgu + r * 2 * h + h + i, du);
  }
}

template <class Out, class In>
void gelu_forward_launch(Out* out, const In* x, int64_t count, cudaStream_t stream) {
  if (count <= 0) return;
  gelu_forward_kernel<<<cuda_nn::blocks_for(count), kThreads, 0, stream>>>(out, x, count);
  cuda_nn::check_launch();
}

template <class T>
void gelu_backward_launch(T* dx, const T* dout, const T* x, int64_t count, cudaStream_t stream) {
  if (count <= 0) return;
  gelu_backward_kernel<<<cuda_nn::blocks_for(count), kThreads, 0, stream>>>(dx, dout, x, count);
  cuda_nn::check_launch();
}

template <class Out, class In>
void swiglu_forward_launch(Out* act, const In* gu, int64_t n, int64_t h, cudaStream_t stream) {
  if (n * h <= 0) return;
  swiglu_forward_kernel<<<cuda_nn::blocks_for(n * h), kThreads, 0, stream>>>(act, gu, n, h);
  cuda_nn::check_launch();
}

template <class T>
void swiglu_backward_launch(T* dgu, const T* dact, const T* gu, int64_t n, int64_t h, cudaStream_t stream) {
  if (n * h <= 0) return;
  swiglu_backward_kernel<<<cuda_nn::blocks_for(n * h), kThreads, 0, stream>>>(dgu, dact, gu, n, h);
  cuda_nn::check_launch();
}

}  // namespace

void gelu_forward_cuda(float* out, const float* x, int64_t count, cudaStream_t stream) {
  gelu_forward_launch(out, x, count, stream);
}
void gelu_forward_cuda(uint16_t* out, const float* x, int64_t count, cudaStream_t stream) {
  gelu_forward_launch(out, x, count, stream);
}
void gelu_forward_cuda(uint16_t* out, const uint16_t* x, int64_t count, cudaStream_t stream) {
  gelu_forward_launch(out, x, count, stream);
}

void gelu_backward_cuda(float* dx, const float* dout, const float* x, int64_t count, cudaStream_t stream) {
  gelu_backward_launch(dx, dout, x, count, stream);
}
void gelu_backward_cuda(uint16_t* dx, const uint16_t* dout, const uint16_t* x, int64_t count, cudaStream_t stream) {
  gelu_backward_launch(dx, dout, x, count, stream);
}

void swiglu_forward_cuda(float* act, const float* gu, int64_t n, int64_t h, cudaStream_t stream) {
  swiglu_forward_launch(act, gu, n, h, stream);
}
void swiglu_forward_cuda(uint16_t* act, const float* gu, int64_t n, int64_t h, cudaStream_t stream) {
  swiglu_forward_launch(act, gu, n, h, stream);
}
void swiglu_forward_cuda(uint16_t* act, const uint16_t* gu, int64_t n, int64_t h, cudaStream_t stream) {
  swiglu_forward_launch(act, gu, n, h, stream);
}

void swiglu_backward_cuda(float* dgu, const float* dact, const float* gu, int64_t n, int64_t h, cudaStream_t stream) {
  swiglu_backward_launch(dgu, dact, gu, n, h, stream);
}
void swiglu_backward_cuda(uint16_t* dgu, const uint16_t* dact, const uint16_t* gu, int64_t n, int64_t h,
                          cudaStream_t stream) {
  swiglu_backward_launch(dgu, dact, gu, n, h, stream);
}

}  // namespace farthing::kernels
