// geglu_cuda.h — GeGLU (gelu_tanh(gate) * up, Gemma 3's MLP) forward and backward on a CUDA device.
//
// kernels/cpu/nn_cpu.h's geglu functions on device pointers, queued on `stream`; laid out and
// stored as SwiGLU's (activation_cuda.h). Each element is numerics/activations.h's geglu_f32 /
// geglu_grad_f32 and nothing else, so results are bitwise the CPU's.
// Relies on: numerics/activations.h, act_storage.cuh. Tested by: tests/kernels/test_nn_ops_parity.cpp.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace farthing::kernels {

void geglu_forward_cuda(float* act, const float* gu, int64_t n, int64_t h, cudaStream_t stream);
void geglu_forward_cuda(uint16_t* act, const float* gu, int64_t n, int64_t h, cudaStream_t stream);
void geglu_forward_cuda(uint16_t* act, const uint16_t* gu, int64_t n, int64_t h, cudaStream_t stream);
void geglu_backward_cuda(float* dgu, const float* dact, const float* gu, int64_t n, int64_t h, cudaStream_t stream);
void geglu_backward_cuda(uint16_t* dgu, const uint16_t* dact, const uint16_t* gu, int64_t n, int64_t h,
                         cudaStream_t stream);

}  // namespace farthing::kernels
