// gemm_plan_book.h — which algorithm each planned GEMM runs, as data the trainer can move: the
// CUDA GEMM wrappers (kernels/cuda/cublaslt_planner.h) fill it and take it back; the trainer
// shares rank 0's with every rank and keeps it in checkpoints (train.gemm_algorithm: timed,
// docs/cuda_ops.md "GEMM plans"). Plain data, so the kernels need nothing of communicators or
// files, and the CPU build can write, read and test it.
// Relies on: nothing. Tested by: tests/backend/test_gemm_plan_book.cpp (its text form),
// tests/dist/test_gemm_plan_exchange.cpp (rank 0's book on every rank).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace farthing::kernels {

// How a new GEMM plan gets its algorithm (train.gemm_algorithm).
// kHeuristic: the cuBLASLt heuristic's first result; it depends only on the plan's key, the
//   device and the cuBLASLt version, so every rank and every run repeats it with no state kept.
// kTimed: the heuristic's first result until the trainer hands back a book; meanwhile each
//   candidate is timed once, and the book it exports holds the fastest.
enum class GemmAlgorithmChoice : uint8_t { kHeuristic, kTimed };

// One cuBLASLt algorithm: cublasLtMatmulAlgo_t's 64 bytes, which cuBLASLt documents as
// serializable for the same library version.
using GemmAlgorithmBits = std::array<uint64_t, 8>;

// The algorithm chosen for each plan key, and what the choices are valid for: an algorithm means
// the same kernel only on the same device model and cuBLASLt version.
struct GemmPlanBook {
  std::string device;           // the GPU's model name ("NVIDIA H200")
  int64_t library_version = 0;  // cublasLtGetVersion()
  // Plan key (what the GEMM is: kernels/cuda/cublaslt_planner.h builds it) -> its algorithm.
  std::map<std::string, GemmAlgorithmBits> choices;
  bool operator==(const GemmPlanBook&) const = default;
};

// A plan as the run's log and profile.json show it, once per plan.
struct GemmPlanRecord {
  std::string key;        // dtype, m n k, lda ldb ldc, transposes, output type, alignment
  std::string algorithm;  // cuBLASLt's id, tile, stages, ... (cublasLt.h's enum values)
  double tflops = 0.0;    // the chosen algorithm's rate, timed at planning (0: not timed)
  std::vector<double> candidate_tflops;  // timed choice: every candidate, in the heuristic's order (0: failed)
  std::string how;        // how the algorithm was chosen, and anything not timed or not applied
};

}  // namespace farthing::kernels
