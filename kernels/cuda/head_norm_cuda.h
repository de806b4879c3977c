// head_norm_cuda.h — RMSNorm over each q and k head of the packed projection (HeadNormShape) on a
// CUDA device: the functions of kernels/cpu/head_norm_cpu.h (same arguments, device pointers,
// queued on `stream`).
//
// One block per head of a row sums its squares in a fixed tree; the weight gradients are column
// sums over (row, head) pairs in row-then-head order (nn_cuda_common.cuh's fixed chunks, no
// atomics). The scalar steps are numerics/norm_steps.h, shared with the CPU, so results differ
// from the CPU's only through the order of the sums.
// scratch: head_norm_backward_scratch_floats(s) floats of device memory (may be null when 0).
// Relies on: numerics/norm_steps.h, nn_cuda_common.cuh, act_storage.cuh.
// Tested by: tests/kernels/test_nn_ops_parity.cpp.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/numerics/op_shapes.h"

namespace farthing::kernels {

int64_t head_norm_backward_scratch_floats(const HeadNormShape& s);

void head_rmsnorm_forward_cuda(const HeadNormShape& s, float* out, float* rstd, const float* x, const float* wq,
                               const float* wk, float eps, cudaStream_t stream);
void head_rmsnorm_forward_cuda(const HeadNormShape& s, uint16_t* out, float* rstd, const uint16_t* x,
                               const float* wq, const float* wk, float eps, cudaStream_t stream);
void head_rmsnorm_backward_cuda(const HeadNormShape& s, float* d, float* dwq, float* dwk, const float* x,
                                const float* wq, const float* wk, const float* rstd, float* scratch,
                                cudaStream_t stream);
void head_rmsnorm_backward_cuda(const HeadNormShape& s, uint16_t* d, float* dwq, float* dwk, const uint16_t* x,
                                const float* wq, const float* wk, const float* rstd, float* scratch,
                                cudaStream_t stream);

}  // namespace farthing::kernels
