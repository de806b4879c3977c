// cuda_nn_ops.h — NnOps on a CUDA device: kernels/cuda's model ops, queued on the backend's
// stream. Held by CudaBackend; get it with backend_for(cuda:N).nn().
//
// No op waits for the host (cross_entropy_rows adds its loss sum to a double in device memory)
// except where a host pointer is involved (copy to or from host memory finishes before
// returning). Scratch that
// ops need (column-sum partials, attention's dO.O rows, decode scores, embedding links, row
// losses) comes from one device workspace, grown stream-ordered (cudaMallocAsync) and reused
// by every later op on the stream; the memory tracker counts it as activations (workspace_bytes).
// Includable from plain C++ (the stream is opaque).
// FP8: fp8_quantize through kernels/cuda/fp8_cuda.h (bitwise the CPU's), matmul_fp8 through
// kernels/cuda/gemm_fp8_cublaslt.h (cuBLASLt FP8, or its exact dense fallback). FP4 likewise:
// kernels/cuda/fp4_cuda.h and gemm_fp4_cublaslt.h (cuBLASLt FP4 on sm_100+, or the exact emulation).
// Relies on: kernels/cuda/*_cuda.h, matmul_cublaslt.h, gemm_fp8_cublaslt.h, backend/fp8_op_checks.h.
// Tested by: tests/kernels/test_nn_ops_parity.cpp
// (CUDA against CpuNnOps, op by op; skips without a GPU).
#pragma once

#include <cstdint>
#include <memory>

#include "framework/backend/nn_ops.h"

namespace farthing {

namespace kernels {
class MatmulLt;
class MatmulFp8Lt;
class MatmulFp4Lt;
}
class CudaAttentionEngine;

class CudaNnOps final : public NnOps {
 public:
  // stream: the backend's cudaStream_t.
  CudaNnOps(int device_index, void* stream);
  ~CudaNnOps() override;
  CudaNnOps(const CudaNnOps&) = delete;
  CudaNnOps& operator=(const CudaNnOps&) = delete;

  Device device() const override { return Device::cuda(device_index_); }
  void matmul(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, float* c,
              bool accumulate) override;
  void matmul_add_product(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, float* c) override;
  void matmul_bf16_out(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, const float* bias,
                       const uint16_t* add, uint16_t* c) override;
  void matmul_bias(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, const float* bias, float* c,
                   bool accumulate) override;
  void matmul_bias_grad(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, float* c,
                        GradInto into, BiasGradOf side, ActRef dy, float* dbias) override;
  void fp8_quantize(const Fp8QuantizeArgs& args) override;
  int64_t fp8_matmul_workspace_bytes(int64_t a_elems, int64_t b_elems, bool power_of_two) const override;
  int64_t fp8_fallback_shapes() const override;
  int64_t workspace_bytes() const override { return int64_t(workspace_bytes_); }
  void set_deterministic_attention(bool deterministic) override;
  void set_gemm_planning(kernels::GemmAlgorithmChoice choice, bool log) override;
  kernels::GemmPlanBook gemm_plan_book() const override;
  std::string adopt_gemm_plan_book(const kernels::GemmPlanBook& book) override;
  std::vector<kernels::GemmPlanRecord> gemm_plan_records() const override;
  void matmul_fp8(const GemmShape& shape, const Fp8Operand& a, const Fp8Operand& b, float* c, bool accumulate,
                  void* workspace) override;
  void fp4_quantize(const Fp4QuantizeArgs& args) override;
  int64_t fp4_matmul_workspace_bytes(int64_t m, int64_t n, int64_t k, int block) const override;
  void matmul_fp4(int64_t m, int64_t n, int64_t k, const Fp4Operand& a, const Fp4Operand& b, float* c,
                  bool accumulate, void* workspace) override;
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
  void embedding_forward_bf16(ActRef out, const int32_t* tokens, const uint16_t* wte, const uint16_t* wpe,
                              int64_t n, RowPositions pos, int64_t c) override;
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
  // Makes the backend's device current (as every CudaBackend method does, so several devices
  // in one process stay apart) and returns its stream (a cudaStream_t).
  void* on_device() const;
  // At least `bytes` of device scratch, valid for work queued after this call on the stream.
  void* workspace(size_t bytes);
  float* workspace_floats(int64_t count) { return static_cast<float*>(workspace(size_t(count) * sizeof(float))); }

  int device_index_;
  void* stream_;  // cudaStream_t
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  std::unique_ptr<kernels::MatmulLt> matmul_;
  std::unique_ptr<kernels::MatmulFp8Lt> matmul_fp8_;  // after matmul_: its fallback uses it
  std::unique_ptr<kernels::MatmulFp4Lt> matmul_fp4_;  // made on first use (it asks the device for FP4 tensor cores)
  std::unique_ptr<CudaAttentionEngine> attention_engine_;  // cuDNN attention or the fp32 kernel
};

}  // namespace farthing
