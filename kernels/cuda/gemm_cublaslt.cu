// gemm_cublaslt.cu — see gemm_cublaslt.h.
#include "kernels/cuda/gemm_cublaslt.h"

#include <cublasLt.h>

#include "kernels/cuda/cublaslt_check.h"
#include "kernels/cuda/cuda_check.h"

namespace farthing::kernels {

struct GemmBf16Lt::Plan {
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t layout_b = nullptr, layout_a = nullptr, layout_c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  cudaStream_t stream = nullptr;

  ~Plan() {
    // Destructors never throw: statuses are dropped, as cudaFree's.
    if (workspace != nullptr) static_cast<void>(cudaFree(workspace));
    if (layout_c != nullptr) cublasLtMatrixLayoutDestroy(layout_c);
    if (layout_a != nullptr) cublasLtMatrixLayoutDestroy(layout_a);
    if (layout_b != nullptr) cublasLtMatrixLayoutDestroy(layout_b);
    if (desc != nullptr) cublasLtMatmulDescDestroy(desc);
    if (handle != nullptr) cublasLtDestroy(handle);
  }
};

GemmBf16Lt::GemmBf16Lt(int64_t m, int64_t n, int64_t k, cudaStream_t stream, size_t workspace_bytes)
    : plan_(std::make_unique<Plan>()) {
  if (m <= 0 || n <= 0 || k <= 0) {
    throw Error(error_detail::concat("GemmBf16Lt: m (", m, "), n (", n, ") and k (", k, ") must be positive"));
  }
  Plan& p = *plan_;
  p.stream = stream;
  FARTHING_CUBLASLT_CHECK(cublasLtCreate(&p.handle));
  FARTHING_CUBLASLT_CHECK(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  // Column-major view: Cᵀ (n, m) = op(B') · A' with B' = B row-major seen as (k, n), transposed.
  const cublasOperation_t trans = CUBLAS_OP_T, no_trans = CUBLAS_OP_N;
  FARTHING_CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof trans));
  FARTHING_CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &no_trans, sizeof no_trans));
  FARTHING_CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&p.layout_b, CUDA_R_16BF, uint64_t(k), uint64_t(n), k));
  FARTHING_CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&p.layout_a, CUDA_R_16BF, uint64_t(k), uint64_t(m), k));
  FARTHING_CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&p.layout_c, CUDA_R_16BF, uint64_t(n), uint64_t(m), n));
  p.workspace_bytes = workspace_bytes;
  if (workspace_bytes > 0) FARTHING_CUDA_CHECK(cudaMalloc(&p.workspace, workspace_bytes));

  cublasLtMatmulPreference_t preference = nullptr;
  FARTHING_CUBLASLT_CHECK(cublasLtMatmulPreferenceCreate(&preference));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t status = [&] {
    const cublasStatus_t s = cublasLtMatmulPreferenceSetAttribute(
        preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes, sizeof workspace_bytes);
    if (s != CUBLAS_STATUS_SUCCESS) return s;
    return cublasLtMatmulAlgoGetHeuristic(p.handle, p.desc, p.layout_b, p.layout_a, p.layout_c, p.layout_c,
                                          preference, 1, &result, &found);
  }();
  cublasLtMatmulPreferenceDestroy(preference);
  FARTHING_CUBLASLT_CHECK(status);
  if (found == 0) {
    throw Error(error_detail::concat("GemmBf16Lt: cuBLASLt has no bf16 algorithm for m=", m, " n=", n, " k=", k));
  }
  p.algo = result.algo;
}

GemmBf16Lt::~GemmBf16Lt() = default;

void GemmBf16Lt::run(const void* a, const void* b, void* c) {
  Plan& p = *plan_;
  const float alpha = 1.0f, beta = 0.0f;
  FARTHING_CUBLASLT_CHECK(cublasLtMatmul(p.handle, p.desc, &alpha, b, p.layout_b, a, p.layout_a, &beta, c,
                                         p.layout_c, c, p.layout_c, &p.algo, p.workspace, p.workspace_bytes,
                                         p.stream));
}

size_t GemmBf16Lt::library_version() { return cublasLtGetVersion(); }

}  // namespace farthing::kernels
