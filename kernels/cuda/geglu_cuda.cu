// geglu_cuda.cu — see geglu_cuda.h. gated_activation.cuh's kernels with GeGLU's scalar definitions:
// groups of eight channels, 16-byte accesses where aligned.
#include "kernels/cuda/geglu_cuda.h"

#include "kernels/cuda/gated_activation.cuh"
#include "kernels/numerics/activations.h"

namespace farthing::kernels {

namespace nm = farthing::numerics;

namespace {

struct GeGlu {
  __device__ static float forward(float g, float u) { return nm::geglu_f32(g, u); }
  __device__ static void backward(float da, float g, float u, float& dg, float& du) {
    nm::geglu_grad_f32(da, g, u, dg, du);
  }
};

}  // namespace

void geglu_forward_cuda(float* act, const float* gu, int64_t n, int64_t h, cudaStream_t stream) {
  cuda_nn::gated_forward_launch<GeGlu>(act, gu, n, h, stream);
}
void geglu_forward_cuda(uint16_t* act, const float* gu, int64_t n, int64_t h, cudaStream_t stream) {
  cuda_nn::gated_forward_launch<GeGlu>(act, gu, n, h, stream);
}
void geglu_forward_cuda(uint16_t* act, const uint16_t* gu, int64_t n, int64_t h, cudaStream_t stream) {
  cuda_nn::gated_forward_launch<GeGlu>(act, gu, n, h, stream);
}
void geglu_backward_cuda(float* dgu, const float* dact, const float* gu, int64_t n, int64_t h, cudaStream_t stream) {
  cuda_nn::gated_backward_launch<GeGlu>(dgu, dact, gu, n, h, stream);
}
void geglu_backward_cuda(uint16_t* dgu, const uint16_t* dact, const uint16_t* gu, int64_t n, int64_t h,
                         cudaStream_t stream) {
  cuda_nn::gated_backward_launch<GeGlu>(dgu, dact, gu, n, h, stream);
}

}  // namespace farthing::kernels
