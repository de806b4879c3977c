// cuda_ops_workspace.h — what CudaNnOps carves from its device workspace, in plain C++ so that
// `farthing plan` (train/plan/memory_estimate.cpp) counts the same bytes the ops take.
//
// bf16 attention through cuDNN works on bf16 copies of its fp32 operands, carved after cuDNN's
// own workspace: forward qkv and O where they are fp32; backward qkv, O, dO and dqkv where they
// are fp32 (none under bf16 activations). Each part starts on a 256-byte boundary. A bf16 GEMM
// output's bias operand (rounded to bf16) and a weight gradient's bias gradient (as cuBLASLt's
// epilogue writes it) are carved there too. cuDNN's own bytes are known only
// once its graph is built on the GPU, so a plan counts the copies alone: a lower bound.
// Relies on: kernels/numerics/op_shapes.h. Tested by: tests/train/plan/test_memory_estimate.cpp
// (the plan's count), tests/kernels/test_nn_ops_parity.cpp (the tracker follows the workspace).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "kernels/numerics/op_shapes.h"

namespace farthing {

// Bytes rounded up so the next part starts aligned (cuDNN wants 16; cudaMalloc gives 256).
inline size_t workspace_aligned_bytes(size_t bytes) { return (bytes + 255) / 256 * 256; }

// The workspace CudaNnOps allocates for a request of `bytes` more than it holds: a quarter more,
// so that slightly larger requests later do not reallocate, and at least 1 MiB.
inline size_t workspace_grown_bytes(size_t bytes) {
  return bytes < (size_t(1) << 20) ? (size_t(1) << 20) : bytes + bytes / 4;
}

// Which of attention's operands the caller stores as bf16 already (cuDNN reads and writes those in
// place; the others go through bf16 copies).
struct CudnnCopies {
  bool qkv_bf16 = false, out_bf16 = false;
  bool grads_bf16 = false;  // the backward's dO and dqkv
};

// The bf16 copies' element counts, in carving order: qkv and O (each 0 when stored as bf16),
// then for the backward dO and dqkv (0 when stored as bf16, or forward).
std::array<int64_t, 4> cudnn_attention_copy_elems(const kernels::AttentionShape& s, bool backward, CudnnCopies stored);

// cuDNN's bytes (aligned), then the copies, each aligned: the workspace one call needs.
size_t cudnn_attention_workspace_bytes(const kernels::AttentionShape& s, bool backward, CudnnCopies stored,
                                       size_t cudnn_bytes);

// A bf16 GEMM output with a bias (qkv with Qwen's or GPT-2's bias, GPT-2's linears under bf16
// activations): the bias operand of n values rounded to bf16 (kernels/numerics/gemm_bias.h), which
// cuBLASLt's bias epilogue reads.
inline size_t bf16_out_bias_operand_bytes(int64_t n) { return workspace_aligned_bytes(size_t(n) * 2); }
// A weight gradient's bias gradient of n values as cuBLASLt's epilogue writes it (fp32), before it
// is added to the kept gradient.
inline size_t bias_grad_scratch_bytes(int64_t n) { return workspace_aligned_bytes(size_t(n) * 4); }
// Where a plan has no bias epilogue (said on stderr): a bf16 output's fp32 sum of m rows of n
// staged, then the rounded bias widened (fp32), then its bf16 operand.
inline size_t bf16_out_bias_staging_bytes(int64_t m, int64_t n) {
  return workspace_aligned_bytes(size_t(m * n) * 4) + workspace_aligned_bytes(size_t(n) * 4) +
         bf16_out_bias_operand_bytes(n);
}

}  // namespace farthing
