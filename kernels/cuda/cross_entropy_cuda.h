// cross_entropy_cuda.h — row-wise softmax cross-entropy, in place, on a CUDA device.
//
// cross_entropy_rows_cpu's contract (kernels/cpu/nn_cpu.h): each row of logits (R, V), row r at
// logits + r * stride, becomes its gradient (softmax - onehot) * grad_scale, or zeros where
// target < 0, and the pad columns V .. stride - 1 are neither read nor written; the loss of each row
// is lse - logit[target] in double. One block per row: max (exact), e^(l - max) with
// numerics/exp_f32.h (the CPU's bits per element), the sum of those in double in a fixed tree
// (the CPU sums in index order: the two sums may differ in the last bits of a double), then the
// scaling. Rows are read eight elements at a time (16-byte accesses where a row starts 16-byte
// aligned, as every row of the model's padded logits does; vec8.cuh). The row losses go to
// row_loss (device, R doubles) and are summed in a fixed order by one block, and that sum added
// to *loss_sum (device), by a second kernel: nothing waits for the host here.
// Relies on: numerics/exp_f32.h, nn_cuda_common.cuh, act_storage.cuh, vec8.cuh. Tested by: tests/kernels/test_nn_ops_parity.cpp.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace farthing::kernels {

// logits: fp32, or bf16 (widened exactly; each gradient value rounded once, as nn_cpu.h's bf16 form).
void cross_entropy_rows_cuda(float* logits, const int32_t* targets, int64_t rows, int64_t vocab, int64_t stride,
                             float grad_scale, bool want_grad, double* row_loss, double* loss_sum, cudaStream_t stream);
void cross_entropy_rows_cuda(uint16_t* logits, const int32_t* targets, int64_t rows, int64_t vocab, int64_t stride,
                             float grad_scale, bool want_grad, double* row_loss, double* loss_sum,
                             cudaStream_t stream);

}  // namespace farthing::kernels
