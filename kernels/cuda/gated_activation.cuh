// gated_activation.cuh — the gated MLP activations (act = f(gate) * up over rows of gate | up,
// 2h wide, into rows of h) as one pair of kernels, templated on the gate's function: SwiGLU
// (activation_cuda.cu) and GeGLU (geglu_cuda.cu) differ only in it.
// Glu supplies the scalar definitions of numerics/activations.h and nothing else:
//   static float forward(float g, float u);
//   static void backward(float da, float g, float u, float& dg, float& du);
// Rows on grid.y (looped past its limit), groups of eight channels of a row on grid.x, so no index
// is divided per element; 16-byte accesses where every array is aligned and h is a multiple of
// eight (vec8.cuh), element by element otherwise. The grouping changes no bits.
// Relies on: vec8.cuh, nn_cuda_common.cuh. Used by: activation_cuda.cu, geglu_cuda.cu.
#pragma once

#include <cstdint>

#include "kernels/cuda/nn_cuda_common.cuh"
#include "kernels/cuda/vec8.cuh"

namespace farthing::kernels::cuda_nn {

template <class Glu, class Out, class In>
__global__ void __launch_bounds__(kThreads)
gated_forward_kernel(Out* act, const In* gu, int64_t n, int64_t h, bool aligned) {
  const int64_t groups = (h + kVec - 1) / kVec;
  for (int64_t r = blockIdx.y; r < n; r += gridDim.y) {
    const In* gate = gu + r * 2 * h;
    const In* up = gate + h;
    Out* a = act + r * h;
    for (int64_t g = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; g < groups; g += int64_t(gridDim.x) * blockDim.x) {
      float vg[kVec], vu[kVec];
      const int k = load_group_f32(gate, g, h, aligned, vg);
      load_group_f32(up, g, h, aligned, vu);
      for (int j = 0; j < k; ++j) vg[j] = Glu::forward(vg[j], vu[j]);
      store_group_f32(a, g, k, aligned, vg);
    }
  }
}

// T: every array's storage (fp32, or bf16 throughout under bf16 activations).
template <class Glu, class T>
__global__ void __launch_bounds__(kThreads)
gated_backward_kernel(T* dgu, const T* dact, const T* gu, int64_t n, int64_t h, bool aligned) {
  const int64_t groups = (h + kVec - 1) / kVec;
  for (int64_t r = blockIdx.y; r < n; r += gridDim.y) {
    const T* gate = gu + r * 2 * h;
    const T* up = gate + h;
    const T* da = dact + r * h;
    T* dgate = dgu + r * 2 * h;
    T* dup = dgate + h;
    for (int64_t g = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; g < groups; g += int64_t(gridDim.x) * blockDim.x) {
      float d[kVec], vg[kVec], vu[kVec];
      const int k = load_group_f32(da, g, h, aligned, d);
      load_group_f32(gate, g, h, aligned, vg);
      load_group_f32(up, g, h, aligned, vu);
      for (int j = 0; j < k; ++j) Glu::backward(d[j], vg[j], vu[j], vg[j], vu[j]);
      store_group_f32(dgate, g, k, aligned, vg);
      store_group_f32(dup, g, k, aligned, vu);
    }
  }
}

// Rows of h channels as a grid: grid.x covers a row's groups of eight, grid.y the rows (capped at
// CUDA's limit; the kernels loop over the rest).
inline dim3 row_groups_grid(int64_t n, int64_t h) {
  const int64_t groups = (h + kVec - 1) / kVec;
  return dim3(blocks_for(groups), unsigned(n < kMaxGridY ? n : kMaxGridY));
}

template <class Glu, class Out, class In>
void gated_forward_launch(Out* act, const In* gu, int64_t n, int64_t h, cudaStream_t stream) {
  if (n <= 0 || h <= 0) return;
  const bool aligned = h % kVec == 0 && vec8_aligned(act) && vec8_aligned(gu);
  gated_forward_kernel<Glu><<<row_groups_grid(n, h), kThreads, 0, stream>>>(act, gu, n, h, aligned);
  check_launch();
}

template <class Glu, class T>
void gated_backward_launch(T* dgu, const T* dact, const T* gu, int64_t n, int64_t h, cudaStream_t stream) {
  if (n <= 0 || h <= 0) return;
  const bool aligned = h % kVec == 0 && vec8_aligned(dgu) && vec8_aligned(dact) && vec8_aligned(gu);
  gated_backward_kernel<Glu><<<row_groups_grid(n, h), kThreads, 0, stream>>>(dgu, dact, gu, n, h, aligned);
  check_launch();
}

}  // namespace farthing::kernels::cuda_nn
