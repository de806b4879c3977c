// cublaslt_plan.h — what the cuBLASLt GEMM wrappers keep per planned shape, and how they ask for an
// algorithm: one definition for matmul_cublaslt.cu, gemm_fp8_cublaslt.cu and gemm_fp4_cublaslt.cu.
// Row-major C = A · B is column-major Cᵀ = Bᵀ · Aᵀ, so cuBLASLt's A is our B side and its B our A
// side: the layouts are named by our sides.
// Relies on: cuBLASLt. Tested by: tests/kernels/test_nn_ops_parity.cpp (every GEMM row; skips
// without a GPU).
#pragma once

#include <cublasLt.h>

#include <cstdint>

namespace farthing::kernels {

// A planned GEMM: its descriptor, the layouts of our B side (cuBLASLt's A), our A side (its B) and
// C (which is also D), and the algorithm the heuristic chose; destroyed together.
struct LtPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t layout_b = nullptr, layout_a = nullptr, layout_c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  LtPlan() = default;
  LtPlan(const LtPlan&) = delete;
  LtPlan& operator=(const LtPlan&) = delete;
  ~LtPlan() {
    if (layout_c != nullptr) cublasLtMatrixLayoutDestroy(layout_c);
    if (layout_a != nullptr) cublasLtMatrixLayoutDestroy(layout_a);
    if (layout_b != nullptr) cublasLtMatrixLayoutDestroy(layout_b);
    if (desc != nullptr) cublasLtMatmulDescDestroy(desc);
  }
};

// Asks the heuristic for plan's first algorithm (into plan.algo) that needs at most workspace_bytes
// of scratch and no split-K reduction scheme (so a plan repeats bit for bit), with every matrix at
// least `alignment` bytes aligned (0: not stated). Returns the first failing status, or
// CUBLAS_STATUS_NOT_SUPPORTED when the heuristic found no algorithm.
inline cublasStatus_t lt_find_algorithm(cublasLtHandle_t handle, LtPlan& plan, uint64_t workspace_bytes,
                                        int alignment) {
  cublasLtMatmulPreference_t preference = nullptr;
  cublasStatus_t st = cublasLtMatmulPreferenceCreate(&preference);
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  const uint32_t no_split_k = CUBLASLT_REDUCTION_SCHEME_NONE, align = uint32_t(alignment);
  st = cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                            sizeof workspace_bytes);
  if (st == CUBLAS_STATUS_SUCCESS) {
    st = cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &no_split_k,
                                              sizeof no_split_k);
  }
  for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
    if (st == CUBLAS_STATUS_SUCCESS && alignment > 0) {
      st = cublasLtMatmulPreferenceSetAttribute(preference, attr, &align, sizeof align);
    }
  }
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  if (st == CUBLAS_STATUS_SUCCESS) {
    st = cublasLtMatmulAlgoGetHeuristic(handle, plan.desc, plan.layout_b, plan.layout_a, plan.layout_c, plan.layout_c,
                                        preference, 1, &result, &found);
  }
  cublasLtMatmulPreferenceDestroy(preference);
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  if (found == 0) return CUBLAS_STATUS_NOT_SUPPORTED;
  plan.algo = result.algo;
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace farthing::kernels
