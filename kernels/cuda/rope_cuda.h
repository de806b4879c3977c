// rope_cuda.h — rotary embedding (rotate-half layout) in place on a CUDA device.
//
// rope_apply_cpu's contract (kernels/cpu/nn_cpu.h) on device pointers, queued on `stream`: row r
// at position pos.of(r) (r % seq, or counted from its document's start: op_shapes.h),
// `heads` heads of head_dim at the start of each row (rows `stride` apart),
// cos/sin (seq, head_dim / 2), inverse rotating by -angle. Each channel pair is
// numerics/rope_rotate.h, so results are bitwise the CPU's.
// Relies on: numerics/rope_rotate.h. Tested by: tests/kernels/test_nn_ops_parity.cpp.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/numerics/op_shapes.h"

namespace farthing::kernels {

void rope_apply_cuda(float* x, int64_t rows, RowPositions pos, int64_t heads, int64_t head_dim, int64_t stride,
                     const float* cos, const float* sin, bool inverse, cudaStream_t stream);
// bf16 rows (qkv as a bf16 GEMM stores it): widened, rotated in fp32, rounded once, as the CPU.
void rope_apply_cuda(uint16_t* x, int64_t rows, RowPositions pos, int64_t heads, int64_t head_dim, int64_t stride,
                     const float* cos, const float* sin, bool inverse, cudaStream_t stream);

}  // namespace farthing::kernels
