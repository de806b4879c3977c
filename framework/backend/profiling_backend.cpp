// profiling_backend.cpp — see profiling_backend.h.
#include "framework/backend/profiling_backend.h"

#include <atomic>

#include "framework/core/error.h"

namespace farthing {

namespace {

// One call's bracket: entered on construction, left on destruction (also when the call throws).
class TimedCall {
 public:
  TimedCall(OpProfiler& profiler, const char* kind, double flops = 0.0, bool communication = false)
      : profiler_(profiler), entry_(profiler.enter()), kind_(kind), flops_(flops), communication_(communication) {}
  ~TimedCall() { profiler_.leave(entry_, kind_, flops_, communication_); }
  TimedCall(const TimedCall&) = delete;
  TimedCall& operator=(const TimedCall&) = delete;

 private:
  OpProfiler& profiler_;
  OpProfiler::Entry entry_;
  const char* kind_;
  double flops_;
  bool communication_;
};

double gemm_flops(int64_t m, int64_t n, int64_t k) { return 2.0 * double(m) * double(n) * double(k); }

std::atomic<ProfilingBackend*> g_installed{nullptr};

}  // namespace

// The kinds are the roofline's row kinds (train/plan/roofline.h's RooflineOp, named by
// step_profile_report.cpp) where the op has one.
class ProfilingNnOps final : public NnOps {
 public:
  ProfilingNnOps(NnOps& inner, OpProfiler& profiler) : inner_(inner), p_(profiler) {}
  Device device() const override { return inner_.device(); }

  void matmul(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, float* c,
              bool accumulate) override {
    TimedCall t(p_, op_kind::kGemm, gemm_flops(shape.m, shape.n, shape.k));
    inner_.matmul(dtype, shape, a, b, c, accumulate);
  }
  void matmul_add_product(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, float* c) override {
    TimedCall t(p_, op_kind::kGemm, gemm_flops(shape.m, shape.n, shape.k));
    inner_.matmul_add_product(dtype, shape, a, b, c);
  }
  void matmul_bf16_out(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, const float* bias,
                       const uint16_t* add, uint16_t* c) override {
    TimedCall t(p_, op_kind::kGemm, gemm_flops(shape.m, shape.n, shape.k));
    inner_.matmul_bf16_out(dtype, shape, a, b, bias, add, c);
  }
  void matmul_bias(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, const float* bias, float* c,
                   bool accumulate) override {
    TimedCall t(p_, op_kind::kGemm, gemm_flops(shape.m, shape.n, shape.k));
    inner_.matmul_bias(dtype, shape, a, b, bias, c, accumulate);
  }
  void matmul_bias_grad(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, float* c,
                        GradInto into, BiasGradOf side, ActRef dy, float* dbias) override {
    TimedCall t(p_, op_kind::kGemm, gemm_flops(shape.m, shape.n, shape.k));
    inner_.matmul_bias_grad(dtype, shape, a, b, c, into, side, dy, dbias);
  }
  void fp8_quantize(const Fp8QuantizeArgs& args) override {
    TimedCall t(p_, op_kind::kFp8Quantize);
    inner_.fp8_quantize(args);
  }
  int64_t fp8_matmul_workspace_bytes(int64_t a_elems, int64_t b_elems, bool power_of_two) const override {
    return inner_.fp8_matmul_workspace_bytes(a_elems, b_elems, power_of_two);
  }
  void matmul_fp8(const GemmShape& shape, const Fp8Operand& a, const Fp8Operand& b, float* c, bool accumulate,
                  void* workspace) override {
    TimedCall t(p_, op_kind::kGemm, gemm_flops(shape.m, shape.n, shape.k));
    inner_.matmul_fp8(shape, a, b, c, accumulate, workspace);
  }
  int64_t fp8_fallback_shapes() const override { return inner_.fp8_fallback_shapes(); }
  int64_t workspace_bytes() const override { return inner_.workspace_bytes(); }
  void set_deterministic_attention(bool deterministic) override { inner_.set_deterministic_attention(deterministic); }
  void set_gemm_planning(kernels::GemmAlgorithmChoice choice, bool log) override {
    inner_.set_gemm_planning(choice, log);
  }
  kernels::GemmPlanBook gemm_plan_book() const override { return inner_.gemm_plan_book(); }
  std::string adopt_gemm_plan_book(const kernels::GemmPlanBook& book) override {
    return inner_.adopt_gemm_plan_book(book);
  }
  std::vector<kernels::GemmPlanRecord> gemm_plan_records() const override { return inner_.gemm_plan_records(); }
  void fp4_quantize(const Fp4QuantizeArgs& args) override {
    TimedCall t(p_, op_kind::kFp4Quantize);
    inner_.fp4_quantize(args);
  }
  void matmul_fp4(int64_t m, int64_t n, int64_t k, const Fp4Operand& a, const Fp4Operand& b, float* c,
                  bool accumulate, void* workspace) override {
    TimedCall t(p_, op_kind::kGemm, gemm_flops(m, n, k));
    inner_.matmul_fp4(m, n, k, a, b, c, accumulate, workspace);
  }
  int64_t fp4_matmul_workspace_bytes(int64_t m, int64_t n, int64_t k, int block) const override {
    return inner_.fp4_matmul_workspace_bytes(m, n, k, block);
  }
  void attention_forward(const AttentionShape& s, ActRef out, float* lse, ActRef qkv) override {
    TimedCall t(p_, op_kind::kAttentionForward);
    inner_.attention_forward(s, out, lse, qkv);
  }
  void attention_backward(const AttentionShape& s, ActRef dqkv, float* scratch, ActRef dout, ActRef out,
                          const float* lse, ActRef qkv) override {
    TimedCall t(p_, op_kind::kAttentionBackward);
    inner_.attention_backward(s, dqkv, scratch, dout, out, lse, qkv);
  }
  void attention_decode(const AttentionShape& s, float* out, const float* qkv, int64_t rows, int64_t first_position,
                        const float* k_cache, const float* v_cache) override {
    TimedCall t(p_, op_kind::kAttentionDecode);
    inner_.attention_decode(s, out, qkv, rows, first_position, k_cache, v_cache);
  }
  void rmsnorm_forward(ActRef out, float* rstd, ActRef x, const float* w, int64_t n, int64_t c, float eps) override {
    TimedCall t(p_, op_kind::kNormForward);
    inner_.rmsnorm_forward(out, rstd, x, w, n, c, eps);
  }
  void rmsnorm_backward(ActRef dx, float* dw, ActRef dout, ActRef x, const float* w, const float* rstd, int64_t n,
                        int64_t c) override {
    TimedCall t(p_, op_kind::kNormBackward);
    inner_.rmsnorm_backward(dx, dw, dout, x, w, rstd, n, c);
  }
  void head_rmsnorm_forward(const HeadNormShape& s, ActRef out, float* rstd, ActRef qkv, const float* wq,
                            const float* wk, float eps) override {
    TimedCall t(p_, "head norm forward");
    inner_.head_rmsnorm_forward(s, out, rstd, qkv, wq, wk, eps);
  }
  void head_rmsnorm_backward(const HeadNormShape& s, ActRef d, float* dwq, float* dwk, ActRef qkv, const float* wq,
                             const float* wk, const float* rstd) override {
    TimedCall t(p_, "head norm backward");
    inner_.head_rmsnorm_backward(s, d, dwq, dwk, qkv, wq, wk, rstd);
  }
  void layernorm_forward(ActRef out, float* mean, float* rstd, ActRef x, const float* w, const float* b, int64_t n,
                         int64_t c, float eps) override {
    TimedCall t(p_, op_kind::kNormForward);
    inner_.layernorm_forward(out, mean, rstd, x, w, b, n, c, eps);
  }
  void layernorm_backward(ActRef dx, float* dw, float* db, ActRef dout, ActRef x, const float* w, const float* mean,
                          const float* rstd, int64_t n, int64_t c) override {
    TimedCall t(p_, op_kind::kNormBackward);
    inner_.layernorm_backward(dx, dw, db, dout, x, w, mean, rstd, n, c);
  }
  void rope_apply(ActRef x, int64_t rows, RowPositions pos, int64_t heads, int64_t head_dim, int64_t stride,
                  const float* cos, const float* sin, bool inverse) override {
    TimedCall t(p_, op_kind::kRope);
    inner_.rope_apply(x, rows, pos, heads, head_dim, stride, cos, sin, inverse);
  }
  void swiglu_forward(ActRef act, ActRef gu, int64_t n, int64_t h) override {
    TimedCall t(p_, op_kind::kSwigluForward);
    inner_.swiglu_forward(act, gu, n, h);
  }
  void swiglu_backward(ActRef dgu, ActRef dact, ActRef gu, int64_t n, int64_t h) override {
    TimedCall t(p_, op_kind::kSwigluBackward);
    inner_.swiglu_backward(dgu, dact, gu, n, h);
  }
  void geglu_forward(ActRef act, ActRef gu, int64_t n, int64_t h) override {
    TimedCall t(p_, op_kind::kGegluForward);
    inner_.geglu_forward(act, gu, n, h);
  }
  void geglu_backward(ActRef dgu, ActRef dact, ActRef gu, int64_t n, int64_t h) override {
    TimedCall t(p_, op_kind::kGegluBackward);
    inner_.geglu_backward(dgu, dact, gu, n, h);
  }
  void scale_add(ActRef out, ActRef x, float s, ActRef add, int64_t count) override {
    TimedCall t(p_, op_kind::kScaleAdd);
    inner_.scale_add(out, x, s, add, count);
  }
  void gelu_forward(ActRef out, ActRef x, int64_t count) override {
    TimedCall t(p_, op_kind::kGeluForward);
    inner_.gelu_forward(out, x, count);
  }
  void gelu_backward(ActRef dx, ActRef dout, ActRef x, int64_t count) override {
    TimedCall t(p_, op_kind::kGeluBackward);
    inner_.gelu_backward(dx, dout, x, count);
  }
  void embedding_forward(ActRef out, const int32_t* tokens, const float* wte, const float* wpe, int64_t n, RowPositions pos,
                         int64_t c) override {
    TimedCall t(p_, op_kind::kEmbeddingForward);
    inner_.embedding_forward(out, tokens, wte, wpe, n, pos, c);
  }
  void embedding_forward_bf16(ActRef out, const int32_t* tokens, const uint16_t* wte, const uint16_t* wpe, int64_t n,
                              RowPositions pos, int64_t c) override {
    TimedCall t(p_, op_kind::kEmbeddingForward);
    inner_.embedding_forward_bf16(out, tokens, wte, wpe, n, pos, c);
  }
  void embedding_backward(float* dwte, float* dwpe, ActRef dout, const int32_t* tokens, int64_t n, RowPositions pos,
                          int64_t c) override {
    TimedCall t(p_, op_kind::kEmbeddingBackward);
    inner_.embedding_backward(dwte, dwpe, dout, tokens, n, pos, c);
  }
  void bias_add(float* out, const float* bias, int64_t n, int64_t c, int64_t stride) override {
    TimedCall t(p_, op_kind::kBiasAdd);
    inner_.bias_add(out, bias, n, c, stride);
  }
  void bias_backward(float* dbias, ActRef dout, int64_t n, int64_t c, int64_t stride) override {
    TimedCall t(p_, op_kind::kBiasBackward);
    inner_.bias_backward(dbias, dout, n, c, stride);
  }
  void cross_entropy_rows(ActRef logits, const int32_t* targets, int64_t rows, int64_t vocab, int64_t stride,
                          float grad_scale, bool want_grad, double* loss_sum) override {
    TimedCall t(p_, op_kind::kCrossEntropy);
    inner_.cross_entropy_rows(logits, targets, rows, vocab, stride, grad_scale, want_grad, loss_sum);
  }
  void narrow(GemmDtype dtype, uint16_t* dst, const float* src, int64_t count) override {
    TimedCall t(p_, op_kind::kNarrow);
    inner_.narrow(dtype, dst, src, count);
  }
  void widen(GemmDtype dtype, float* dst, const uint16_t* src, int64_t count) override {
    TimedCall t(p_, op_kind::kWiden);
    inner_.widen(dtype, dst, src, count);
  }
  void copy(float* dst, const float* src, int64_t count) override {
    TimedCall t(p_, op_kind::kCopy);
    inner_.copy(dst, src, count);
  }
  void zero(float* dst, int64_t count) override {
    TimedCall t(p_, op_kind::kZero);
    inner_.zero(dst, count);
  }
  void accumulate(float* dst, const float* src, int64_t count) override {
    TimedCall t(p_, op_kind::kAccumulate);
    inner_.accumulate(dst, src, count);
  }

 private:
  NnOps& inner_;
  OpProfiler& p_;
};

ProfilingBackend::ProfilingBackend(Backend& inner)
    : inner_(inner), profiler_(inner.make_op_clock()), nn_(std::make_unique<ProfilingNnOps>(inner.nn(), profiler_)) {}

ProfilingBackend::~ProfilingBackend() = default;

ProfilingBackend::Install::Install(ProfilingBackend& backend) {
  ProfilingBackend* expected = nullptr;
  FARTHING_CHECK(g_installed.compare_exchange_strong(expected, &backend),
                 "a step profiler is already installed (one training run profiles at a time)");
  set_active_op_profiler(&backend.profiler());
}

ProfilingBackend::Install::~Install() {
  set_active_op_profiler(nullptr);
  g_installed.store(nullptr);
}

Backend* installed_backend_override(Device device) {
  ProfilingBackend* installed = g_installed.load(std::memory_order_relaxed);
  return installed != nullptr && installed->device() == device ? installed : nullptr;
}

void* ProfilingBackend::allocate_bytes(size_t bytes) {
  if (profiler_.recording()) ++profiler_.counters().allocations;
  return inner_.allocate_bytes(bytes);  // not timed: on a GPU it queues no work
}

void ProfilingBackend::free_bytes(void* data) { inner_.free_bytes(data); }

void ProfilingBackend::copy(const Tensor& dst, const Tensor& src) {
  if (profiler_.recording()) {
    if (dst.device().is_cpu() && !src.device().is_cpu()) ++profiler_.counters().copies_to_host;
    if (!dst.device().is_cpu() && src.device().is_cpu()) ++profiler_.counters().copies_to_device;
  }
  TimedCall t(profiler_, op_kind::kCopy);
  inner_.copy(dst, src);
}

void ProfilingBackend::cast(const Tensor& dst, const Tensor& src, const CastOptions& options) {
  TimedCall t(profiler_, op_kind::kCast);
  inner_.cast(dst, src, options);
}

void ProfilingBackend::block_quantize(const Tensor& codes, const Tensor& absmax, const Tensor& src,
                                      numerics::MapSign sign) {
  TimedCall t(profiler_, op_kind::kBlockQuantize);
  inner_.block_quantize(codes, absmax, src, sign);
}

void ProfilingBackend::block_dequantize(const Tensor& dst, const Tensor& codes, const Tensor& absmax,
                                        numerics::MapSign sign) {
  TimedCall t(profiler_, op_kind::kBlockDequantize);
  inner_.block_dequantize(dst, codes, absmax, sign);
}

void ProfilingBackend::fill_bytes(void* dst, uint8_t value, size_t bytes) {
  TimedCall t(profiler_, op_kind::kFill);
  inner_.fill_bytes(dst, value, bytes);
}

void ProfilingBackend::adamw_step(const kernels::AdamWSegment& segment, kernels::AdamWPartials* sums) {
  TimedCall t(profiler_, op_kind::kOptimizerStep);
  inner_.adamw_step(segment, sums);
}

void ProfilingBackend::grad_partials(const void* grad, kernels::GradFormat format, size_t n,
                                     kernels::GradPartials* sums) {
  TimedCall t(profiler_, op_kind::kGradNormPartials);
  inner_.grad_partials(grad, format, n, sums);
}

NnOps& ProfilingBackend::nn() { return *nn_; }

void ProfilingBackend::synchronize() {
  if (profiler_.recording()) ++profiler_.counters().synchronizations;
  TimedCall t(profiler_, op_kind::kSynchronize);
  inner_.synchronize();
}

}  // namespace farthing
