// embedding_cuda.h — token (+ position) embedding lookup and its backward on a CUDA device.
//
// The functions of kernels/cpu/nn_cpu.h on device pointers (tokens too), queued on `stream`.
// Forward: each element is one table element widened exactly (bf16 tables) and at most one
// fp32 add: bitwise the CPU. Backward, deterministic without atomics: a first kernel links each
// row to the next row with the same token; then one block per (first occurrence of a token,
// column tile) walks that list in row order, adding into dwte — the CPU's order exactly, so the
// gradients are bitwise the CPU's too. dwpe: one thread per (position, channel) over the rows of
// that position in row order (with document starts, every row is looked at for every position:
// O(rows x positions) reads, GPT-2's learned positions only). scratch: embedding_backward_scratch_floats(n) floats (the links).
// NOTE: linking is O(n^2) comparisons of token ids in the worst case (all distinct), cheap next
// to the row traffic for n up to a few tens of thousands of rows; a sort would scale further.
// Relies on: act_storage.cuh. Tested by: tests/kernels/test_nn_ops_parity.cpp.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/numerics/op_shapes.h"

namespace farthing::kernels {

void embedding_forward_cuda(float* out, const int32_t* tokens, const float* wte, const float* wpe, int64_t n,
                            RowPositions pos, int64_t c, cudaStream_t stream);
void embedding_forward_bf16_cuda(float* out, const int32_t* tokens, const uint16_t* wte, const uint16_t* wpe,
                                 int64_t n, RowPositions pos, int64_t c, cudaStream_t stream);
// The forwards into a bf16 out (the residual stream under bf16 activations): the fp32 sum rounded once.
void embedding_forward_cuda(uint16_t* out, const int32_t* tokens, const float* wte, const float* wpe, int64_t n,
                            RowPositions pos, int64_t c, cudaStream_t stream);
void embedding_forward_bf16_cuda(uint16_t* out, const int32_t* tokens, const uint16_t* wte, const uint16_t* wpe,
                                 int64_t n, RowPositions pos, int64_t c, cudaStream_t stream);
int64_t embedding_backward_scratch_floats(int64_t n);
// dout: fp32, or bf16 (the residual stream's gradient under bf16 activations), widened exactly.
void embedding_backward_cuda(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int64_t n,
                             RowPositions pos, int64_t c, float* scratch, cudaStream_t stream);
void embedding_backward_cuda(float* dwte, float* dwpe, const uint16_t* dout, const int32_t* tokens, int64_t n,
                             RowPositions pos, int64_t c, float* scratch, cudaStream_t stream);

}  // namespace farthing::kernels
