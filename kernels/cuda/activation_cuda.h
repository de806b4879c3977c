// activation_cuda.h — GELU (tanh form) and SwiGLU forward and backward on a CUDA device.
//
// The functions of kernels/cpu/nn_cpu.h on device pointers, queued on `stream`. Each element is
// the scalar definition in numerics/activations.h and nothing else, so results are bitwise the
// CPU's. The forwards write fp32 or bf16 (rounded once on store, as nn_cpu.h's bf16 forms), and
// forwards and backwards read their input (the MLP's in-projection) as fp32 or bf16 (widened
// exactly); the kernels are templated on the storage (act_storage.cuh).
// Relies on: numerics/activations.h, act_storage.cuh. Tested by: tests/kernels/test_nn_ops_parity.cpp.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace farthing::kernels {

void gelu_forward_cuda(float* out, const float* x, int64_t count, cudaStream_t stream);
void gelu_forward_cuda(uint16_t* out, const float* x, int64_t count, cudaStream_t stream);
void gelu_forward_cuda(uint16_t* out, const uint16_t* x, int64_t count, cudaStream_t stream);
void gelu_backward_cuda(float* dx, const float* dout, const float* x, int64_t count, cudaStream_t stream);
void gelu_backward_cuda(uint16_t* dx, const uint16_t* dout, const uint16_t* x, int64_t count, cudaStream_t stream);
void swiglu_forward_cuda(float* act, const float* gu, int64_t n, int64_t h, cudaStream_t stream);
void swiglu_forward_cuda(uint16_t* act, const float* gu, int64_t n, int64_t h, cudaStream_t stream);
void swiglu_forward_cuda(uint16_t* act, const uint16_t* gu, int64_t n, int64_t h, cudaStream_t stream);
void swiglu_backward_cuda(float* dgu, const float* dact, const float* gu, int64_t n, int64_t h, cudaStream_t stream);
void swiglu_backward_cuda(uint16_t* dgu, const uint16_t* dact, const uint16_t* gu, int64_t n, int64_t h,
                          cudaStream_t stream);

}  // namespace farthing::kernels
