// cuda_nn_ops.cu — see cuda_nn_ops.h: each op checks what the kernels cannot, takes its scratch
// from the workspace and queues kernels/cuda on the stream.
#include "framework/backend/cuda_nn_ops.h"

#include <cuda_runtime_api.h>

#include <array>
#include <cstdio>

#include "framework/backend/cuda_attention_engine.h"
#include "framework/backend/cuda_ops_workspace.h"
#include "framework/backend/fp4_op_checks.h"
#include "framework/backend/fp8_op_checks.h"
#include "framework/core/error.h"
#include "framework/core/memory.h"
#include "kernels/cuda/activation_cuda.h"
#include "kernels/cuda/attention_cuda.h"
#ifdef FARTHING_HAVE_CUDNN
#include "kernels/cuda/attention_cudnn.h"
#endif
#include "kernels/cuda/bias_cuda.h"
#include "kernels/cuda/cast_cuda.h"
#include "kernels/cuda/cross_entropy_cuda.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/embedding_cuda.h"
#include "kernels/cuda/geglu_cuda.h"
#include "kernels/cuda/scale_add_cuda.h"
#include "kernels/cuda/fp8_cuda.h"
#include "kernels/cuda/fp4_cuda.h"
#include "kernels/cuda/gemm_fp4_cublaslt.h"
#include "kernels/cuda/gemm_fp8_cublaslt.h"
#include "kernels/numerics/fp4_workspace.h"
#include "kernels/cuda/cublaslt_planner.h"
#include "kernels/cuda/matmul_cublaslt.h"
#include "kernels/cuda/head_norm_cuda.h"
#include "kernels/cuda/norm_cuda.h"
#include "kernels/cuda/rope_cuda.h"

namespace farthing {

namespace k = farthing::kernels;

namespace {

bool is_host_pointer(const void* p) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    return true;  // unknown to CUDA: plain host memory
  }
  return attributes.type == cudaMemoryTypeUnregistered || attributes.type == cudaMemoryTypeHost;
}

numerics::NarrowFormat format_of(GemmDtype dtype, const char* op) {
  FARTHING_CHECK(dtype == GemmDtype::kBF16 || dtype == GemmDtype::kF16, op,
                 ": the GEMM operand type must be bf16 or fp16");
  return dtype == GemmDtype::kBF16 ? numerics::NarrowFormat::kBf16 : numerics::NarrowFormat::kFp16;
}

}  // namespace

#define STREAM static_cast<cudaStream_t>(on_device())

void* CudaNnOps::on_device() const {
  FARTHING_CUDA_CHECK(cudaSetDevice(device_index_));
  return stream_;
}

CudaNnOps::CudaNnOps(int device_index, void* stream)
    : device_index_(device_index),
      stream_(stream),
      matmul_(std::make_unique<k::MatmulLt>()),
      matmul_fp8_(std::make_unique<k::MatmulFp8Lt>(*matmul_)),
      attention_engine_(std::make_unique<CudaAttentionEngine>()) {}

CudaNnOps::~CudaNnOps() {
  if (workspace_ != nullptr) {
    static_cast<void>(cudaSetDevice(device_index_));
    static_cast<void>(cudaFreeAsync(workspace_, static_cast<cudaStream_t>(stream_)));
    static_cast<void>(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)));
    static_cast<void>(cudaGetLastError());
    memory_tracker(device()).on_free(MemoryCategory::kActivations, int64_t(workspace_bytes_));
  }
}

void* CudaNnOps::workspace(size_t bytes) {
  if (bytes <= workspace_bytes_) return workspace_;
  // Stream-ordered: work already queued keeps the old block until it is done with it.
  if (workspace_ != nullptr) {
    FARTHING_CUDA_CHECK(cudaFreeAsync(workspace_, STREAM));
    memory_tracker(device()).on_free(MemoryCategory::kActivations, int64_t(workspace_bytes_));
  }
  workspace_ = nullptr;
  workspace_bytes_ = 0;
  const size_t grown = workspace_grown_bytes(bytes);
  FARTHING_CUDA_CHECK(cudaMallocAsync(&workspace_, grown, STREAM));
  workspace_bytes_ = grown;
  memory_tracker(device()).on_allocate(MemoryCategory::kActivations, int64_t(grown));
  return workspace_;
}

void CudaNnOps::matmul(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, float* c,
                       bool accumulate) {
  matmul_->run(dtype, shape, a, b, c, accumulate, STREAM);
}

// NOTE: beta = 1 is applied in cuBLASLt's epilogue, after the whole K-sum (the plans exclude
// split-K), so C's old value enters one addition: what matmul_add_product promises.
void CudaNnOps::matmul_add_product(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, float* c) {
  matmul_->run(dtype, shape, a, b, c, true, STREAM);
}

// Which path a bias takes: cuBLASLt's epilogue (matmul_cublaslt.h) where the plan has an
// algorithm for it; else (said once per plan by MatmulLt) the GEMM and the bias's own kernels,
// which give the same contract within the GEMM tolerance.
void CudaNnOps::matmul_bias(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, const float* bias,
                            float* c, bool accumulate) {
  if (matmul_->run_bias(dtype, shape, a, b, bias, c, accumulate, STREAM)) return;
  NnOps::matmul_bias(dtype, shape, a, b, bias, c, accumulate);
}

void CudaNnOps::matmul_bf16_out(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b,
                                const float* bias, const uint16_t* add, uint16_t* c) {
  if (bias == nullptr) return matmul_->run_bf16_out(dtype, shape, a, b, add, c, STREAM);
  // NOTE: the bias operand of a bf16 D is the bias rounded to bf16 (numerics/gemm_bias.h; the
  // narrowing kernel rounds with the same f32_to_bf16_rne), which the epilogue widens and adds in
  // fp32 after beta C, before D's one rounding.
  auto* bias16 = static_cast<uint16_t*>(workspace(bf16_out_bias_operand_bytes(shape.n)));
  narrow(GemmDtype::kBF16, bias16, bias, shape.n);
  if (matmul_->run_bf16_out_bias(dtype, shape, a, b, bias16, add, c, STREAM)) return;
  // No algorithm with the epilogue: the same sum in fp32 in the workspace (onto the widened add,
  // if any), the rounded bias added, narrowed once.
  FARTHING_CHECK(shape.ldc == 0 || shape.ldc == shape.n, "matmul_bf16_out: a bias without cuBLASLt's epilogue needs a ",
                 "dense C (ldc ", shape.ldc, ", n ", shape.n, ")");
  GemmShape dense = shape;
  dense.ldc = shape.n;
  auto* staged = static_cast<float*>(workspace(bf16_out_bias_staging_bytes(shape.m, shape.n)));
  float* rounded = staged + workspace_aligned_bytes(size_t(shape.m * shape.n) * 4) / 4;
  auto* operand = reinterpret_cast<uint16_t*>(rounded + workspace_aligned_bytes(size_t(shape.n) * 4) / 4);
  narrow(GemmDtype::kBF16, operand, bias, shape.n);  // again: the workspace may have moved
  widen(GemmDtype::kBF16, rounded, operand, shape.n);
  if (add != nullptr) widen(GemmDtype::kBF16, staged, add, shape.m * shape.n);
  matmul_->run(dtype, dense, a, b, staged, add != nullptr, STREAM);
  k::bias_add_cuda(staged, rounded, shape.m, shape.n, shape.n, STREAM);
  narrow(GemmDtype::kBF16, c, staged, shape.m * shape.n);
}

// The bias gradient in the weight gradient's GEMM where that GEMM reads dy itself (the operand on
// `side` is dy's array, in the GEMM's type): cuBLASLt writes the sums over k into scratch, which
// is then added to dbias (bias_backward's "+="). Where the GEMM reads dy narrowed to 16 bits
// (fp32 activations under bf16 or fp16 compute) the epilogue would sum the rounded values, so the
// bias gradient runs as bias_backward of dy as stored; that, and a plan without the epilogue, are
// said once on stderr.
void CudaNnOps::matmul_bias_grad(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, float* c,
                                 GradInto into, BiasGradOf side, ActRef dy, float* dbias) {
  const int64_t width = side == BiasGradOf::kA ? shape.m : shape.n;
  const void* operand = side == BiasGradOf::kA ? a : b;
  const bool operand_is_dy =
      operand == dy.data && (dy.is_bf16() ? dtype == GemmDtype::kBF16 : dtype == GemmDtype::kF32);
  if (operand_is_dy) {
    const bool dense_dy = side == BiasGradOf::kA
                              ? shape.trans_a == Trans::kT && (shape.lda == 0 || shape.lda == shape.m)
                              : shape.trans_b == Trans::kN && (shape.ldb == 0 || shape.ldb == shape.n);
    FARTHING_CHECK(dense_dy, "matmul_bias_grad: dy must be the GEMM's ", side == BiasGradOf::kA ? "A" : "B",
                   " operand as stored (", shape.k, " dense rows of ", width, ")");
    float* sums = workspace_floats(int64_t(bias_grad_scratch_bytes(width) / 4));
    // matmul_add_product is the GEMM with beta 1 here (after the whole K-sum), as accumulating is.
    if (matmul_->run_bias_grad(dtype, shape, a, b, c, into != GradInto::kOverwrite, side, sums, STREAM)) {
      k::accumulate_cuda(dbias, sums, width, STREAM);
      return;
    }
  } else {
    static const bool said = [] {
      std::fprintf(stderr,
                   "farthing: bias gradients run as their own column sums: the weight gradient's GEMM reads dy "
                   "narrowed to 16 bits, and a bias gradient sums dy as stored\n");
      return true;
    }();
    static_cast<void>(said);
  }
  NnOps::matmul_bias_grad(dtype, shape, a, b, c, into, side, dy, dbias);
}

void CudaNnOps::fp8_quantize(const Fp8QuantizeArgs& args) {
  check_fp8_quantize_args(args);
  const size_t scratch_bytes = k::fp8_quantize_scratch_bytes(args);
  void* scratch = scratch_bytes > 0 ? workspace(scratch_bytes) : nullptr;
  k::fp8_quantize_cuda(args, scratch, STREAM);
}

int64_t CudaNnOps::fp8_matmul_workspace_bytes(int64_t a_elems, int64_t b_elems, bool power_of_two) const {
  return k::MatmulFp8Lt::workspace_bytes(a_elems, b_elems, power_of_two);
}

int64_t CudaNnOps::fp8_fallback_shapes() const { return int64_t(matmul_fp8_->fallback_plans()); }

void CudaNnOps::matmul_fp8(const GemmShape& shape, const Fp8Operand& a, const Fp8Operand& b, float* c,
                           bool accumulate, void* workspace) {
  check_fp8_matmul_operands(shape, a, b);
  matmul_fp8_->run(shape, a, b, c, accumulate, workspace, STREAM);
}

void CudaNnOps::fp4_quantize(const Fp4QuantizeArgs& args) {
  check_fp4_quantize_args(args);
  k::fp4_quantize_cuda(args, workspace(size_t(k::kFp4QuantizeScratchBytes)), STREAM);
}

int64_t CudaNnOps::fp4_matmul_workspace_bytes(int64_t m, int64_t n, int64_t k, int block) const {
  return numerics::fp4_matmul_workspace_bytes(numerics::Fp4GemmEngine::kCublasLt, m, n, k, block);
}

void CudaNnOps::matmul_fp4(int64_t m, int64_t n, int64_t k, const Fp4Operand& a, const Fp4Operand& b, float* c,
                           bool accumulate, void* workspace) {
  check_fp4_matmul_operands(m, n, k, a, b);
  cudaStream_t stream = STREAM;
  if (matmul_fp4_ == nullptr) {
    int major = 0;
    FARTHING_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device_index_));
    matmul_fp4_ = std::make_unique<k::MatmulFp4Lt>(*matmul_, major >= 10);  // FP4 tensor cores from sm_100
  }
  matmul_fp4_->run(m, n, k, a, b, c, accumulate, workspace, stream);
}

namespace {

// The CUDA attention kernels' preconditions (kernels/cuda/attention_cuda.h).
void check_attention_shape(const AttentionShape& s) {
  FARTHING_CHECK(s.head_dim >= 1 && s.head_dim <= k::kAttentionMaxHeadDim, "CUDA attention: head_dim ", s.head_dim,
                 " is outside 1..", k::kAttentionMaxHeadDim);
  FARTHING_CHECK(s.kv_heads >= 1 && s.q_heads % s.kv_heads == 0, "CUDA attention: q_heads (", s.q_heads,
                 ") must be a multiple of kv_heads (", s.kv_heads, ")");
}

#ifdef FARTHING_HAVE_CUDNN
// bf16 attention through cuDNN (cuda_attention_engine.h): its workspace, then the bf16 copies of
// the fp32 operands (cuda_ops_workspace.h says which), carved from the ops' workspace.
std::array<uint16_t*, 4> carve_bf16(void* base, size_t cudnn_bytes, const std::array<int64_t, 4>& counts) {
  auto* p = static_cast<char*>(base) + workspace_aligned_bytes(cudnn_bytes);
  std::array<uint16_t*, 4> parts{};
  for (size_t i = 0; i < counts.size(); ++i) {
    parts[i] = reinterpret_cast<uint16_t*>(p);
    p += workspace_aligned_bytes(size_t(counts[i]) * 2);
  }
  return parts;
}
#endif

}  // namespace

void CudaNnOps::attention_forward(const AttentionShape& s, ActRef out, float* lse, ActRef qkv) {
  check_attention_shape(s);
  check_bf16_input_storage("attention_forward", out, qkv);
  const int64_t out_n = s.batch * s.seq * s.q_heads * s.head_dim, qkv_n = s.batch * s.seq * s.qkv_stride();
#ifdef FARTHING_HAVE_CUDNN
  if (k::CudnnAttention* cudnn = attention_engine_->cudnn_for(s, false)) {
    // cuDNN's Q/K/V and O are bf16: read and written in place where they are stored as bf16,
    // else through bf16 copies.
    const size_t cudnn_bytes = cudnn->workspace_bytes(s, false);
    const CudnnCopies stored{qkv.is_bf16(), out.is_bf16()};
    void* base = workspace(cudnn_attention_workspace_bytes(s, false, stored, cudnn_bytes));
    const auto copies = carve_bf16(base, cudnn_bytes, cudnn_attention_copy_elems(s, false, stored));
    uint16_t *qkv_copy = copies[0], *out_copy = copies[1];
    if (!qkv.is_bf16()) narrow(GemmDtype::kBF16, qkv_copy, qkv.f32(), qkv_n);
    cudnn->forward(s, out.is_bf16() ? out.bf16() : out_copy, lse, qkv.is_bf16() ? qkv.bf16() : qkv_copy, base, STREAM);
    if (!out.is_bf16()) widen(GemmDtype::kBF16, out.f32(), out_copy, out_n);
    return;
  }
#else
  attention_engine_->cudnn_for(s, false);  // a bf16 call says once that it runs the slow path
#endif
  if (!out.is_bf16()) return k::attention_forward_cuda(s, out.f32(), lse, qkv.f32(), STREAM);
  // The fp32 kernel (on qkv widened, where it is bf16) into fp32 staging, then rounded to nearest
  // even: the bits the CPU stores.
  const int64_t staged_n = int64_t(workspace_aligned_bytes(size_t(out_n) * 4) / 4);
  float* staged = workspace_floats(staged_n + (qkv.is_bf16() ? qkv_n : 0));
  const float* qkv32 = qkv.is_bf16() ? staged + staged_n : qkv.f32();
  if (qkv.is_bf16()) widen(GemmDtype::kBF16, staged + staged_n, qkv.bf16(), qkv_n);
  k::attention_forward_cuda(s, staged, lse, qkv32, STREAM);
  narrow(GemmDtype::kBF16, out.bf16(), staged, out_n);
}

void CudaNnOps::attention_backward(const AttentionShape& s, ActRef dqkv, float* scratch, ActRef dout, ActRef out,
                                   const float* lse, ActRef qkv) {
  check_attention_shape(s);
  check_bf16_input_storage("attention_backward", out, qkv);
  check_one_storage("attention_backward", {{"dqkv", dqkv}, {"dout", dout}});
  if (dout.is_bf16()) check_one_storage("attention_backward", {{"dout", dout}, {"out", out}, {"qkv", qkv}});
  const int64_t out_n = s.batch * s.seq * s.q_heads * s.head_dim, qkv_n = s.batch * s.seq * s.qkv_stride();
#ifdef FARTHING_HAVE_CUDNN
  if (k::CudnnAttention* cudnn = attention_engine_->cudnn_for(s, true)) {
    // An fp32 out (qkv) is the forward's bf16 values widened, so narrowing it again gives cuDNN its
    // own O (Q/K/V); bf16 ones, and bf16 gradients, are read and written in place.
    const size_t cudnn_bytes = cudnn->workspace_bytes(s, true);
    const CudnnCopies stored{qkv.is_bf16(), out.is_bf16(), dout.is_bf16()};
    void* base = workspace(cudnn_attention_workspace_bytes(s, true, stored, cudnn_bytes));
    const auto [qkv_copy, out_copy, dout_copy, dqkv_copy] =
        carve_bf16(base, cudnn_bytes, cudnn_attention_copy_elems(s, true, stored));
    if (!qkv.is_bf16()) narrow(GemmDtype::kBF16, qkv_copy, qkv.f32(), qkv_n);
    if (!out.is_bf16()) narrow(GemmDtype::kBF16, out_copy, out.f32(), out_n);
    if (!dout.is_bf16()) narrow(GemmDtype::kBF16, dout_copy, dout.f32(), out_n);
    cudnn->backward(s, dqkv.is_bf16() ? dqkv.bf16() : dqkv_copy, dout.is_bf16() ? dout.bf16() : dout_copy,
                    out.is_bf16() ? out.bf16() : out_copy, lse, qkv.is_bf16() ? qkv.bf16() : qkv_copy, base, STREAM);
    if (!dqkv.is_bf16()) widen(GemmDtype::kBF16, dqkv.f32(), dqkv_copy, qkv_n);
    return;
  }
#else
  attention_engine_->cudnn_for(s, true);  // a bf16 call says once that it runs the slow path
#endif
  // The fp32 kernel: its scratch, then (for a bf16 out) O widened, which D = rowsum(dO . O) reads,
  // then (for a bf16 qkv) qkv widened, then (for bf16 gradients) dO widened and the fp32 dqkv,
  // narrowed after; each at a 256-byte boundary.
  const auto aligned_floats = [](int64_t n) { return int64_t(workspace_aligned_bytes(size_t(n) * 4) / 4); };
  const int64_t extra_n = aligned_floats(k::attention_backward_extra_floats(s));
  const int64_t out32_n = out.is_bf16() ? aligned_floats(out_n) : 0;
  const int64_t qkv32_n = qkv.is_bf16() ? aligned_floats(qkv_n) : 0;
  const int64_t dout32_n = dout.is_bf16() ? aligned_floats(out_n) : 0;
  float* extra = workspace_floats(extra_n + out32_n + qkv32_n + dout32_n + (dqkv.is_bf16() ? qkv_n : 0));
  float* out32 = out.is_bf16() ? extra + extra_n : nullptr;
  float* qkv32 = qkv.is_bf16() ? extra + extra_n + out32_n : nullptr;
  float* dout32 = dout.is_bf16() ? extra + extra_n + out32_n + qkv32_n : nullptr;
  float* dqkv32 = dqkv.is_bf16() ? extra + extra_n + out32_n + qkv32_n + dout32_n : dqkv.f32();
  if (out.is_bf16()) widen(GemmDtype::kBF16, out32, out.bf16(), out_n);
  if (qkv.is_bf16()) widen(GemmDtype::kBF16, qkv32, qkv.bf16(), qkv_n);
  if (dout.is_bf16()) widen(GemmDtype::kBF16, dout32, dout.bf16(), out_n);
  k::attention_backward_cuda(s, dqkv32, scratch, dout.is_bf16() ? dout32 : dout.f32(), out.is_bf16() ? out32 : out.f32(),
                             lse, qkv.is_bf16() ? qkv32 : qkv.f32(), extra, STREAM);
  if (dqkv.is_bf16()) narrow(GemmDtype::kBF16, dqkv.bf16(), dqkv32, qkv_n);
}

void CudaNnOps::attention_decode(const AttentionShape& s, float* out, const float* qkv, int64_t rows,
                                 int64_t first_position, const float* k_cache, const float* v_cache) {
  check_attention_shape(s);
  float* scores = workspace_floats(k::attention_decode_scratch_floats(s, rows, first_position));
  k::attention_decode_cuda(s, out, qkv, rows, first_position, k_cache, v_cache, scores, STREAM);
}

void CudaNnOps::set_deterministic_attention(bool deterministic) {
  attention_engine_->set_deterministic_backward(deterministic);
}

void CudaNnOps::set_gemm_planning(kernels::GemmAlgorithmChoice choice, bool log) {
  matmul_->planner().set_planning(choice, log);
}

kernels::GemmPlanBook CudaNnOps::gemm_plan_book() const { return matmul_->planner().book(); }

std::string CudaNnOps::adopt_gemm_plan_book(const kernels::GemmPlanBook& book) {
  return matmul_->planner().adopt(book);
}

std::vector<kernels::GemmPlanRecord> CudaNnOps::gemm_plan_records() const { return matmul_->planner().records(); }

void CudaNnOps::rmsnorm_forward(ActRef out, float* rstd, ActRef x, const float* w, int64_t n, int64_t c,
                                float eps) {
  check_bf16_input_storage("rmsnorm_forward", out, x);
  if (x.is_bf16()) return k::rmsnorm_forward_cuda(out.bf16(), rstd, x.bf16(), w, n, c, eps, STREAM);
  if (out.is_bf16()) return k::rmsnorm_forward_cuda(out.bf16(), rstd, x.f32(), w, n, c, eps, STREAM);
  k::rmsnorm_forward_cuda(out.f32(), rstd, x.f32(), w, n, c, eps, STREAM);
}

void CudaNnOps::rmsnorm_backward(ActRef dx, float* dw, ActRef dout, ActRef x, const float* w,
                                 const float* rstd, int64_t n, int64_t c) {
  check_one_storage("rmsnorm_backward", {{"dx", dx}, {"dout", dout}, {"x", x}});
  float* scratch = workspace_floats(k::norm_backward_scratch_floats(n, c));
  if (dx.is_bf16()) {
    return k::rmsnorm_backward_cuda(dx.bf16(), dw, dout.bf16(), x.bf16(), w, rstd, n, c, scratch, STREAM);
  }
  k::rmsnorm_backward_cuda(dx.f32(), dw, dout.f32(), x.f32(), w, rstd, n, c, scratch, STREAM);
}

void CudaNnOps::head_rmsnorm_forward(const HeadNormShape& s, ActRef out, float* rstd, ActRef qkv, const float* wq,
                                     const float* wk, float eps) {
  check_one_storage("head_rmsnorm_forward", {{"out", out}, {"qkv", qkv}});
  if (qkv.is_bf16()) return k::head_rmsnorm_forward_cuda(s, out.bf16(), rstd, qkv.bf16(), wq, wk, eps, STREAM);
  k::head_rmsnorm_forward_cuda(s, out.f32(), rstd, qkv.f32(), wq, wk, eps, STREAM);
}

void CudaNnOps::head_rmsnorm_backward(const HeadNormShape& s, ActRef d, float* dwq, float* dwk, ActRef qkv,
                                      const float* wq, const float* wk, const float* rstd) {
  check_one_storage("head_rmsnorm_backward", {{"d", d}, {"qkv", qkv}});
  float* scratch = workspace_floats(k::head_norm_backward_scratch_floats(s));
  if (d.is_bf16()) {
    return k::head_rmsnorm_backward_cuda(s, d.bf16(), dwq, dwk, qkv.bf16(), wq, wk, rstd, scratch, STREAM);
  }
  k::head_rmsnorm_backward_cuda(s, d.f32(), dwq, dwk, qkv.f32(), wq, wk, rstd, scratch, STREAM);
}

void CudaNnOps::layernorm_forward(ActRef out, float* mean, float* rstd, ActRef x, const float* w,
                                  const float* b, int64_t n, int64_t c, float eps) {
  check_bf16_input_storage("layernorm_forward", out, x);
  if (x.is_bf16()) return k::layernorm_forward_cuda(out.bf16(), mean, rstd, x.bf16(), w, b, n, c, eps, STREAM);
  if (out.is_bf16()) return k::layernorm_forward_cuda(out.bf16(), mean, rstd, x.f32(), w, b, n, c, eps, STREAM);
  k::layernorm_forward_cuda(out.f32(), mean, rstd, x.f32(), w, b, n, c, eps, STREAM);
}

void CudaNnOps::layernorm_backward(ActRef dx, float* dw, float* db, ActRef dout, ActRef x,
                                   const float* w, const float* mean, const float* rstd, int64_t n, int64_t c) {
  check_one_storage("layernorm_backward", {{"dx", dx}, {"dout", dout}, {"x", x}});
  float* scratch = workspace_floats(k::norm_backward_scratch_floats(n, c));
  if (dx.is_bf16()) {
    return k::layernorm_backward_cuda(dx.bf16(), dw, db, dout.bf16(), x.bf16(), w, mean, rstd, n, c, scratch, STREAM);
  }
  k::layernorm_backward_cuda(dx.f32(), dw, db, dout.f32(), x.f32(), w, mean, rstd, n, c, scratch, STREAM);
}

void CudaNnOps::rope_apply(ActRef x, int64_t rows, RowPositions pos, int64_t heads, int64_t head_dim, int64_t stride,
                           const float* cos, const float* sin, bool inverse) {
  if (x.is_bf16()) return k::rope_apply_cuda(x.bf16(), rows, pos, heads, head_dim, stride, cos, sin, inverse, STREAM);
  k::rope_apply_cuda(x.f32(), rows, pos, heads, head_dim, stride, cos, sin, inverse, STREAM);
}

void CudaNnOps::swiglu_forward(ActRef act, ActRef gu, int64_t n, int64_t h) {
  check_bf16_input_storage("swiglu_forward", act, gu);
  if (gu.is_bf16()) return k::swiglu_forward_cuda(act.bf16(), gu.bf16(), n, h, STREAM);
  if (act.is_bf16()) return k::swiglu_forward_cuda(act.bf16(), gu.f32(), n, h, STREAM);
  k::swiglu_forward_cuda(act.f32(), gu.f32(), n, h, STREAM);
}

void CudaNnOps::swiglu_backward(ActRef dgu, ActRef dact, ActRef gu, int64_t n, int64_t h) {
  check_one_storage("swiglu_backward", {{"dgu", dgu}, {"dact", dact}, {"gu", gu}});
  if (gu.is_bf16()) return k::swiglu_backward_cuda(dgu.bf16(), dact.bf16(), gu.bf16(), n, h, STREAM);
  k::swiglu_backward_cuda(dgu.f32(), dact.f32(), gu.f32(), n, h, STREAM);
}

void CudaNnOps::geglu_forward(ActRef act, ActRef gu, int64_t n, int64_t h) {
  check_bf16_input_storage("geglu_forward", act, gu);
  if (gu.is_bf16()) return k::geglu_forward_cuda(act.bf16(), gu.bf16(), n, h, STREAM);
  if (act.is_bf16()) return k::geglu_forward_cuda(act.bf16(), gu.f32(), n, h, STREAM);
  k::geglu_forward_cuda(act.f32(), gu.f32(), n, h, STREAM);
}

void CudaNnOps::geglu_backward(ActRef dgu, ActRef dact, ActRef gu, int64_t n, int64_t h) {
  check_one_storage("geglu_backward", {{"dgu", dgu}, {"dact", dact}, {"gu", gu}});
  if (gu.is_bf16()) return k::geglu_backward_cuda(dgu.bf16(), dact.bf16(), gu.bf16(), n, h, STREAM);
  k::geglu_backward_cuda(dgu.f32(), dact.f32(), gu.f32(), n, h, STREAM);
}

void CudaNnOps::scale_add(ActRef out, ActRef x, float s, ActRef add, int64_t count) {
  const ActRef a = add.data != nullptr ? add : x;  // no add: out and x alone share a storage
  check_one_storage("scale_add", {{"out", out}, {"x", x}, {"add", a}});
  if (x.is_bf16()) return k::scale_add_cuda(out.bf16(), x.bf16(), s, add.data ? add.bf16() : nullptr, count, STREAM);
  k::scale_add_cuda(out.f32(), x.f32(), s, add.data ? add.f32() : nullptr, count, STREAM);
}

void CudaNnOps::gelu_forward(ActRef out, ActRef x, int64_t count) {
  check_bf16_input_storage("gelu_forward", out, x);
  if (x.is_bf16()) return k::gelu_forward_cuda(out.bf16(), x.bf16(), count, STREAM);
  if (out.is_bf16()) return k::gelu_forward_cuda(out.bf16(), x.f32(), count, STREAM);
  k::gelu_forward_cuda(out.f32(), x.f32(), count, STREAM);
}

void CudaNnOps::gelu_backward(ActRef dx, ActRef dout, ActRef x, int64_t count) {
  check_one_storage("gelu_backward", {{"dx", dx}, {"dout", dout}, {"x", x}});
  if (x.is_bf16()) return k::gelu_backward_cuda(dx.bf16(), dout.bf16(), x.bf16(), count, STREAM);
  k::gelu_backward_cuda(dx.f32(), dout.f32(), x.f32(), count, STREAM);
}

void CudaNnOps::embedding_forward(ActRef out, const int32_t* tokens, const float* wte, const float* wpe, int64_t n,
                                  RowPositions pos, int64_t c) {
  if (out.is_bf16()) return k::embedding_forward_cuda(out.bf16(), tokens, wte, wpe, n, pos, c, STREAM);
  k::embedding_forward_cuda(out.f32(), tokens, wte, wpe, n, pos, c, STREAM);
}

void CudaNnOps::embedding_forward_bf16(ActRef out, const int32_t* tokens, const uint16_t* wte, const uint16_t* wpe,
                                       int64_t n, RowPositions pos, int64_t c) {
  if (out.is_bf16()) return k::embedding_forward_bf16_cuda(out.bf16(), tokens, wte, wpe, n, pos, c, STREAM);
  k::embedding_forward_bf16_cuda(out.f32(), tokens, wte, wpe, n, pos, c, STREAM);
}

void CudaNnOps::embedding_backward(float* dwte, float* dwpe, ActRef dout, const int32_t* tokens, int64_t n,
                                   RowPositions pos, int64_t c) {
  float* scratch = workspace_floats(k::embedding_backward_scratch_floats(n));
  if (dout.is_bf16()) return k::embedding_backward_cuda(dwte, dwpe, dout.bf16(), tokens, n, pos, c, scratch, STREAM);
  k::embedding_backward_cuda(dwte, dwpe, dout.f32(), tokens, n, pos, c, scratch, STREAM);
}

void CudaNnOps::bias_add(float* out, const float* bias, int64_t n, int64_t c, int64_t stride) {
  k::bias_add_cuda(out, bias, n, c, stride, STREAM);
}

void CudaNnOps::bias_backward(float* dbias, ActRef dout, int64_t n, int64_t c, int64_t stride) {
  float* scratch = workspace_floats(k::bias_backward_scratch_floats(n, c));
  if (dout.is_bf16()) return k::bias_backward_cuda(dbias, dout.bf16(), n, c, stride, scratch, STREAM);
  k::bias_backward_cuda(dbias, dout.f32(), n, c, stride, scratch, STREAM);
}

void CudaNnOps::cross_entropy_rows(ActRef logits, const int32_t* targets, int64_t rows, int64_t vocab, int64_t stride,
                                   float grad_scale, bool want_grad, double* loss_sum) {
  FARTHING_CHECK(stride >= vocab, "cross_entropy_rows: the logits' row stride ", stride, " is below the vocabulary ",
                 vocab);
  double* row_losses = static_cast<double*>(workspace(size_t(rows) * sizeof(double)));
  if (logits.is_bf16()) {
    return k::cross_entropy_rows_cuda(logits.bf16(), targets, rows, vocab, stride, grad_scale, want_grad, row_losses,
                                      loss_sum, STREAM);
  }
  k::cross_entropy_rows_cuda(logits.f32(), targets, rows, vocab, stride, grad_scale, want_grad, row_losses, loss_sum,
                             STREAM);
}

void CudaNnOps::narrow(GemmDtype dtype, uint16_t* dst, const float* src, int64_t count) {
  const auto format = format_of(dtype, "narrow");
  if (count > 0) k::cast_f32_to_narrow_cuda(format, src, dst, size_t(count), numerics::Overflow::kToInfOrNan, STREAM);
}

void CudaNnOps::widen(GemmDtype dtype, float* dst, const uint16_t* src, int64_t count) {
  const auto format = format_of(dtype, "widen");
  if (count > 0) k::cast_narrow_to_f32_cuda(format, src, dst, size_t(count), STREAM);
}

void CudaNnOps::copy(float* dst, const float* src, int64_t count) {
  if (count <= 0) return;
  FARTHING_CUDA_CHECK(cudaMemcpyAsync(dst, src, size_t(count) * sizeof(float), cudaMemcpyDefault, STREAM));
  // Host memory on either side: finished on return, so the host may read or reuse it at once.
  if (is_host_pointer(dst) || is_host_pointer(src)) FARTHING_CUDA_CHECK(cudaStreamSynchronize(STREAM));
}

void CudaNnOps::zero(float* dst, int64_t count) {
  if (count > 0) FARTHING_CUDA_CHECK(cudaMemsetAsync(dst, 0, size_t(count) * sizeof(float), STREAM));
}

void CudaNnOps::accumulate(float* dst, const float* src, int64_t count) { k::accumulate_cuda(dst, src, count, STREAM); }

#undef STREAM

}  // namespace farthing
