// op_shapes.h — the shape descriptors of the model ops (GEMM, attention), shared by every
// backend's kernels and by the backend interface (framework/backend/nn_ops.h).
//
// Plain data, no maths: a GEMM or attention call is described the same way whichever device
// runs it, so models are written once against framework/backend/nn_ops.h.
// Relies on: nothing. Used by: kernels/cpu/matmul_cpu.h, kernels/cpu/attention_cpu.h, nn_ops.h.
#pragma once

#include <cstdint>

#include "kernels/numerics/attention_steps.h"
#include "kernels/numerics/host_device.h"

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

// Which operand of a weight-gradient GEMM is the layer's output gradient dy (k rows as stored),
// whose sums over k are the bias gradient: A (op(A) = dy^T, trans_a T; one sum per row of C) or
// B (op(B) = dy, trans_b N; one sum per column of C).
enum class BiasGradOf : uint8_t { kA, kB };

// Causal attention over the packed projection qkv: B*T rows of [q: Hq*D | k: Hkv*D | v: Hkv*D].
// dtype: the narrowest type the attention may compute in. kF32: fp32 throughout (every backend).
// kBF16 (the model's bf16 compute): a backend with a bf16 attention may round Q, K, V, O and dO
// to bf16 with fp32 softmax statistics and accumulation (CUDA: cuDNN's fused attention); one
// without it computes in fp32 (the CPU). The outputs stay fp32 either way.
// doc_start: null, or per row (B*T int32, in the memory of the backend that runs the op) the
// index within its sequence of the first token of the row's document, so that documents packed
// into one sequence do not see each other. Both masks are lower bounds on the visible key index:
// query i of a sequence sees keys first_key(i) .. i, the later of its document's start and, under
// a sliding window, i - window + 1. Within a document the starts never decrease.
struct AttentionShape {
  int64_t batch = 0, seq = 0, q_heads = 0, kv_heads = 0, head_dim = 0;
  GemmDtype dtype = GemmDtype::kF32;
  // Sliding-window attention (Gemma 3's local layers): query i sees keys i - window + 1 .. i;
  // 0: every key up to i.
  int64_t window = 0;
  // Documents packed into one sequence: row r (of all B*T) sees keys from doc_start[r] on (an
  // index within its sequence); null: one document a sequence.
  const int32_t* doc_start = nullptr;
  // With doc_start: how many documents the B*T rows hold (a sequence's padding is one) and the
  // rows of the longest, known on the host without reading doc_start, so that cuDNN's ragged
  // batch (kernels/cuda/attention_cudnn.h) can be sized. 0: not given.
  int64_t documents = 0, longest_document = 0;
  // Scores are (q . k) / sqrt(score_scalar): Gemma 3's query_pre_attn_scalar; 0: head_dim.
  int64_t score_scalar = 0;
  FARTHING_HD float scale() const { return numerics::attention_scale_f32(score_scalar > 0 ? score_scalar : head_dim); }
  int64_t qkv_stride() const { return (q_heads + 2 * kv_heads) * head_dim; }
  // The first key query row `row` (of all B*T) may see, as an index within its sequence: its
  // document's start, and under a sliding window no key before i - window + 1. Every kernel masks
  // keys below it.
  FARTHING_HD int64_t first_key(int64_t row) const {
    const int64_t document = doc_start ? int64_t(doc_start[row]) : 0;
    const int64_t windowed = numerics::attention_first_key(row % seq, window);
    return document > windowed ? document : windowed;
  }
};

// Where each row of a micro-batch sits, for RoPE and learned positions: row r is token r % seq
// of its sequence, at position r % seq - doc_start[r] (counted from its document's first token;
// doc_start as AttentionShape's). Built implicitly from a period alone: one document a sequence.
struct RowPositions {
  int64_t seq = 0;
  const int32_t* doc_start = nullptr;
  RowPositions(int64_t period, const int32_t* starts = nullptr) : seq(period), doc_start(starts) {}  // NOLINT
  FARTHING_HD int64_t of(int64_t row) const { return row % seq - (doc_start ? int64_t(doc_start[row]) : 0); }
};

// RMSNorm over each head of the packed projection qkv (Qwen3's and Gemma 3's q_norm and k_norm,
// applied before RoPE): `rows` rows of `stride` elements, each [q: q_heads*D | k: k_heads*D | v];
// every q head is normalised with the weight wq (D), every k head with wk (D), v is left alone.
struct HeadNormShape {
  int64_t rows = 0, q_heads = 0, k_heads = 0, head_dim = 0, stride = 0;
  int64_t normed_heads() const { return q_heads + k_heads; }
};

}  // namespace farthing::kernels
