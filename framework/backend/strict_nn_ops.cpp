// strict_nn_ops.cpp — see strict_nn_ops.h.
#include "framework/backend/strict_nn_ops.h"

#include "framework/core/error.h"

namespace farthing {

void StrictNnOps::device_memory(const char* op,
                                std::initializer_list<std::pair<const char*, const void*>> args) const {
  for (const auto& [name, p] : args) {
    FARTHING_CHECK(p == nullptr || arena_.holds(p), "strict device: NnOps::", op, " was given host memory for '", name,
                   "'; ops read and write device memory only (copy it to the device first)");
  }
}

#define STRICT_OP(op, call, ...)        \
  device_memory(#op, {__VA_ARGS__});    \
  GuardedArena::Access access(arena_);  \
  return cpu_.call

void StrictNnOps::matmul(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, float* c,
                         bool accumulate) {
  STRICT_OP(matmul, matmul(dtype, shape, a, b, c, accumulate), {"a", a}, {"b", b}, {"c", c});
}
void StrictNnOps::matmul_add_product(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b,
                                     float* c) {
  STRICT_OP(matmul_add_product, matmul_add_product(dtype, shape, a, b, c), {"a", a}, {"b", b}, {"c", c});
}
void StrictNnOps::matmul_bf16_out(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b,
                                  const float* bias, const uint16_t* add, uint16_t* c) {
  STRICT_OP(matmul_bf16_out, matmul_bf16_out(dtype, shape, a, b, bias, add, c), {"a", a}, {"b", b}, {"bias", bias},
            {"add", add}, {"c", c});
}
void StrictNnOps::fp8_quantize(const Fp8QuantizeArgs& a) {
  STRICT_OP(fp8_quantize, fp8_quantize(a), {"x_f32", a.x_f32}, {"x_bf16", a.x_bf16}, {"given_scale", a.given_scale},
            {"codes", a.codes}, {"scale_inv", a.scale_inv}, {"amax", a.amax});
}
int64_t StrictNnOps::fp8_matmul_workspace_bytes(int64_t a_elems, int64_t b_elems, bool power_of_two) const {
  return cpu_.fp8_matmul_workspace_bytes(a_elems, b_elems, power_of_two);
}
void StrictNnOps::matmul_fp8(const GemmShape& shape, const Fp8Operand& a, const Fp8Operand& b, float* c,
                             bool accumulate, void* workspace) {
  STRICT_OP(matmul_fp8, matmul_fp8(shape, a, b, c, accumulate, workspace), {"a.codes", a.codes},
            {"a.scale_inv", a.scale_inv}, {"b.codes", b.codes}, {"b.scale_inv", b.scale_inv}, {"c", c},
            {"workspace", workspace});
}
void StrictNnOps::attention_forward(const AttentionShape& s, ActRef out, float* lse, ActRef qkv) {
  STRICT_OP(attention_forward, attention_forward(s, out, lse, qkv), {"out", out.data}, {"lse", lse},
            {"qkv", qkv.data}, {"doc_start", s.doc_start});
}
void StrictNnOps::attention_backward(const AttentionShape& s, ActRef dqkv, float* scratch, ActRef dout,
                                     ActRef out, const float* lse, ActRef qkv) {
  STRICT_OP(attention_backward, attention_backward(s, dqkv, scratch, dout, out, lse, qkv), {"dqkv", dqkv.data},
            {"scratch", scratch}, {"dout", dout.data}, {"out", out.data}, {"lse", lse}, {"qkv", qkv.data},
            {"doc_start", s.doc_start});
}
void StrictNnOps::attention_decode(const AttentionShape& s, float* out, const float* qkv, int64_t rows,
                                   int64_t first_position, const float* k_cache, const float* v_cache) {
  STRICT_OP(attention_decode, attention_decode(s, out, qkv, rows, first_position, k_cache, v_cache), {"out", out},
            {"qkv", qkv}, {"k_cache", k_cache}, {"v_cache", v_cache});
}
void StrictNnOps::rmsnorm_forward(ActRef out, float* rstd, ActRef x, const float* w, int64_t n, int64_t c,
                                  float eps) {
  STRICT_OP(rmsnorm_forward, rmsnorm_forward(out, rstd, x, w, n, c, eps), {"out", out.data}, {"rstd", rstd}, {"x", x.data},
            {"w", w});
}
void StrictNnOps::rmsnorm_backward(ActRef dx, float* dw, ActRef dout, ActRef x, const float* w,
                                   const float* rstd, int64_t n, int64_t c) {
  STRICT_OP(rmsnorm_backward, rmsnorm_backward(dx, dw, dout, x, w, rstd, n, c), {"dx", dx.data}, {"dw", dw},
            {"dout", dout.data}, {"x", x.data}, {"w", w}, {"rstd", rstd});
}
void StrictNnOps::head_rmsnorm_forward(const HeadNormShape& s, ActRef out, float* rstd, ActRef qkv, const float* wq,
                                       const float* wk, float eps) {
  STRICT_OP(head_rmsnorm_forward, head_rmsnorm_forward(s, out, rstd, qkv, wq, wk, eps), {"out", out.data},
            {"rstd", rstd}, {"qkv", qkv.data}, {"wq", wq}, {"wk", wk});
}
void StrictNnOps::head_rmsnorm_backward(const HeadNormShape& s, ActRef d, float* dwq, float* dwk, ActRef qkv,
                                        const float* wq, const float* wk, const float* rstd) {
  STRICT_OP(head_rmsnorm_backward, head_rmsnorm_backward(s, d, dwq, dwk, qkv, wq, wk, rstd), {"d", d.data},
            {"dwq", dwq}, {"dwk", dwk}, {"qkv", qkv.data}, {"wq", wq}, {"wk", wk}, {"rstd", rstd});
}
void StrictNnOps::layernorm_forward(ActRef out, float* mean, float* rstd, ActRef x, const float* w,
                                    const float* b, int64_t n, int64_t c, float eps) {
  STRICT_OP(layernorm_forward, layernorm_forward(out, mean, rstd, x, w, b, n, c, eps), {"out", out.data}, {"mean", mean},
            {"rstd", rstd}, {"x", x.data}, {"w", w}, {"b", b});
}
void StrictNnOps::layernorm_backward(ActRef dx, float* dw, float* db, ActRef dout, ActRef x,
                                     const float* w, const float* mean, const float* rstd, int64_t n, int64_t c) {
  STRICT_OP(layernorm_backward, layernorm_backward(dx, dw, db, dout, x, w, mean, rstd, n, c), {"dx", dx.data},
            {"dw", dw}, {"db", db}, {"dout", dout.data}, {"x", x.data}, {"w", w}, {"mean", mean}, {"rstd", rstd});
}
void StrictNnOps::rope_apply(ActRef x, int64_t rows, RowPositions pos, int64_t heads, int64_t head_dim, int64_t stride,
                             const float* cos, const float* sin, bool inverse) {
  STRICT_OP(rope_apply, rope_apply(x, rows, pos, heads, head_dim, stride, cos, sin, inverse), {"x", x.data},
            {"cos", cos}, {"sin", sin}, {"doc_start", pos.doc_start});
}
void StrictNnOps::swiglu_forward(ActRef act, ActRef gu, int64_t n, int64_t h) {
  STRICT_OP(swiglu_forward, swiglu_forward(act, gu, n, h), {"act", act.data}, {"gu", gu.data});
}
void StrictNnOps::swiglu_backward(ActRef dgu, ActRef dact, ActRef gu, int64_t n, int64_t h) {
  STRICT_OP(swiglu_backward, swiglu_backward(dgu, dact, gu, n, h), {"dgu", dgu.data}, {"dact", dact.data},
            {"gu", gu.data});
}
void StrictNnOps::geglu_forward(ActRef act, ActRef gu, int64_t n, int64_t h) {
  STRICT_OP(geglu_forward, geglu_forward(act, gu, n, h), {"act", act.data}, {"gu", gu.data});
}
void StrictNnOps::geglu_backward(ActRef dgu, ActRef dact, ActRef gu, int64_t n, int64_t h) {
  STRICT_OP(geglu_backward, geglu_backward(dgu, dact, gu, n, h), {"dgu", dgu.data}, {"dact", dact.data},
            {"gu", gu.data});
}
void StrictNnOps::scale_add(ActRef out, ActRef x, float s, ActRef add, int64_t count) {
  STRICT_OP(scale_add, scale_add(out, x, s, add, count), {"out", out.data}, {"x", x.data}, {"add", add.data});
}
void StrictNnOps::gelu_forward(ActRef out, ActRef x, int64_t count) {
  STRICT_OP(gelu_forward, gelu_forward(out, x, count), {"out", out.data}, {"x", x.data});
}
void StrictNnOps::gelu_backward(ActRef dx, ActRef dout, ActRef x, int64_t count) {
  STRICT_OP(gelu_backward, gelu_backward(dx, dout, x, count), {"dx", dx.data}, {"dout", dout.data}, {"x", x.data});
}
void StrictNnOps::embedding_forward(ActRef out, const int32_t* tokens, const float* wte, const float* wpe, int64_t n,
                                    RowPositions pos, int64_t c) {
  STRICT_OP(embedding_forward, embedding_forward(out, tokens, wte, wpe, n, pos, c), {"out", out.data},
            {"tokens", tokens}, {"wte", wte}, {"wpe", wpe}, {"doc_start", pos.doc_start});
}
void StrictNnOps::embedding_forward_bf16(ActRef out, const int32_t* tokens, const uint16_t* wte, const uint16_t* wpe,
                                         int64_t n, RowPositions pos, int64_t c) {
  STRICT_OP(embedding_forward_bf16, embedding_forward_bf16(out, tokens, wte, wpe, n, pos, c), {"out", out.data},
            {"tokens", tokens}, {"wte", wte}, {"wpe", wpe}, {"doc_start", pos.doc_start});
}
void StrictNnOps::embedding_backward(float* dwte, float* dwpe, ActRef dout, const int32_t* tokens, int64_t n,
                                     RowPositions pos, int64_t c) {
  STRICT_OP(embedding_backward, embedding_backward(dwte, dwpe, dout, tokens, n, pos, c), {"dwte", dwte},
            {"dwpe", dwpe}, {"dout", dout.data}, {"tokens", tokens},
            {"doc_start", pos.doc_start});
}
void StrictNnOps::bias_add(float* out, const float* bias, int64_t n, int64_t c, int64_t stride) {
  STRICT_OP(bias_add, bias_add(out, bias, n, c, stride), {"out", out}, {"bias", bias});
}
void StrictNnOps::bias_backward(float* dbias, ActRef dout, int64_t n, int64_t c, int64_t stride) {
  STRICT_OP(bias_backward, bias_backward(dbias, dout, n, c, stride), {"dbias", dbias}, {"dout", dout.data});
}
void StrictNnOps::cross_entropy_rows(ActRef logits, const int32_t* targets, int64_t rows, int64_t vocab, int64_t stride,
                                     float grad_scale, bool want_grad, double* loss_sum) {
  STRICT_OP(cross_entropy_rows,
            cross_entropy_rows(logits, targets, rows, vocab, stride, grad_scale, want_grad, loss_sum),
            {"logits", logits.data}, {"targets", targets}, {"loss_sum", loss_sum});
}
void StrictNnOps::narrow(GemmDtype dtype, uint16_t* dst, const float* src, int64_t count) {
  STRICT_OP(narrow, narrow(dtype, dst, src, count), {"dst", dst}, {"src", src});
}
void StrictNnOps::widen(GemmDtype dtype, float* dst, const uint16_t* src, int64_t count) {
  STRICT_OP(widen, widen(dtype, dst, src, count), {"dst", dst}, {"src", src});
}
void StrictNnOps::copy(float* dst, const float* src, int64_t count) {
  GuardedArena::Access access(arena_);  // either side may be host memory
  return cpu_.copy(dst, src, count);
}
void StrictNnOps::zero(float* dst, int64_t count) { STRICT_OP(zero, zero(dst, count), {"dst", dst}); }
void StrictNnOps::accumulate(float* dst, const float* src, int64_t count) {
  STRICT_OP(accumulate, accumulate(dst, src, count), {"dst", dst}, {"src", src});
}

#undef STRICT_OP

}  // namespace farthing
