// head_norm_cpu.h — RMSNorm over each q and k head of the packed projection (HeadNormShape), on
// the host: Qwen3's and Gemma 3's q_norm and k_norm.
//
// Each head is one RMSNorm row of head_dim channels, with the scalar steps of
// kernels/numerics/norm_steps.h (shared with kernels/cuda/head_norm_cuda.cu). Weight gradients
// are summed over rows, then heads, in that order, so they do not depend on the thread count.
// T: the storage of every activation array (fp32, or bf16 under bf16 activations: widened
// exactly on load, each value rounded once on store).
// Relies on: numerics/norm_steps.h, act_storage.h. Tested by: tests/models/test_model_goldens.cpp
// (qwen3_tiny against transformers), tests/models/test_model_modes.cpp (the bf16 forms),
// tests/kernels/test_nn_ops_parity.cpp (head_rmsnorm rows, bitwise across thread counts).
#pragma once

#include <cstdint>

#include "kernels/numerics/op_shapes.h"

namespace farthing::kernels {

// out = qkv with each q head x replaced by x * rstd(x) * wq and each k head by x * rstd(x) * wk;
// the v heads are copied. rstd (rows, q_heads + k_heads). out and x do not overlap.
void head_rmsnorm_forward_cpu(const HeadNormShape& s, float* out, float* rstd, const float* x, const float* wq,
                              const float* wk, float eps);
void head_rmsnorm_forward_cpu(const HeadNormShape& s, uint16_t* out, float* rstd, const uint16_t* x,
                              const float* wq, const float* wk, float eps);
// In place on d (the gradient of the normalised qkv): each q and k head becomes the gradient of
// the head before the norm (x: the projection before the norm); v heads are left as they are.
// dwq += ..., dwk += ....
void head_rmsnorm_backward_cpu(const HeadNormShape& s, float* d, float* dwq, float* dwk, const float* x,
                               const float* wq, const float* wk, const float* rstd);
void head_rmsnorm_backward_cpu(const HeadNormShape& s, uint16_t* d, float* dwq, float* dwk, const uint16_t* x,
                               const float* wq, const float* wk, const float* rstd);

}  // namespace farthing::kernels
