// scale_add_cuda.h — out = x * s + a on a CUDA device (the embedding's scale, the residual add after
// a post-norm).
//
// kernels/cpu/nn_cpu.h's scale_add_cpu on device pointers, queued on `stream`: each element is
// numerics/scale_add.h's scale_add_f32 (a null a adds -0, keeping x * s's bits), so results are
// bitwise the CPU's. out may be x or a; every array fp32 or every one bf16.
// Relies on: numerics/scale_add.h, act_storage.cuh. Tested by: tests/kernels/test_nn_ops_parity.cpp.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace farthing::kernels {

void scale_add_cuda(float* out, const float* x, float s, const float* a, int64_t count, cudaStream_t stream);
void scale_add_cuda(uint16_t* out, const uint16_t* x, float s, const uint16_t* a, int64_t count, cudaStream_t stream);

}  // namespace farthing::kernels
