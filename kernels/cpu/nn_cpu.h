// nn_cpu.h — the transformer's elementwise, normalisation and embedding ops on the host,
// forward and backward, fp32, OpenMP-parallel.
//
// Shapes are in comments: N rows of C channels. Backward functions *accumulate* into
// weight gradients (dw +=) and, where marked, into input gradients, so residual branches
// and tied weights add up without extra buffers. Reductions over rows (dw, dbias,
// embedding grads) are split by channel across threads and summed in row order, so the
// result does not depend on the thread count.
// Relies on: OpenMP; the scalar maths in kernels/numerics/{activations,norm_steps,rope_rotate,exp_f32}.h,
// which kernels/cuda shares. Tested by: tests/kernels/test_nn_ops_parity.cpp, tests/models/test_gradcheck.cpp, tests/models/test_model_goldens.cpp, the model goldens,
// tests/kernels/test_nn_ops_parity.cpp.
#pragma once

#include <cstdint>

#include "kernels/numerics/op_shapes.h"

namespace farthing::kernels {

// The forward ops that write an activation only GEMMs read (the norms, SwiGLU, GELU) have a
// second form whose `out` is bf16: each fp32 value rounded once to nearest even, the bits that
// narrowing the fp32 out would give (framework/backend/act_ref.h says why).

// out = x * rsqrt(mean(x^2) + eps) * w                     x, out (N, C); rstd (N)
void rmsnorm_forward_cpu(float* out, float* rstd, const float* x, const float* w, int64_t n,
                         int64_t c, float eps);
void rmsnorm_forward_cpu(uint16_t* out, float* rstd, const float* x, const float* w, int64_t n,
                         int64_t c, float eps);
// ... from a bf16 x (the residual stream under bf16 activations), widened exactly
void rmsnorm_forward_cpu(uint16_t* out, float* rstd, const uint16_t* x, const float* w, int64_t n,
                         int64_t c, float eps);
// dx += ..., dw += ... The bf16 form (dx, dout and x bf16, as bf16 activations store the residual
// stream's gradient, the norm's output's and the residual stream) widens dout, x and each dx value
// exactly, adds in fp32 and rounds once: the bits of the fp32 form on widened copies, narrowed.
void rmsnorm_backward_cpu(float* dx, float* dw, const float* dout, const float* x,
                          const float* w, const float* rstd, int64_t n, int64_t c);
void rmsnorm_backward_cpu(uint16_t* dx, float* dw, const uint16_t* dout, const uint16_t* x,
                          const float* w, const float* rstd, int64_t n, int64_t c);

// out = (x - mean) * rstd * w + b (biased variance, as torch.nn.LayerNorm)
void layernorm_forward_cpu(float* out, float* mean, float* rstd, const float* x, const float* w,
                           const float* b, int64_t n, int64_t c, float eps);
void layernorm_forward_cpu(uint16_t* out, float* mean, float* rstd, const float* x, const float* w,
                           const float* b, int64_t n, int64_t c, float eps);
void layernorm_forward_cpu(uint16_t* out, float* mean, float* rstd, const uint16_t* x, const float* w,
                           const float* b, int64_t n, int64_t c, float eps);
// dx += ..., dw += ..., db += ... (the bf16 form as RMSNorm's)
void layernorm_backward_cpu(float* dx, float* dw, float* db, const float* dout, const float* x,
                            const float* w, const float* mean, const float* rstd, int64_t n,
                            int64_t c);
void layernorm_backward_cpu(uint16_t* dx, float* dw, float* db, const uint16_t* dout, const uint16_t* x,
                            const float* w, const float* mean, const float* rstd, int64_t n,
                            int64_t c);

// Rotary embedding in Hugging Face's rotate-half layout, in place on `heads` consecutive
// heads of head_dim channels at the start of each row (row stride `stride`). Row r is at
// position pos.of(r) (r % seq, or counted from its document's start: op_shapes.h's
// RowPositions). cos/sin: (seq, head_dim / 2). inverse = true rotates by -angle
// (the backward of the forward rotation).
void rope_apply_cpu(float* x, int64_t rows, RowPositions pos, int64_t heads, int64_t head_dim,
                    int64_t stride, const float* cos, const float* sin, bool inverse);
// The same on bf16 rows (qkv as a bf16 GEMM stores it): each pair widened exactly, rotated in
// fp32 and rounded to nearest even once.
void rope_apply_cpu(uint16_t* x, int64_t rows, RowPositions pos, int64_t heads, int64_t head_dim,
                    int64_t stride, const float* cos, const float* sin, bool inverse);

// act = silu(gate) * up where gu rows are [gate (H) | up (H)]           gu (N, 2H), act (N, H)
// (a bf16 gu, the MLP's in-projection as a bf16 GEMM stores it, is widened exactly on load)
void swiglu_forward_cpu(float* act, const float* gu, int64_t n, int64_t h);
void swiglu_forward_cpu(uint16_t* act, const float* gu, int64_t n, int64_t h);
void swiglu_forward_cpu(uint16_t* act, const uint16_t* gu, int64_t n, int64_t h);
// dgu = d/dgu (overwrites). The bf16 form (every array bf16, as bf16 activations store the MLP's
// in-projection and both gradients) widens each input exactly and rounds each output once.
void swiglu_backward_cpu(float* dgu, const float* dact, const float* gu, int64_t n, int64_t h);
void swiglu_backward_cpu(uint16_t* dgu, const uint16_t* dact, const uint16_t* gu, int64_t n, int64_t h);

// act = gelu_tanh(gate) * up (GeGLU, Gemma 3's MLP), laid out and stored as SwiGLU's
void geglu_forward_cpu(float* act, const float* gu, int64_t n, int64_t h);
void geglu_forward_cpu(uint16_t* act, const float* gu, int64_t n, int64_t h);
void geglu_forward_cpu(uint16_t* act, const uint16_t* gu, int64_t n, int64_t h);
void geglu_backward_cpu(float* dgu, const float* dact, const float* gu, int64_t n, int64_t h);
void geglu_backward_cpu(uint16_t* dgu, const uint16_t* dact, const uint16_t* gu, int64_t n, int64_t h);

// out = x * s + a (a may be null: out = x * s), numerics/scale_add.h; out may be x or a. Every
// array fp32, or every one bf16 (each value widened exactly, the result rounded once).
void scale_add_cpu(float* out, const float* x, float s, const float* a, int64_t count);
void scale_add_cpu(uint16_t* out, const uint16_t* x, float s, const uint16_t* a, int64_t count);

// out = gelu_tanh(x) (GPT-2's "gelu_new")                               (count)
void gelu_forward_cpu(float* out, const float* x, int64_t count);
void gelu_forward_cpu(uint16_t* out, const float* x, int64_t count);
void gelu_forward_cpu(uint16_t* out, const uint16_t* x, int64_t count);
// dx = dout * gelu'(x) (overwrites; the bf16 form as SwiGLU's)
void gelu_backward_cpu(float* dx, const float* dout, const float* x, int64_t count);
void gelu_backward_cpu(uint16_t* dx, const uint16_t* dout, const uint16_t* x, int64_t count);

// out[r] = wte[tok[r]] (+ wpe[pos.of(r)])                                 out (N, C)
void embedding_forward_cpu(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                           int64_t n, RowPositions pos, int64_t c);
// ... into a bf16 out (the residual stream under bf16 activations): the fp32 sum rounded once
void embedding_forward_cpu(uint16_t* out, const int32_t* tokens, const float* wte, const float* wpe,
                           int64_t n, RowPositions pos, int64_t c);
// The same from bf16 tables, each element widened exactly first: bitwise the fp32 lookup of
// the widened tables, without a widened copy of the whole table.
void embedding_forward_bf16_cpu(float* out, const int32_t* tokens, const uint16_t* wte, const uint16_t* wpe,
                                int64_t n, RowPositions pos, int64_t c);
void embedding_forward_bf16_cpu(uint16_t* out, const int32_t* tokens, const uint16_t* wte, const uint16_t* wpe,
                                int64_t n, RowPositions pos, int64_t c);
// dwte[tok[r]] += dout[r]; dwpe[pos.of(r)] += dout[r] (dwpe may be null; a bf16 dout widened
// exactly, the sums fp32)
void embedding_backward_cpu(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                            int64_t n, RowPositions pos, int64_t c);
void embedding_backward_cpu(float* dwte, float* dwpe, const uint16_t* dout, const int32_t* tokens,
                            int64_t n, RowPositions pos, int64_t c);

// out[r] += bias                                                         out (N, C)
void bias_add_cpu(float* out, const float* bias, int64_t n, int64_t c, int64_t stride);
// dbias += sum over rows of dout (a bf16 dout widened exactly; the sums are fp32)
void bias_backward_cpu(float* dbias, const float* dout, int64_t n, int64_t c, int64_t stride);
void bias_backward_cpu(float* dbias, const uint16_t* dout, int64_t n, int64_t c, int64_t stride);

// dst = a + b / dst += a elementwise                                      (count)
void add_cpu(float* dst, const float* a, const float* b, int64_t count);
void accumulate_cpu(float* dst, const float* a, int64_t count);

// Cross-entropy over rows of logits (R, V), row r at logits + r * stride (stride >= V), in place:
// each row's V values become their gradient (softmax - onehot) * grad_scale, or zeros where
// target < 0 (ignored). The columns V .. stride - 1 (the padding of the model's logits rows) are
// neither read nor written. Returns the sum of the rows' losses (double). Rows are independent, so
// callers feed chunks of rows. The bf16 form (the logits as a bf16 GEMM writes them under bf16
// activations) widens each row exactly, runs the fp32 form on it and rounds each gradient value
// once: the fp32 form's loss and its gradient narrowed, bit for bit.
double cross_entropy_rows_cpu(float* logits, const int32_t* targets, int64_t rows, int64_t vocab, int64_t stride,
                              float grad_scale, bool want_grad);
double cross_entropy_rows_cpu(uint16_t* logits, const int32_t* targets, int64_t rows, int64_t vocab, int64_t stride,
                              float grad_scale, bool want_grad);

// Narrowing with round-to-nearest-even (bf16/fp16 compute modes feed GEMMs this way).
void f32_to_bf16_cpu(uint16_t* dst, const float* src, int64_t count);
void f32_to_f16_cpu(uint16_t* dst, const float* src, int64_t count);

}  // namespace farthing::kernels
