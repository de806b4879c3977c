// attention_cuda.h — causal GQA attention forward, backward and KV-cache decode on a CUDA device,
// fp32, flash-style.
//
// The contracts of kernels/cpu/attention_cpu.h (qkv rows [q: Hq*D | k: Hkv*D | v: Hkv*D] of
// stride (Hq + 2 Hkv) D; out (B*T, Hq*D); lse (B, Hq, T); the backward's scratch of
// 2 * B * Hq * T * D floats for per-query-head dK / dV), on device pointers, queued on `stream`.
// Forward: one block per (32 query rows, head, batch) streams 32-key tiles through shared
// memory with an online softmax; scores never exist beyond a 32 x 32 tile. Backward recomputes
// the probabilities from the log-sum-exp, without atomics: one kernel per key tile writes that
// tile's dK / dV (per query head, into scratch), one per query tile writes dQ, and a last
// kernel sums each group's heads into the kv head in head order (as the CPU). Every sum has a
// fixed order, so results repeat bit for bit; they match the CPU to fp32 rounding (the CPU's
// products are oneDNN GEMMs). Decode: one block per (query row, head), every sum in the CPU's
// order (dot over d, softmax denominator over keys, output over keys), so decode is bitwise
// attention_decode_cpu. Head dims 1..128 (fp32 SIMT, no tensor cores yet).
// bwd_scratch: attention_backward_extra_floats(s) floats (dO . O per row); decode_scratch:
// attention_decode_scratch_floats(s, rows, first_position) floats (the scores).
// Relies on: numerics/attention_steps.h, nn_cuda_common.cuh. Tested by: tests/kernels/test_nn_ops_parity.cpp.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/numerics/op_shapes.h"

namespace farthing::kernels {

inline constexpr int64_t kAttentionMaxHeadDim = 128;
// Preconditions of every function here (checked by the caller, framework/backend/cuda_nn_ops.cu):
// 1 <= head_dim <= kAttentionMaxHeadDim, kv_heads >= 1 and q_heads a multiple of kv_heads.

void attention_forward_cuda(const AttentionShape& s, float* out, float* lse, const float* qkv, cudaStream_t stream);

int64_t attention_backward_extra_floats(const AttentionShape& s);
void attention_backward_cuda(const AttentionShape& s, float* dqkv, float* scratch, const float* dout,
                             const float* out, const float* lse, const float* qkv, float* extra, cudaStream_t stream);

int64_t attention_decode_scratch_floats(const AttentionShape& s, int64_t rows, int64_t first_position);
void attention_decode_cuda(const AttentionShape& s, float* out, const float* qkv, int64_t rows, int64_t first_position,
                           const float* k_cache, const float* v_cache, float* scores, cudaStream_t stream);

}  // namespace farthing::kernels
