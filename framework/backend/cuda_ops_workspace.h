// cuda_ops_workspace.h — what CudaNnOps carves from its device workspace, in plain C++ so that
// `farthing plan` (train/plan/memory_estimate.cpp) counts the same bytes the ops take.
//
// bf16 attention through cuDNN works on bf16 copies of its fp32 operands, carved after cuDNN's
// own workspace: forward qkv and O where they are fp32; backward qkv, O, dO and dqkv where they
// are fp32 (none under bf16 activations). Each part starts on a 256-byte boundary. A bf16 GEMM output with a bias
// stages its fp32 product there too. cuDNN's own bytes are known only
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

// A bf16 GEMM output with a bias (GPT-2's MLP in-projection under bf16 activations): cuBLASLt
// adds only a bias of D's own type, so the fp32 product of m rows of n is staged here, the fp32
// bias added and the sum narrowed, as the CPU does.
inline size_t bf16_out_bias_staging_bytes(int64_t m, int64_t n) { return workspace_aligned_bytes(size_t(m * n) * 4); }

}  // namespace farthing
