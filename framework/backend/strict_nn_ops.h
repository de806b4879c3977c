// strict_nn_ops.h — the strict test device's NnOps: CpuNnOps inside the arena's access scope,
// after checking that every pointer an op is given is device memory (strict_device_backend.h).
// copy() alone may take host memory on either side, as NnOps::copy allows.
// Relies on: cpu_nn_ops.h, guarded_arena.h. Tested by: tests/backend/test_strict_device.cpp.
#pragma once

#include "framework/backend/cpu_nn_ops.h"
#include "framework/backend/guarded_arena.h"

namespace farthing {

class StrictNnOps final : public NnOps {
 public:
  explicit StrictNnOps(GuardedArena& arena) : arena_(arena) {}
  Device device() const override { return Device::strict(); }
  void fp8_quantize(const Fp8QuantizeArgs& args) override;
  int64_t fp8_matmul_workspace_bytes(int64_t a_elems, int64_t b_elems, bool power_of_two) const override;
  void matmul_fp8(const GemmShape& shape, const Fp8Operand& a, const Fp8Operand& b, float* c, bool accumulate,
                  void* workspace) override;
  void matmul(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, float* c,
              bool accumulate) override;
  void matmul_add_product(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, float* c) override;
  void matmul_bf16_out(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, const float* bias,
                       const uint16_t* add, uint16_t* c) override;
  void attention_forward(const AttentionShape& s, ActRef out, float* lse, ActRef qkv) override;
  void attention_backward(const AttentionShape& s, ActRef dqkv, float* scratch, ActRef dout, ActRef out,
                          const float* lse, ActRef qkv) override;
  void attention_decode(const AttentionShape& s, float* out, const float* qkv, int64_t rows, int64_t first_position,
                        const float* k_cache, const float* v_cache) override;
  void rmsnorm_forward(ActRef out, float* rstd, ActRef x, const float* w, int64_t n, int64_t c,
                       float eps) override;
  void rmsnorm_backward(ActRef dx, float* dw, ActRef dout, ActRef x, const float* w, const float* rstd,
                        int64_t n, int64_t c) override;
  void layernorm_forward(ActRef out, float* mean, float* rstd, ActRef x, const float* w, const float* b,
                         int64_t n, int64_t c, float eps) override;
  void layernorm_backward(ActRef dx, float* dw, float* db, ActRef dout, ActRef x, const float* w,
                          const float* mean, const float* rstd, int64_t n, int64_t c) override;
  void head_rmsnorm_forward(const HeadNormShape& s, ActRef out, float* rstd, ActRef qkv, const float* wq,
                            const float* wk, float eps) override;
  void head_rmsnorm_backward(const HeadNormShape& s, ActRef d, float* dwq, float* dwk, ActRef qkv, const float* wq,
                             const float* wk, const float* rstd) override;
  void rope_apply(ActRef x, int64_t rows, RowPositions pos, int64_t heads, int64_t head_dim, int64_t stride,
                  const float* cos, const float* sin, bool inverse) override;
  void swiglu_forward(ActRef act, ActRef gu, int64_t n, int64_t h) override;
  void swiglu_backward(ActRef dgu, ActRef dact, ActRef gu, int64_t n, int64_t h) override;
  void geglu_forward(ActRef act, ActRef gu, int64_t n, int64_t h) override;
  void geglu_backward(ActRef dgu, ActRef dact, ActRef gu, int64_t n, int64_t h) override;
  void scale_add(ActRef out, ActRef x, float s, ActRef add, int64_t count) override;
  void gelu_forward(ActRef out, ActRef x, int64_t count) override;
  void gelu_backward(ActRef dx, ActRef dout, ActRef x, int64_t count) override;
  void embedding_forward(ActRef out, const int32_t* tokens, const float* wte, const float* wpe, int64_t n,
                         RowPositions pos, int64_t c) override;
  void embedding_forward_bf16(ActRef out, const int32_t* tokens, const uint16_t* wte, const uint16_t* wpe, int64_t n,
                              RowPositions pos, int64_t c) override;
  void embedding_backward(float* dwte, float* dwpe, ActRef dout, const int32_t* tokens, int64_t n,
                          RowPositions pos, int64_t c) override;
  void bias_add(float* out, const float* bias, int64_t n, int64_t c, int64_t stride) override;
  void bias_backward(float* dbias, ActRef dout, int64_t n, int64_t c, int64_t stride) override;
  void cross_entropy_rows(ActRef logits, const int32_t* targets, int64_t rows, int64_t vocab, int64_t stride,
                          float grad_scale, bool want_grad, double* loss_sum) override;
  void narrow(GemmDtype dtype, uint16_t* dst, const float* src, int64_t count) override;
  void widen(GemmDtype dtype, float* dst, const uint16_t* src, int64_t count) override;
  void copy(float* dst, const float* src, int64_t count) override;
  void zero(float* dst, int64_t count) override;
  void accumulate(float* dst, const float* src, int64_t count) override;

 private:
  // Fails naming the op and argument unless p (when not null) is device memory.
  void device_memory(const char* op, std::initializer_list<std::pair<const char*, const void*>> args) const;

  GuardedArena& arena_;
  CpuNnOps cpu_;
};

}  // namespace farthing
