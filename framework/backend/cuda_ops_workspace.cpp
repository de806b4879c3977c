// cuda_ops_workspace.cpp — see cuda_ops_workspace.h.
#include "framework/backend/cuda_ops_workspace.h"

namespace farthing {

std::array<int64_t, 4> cudnn_attention_copy_elems(const kernels::AttentionShape& s, bool backward, CudnnCopies stored) {
  const int64_t qkv = s.batch * s.seq * s.qkv_stride(), out = s.batch * s.seq * s.q_heads * s.head_dim;
  const bool grad_copies = backward && !stored.grads_bf16;
  return {stored.qkv_bf16 ? 0 : qkv, stored.out_bf16 ? 0 : out, grad_copies ? out : 0, grad_copies ? qkv : 0};
}

size_t cudnn_attention_workspace_bytes(const kernels::AttentionShape& s, bool backward, CudnnCopies stored,
                                       size_t cudnn_bytes) {
  size_t total = workspace_aligned_bytes(cudnn_bytes);
  for (int64_t n : cudnn_attention_copy_elems(s, backward, stored)) total += workspace_aligned_bytes(size_t(n) * 2);
  return total;
}

}  // namespace farthing
