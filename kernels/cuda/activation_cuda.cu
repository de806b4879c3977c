// activation_cuda.cu — see activation_cuda.h. Grid-stride loops over groups of eight elements
// (eight channels of a row for SwiGLU), read and written with 16-byte accesses where aligned.
#include "kernels/cuda/activation_cuda.h"

#include "kernels/cuda/act_storage.cuh"
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

// SwiGLU over rows of gate | up (2h wide) into rows of h: rows on grid.y (looped past its limit),
// groups of eight channels of a row on grid.x, so no index is divided per element. aligned: every
// array 16-byte aligned and h a multiple of eight (so each row's gate and up halves are too).
template <class Out, class In>
__global__ void __launch_bounds__(kThreads)
swiglu_forward_kernel(Out* act, const In* gu, int64_t n, int64_t h, bool aligned) {
  const int64_t groups = (h + kVec - 1) / kVec;
  for (int64_t r = blockIdx.y; r < n; r += gridDim.y) {
    const In* gate = gu + r * 2 * h;
    const In* up = gate + h;
    Out* a = act + r * h;
    for (int64_t g = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; g < groups; g += int64_t(gridDim.x) * blockDim.x) {
      float vg[kVec], vu[kVec];
      const int k = cuda_nn::load_group_f32(gate, g, h, aligned, vg);
      cuda_nn::load_group_f32(up, g, h, aligned, vu);
      for (int j = 0; j < k; ++j) vg[j] = nm::swiglu_f32(vg[j], vu[j]);
      cuda_nn::store_group_f32(a, g, k, aligned, vg);
    }
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads)
swiglu_backward_kernel(T* dgu, const T* dact, const T* gu, int64_t n, int64_t h, bool aligned) {
  const int64_t groups = (h + kVec - 1) / kVec;
  for (int64_t r = blockIdx.y; r < n; r += gridDim.y) {
    const T* gate = gu + r * 2 * h;
    const T* up = gate + h;
    const T* da = dact + r * h;
    T* dgate = dgu + r * 2 * h;
    T* dup = dgate + h;
    for (int64_t g = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; g < groups; g += int64_t(gridDim.x) * blockDim.x) {
      float d[kVec], vg[kVec], vu[kVec];
      const int k = cuda_nn::load_group_f32(da, g, h, aligned, d);
      cuda_nn::load_group_f32(gate, g, h, aligned, vg);
      cuda_nn::load_group_f32(up, g, h, aligned, vu);
      for (int j = 0; j < k; ++j) nm::swiglu_grad_f32(d[j], vg[j], vu[j], vg[j], vu[j]);
      cuda_nn::store_group_f32(dgate, g, k, aligned, vg);
      cuda_nn::store_group_f32(dup, g, k, aligned, vu);
    }
  }
}

// Rows of h channels as a grid: grid.x covers a row's groups of eight, grid.y the rows (capped at
// CUDA's limit; the kernels loop over the rest).
dim3 row_groups_grid(int64_t n, int64_t h) {
  const int64_t groups = (h + kVec - 1) / kVec;
  return dim3(cuda_nn::blocks_for(groups), unsigned(n < cuda_nn::kMaxGridY ? n : cuda_nn::kMaxGridY));
}

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

template <class Out, class In>
void swiglu_forward_launch(Out* act, const In* gu, int64_t n, int64_t h, cudaStream_t stream) {
  if (n <= 0 || h <= 0) return;
  const bool aligned = h % kVec == 0 && cuda_nn::vec8_aligned(act) && cuda_nn::vec8_aligned(gu);
  swiglu_forward_kernel<<<row_groups_grid(n, h), kThreads, 0, stream>>>(act, gu, n, h, aligned);
  cuda_nn::check_launch();
}

template <class T>
void swiglu_backward_launch(T* dgu, const T* dact, const T* gu, int64_t n, int64_t h, cudaStream_t stream) {
  if (n <= 0 || h <= 0) return;
  const bool aligned =
      h % kVec == 0 && cuda_nn::vec8_aligned(dgu) && cuda_nn::vec8_aligned(dact) && cuda_nn::vec8_aligned(gu);
  swiglu_backward_kernel<<<row_groups_grid(n, h), kThreads, 0, stream>>>(dgu, dact, gu, n, h, aligned);
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
