// op_shapes.h — the shape descriptors of the model ops (GEMM, attention), shared by every
// backend's kernels and by the backend interface (framework/backend/nn_ops.h).
//
// Plain data, no maths: a GEMM or attention call is described the same way whichever device
// runs it, so models are written once against framework/backend/nn_ops.h.
// Relies on: nothing. Used by: kernels/cpu/matmul_cpu.h, kernels/cpu/attention_cpu.h, nn_ops.h.
#pragma once

#include <cstdint>

namespace farthing::kernels {

// The operand type of a GEMM; C is always fp32 (fp32 accumulation).
enum class GemmDtype : uint8_t { kF32, kBF16, kF16 };
enum class Trans : uint8_t { kN, kT };

// C(m, n) (+)= op(A)(m, k) · op(B)(k, n); A and B row-major as stored, op(X) = X or X^T.
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;  // row strides as stored (0: dense default)
  Trans trans_a = Trans::kN, trans_b = Trans::kN;
};

// Causal attention over the packed projection qkv: B*T rows of [q: Hq*D | k: Hkv*D | v: Hkv*D].
// dtype: the narrowest type the attention may compute in. kF32: fp32 throughout (every backend).
// kBF16 (the model's bf16 compute): a backend with a bf16 attention may round Q, K, V, O and dO
// to bf16 with fp32 softmax statistics and accumulation (CUDA: cuDNN's fused attention); one
// without it computes in fp32 (the CPU). The outputs stay fp32 either way.
struct AttentionShape {
  int64_t batch = 0, seq = 0, q_heads = 0, kv_heads = 0, head_dim = 0;
  GemmDtype dtype = GemmDtype::kF32;
  // Sliding-window attention (Gemma 3's local layers): query i sees keys i - window + 1 .. i;
  // 0: every key up to i. The kernels read it as a lower bound on each query row's visible keys,
  // numerics::attention_first_key (attention_steps.h), so other lower bounds compose with max.
  int64_t window = 0;
  int64_t qkv_stride() const { return (q_heads + 2 * kv_heads) * head_dim; }
};

// RMSNorm over each head of the packed projection qkv (Qwen3's and Gemma 3's q_norm and k_norm,
// applied before RoPE): `rows` rows of `stride` elements, each [q: q_heads*D | k: k_heads*D | v];
// every q head is normalised with the weight wq (D), every k head with wk (D), v is left alone.
struct HeadNormShape {
  int64_t rows = 0, q_heads = 0, k_heads = 0, head_dim = 0, stride = 0;
  int64_t normed_heads() const { return q_heads + k_heads; }
};

}  // namespace farthing::kernels
