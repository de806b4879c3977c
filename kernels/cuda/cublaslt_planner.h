// cublaslt_planner.h — which of cuBLASLt's algorithms each GEMM plan runs, for every cuBLASLt
// wrapper of one backend (matmul_cublaslt.h owns it; the FP8 and FP4 GEMMs reach it through
// their dense MatmulLt): one rule, one book of choices and one log for all plans.
//
// The rule (train.gemm_algorithm, kernels/numerics/gemm_plan_book.h):
// - heuristic: a plan runs the heuristic's first result, always.
// - timed: a new plan asks the heuristic for up to kCandidates results (no split-K, the same
//   workspace bound, so each still repeats bit for bit) and runs the first; at its first call
//   every candidate also runs kTimedRuns times (after one warm-up) between CUDA events, and the
//   fastest is remembered. book() exports those; nothing changes the algorithm until adopt()
//   takes a book (the trainer's: rank 0's, shared after the first optimizer step, or the one a
//   checkpoint kept), since different algorithms give different bits, and every rank must run
//   the same ones. After adopt() nothing is timed again: a plan the book names runs its
//   algorithm (checked by cublasLtMatmulAlgoCheck), any other the heuristic's first.
// Timing writes the candidates' D into the plan's own D when the call does not read it (beta 0,
// or C is another array), since the real call then overwrites it; else into a scratch D from
// the stream-ordered pool, freed at once. Where that scratch cannot be had the plan is not timed,
// and its record says so. Either way the real call runs last, so nothing it computes changes.
// Timing waits for the device: it happens once per plan, on the first step.
// With log on, a plan that is not timed as a candidate list has its own algorithm timed the same
// way, and each plan leaves one record (GemmPlanRecord): at its first call, or, for the plans
// timed before a book, when the book is adopted (its choice is known then).
// Relies on: cublaslt_plan.h, cuBLASLt, the CUDA runtime. Tested by: tests/kernels/test_nn_ops_parity.cpp
// (every GEMM row; skips without a GPU); the book's text and exchange on the CPU by
// tests/backend/test_gemm_plan_book.cpp and tests/dist/test_gemm_plan_exchange.cpp.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda/cublaslt_plan.h"
#include "kernels/numerics/gemm_plan_book.h"

namespace farthing::kernels {

class LtPlanner {
 public:
  static constexpr int kCandidates = 8;
  static constexpr int kTimedRuns = 3;

  LtPlanner() = default;
  LtPlanner(const LtPlanner&) = delete;
  LtPlanner& operator=(const LtPlanner&) = delete;

  void set_planning(GemmAlgorithmChoice choice, bool log);

  // Chooses plan.algo for a plan whose descriptor and layouts are set (see above); key names the
  // GEMM (dtype, m n k, lda ldb ldc, transposes, output type, alignment), flops = 2 m n k.
  // Returns the heuristic's status: CUBLAS_STATUS_NOT_SUPPORTED when it found no algorithm (the
  // caller's error or fallback, as before), and then the plan is not registered.
  cublasStatus_t plan(cublasLtHandle_t handle, LtPlan& plan, std::string key, double flops, uint64_t workspace_bytes,
                      int alignment);

  // cublasLtMatmul(plan, alpha, lt_a, lt_b, beta, c, d) with plan.algo, in cuBLASLt's operand
  // order (lt_a is our B side); alpha and beta are host floats. At the plan's first call it is
  // timed first when it is to be.
  cublasStatus_t matmul(LtPlan& plan, const float* alpha, const void* lt_a, const void* lt_b, const float* beta,
                        const void* c, void* d, void* workspace, size_t workspace_bytes, cudaStream_t stream);

  GemmPlanBook book() const;
  // "" when adopted, else why not (another device model or cuBLASLt version); see nn_ops.h.
  std::string adopt(const GemmPlanBook& book);
  const std::vector<GemmPlanRecord>& records() const { return records_; }

  void forget(const LtPlan& plan) noexcept;

 private:
  void time_first_call(LtPlan& plan, const float* alpha, const void* lt_a, const void* lt_b, const float* beta,
                       const void* c, void* d, void* workspace, size_t workspace_bytes, cudaStream_t stream);
  void take_book_choice(LtPlan& plan);  // plan.algo from the adopted book, or the heuristic's first
  void add_record(LtPlan& plan, std::string how);
  const std::string& device_name();

  GemmAlgorithmChoice choice_ = GemmAlgorithmChoice::kHeuristic;
  bool log_ = false;
  bool adopted_ = false;
  GemmPlanBook book_;             // the adopted book (adopted_)
  std::vector<LtPlan*> plans_;    // every plan chosen for and still alive, in planning order
  std::vector<GemmPlanRecord> records_;
  std::string device_name_;
};

}  // namespace farthing::kernels
