// recording_ops.h — an NnOps for model tests: the CPU ops, each call counted by name, with two
// switches that change what the model sees. Used by test_model_ops_routing.cpp (the calls a step
// makes) and test_model_modes.cpp (bf16 activation storage against fp32 ones rounded).
// Relies on: framework/backend/cpu_nn_ops.h, kernels/numerics/bf16.h, gemm_bias.h. Tested by: tests/models/test_model_ops_routing.cpp,
// tests/models/test_model_modes.cpp.
#pragma once

#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "framework/backend/cpu_nn_ops.h"
#include "kernels/numerics/bf16.h"
#include "kernels/numerics/gemm_bias.h"

namespace farthing::models::testing {

// Counts every call by name and forwards it to the CPU ops; refuse_matmul makes GEMMs throw;
// poison_logit_pads fills the logits rows' padding with NaN before the loss (see below).
// Nine switches round fp32 values to bf16 in place, to the values the model's bf16 storage
// holds, so that a run with fp32 activations can be compared with one that stores them as bf16,
// bit for bit: round_attention_output rounds attention's output after the forward,
// round_mlp_input the MLP's in-projection (bias included) before SwiGLU or GELU reads it, and
// round_qkv the attention projection before RoPE rotates it and again after (or, without RoPE,
// before attention reads it), and round_mlp_grads the MLP's gradients: d(act) before SwiGLU's or
// GELU's backward reads it (as its bf16 GEMM stores it) and d(in-projection) after it is written,
// and round_attention_grads attention's: dO before attention's backward reads it, dqkv after it is
// written and again after the inverse RoPE, and round_residual_grads the residual stream's: each
// norm's d(out) before its backward reads it (as the GEMMs' bf16 dgrads store it) and the
// residual stream's gradient after the norm's backward adds into it, and round_residual the
// residual stream: each array of it (the embedding's output, mid, each block's output) before a
// norm reads it, which is before anything else does (the next residual add, the norms'
// backwards), and Gemma 3's scale_add's operands and sum, and round_logits the logits before the loss reads them (their gradient, which only
// the head's GEMMs read, is narrowed by those anyway), and round_bias each linear layer's bias
// to bf16 before matmul_bias adds it (the bias a bf16 GEMM output adds, numerics/gemm_bias.h).
// The backwards then read the rounded values, as they read the bf16 ones.
class RecordingOps final : public NnOps {
 public:
  std::map<std::string, int> calls;
  bool refuse_matmul = false;
  bool round_attention_output = false;
  bool round_mlp_input = false;
  bool round_qkv = false;
  bool round_mlp_grads = false;
  bool round_attention_grads = false;
  bool round_residual_grads = false;
  bool round_residual = false;
  bool round_logits = false;
  bool round_bias = false;
  // poison_logit_pads: before the loss reads a chunk of logits, every row's pad columns (vocab ..
  // stride - 1, models::logits_row_stride) are set to NaN; after it, pad_values_changed counts
  // those that no longer hold that NaN (the loss wrote them). With the pads never read by the
  // loss nor fed to the head's GEMMs, the run's loss and gradients are bitwise the unpoisoned run's.
  // logits_strides: each loss call's row stride.
  bool poison_logit_pads = false;
  int64_t pad_values_changed = 0;
  std::vector<int64_t> logits_strides;

  Device device() const override { return cpu_.device(); }
  void matmul(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, float* c,
              bool accumulate) override {
    ++calls["matmul"];
    if (refuse_matmul) throw std::runtime_error("matmul refused by the test");
    cpu_.matmul(dtype, shape, a, b, c, accumulate);
  }
  void matmul_bf16_out(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, const float* bias,
                       const uint16_t* add, uint16_t* c) override {
    ++calls["matmul_bf16_out"];
    if (refuse_matmul) throw std::runtime_error("matmul_bf16_out refused by the test");
    cpu_.matmul_bf16_out(dtype, shape, a, b, bias, add, c);
  }
  void matmul_bias(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, const float* bias, float* c,
                   bool accumulate) override {
    ++calls["matmul_bias"];
    if (refuse_matmul) throw std::runtime_error("matmul_bias refused by the test");
    std::vector<float> rounded;
    if (round_bias) {
      rounded.assign(bias, bias + shape.n);
      for (float& v : rounded) v = numerics::bf16_output_bias(v);
      bias = rounded.data();
    }
    cpu_.matmul_bias(dtype, shape, a, b, bias, c, accumulate);
  }
  void matmul_bias_grad(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, float* c,
                        GradInto into, BiasGradOf side, ActRef dy, float* dbias) override {
    ++calls["matmul_bias_grad"];
    if (refuse_matmul) throw std::runtime_error("matmul_bias_grad refused by the test");
    cpu_.matmul_bias_grad(dtype, shape, a, b, c, into, side, dy, dbias);
  }
  void fp8_quantize(const Fp8QuantizeArgs& args) override {
    ++calls["fp8_quantize"];
    cpu_.fp8_quantize(args);
  }
  int64_t fp8_matmul_workspace_bytes(int64_t a_elems, int64_t b_elems, bool power_of_two) const override {
    return cpu_.fp8_matmul_workspace_bytes(a_elems, b_elems, power_of_two);
  }
  void matmul_fp8(const GemmShape& shape, const Fp8Operand& a, const Fp8Operand& b, float* c, bool accumulate,
                  void* workspace) override {
    ++calls["matmul_fp8"];
    if (refuse_matmul) throw std::runtime_error("matmul_fp8 refused by the test");
    cpu_.matmul_fp8(shape, a, b, c, accumulate, workspace);
  }
  void attention_forward(const AttentionShape& s, ActRef out, float* lse, ActRef qkv) override {
    ++calls["attention_forward"];
    if (round_qkv) round_in_place(qkv, s.batch * s.seq * s.qkv_stride());
    cpu_.attention_forward(s, out, lse, qkv);
    if (round_attention_output) round_in_place(out, s.batch * s.seq * s.q_heads * s.head_dim);
  }
  void attention_backward(const AttentionShape& s, ActRef dqkv, float* scratch, ActRef dout, ActRef out,
                          const float* lse, ActRef qkv) override {
    ++calls["attention_backward"];
    if (round_attention_grads) round_in_place(dout, s.batch * s.seq * s.q_heads * s.head_dim);
    cpu_.attention_backward(s, dqkv, scratch, dout, out, lse, qkv);
    if (round_attention_grads) round_in_place(dqkv, s.batch * s.seq * s.qkv_stride());
  }
  void attention_decode(const AttentionShape& s, float* out, const float* qkv, int64_t rows, int64_t first_position,
                        const float* k_cache, const float* v_cache) override {
    ++calls["attention_decode"];
    cpu_.attention_decode(s, out, qkv, rows, first_position, k_cache, v_cache);
  }
  void rmsnorm_forward(ActRef out, float* rstd, ActRef x, const float* w, int64_t n, int64_t c,
                       float eps) override {
    ++calls["rmsnorm_forward"];
    if (round_residual) round_in_place(x, n * c);
    cpu_.rmsnorm_forward(out, rstd, x, w, n, c, eps);
  }
  void rmsnorm_backward(ActRef dx, float* dw, ActRef dout, ActRef x, const float* w, const float* rstd,
                        int64_t n, int64_t c) override {
    ++calls["rmsnorm_backward"];
    if (round_residual_grads) round_in_place(dout, n * c);
    cpu_.rmsnorm_backward(dx, dw, dout, x, w, rstd, n, c);
    if (round_residual_grads) round_in_place(dx, n * c);
  }
  void layernorm_forward(ActRef out, float* mean, float* rstd, ActRef x, const float* w, const float* b,
                         int64_t n, int64_t c, float eps) override {
    ++calls["layernorm_forward"];
    if (round_residual) round_in_place(x, n * c);
    cpu_.layernorm_forward(out, mean, rstd, x, w, b, n, c, eps);
  }
  void layernorm_backward(ActRef dx, float* dw, float* db, ActRef dout, ActRef x, const float* w,
                          const float* mean, const float* rstd, int64_t n, int64_t c) override {
    ++calls["layernorm_backward"];
    if (round_residual_grads) round_in_place(dout, n * c);
    cpu_.layernorm_backward(dx, dw, db, dout, x, w, mean, rstd, n, c);
    if (round_residual_grads) round_in_place(dx, n * c);
  }
  void head_rmsnorm_forward(const HeadNormShape& s, ActRef out, float* rstd, ActRef qkv, const float* wq,
                            const float* wk, float eps) override {
    ++calls["head_rmsnorm_forward"];
    if (round_qkv) round_in_place(qkv, s.rows * s.stride);  // the projection as its GEMM stores it
    cpu_.head_rmsnorm_forward(s, out, rstd, qkv, wq, wk, eps);
    if (round_qkv) round_in_place(out, s.rows * s.stride);
  }
  void head_rmsnorm_backward(const HeadNormShape& s, ActRef d, float* dwq, float* dwk, ActRef qkv, const float* wq,
                             const float* wk, const float* rstd) override {
    ++calls["head_rmsnorm_backward"];
    cpu_.head_rmsnorm_backward(s, d, dwq, dwk, qkv, wq, wk, rstd);
    if (round_attention_grads) round_in_place(d, s.rows * s.stride);
  }
  void rope_apply(ActRef x, int64_t rows, RowPositions seq, int64_t heads, int64_t head_dim, int64_t stride,
                  const float* cos, const float* sin, bool inverse) override {
    ++calls[inverse ? "rope_inverse" : "rope"];
    const bool round = round_qkv && !inverse;  // the projection as its GEMM stores it, then as RoPE does
    if (round) round_in_place(x, rows * stride);
    cpu_.rope_apply(x, rows, seq, heads, head_dim, stride, cos, sin, inverse);
    if (round || (round_attention_grads && inverse)) round_in_place(x, rows * stride);
  }
  void swiglu_forward(ActRef act, ActRef gu, int64_t n, int64_t h) override {
    ++calls["swiglu_forward"];
    if (round_mlp_input) round_in_place(gu, n * 2 * h);
    cpu_.swiglu_forward(act, gu, n, h);
  }
  void swiglu_backward(ActRef dgu, ActRef dact, ActRef gu, int64_t n, int64_t h) override {
    ++calls["swiglu_backward"];
    if (round_mlp_grads) round_in_place(dact, n * h);
    cpu_.swiglu_backward(dgu, dact, gu, n, h);
    if (round_mlp_grads) round_in_place(dgu, n * 2 * h);
  }
  void geglu_forward(ActRef act, ActRef gu, int64_t n, int64_t h) override {
    ++calls["geglu_forward"];
    if (round_mlp_input) round_in_place(gu, n * 2 * h);
    cpu_.geglu_forward(act, gu, n, h);
  }
  void geglu_backward(ActRef dgu, ActRef dact, ActRef gu, int64_t n, int64_t h) override {
    ++calls["geglu_backward"];
    if (round_mlp_grads) round_in_place(dact, n * h);
    cpu_.geglu_backward(dgu, dact, gu, n, h);
    if (round_mlp_grads) round_in_place(dgu, n * 2 * h);
  }
  // Gemma 3's embedding scale and post-norm residual adds read and write the residual stream (and,
  // scaling the embedding's gradient, the stream's gradient): under round_residual the operands as
  // stored and the sum as it is written.
  void scale_add(ActRef out, ActRef x, float s, ActRef add, int64_t count) override {
    ++calls["scale_add"];
    if (round_residual) round_in_place(x, count);
    if (round_residual && add.data != nullptr) round_in_place(add, count);
    cpu_.scale_add(out, x, s, add, count);
    if (round_residual) round_in_place(out, count);
  }
  void gelu_forward(ActRef out, ActRef x, int64_t count) override {
    ++calls["gelu_forward"];
    if (round_mlp_input) round_in_place(x, count);
    cpu_.gelu_forward(out, x, count);
  }
  void gelu_backward(ActRef dx, ActRef dout, ActRef x, int64_t count) override {
    ++calls["gelu_backward"];
    if (round_mlp_grads) round_in_place(dout, count);
    cpu_.gelu_backward(dx, dout, x, count);
    if (round_mlp_grads) round_in_place(dx, count);
  }
  void embedding_forward(ActRef out, const int32_t* tokens, const float* wte, const float* wpe, int64_t n,
                         RowPositions seq, int64_t c) override {
    ++calls["embedding_forward"];
    cpu_.embedding_forward(out, tokens, wte, wpe, n, seq, c);
  }
  void embedding_forward_bf16(ActRef out, const int32_t* tokens, const uint16_t* wte, const uint16_t* wpe, int64_t n,
                              RowPositions seq, int64_t c) override {
    ++calls["embedding_forward_bf16"];
    cpu_.embedding_forward_bf16(out, tokens, wte, wpe, n, seq, c);
  }
  void embedding_backward(float* dwte, float* dwpe, ActRef dout, const int32_t* tokens, int64_t n,
                          RowPositions seq, int64_t c) override {
    ++calls["embedding_backward"];
    cpu_.embedding_backward(dwte, dwpe, dout, tokens, n, seq, c);
  }
  void bias_add(float* out, const float* bias, int64_t n, int64_t c, int64_t stride) override {
    ++calls["bias_add"];
    cpu_.bias_add(out, bias, n, c, stride);
  }
  void bias_backward(float* dbias, ActRef dout, int64_t n, int64_t c, int64_t stride) override {
    ++calls["bias_backward"];
    cpu_.bias_backward(dbias, dout, n, c, stride);
  }
  void cross_entropy_rows(ActRef logits, const int32_t* targets, int64_t rows, int64_t vocab, int64_t stride,
                          float grad_scale, bool want_grad, double* loss_sum) override {
    ++calls["cross_entropy_rows"];
    logits_strides.push_back(stride);
    for (int64_t r = 0; r < rows && round_logits; ++r) round_in_place(logits.offset(r * stride), vocab);
    if (poison_logit_pads) set_pads(logits, rows, vocab, stride);
    cpu_.cross_entropy_rows(logits, targets, rows, vocab, stride, grad_scale, want_grad, loss_sum);
    if (poison_logit_pads) pad_values_changed += changed_pads(logits, rows, vocab, stride);
  }
  void widen(GemmDtype dtype, float* dst, const uint16_t* src, int64_t count) override {
    ++calls["widen"];
    cpu_.widen(dtype, dst, src, count);
  }
  void narrow(GemmDtype dtype, uint16_t* dst, const float* src, int64_t count) override {
    ++calls["narrow"];
    cpu_.narrow(dtype, dst, src, count);
  }
  void copy(float* dst, const float* src, int64_t count) override {
    ++calls["copy"];
    cpu_.copy(dst, src, count);
  }
  void zero(float* dst, int64_t count) override {
    ++calls["zero"];
    cpu_.zero(dst, count);
  }
  void accumulate(float* dst, const float* src, int64_t count) override {
    ++calls["accumulate"];
    cpu_.accumulate(dst, src, count);
  }

 private:
  CpuNnOps cpu_;
  static constexpr uint32_t kPadF32 = 0x7fc0dead;  // a quiet NaN with a payload no arithmetic makes
  static constexpr uint16_t kPadBf16 = 0x7fd5;
  static void set_pads(ActRef x, int64_t rows, int64_t vocab, int64_t stride) {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = vocab; i < stride; ++i) {
        if (x.is_bf16()) {
          x.bf16()[r * stride + i] = kPadBf16;
        } else {
          std::memcpy(x.f32() + r * stride + i, &kPadF32, 4);
        }
      }
    }
  }
  static int64_t changed_pads(ActRef x, int64_t rows, int64_t vocab, int64_t stride) {
    int64_t changed = 0;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = vocab; i < stride; ++i) {
        uint32_t bits = 0;
        if (x.is_bf16()) {
          changed += x.bf16()[r * stride + i] != kPadBf16;
        } else {
          std::memcpy(&bits, x.f32() + r * stride + i, 4);
          changed += bits != kPadF32;
        }
      }
    }
    return changed;
  }
  // An fp32 array's values rounded to bf16 and widened back (bf16 arrays are left as they are).
  static void round_in_place(ActRef x, int64_t count) {
    if (x.is_bf16()) return;
    for (int64_t i = 0; i < count; ++i) x.f32()[i] = numerics::bf16_to_f32(numerics::f32_to_bf16_rne(x.f32()[i]));
  }
};

}  // namespace farthing::models::testing
