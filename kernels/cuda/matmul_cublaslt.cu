// matmul_cublaslt.cu — see matmul_cublaslt.h.
//
// Row-major C (m, n) = op(A) op(B) is column-major Cᵀ (n, m) = op(B)ᵀ op(A)ᵀ, and a row-major
// matrix with leading dimension ld is the column-major transpose with the same ld. So cuBLASLt
// gets B first and A second: B as stored is column-major (cols x rows), which is op(B)ᵀ when
// trans_b = N (transa = N) and needs a transpose when trans_b = T; likewise A.
// Epilogues follow the same mapping: cuBLASLt's D is our Cᵀ (n rows, m columns), so a bias over
// our C's columns (n values) is its BIAS over D's rows; the sums over k of our A (m values, one
// per row of our C) are its BGRADB (its B is our A), and those of our B its BGRADA.
// Which path a bias takes (CudaNnOps, framework/backend/cuda_nn_ops.cu): these epilogues where
// the plan has an algorithm; else the GEMM and the bias's own kernels, said once per plan here.
#include "kernels/cuda/matmul_cublaslt.h"

#include <cublasLt.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <tuple>

#include "kernels/cuda/cublaslt_check.h"
#include "kernels/cuda/cublaslt_plan.h"
#include "kernels/cuda/cublaslt_planner.h"
#include "kernels/cuda/cuda_check.h"


namespace farthing::kernels {

namespace {

// (dtype, m, n, k, lda, ldb, ldc, trans_a, trans_b, alignment, bf16 D, epilogue, the bias's alignment)
using Key = std::tuple<int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int, int, int, int, int, int>;

// The largest power of two (up to 256) dividing every address: what the heuristic may assume.
int alignment_of(const void* a, const void* b, const void* c) {
  const uintptr_t bits = reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b) | reinterpret_cast<uintptr_t>(c);
  int alignment = 256;
  while (alignment > 1 && (bits & uintptr_t(alignment - 1)) != 0) alignment /= 2;
  return alignment;
}

cudaDataType_t data_type(GemmDtype dtype) {
  switch (dtype) {
    case GemmDtype::kBF16: return CUDA_R_16BF;
    case GemmDtype::kF16: return CUDA_R_16F;
    default: return CUDA_R_32F;
  }
}

using Plan = LtPlan;

}  // namespace

struct MatmulLt::State {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  LtPlanner planner;  // before plans: it outlives them
  std::map<Key, std::unique_ptr<Plan>> plans;
  ~State() {
    plans.clear();
    if (workspace != nullptr) static_cast<void>(cudaFree(workspace));
    if (handle != nullptr) cublasLtDestroy(handle);
  }
};

MatmulLt::MatmulLt(size_t workspace_bytes) : state_(std::make_unique<State>()) {
  state_->workspace_bytes = workspace_bytes;
}

MatmulLt::~MatmulLt() = default;

size_t MatmulLt::cached_plans() const { return state_->plans.size(); }

LtPlanner& MatmulLt::planner() { return state_->planner; }

void MatmulLt::run(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, float* c, bool accumulate,
                   cudaStream_t stream) {
  queue(dtype, shape, a, b, c, c, false, accumulate, Epilogue::kNone, nullptr, stream);
}

void MatmulLt::run_bf16_out(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, const uint16_t* add,
                            uint16_t* c, cudaStream_t stream) {
  queue(dtype, shape, a, b, add != nullptr ? add : c, c, true, add != nullptr, Epilogue::kNone, nullptr, stream);
}

bool MatmulLt::run_bias(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, const float* bias,
                        float* c, bool accumulate, cudaStream_t stream) {
  return queue(dtype, shape, a, b, c, c, false, accumulate, Epilogue::kBias, bias, stream);
}

bool MatmulLt::run_bf16_out_bias(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b,
                                 const uint16_t* bias, const uint16_t* add, uint16_t* c, cudaStream_t stream) {
  return queue(dtype, shape, a, b, add != nullptr ? add : c, c, true, add != nullptr, Epilogue::kBias, bias, stream);
}

bool MatmulLt::run_bias_grad(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, float* c,
                             bool accumulate, BiasGradOf side, float* dbias, cudaStream_t stream) {
  const Epilogue epilogue = side == BiasGradOf::kA ? Epilogue::kBiasGradOfA : Epilogue::kBiasGradOfB;
  return queue(dtype, shape, a, b, c, c, false, accumulate, epilogue, dbias, stream);
}

bool MatmulLt::queue(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, const void* c_in,
                     void* c, bool c_bf16, bool accumulate, Epilogue epilogue, const void* bias, cudaStream_t stream) {
  const size_t c_elem = c_bf16 ? 2 : 4;
  GemmShape s = shape;
  const bool with_epilogue = epilogue != Epilogue::kNone;
  // Empty sizes: the caller's separate ops are exact (an empty bias gradient is a sum of nothing).
  if (with_epilogue && (s.m <= 0 || s.n <= 0 || s.k <= 0)) return false;
  if (s.m <= 0 || s.n <= 0) return true;
  const bool ta = s.trans_a == Trans::kT, tb = s.trans_b == Trans::kT;
  if (s.lda == 0) s.lda = ta ? s.m : s.k;
  if (s.ldb == 0) s.ldb = tb ? s.k : s.n;
  if (s.ldc == 0) s.ldc = s.n;
  State& st = *state_;
  if (s.k <= 0) {  // an empty sum: D = 0, or D = C when accumulating
    if (!accumulate) {
      FARTHING_CUDA_CHECK(cudaMemset2DAsync(c, size_t(s.ldc) * c_elem, 0, size_t(s.n) * c_elem, size_t(s.m), stream));
    } else if (c_in != c) {
      FARTHING_CUDA_CHECK(cudaMemcpy2DAsync(c, size_t(s.ldc) * c_elem, c_in, size_t(s.ldc) * c_elem,
                                            size_t(s.n) * c_elem, size_t(s.m), cudaMemcpyDeviceToDevice, stream));
    }
    return true;
  }
  if (st.handle == nullptr) {
    FARTHING_CUBLASLT_CHECK(cublasLtCreate(&st.handle));
    if (st.workspace_bytes > 0) FARTHING_CUDA_CHECK(cudaMalloc(&st.workspace, st.workspace_bytes));
  }
  const int alignment = std::min(alignment_of(a, b, c), alignment_of(a, b, c_in));
  // The heuristic reads the bias pointer's alignment (cublasLt.h, CUBLASLT_MATMUL_DESC_BIAS_POINTER).
  const int bias_alignment = with_epilogue ? alignment_of(bias, bias, bias) : 0;
  const Key key{int(dtype), s.m, s.n, s.k, s.lda, s.ldb, s.ldc, int(ta), int(tb), alignment, int(c_bf16),
                int(epilogue), bias_alignment};
  auto it = st.plans.find(key);
  if (it == st.plans.end()) {
    auto plan = std::make_unique<Plan>();
    const cudaDataType_t in = data_type(dtype);
    FARTHING_CUBLASLT_CHECK(cublasLtMatmulDescCreate(&plan->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t op_b = tb ? CUBLAS_OP_T : CUBLAS_OP_N, op_a = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    FARTHING_CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_b, sizeof op_b));
    FARTHING_CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_a, sizeof op_a));
    if (with_epilogue) {
      // Our A is cuBLASLt's B (see the top of this file): its sums are BGRADB, our B's BGRADA.
      const cublasLtEpilogue_t lt_epilogue = epilogue == Epilogue::kBias          ? CUBLASLT_EPILOGUE_BIAS
                                             : epilogue == Epilogue::kBiasGradOfA ? CUBLASLT_EPILOGUE_BGRADB
                                                                                  : CUBLASLT_EPILOGUE_BGRADA;
      // A bias has D's type (bf16 for a bf16 D); a bias gradient C's (always fp32 here).
      const int32_t bias_type = int32_t(c_bf16 ? CUDA_R_16BF : CUDA_R_32F);
      FARTHING_CUBLASLT_CHECK(
          cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &lt_epilogue, sizeof lt_epilogue));
      FARTHING_CUBLASLT_CHECK(
          cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof bias_type));
      FARTHING_CUBLASLT_CHECK(
          cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    }
    // B as stored, column-major: (n x k) when not transposed, else (k x n); A: (k x m), else (m x k).
    FARTHING_CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&plan->layout_b, in, uint64_t(tb ? s.k : s.n),
                                                 uint64_t(tb ? s.n : s.k), s.ldb));
    FARTHING_CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&plan->layout_a, in, uint64_t(ta ? s.m : s.k),
                                                 uint64_t(ta ? s.k : s.m), s.lda));
    FARTHING_CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&plan->layout_c, c_bf16 ? CUDA_R_16BF : CUDA_R_32F, uint64_t(s.n),
                                                       uint64_t(s.m), s.ldc));
    const char* epilogue_name = epilogue == Epilogue::kBias          ? "bias"
                                : epilogue == Epilogue::kBiasGradOfA ? "bgradb"
                                : epilogue == Epilogue::kBiasGradOfB ? "bgrada"
                                                                     : "none";
    const std::string plan_key =
        error_detail::concat("dense ", dtype == GemmDtype::kBF16 ? "bf16" : dtype == GemmDtype::kF16 ? "f16" : "f32",
                             " m ", s.m, " n ", s.n, " k ", s.k, " lda ", s.lda, " ldb ", s.ldb, " ldc ", s.ldc,
                             " trans ", ta ? 'T' : 'N', tb ? 'T' : 'N', " out ", c_bf16 ? "bf16" : "f32",
                             " align ", alignment,
                             with_epilogue ? error_detail::concat(" epilogue ", epilogue_name, " bias align ", bias_alignment)
                                           : std::string());
    const cublasStatus_t status = st.planner.plan(st.handle, *plan, plan_key, 2.0 * double(s.m) * double(s.n) * double(s.k),
                                                  uint64_t(st.workspace_bytes), alignment);
    if (with_epilogue && status != CUBLAS_STATUS_SUCCESS) {
      // Visible, once per plan: this shape's bias runs as the GEMM and the bias's own kernels.
      std::fprintf(stderr,
                   "farthing: cuBLASLt offers no %s epilogue for the GEMM (%s; status %d): its bias runs as a "
                   "separate kernel\n",
                   epilogue == Epilogue::kBias ? "bias" : "bias-gradient", plan_key.c_str(), int(status));
      st.plans.emplace(key, nullptr);
      return false;
    }
    if (status != CUBLAS_STATUS_NOT_SUPPORTED) FARTHING_CUBLASLT_CHECK(status);
    if (status == CUBLAS_STATUS_NOT_SUPPORTED) {
      throw Error(error_detail::concat("matmul: cuBLASLt has no algorithm for dtype ", int(dtype),
                                       c_bf16 ? " (bf16 output)" : "", " m=", s.m, " n=", s.n, " k=", s.k, " lda=", s.lda, " ldb=", s.ldb, " ldc=", s.ldc,
                                       " alignment ", alignment));
    }
    it = st.plans.emplace(key, std::move(plan)).first;
  }
  if (it->second == nullptr) return false;  // no algorithm with this epilogue (said when planned)
  Plan& p = *it->second;
  if (with_epilogue) {  // this call's bias (or bias gradient); the plan's has the same alignment
    FARTHING_CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
  }
  const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  FARTHING_CUBLASLT_CHECK(st.planner.matmul(p, &alpha, b, a, &beta, c_in, c, st.workspace, st.workspace_bytes, stream));
  return true;
}

}  // namespace farthing::kernels
