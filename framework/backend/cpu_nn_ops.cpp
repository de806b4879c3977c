// cpu_nn_ops.cpp — see cpu_nn_ops.h: each op is one call into kernels/cpu.
#include "framework/backend/cpu_nn_ops.h"

#include <cstring>

#include "framework/backend/fp4_op_checks.h"
#include "framework/backend/fp8_op_checks.h"
#include "framework/core/error.h"
#include "kernels/cpu/attention_cpu.h"
#include "kernels/cpu/cast_cpu.h"
#include "kernels/cpu/fp4_cpu.h"
#include "kernels/cpu/fp8_cpu.h"
#include "kernels/cpu/head_norm_cpu.h"
#include "kernels/cpu/matmul_cpu.h"
#include "kernels/cpu/nn_cpu.h"
#include "kernels/numerics/fp8_workspace.h"

namespace farthing {

namespace k = farthing::kernels;

void CpuNnOps::matmul(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, float* c,
                      bool accumulate) {
  k::matmul_cpu(dtype, shape, a, b, c, accumulate);
}

void CpuNnOps::matmul_add_product(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b,
                                  float* c) {
  k::matmul_add_product_cpu(dtype, shape, a, b, c);
}

void CpuNnOps::matmul_bf16_out(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b,
                               const float* bias, const uint16_t* add, uint16_t* c) {
  k::matmul_bf16_out_cpu(dtype, shape, a, b, bias, add, c);
}

void CpuNnOps::fp4_quantize(const Fp4QuantizeArgs& args) {
  check_fp4_quantize_args(args);
  k::fp4_quantize_cpu(args);
}

void CpuNnOps::matmul_fp4(int64_t m, int64_t n, int64_t k, const Fp4Operand& a, const Fp4Operand& b, float* c,
                          bool accumulate, void* workspace) {
  check_fp4_matmul_operands(m, n, k, a, b);
  k::fp4_matmul_cpu(m, n, k, a, b, c, accumulate, workspace);
}

void CpuNnOps::fp8_quantize(const Fp8QuantizeArgs& args) {
  check_fp8_quantize_args(args);
  k::fp8_quantize_cpu(args);
}

int64_t CpuNnOps::fp8_matmul_workspace_bytes(int64_t a_elems, int64_t b_elems, bool power_of_two) const {
  return numerics::fp8_matmul_workspace_bytes(numerics::Fp8GemmEngine::kEmulated, a_elems, b_elems, power_of_two);
}

void CpuNnOps::matmul_fp8(const GemmShape& shape, const Fp8Operand& a, const Fp8Operand& b, float* c,
                          bool accumulate, void* workspace) {
  check_fp8_matmul_operands(shape, a, b);
  k::fp8_matmul_cpu(shape, a, b, c, accumulate, workspace);
}

void CpuNnOps::attention_forward(const AttentionShape& s, ActRef out, float* lse, ActRef qkv) {
  check_bf16_input_storage("attention_forward", out, qkv);
  if (qkv.is_bf16()) return k::attention_forward_cpu(s, out.bf16(), lse, qkv.bf16());
  if (out.is_bf16()) return k::attention_forward_cpu(s, out.bf16(), lse, qkv.f32());
  k::attention_forward_cpu(s, out.f32(), lse, qkv.f32());
}

void CpuNnOps::attention_backward(const AttentionShape& s, ActRef dqkv, float* scratch, ActRef dout, ActRef out,
                                  const float* lse, ActRef qkv) {
  check_bf16_input_storage("attention_backward", out, qkv);
  check_one_storage("attention_backward", {{"dqkv", dqkv}, {"dout", dout}});
  if (dout.is_bf16()) check_one_storage("attention_backward", {{"dout", dout}, {"out", out}, {"qkv", qkv}});
  if (dout.is_bf16()) {
    return k::attention_backward_cpu(s, dqkv.bf16(), scratch, dout.bf16(), out.bf16(), lse, qkv.bf16());
  }
  if (qkv.is_bf16()) return k::attention_backward_cpu(s, dqkv.f32(), scratch, dout.f32(), out.bf16(), lse, qkv.bf16());
  if (out.is_bf16()) return k::attention_backward_cpu(s, dqkv.f32(), scratch, dout.f32(), out.bf16(), lse, qkv.f32());
  k::attention_backward_cpu(s, dqkv.f32(), scratch, dout.f32(), out.f32(), lse, qkv.f32());
}

void CpuNnOps::attention_decode(const AttentionShape& s, float* out, const float* qkv, int64_t rows,
                                int64_t first_position, const float* k_cache, const float* v_cache) {
  k::attention_decode_cpu(s, out, qkv, rows, first_position, k_cache, v_cache);
}

void CpuNnOps::rmsnorm_forward(ActRef out, float* rstd, ActRef x, const float* w, int64_t n, int64_t c,
                               float eps) {
  check_bf16_input_storage("rmsnorm_forward", out, x);
  if (x.is_bf16()) return k::rmsnorm_forward_cpu(out.bf16(), rstd, x.bf16(), w, n, c, eps);
  if (out.is_bf16()) return k::rmsnorm_forward_cpu(out.bf16(), rstd, x.f32(), w, n, c, eps);
  k::rmsnorm_forward_cpu(out.f32(), rstd, x.f32(), w, n, c, eps);
}

void CpuNnOps::rmsnorm_backward(ActRef dx, float* dw, ActRef dout, ActRef x, const float* w,
                                const float* rstd, int64_t n, int64_t c) {
  check_one_storage("rmsnorm_backward", {{"dx", dx}, {"dout", dout}, {"x", x}});
  if (dx.is_bf16()) return k::rmsnorm_backward_cpu(dx.bf16(), dw, dout.bf16(), x.bf16(), w, rstd, n, c);
  k::rmsnorm_backward_cpu(dx.f32(), dw, dout.f32(), x.f32(), w, rstd, n, c);
}

void CpuNnOps::head_rmsnorm_forward(const HeadNormShape& s, ActRef out, float* rstd, ActRef qkv, const float* wq,
                                    const float* wk, float eps) {
  check_one_storage("head_rmsnorm_forward", {{"out", out}, {"qkv", qkv}});
  if (qkv.is_bf16()) return k::head_rmsnorm_forward_cpu(s, out.bf16(), rstd, qkv.bf16(), wq, wk, eps);
  k::head_rmsnorm_forward_cpu(s, out.f32(), rstd, qkv.f32(), wq, wk, eps);
}

void CpuNnOps::head_rmsnorm_backward(const HeadNormShape& s, ActRef d, float* dwq, float* dwk, ActRef qkv,
                                     const float* wq, const float* wk, const float* rstd) {
  check_one_storage("head_rmsnorm_backward", {{"d", d}, {"qkv", qkv}});
  if (d.is_bf16()) return k::head_rmsnorm_backward_cpu(s, d.bf16(), dwq, dwk, qkv.bf16(), wq, wk, rstd);
  k::head_rmsnorm_backward_cpu(s, d.f32(), dwq, dwk, qkv.f32(), wq, wk, rstd);
}

void CpuNnOps::layernorm_forward(ActRef out, float* mean, float* rstd, ActRef x, const float* w,
                                 const float* b, int64_t n, int64_t c, float eps) {
  check_bf16_input_storage("layernorm_forward", out, x);
  if (x.is_bf16()) return k::layernorm_forward_cpu(out.bf16(), mean, rstd, x.bf16(), w, b, n, c, eps);
  if (out.is_bf16()) return k::layernorm_forward_cpu(out.bf16(), mean, rstd, x.f32(), w, b, n, c, eps);
  k::layernorm_forward_cpu(out.f32(), mean, rstd, x.f32(), w, b, n, c, eps);
}

void CpuNnOps::layernorm_backward(ActRef dx, float* dw, float* db, ActRef dout, ActRef x,
                                  const float* w, const float* mean, const float* rstd, int64_t n, int64_t c) {
  check_one_storage("layernorm_backward", {{"dx", dx}, {"dout", dout}, {"x", x}});
  if (dx.is_bf16()) return k::layernorm_backward_cpu(dx.bf16(), dw, db, dout.bf16(), x.bf16(), w, mean, rstd, n, c);
  k::layernorm_backward_cpu(dx.f32(), dw, db, dout.f32(), x.f32(), w, mean, rstd, n, c);
}

void CpuNnOps::rope_apply(ActRef x, int64_t rows, RowPositions pos, int64_t heads, int64_t head_dim, int64_t stride,
                          const float* cos, const float* sin, bool inverse) {
  if (x.is_bf16()) return k::rope_apply_cpu(x.bf16(), rows, pos, heads, head_dim, stride, cos, sin, inverse);
  k::rope_apply_cpu(x.f32(), rows, pos, heads, head_dim, stride, cos, sin, inverse);
}

void CpuNnOps::swiglu_forward(ActRef act, ActRef gu, int64_t n, int64_t h) {
  check_bf16_input_storage("swiglu_forward", act, gu);
  if (gu.is_bf16()) return k::swiglu_forward_cpu(act.bf16(), gu.bf16(), n, h);
  if (act.is_bf16()) return k::swiglu_forward_cpu(act.bf16(), gu.f32(), n, h);
  k::swiglu_forward_cpu(act.f32(), gu.f32(), n, h);
}

void CpuNnOps::swiglu_backward(ActRef dgu, ActRef dact, ActRef gu, int64_t n, int64_t h) {
  check_one_storage("swiglu_backward", {{"dgu", dgu}, {"dact", dact}, {"gu", gu}});
  if (gu.is_bf16()) return k::swiglu_backward_cpu(dgu.bf16(), dact.bf16(), gu.bf16(), n, h);
  k::swiglu_backward_cpu(dgu.f32(), dact.f32(), gu.f32(), n, h);
}

void CpuNnOps::geglu_forward(ActRef act, ActRef gu, int64_t n, int64_t h) {
  check_bf16_input_storage("geglu_forward", act, gu);
  if (gu.is_bf16()) return k::geglu_forward_cpu(act.bf16(), gu.bf16(), n, h);
  if (act.is_bf16()) return k::geglu_forward_cpu(act.bf16(), gu.f32(), n, h);
  k::geglu_forward_cpu(act.f32(), gu.f32(), n, h);
}

void CpuNnOps::geglu_backward(ActRef dgu, ActRef dact, ActRef gu, int64_t n, int64_t h) {
  check_one_storage("geglu_backward", {{"dgu", dgu}, {"dact", dact}, {"gu", gu}});
  if (gu.is_bf16()) return k::geglu_backward_cpu(dgu.bf16(), dact.bf16(), gu.bf16(), n, h);
  k::geglu_backward_cpu(dgu.f32(), dact.f32(), gu.f32(), n, h);
}

void CpuNnOps::scale_add(ActRef out, ActRef x, float s, ActRef add, int64_t count) {
  const ActRef a = add.data != nullptr ? add : x;  // no add: out and x alone share a storage
  check_one_storage("scale_add", {{"out", out}, {"x", x}, {"add", a}});
  if (x.is_bf16()) return k::scale_add_cpu(out.bf16(), x.bf16(), s, add.data ? add.bf16() : nullptr, count);
  k::scale_add_cpu(out.f32(), x.f32(), s, add.data ? add.f32() : nullptr, count);
}

void CpuNnOps::gelu_forward(ActRef out, ActRef x, int64_t count) {
  check_bf16_input_storage("gelu_forward", out, x);
  if (x.is_bf16()) return k::gelu_forward_cpu(out.bf16(), x.bf16(), count);
  if (out.is_bf16()) return k::gelu_forward_cpu(out.bf16(), x.f32(), count);
  k::gelu_forward_cpu(out.f32(), x.f32(), count);
}

void CpuNnOps::gelu_backward(ActRef dx, ActRef dout, ActRef x, int64_t count) {
  check_one_storage("gelu_backward", {{"dx", dx}, {"dout", dout}, {"x", x}});
  if (x.is_bf16()) return k::gelu_backward_cpu(dx.bf16(), dout.bf16(), x.bf16(), count);
  k::gelu_backward_cpu(dx.f32(), dout.f32(), x.f32(), count);
}

void CpuNnOps::embedding_forward(ActRef out, const int32_t* tokens, const float* wte, const float* wpe, int64_t n,
                                 RowPositions pos, int64_t c) {
  if (out.is_bf16()) return k::embedding_forward_cpu(out.bf16(), tokens, wte, wpe, n, pos, c);
  k::embedding_forward_cpu(out.f32(), tokens, wte, wpe, n, pos, c);
}

void CpuNnOps::embedding_forward_bf16(ActRef out, const int32_t* tokens, const uint16_t* wte, const uint16_t* wpe,
                                      int64_t n, RowPositions pos, int64_t c) {
  if (out.is_bf16()) return k::embedding_forward_bf16_cpu(out.bf16(), tokens, wte, wpe, n, pos, c);
  k::embedding_forward_bf16_cpu(out.f32(), tokens, wte, wpe, n, pos, c);
}

void CpuNnOps::embedding_backward(float* dwte, float* dwpe, ActRef dout, const int32_t* tokens, int64_t n,
                                  RowPositions pos, int64_t c) {
  if (dout.is_bf16()) return k::embedding_backward_cpu(dwte, dwpe, dout.bf16(), tokens, n, pos, c);
  k::embedding_backward_cpu(dwte, dwpe, dout.f32(), tokens, n, pos, c);
}

void CpuNnOps::bias_add(float* out, const float* bias, int64_t n, int64_t c, int64_t stride) {
  k::bias_add_cpu(out, bias, n, c, stride);
}

void CpuNnOps::bias_backward(float* dbias, ActRef dout, int64_t n, int64_t c, int64_t stride) {
  if (dout.is_bf16()) return k::bias_backward_cpu(dbias, dout.bf16(), n, c, stride);
  k::bias_backward_cpu(dbias, dout.f32(), n, c, stride);
}

void CpuNnOps::cross_entropy_rows(ActRef logits, const int32_t* targets, int64_t rows, int64_t vocab, int64_t stride,
                                  float grad_scale, bool want_grad, double* loss_sum) {
  FARTHING_CHECK(stride >= vocab, "cross_entropy_rows: the logits' row stride ", stride, " is below the vocabulary ",
                 vocab);
  if (logits.is_bf16()) {
    *loss_sum += k::cross_entropy_rows_cpu(logits.bf16(), targets, rows, vocab, stride, grad_scale, want_grad);
    return;
  }
  *loss_sum += k::cross_entropy_rows_cpu(logits.f32(), targets, rows, vocab, stride, grad_scale, want_grad);
}

void CpuNnOps::narrow(GemmDtype dtype, uint16_t* dst, const float* src, int64_t count) {
  FARTHING_CHECK(dtype == GemmDtype::kBF16 || dtype == GemmDtype::kF16,
                 "narrow: the GEMM operand type must be bf16 or fp16");
  if (dtype == GemmDtype::kBF16) k::f32_to_bf16_cpu(dst, src, count);
  else k::f32_to_f16_cpu(dst, src, count);
}

void CpuNnOps::widen(GemmDtype dtype, float* dst, const uint16_t* src, int64_t count) {
  FARTHING_CHECK(dtype == GemmDtype::kBF16 || dtype == GemmDtype::kF16,
                 "widen: the GEMM operand type must be bf16 or fp16");
  k::cast_narrow_to_f32_cpu(dtype == GemmDtype::kBF16 ? numerics::NarrowFormat::kBf16 : numerics::NarrowFormat::kFp16,
                           src, dst, size_t(count));
}

void CpuNnOps::copy(float* dst, const float* src, int64_t count) {
  std::memcpy(dst, src, size_t(count) * sizeof(float));
}

void CpuNnOps::zero(float* dst, int64_t count) { std::memset(dst, 0, size_t(count) * sizeof(float)); }

void CpuNnOps::accumulate(float* dst, const float* src, int64_t count) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < count; ++i) dst[i] += src[i];
}

}  // namespace farthing
