// bias_cuda.h — bias add and its backward, and elementwise accumulate, on a CUDA device.
//
// bias_add / accumulate: one fp32 add per element, bitwise the CPU. bias_backward: column sums
// in fixed chunk order (nn_cuda_common.cuh), no atomics; bitwise the CPU when n <= 64 rows (one
// chunk, row order), else within fp32 reduction tolerance.
// scratch: bias_backward_scratch_floats(n, c) floats (null when 0).
// Relies on: nn_cuda_common.cuh, act_storage.cuh. Tested by: tests/kernels/test_nn_ops_parity.cpp, tests/kernels/test_cuda_parity.cpp.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace farthing::kernels {

void bias_add_cuda(float* out, const float* bias, int64_t n, int64_t c, int64_t stride, cudaStream_t stream);
int64_t bias_backward_scratch_floats(int64_t n, int64_t c);
// max_grid_y: CUDA's grid.y limit (65535); tests/kernels/test_cuda_parity.cpp lowers it to reach,
// at a simulator's sizes, the loop that more than 4M rows take.
void bias_backward_cuda(float* dbias, const float* dout, int64_t n, int64_t c, int64_t stride, float* scratch,
                        cudaStream_t stream, int64_t max_grid_y = 65535);
// The same over a bf16 dout (a gradient stored as bf16), each element widened exactly.
void bias_backward_cuda(float* dbias, const uint16_t* dout, int64_t n, int64_t c, int64_t stride, float* scratch,
                        cudaStream_t stream, int64_t max_grid_y = 65535);
// dst[i] += src[i]
void accumulate_cuda(float* dst, const float* src, int64_t count, cudaStream_t stream);

}  // namespace farthing::kernels
