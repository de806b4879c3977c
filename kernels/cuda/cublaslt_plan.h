// cublaslt_plan.h — what the cuBLASLt GEMM wrappers keep per planned shape, and how they ask for an
// algorithm: one definition for matmul_cublaslt.cu, gemm_fp8_cublaslt.cu and gemm_fp4_cublaslt.cu.
// Row-major C = A · B is column-major Cᵀ = Bᵀ · Aᵀ, so cuBLASLt's A is our B side and its B our A
// side: the layouts are named by our sides. Which of the heuristic's algorithms a plan runs, and
// its timing and log, are the planner's (cublaslt_planner.h).
// Relies on: cuBLASLt. Tested by: tests/kernels/test_nn_ops_parity.cpp (every GEMM row; skips
// without a GPU).
#pragma once

#include <cublasLt.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/numerics/gemm_plan_book.h"

namespace farthing::kernels {

class LtPlanner;
struct LtPlan;
// The planner lets go of a plan it chose for (cublaslt_planner.cu).
void lt_planner_forget(LtPlanner& planner, const LtPlan& plan) noexcept;

// A planned GEMM: its descriptor, the layouts of our B side (cuBLASLt's A), our A side (its B) and
// C (which is also D), and the algorithm it runs; destroyed together. The rest is the planner's
// (cublaslt_planner.h): what it needs to time, log, export and replace the choice.
struct LtPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t layout_b = nullptr, layout_a = nullptr, layout_c = nullptr;
  cublasLtMatmulAlgo_t algo{};

  LtPlanner* planner = nullptr;  // set by LtPlanner::plan
  cublasLtHandle_t handle = nullptr;
  std::string key;               // the plan book's key (kernels/numerics/gemm_plan_book.h)
  double flops = 0.0;            // 2 m n k
  uint64_t workspace_bytes = 0;  // the most scratch its algorithm may take
  // The heuristic's results, its first choice first, as their bytes (cublasLtMatmulAlgo_t is an
  // unnamed struct, which nvcc's front end fails on as a template argument).
  std::vector<GemmAlgorithmBits> candidates;
  std::vector<double> candidate_seconds;        // per candidate once timed (negative: it failed)
  double seconds = -1.0;         // algo's time per call, once timed
  bool to_time = false;          // time at the first call: the candidates (kTimed, before a book) or algo (log)
  bool recorded = false;         // its record is written
  std::string how;               // how algo was chosen (the record's)
  std::string not_timed;         // why a plan meant to be timed was not

  LtPlan() = default;
  LtPlan(const LtPlan&) = delete;
  LtPlan& operator=(const LtPlan&) = delete;
  ~LtPlan() {
    if (planner != nullptr) lt_planner_forget(*planner, *this);
    if (layout_c != nullptr) cublasLtMatrixLayoutDestroy(layout_c);
    if (layout_a != nullptr) cublasLtMatrixLayoutDestroy(layout_a);
    if (layout_b != nullptr) cublasLtMatrixLayoutDestroy(layout_b);
    if (desc != nullptr) cublasLtMatmulDescDestroy(desc);
  }
};

inline GemmAlgorithmBits lt_algorithm_bits(const cublasLtMatmulAlgo_t& algo) {
  static_assert(sizeof(cublasLtMatmulAlgo_t) == sizeof(GemmAlgorithmBits), "cublasLtMatmulAlgo_t's bytes as they are");
  GemmAlgorithmBits bits{};
  std::memcpy(bits.data(), &algo, sizeof algo);
  return bits;
}

inline cublasLtMatmulAlgo_t lt_algorithm(const GemmAlgorithmBits& bits) {
  cublasLtMatmulAlgo_t algo{};
  std::memcpy(&algo, bits.data(), sizeof algo);
  return algo;
}

// The most results lt_find_algorithms asks for.
inline constexpr int kLtMaxHeuristicResults = 8;

// Asks the heuristic for up to max_results (at most kLtMaxHeuristicResults) of plan's algorithms that need at most workspace_bytes
// of scratch and no split-K reduction scheme (so a plan repeats bit for bit), with every matrix at
// least `alignment` bytes aligned (0: not stated); they go to `found`, the heuristic's first choice
// first. Returns the first failing status, or CUBLAS_STATUS_NOT_SUPPORTED when the heuristic found
// no algorithm.
inline cublasStatus_t lt_find_algorithms(cublasLtHandle_t handle, const LtPlan& plan, uint64_t workspace_bytes,
                                         int alignment, int max_results, std::vector<GemmAlgorithmBits>& found) {
  found.clear();
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
  cublasLtMatmulHeuristicResult_t results[kLtMaxHeuristicResults] = {};
  const int wanted = max_results < 1 ? 1 : max_results > kLtMaxHeuristicResults ? kLtMaxHeuristicResults : max_results;
  int count = 0;
  if (st == CUBLAS_STATUS_SUCCESS) {
    st = cublasLtMatmulAlgoGetHeuristic(handle, plan.desc, plan.layout_b, plan.layout_a, plan.layout_c, plan.layout_c,
                                        preference, wanted, results, &count);
  }
  cublasLtMatmulPreferenceDestroy(preference);
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  for (int i = 0; i < count; ++i) {
    if (results[i].state == CUBLAS_STATUS_SUCCESS) found.push_back(lt_algorithm_bits(results[i].algo));
  }
  return found.empty() ? CUBLAS_STATUS_NOT_SUPPORTED : CUBLAS_STATUS_SUCCESS;
}

}  // namespace farthing::kernels
