// activation_cuda.cu — see activation_cuda.h. Grid-stride loops over groups of eight elements,
// read and written with 16-byte accesses where aligned; SwiGLU is gated_activation.cuh's kernels.
#include "kernels/cuda/activation_cuda.h"

#include "kernels/cuda/act_storage.cuh"
#include "kernels/cuda/gated_activation.cuh"
#include "kernels/cuda/nn_cuda_common.cuh"
#include "kernels/cuda/vec8.cuh"
#include "kernels/numerics/activations.h"

namespace farthing::kernels {

namespace nm = farthing::numerics;
using cuda_nn::kThreads;
using cuda_nn::load_f32;
using cuda_nn::store_f32;

namespace {

using cuda_nn::kVec;

// Grid-stride over groups of eight elements (vec8.cuh: 16-byte accesses where every array is
// aligned, element by element for the tail and unaligned arrays); each element's value is the
// scalar definition in numerics/activations.h, so the grouping changes no bits.
template <class Out, class In>
__global__ void __launch_bounds__(kThreads) gelu_forward_kernel(Out* out, const In* x, int64_t count, bool aligned) {
  const int64_t groups = (count + kVec - 1) / kVec;
  for (int64_t g = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; g < groups; g += int64_t(gridDim.x) * blockDim.x) {
    float v[kVec];
    const int n = cuda_nn::load_group_f32(x, g, count, aligned, v);
    for (int j = 0; j < n; ++j) v[j] = nm::gelu_tanh_f32(v[j]);
    cuda_nn::store_group_f32(out, g, n, aligned, v);
  }
}

// T: every array's storage (fp32, or bf16 throughout under bf16 activations).
template <class T>
__global__ void __launch_bounds__(kThreads)
gelu_backward_kernel(T* dx, const T* dout, const T* x, int64_t count, bool aligned) {
  const int64_t groups = (count + kVec - 1) / kVec;
  for (int64_t g = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; g < groups; g += int64_t(gridDim.x) * blockDim.x) {
    float d[kVec], v[kVec];
    const int n = cuda_nn::load_group_f32(dout, g, count, aligned, d);
    cuda_nn::load_group_f32(x, g, count, aligned, v);
    for (int j = 0; j < n; ++j) v[j] = d[j] * nm::gelu_tanh_grad_f32(v[j]);
    cuda_nn::store_group_f32(dx, g, n, aligned, v);
  }
}

struct SwiGlu {
  __device__ static float forward(float g, float u) { return nm::swiglu_f32(g, u); }
  __device__ static void backward(float da, float g, float u, float& dg, float& du) {
    nm::swiglu_grad_f32(da, g, u, dg, du);
  }
};

template <class Out, class In>
void gelu_forward_launch(Out* out, const In* x, int64_t count, cudaStream_t stream) {
  if (count <= 0) return;
  const bool aligned = cuda_nn::vec8_aligned(out) && cuda_nn::vec8_aligned(x);
  gelu_forward_kernel<<<cuda_nn::blocks_for((count + kVec - 1) / kVec), kThreads, 0, stream>>>(out, x, count, aligned);
  cuda_nn::check_launch();
}

template <class T>
void gelu_backward_launch(T* dx, const T* dout, const T* x, int64_t count, cudaStream_t stream) {
  if (count <= 0) return;
  const bool aligned = cuda_nn::vec8_aligned(dx) && cuda_nn::vec8_aligned(dout) && cuda_nn::vec8_aligned(x);
  gelu_backward_kernel<<<cuda_nn::blocks_for((count + kVec - 1) / kVec), kThreads, 0, stream>>>(dx, dout, x, count,
                                                                                              aligned);
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
  cuda_nn::gated_forward_launch<SwiGlu>(act, gu, n, h, stream);
}
void swiglu_forward_cuda(uint16_t* act, const float* gu, int64_t n, int64_t h, cudaStream_t stream) {
  cuda_nn::gated_forward_launch<SwiGlu>(act, gu, n, h, stream);
}
void swiglu_forward_cuda(uint16_t* act, const uint16_t* gu, int64_t n, int64_t h, cudaStream_t stream) {
  cuda_nn::gated_forward_launch<SwiGlu>(act, gu, n, h, stream);
}

void swiglu_backward_cuda(float* dgu, const float* dact, const float* gu, int64_t n, int64_t h, cudaStream_t stream) {
  cuda_nn::gated_backward_launch<SwiGlu>(dgu, dact, gu, n, h, stream);
}
void swiglu_backward_cuda(uint16_t* dgu, const uint16_t* dact, const uint16_t* gu, int64_t n, int64_t h,
                          cudaStream_t stream) {
  cuda_nn::gated_backward_launch<SwiGlu>(dgu, dact, gu, n, h, stream);
}

}  // namespace farthing::kernels
