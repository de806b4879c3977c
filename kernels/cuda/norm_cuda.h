// norm_cuda.h — RMSNorm and LayerNorm forward and backward on a CUDA device, fp32.
//
// The functions of kernels/cpu/nn_cpu.h (same arguments, device pointers, queued on `stream`).
// One block per row sums in a fixed tree; weight gradients are column sums in fixed chunk order
// (nn_cuda_common.cuh), no atomics. The scalar steps are numerics/norm_steps.h, shared with the
// CPU, so outputs differ from the CPU's only through the order of the row sums.
// scratch: norm_backward_scratch_floats(n, c) floats of device memory (may be null when 0).
// Relies on: numerics/norm_steps.h, nn_cuda_common.cuh, act_storage.cuh. Tested by: tests/kernels/test_nn_ops_parity.cpp.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace farthing::kernels {

int64_t norm_backward_scratch_floats(int64_t n, int64_t c);

// The forwards write `out` as fp32 or bf16 (rounded once on store, as nn_cpu.h's bf16 forms).
void rmsnorm_forward_cuda(float* out, float* rstd, const float* x, const float* w, int64_t n, int64_t c, float eps,
                          cudaStream_t stream);
void rmsnorm_forward_cuda(uint16_t* out, float* rstd, const float* x, const float* w, int64_t n, int64_t c, float eps,
                          cudaStream_t stream);
// ... and from a bf16 x (the residual stream under bf16 activations), widened exactly.
void rmsnorm_forward_cuda(uint16_t* out, float* rstd, const uint16_t* x, const float* w, int64_t n, int64_t c,
                          float eps, cudaStream_t stream);
// The backwards' dx, dout and x are fp32, or all bf16 (as nn_cpu.h's bf16 forms).
void rmsnorm_backward_cuda(float* dx, float* dw, const float* dout, const float* x, const float* w,
                           const float* rstd, int64_t n, int64_t c, float* scratch, cudaStream_t stream);
void rmsnorm_backward_cuda(uint16_t* dx, float* dw, const uint16_t* dout, const uint16_t* x, const float* w,
                           const float* rstd, int64_t n, int64_t c, float* scratch, cudaStream_t stream);
void layernorm_forward_cuda(float* out, float* mean, float* rstd, const float* x, const float* w, const float* b,
                            int64_t n, int64_t c, float eps, cudaStream_t stream);
void layernorm_forward_cuda(uint16_t* out, float* mean, float* rstd, const float* x, const float* w, const float* b,
                            int64_t n, int64_t c, float eps, cudaStream_t stream);
void layernorm_forward_cuda(uint16_t* out, float* mean, float* rstd, const uint16_t* x, const float* w,
                            const float* b, int64_t n, int64_t c, float eps, cudaStream_t stream);
void layernorm_backward_cuda(float* dx, float* dw, float* db, const float* dout, const float* x, const float* w,
                             const float* mean, const float* rstd, int64_t n, int64_t c, float* scratch,
                             cudaStream_t stream);
void layernorm_backward_cuda(uint16_t* dx, float* dw, float* db, const uint16_t* dout, const uint16_t* x,
                             const float* w, const float* mean, const float* rstd, int64_t n, int64_t c,
                             float* scratch, cudaStream_t stream);

}  // namespace farthing::kernels
