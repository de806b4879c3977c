// cublaslt_planner.cu — see cublaslt_planner.h.
#include "kernels/cuda/cublaslt_planner.h"

#include <algorithm>
#include <cstring>

#include "kernels/cuda/cuda_check.h"
#include "kernels/numerics/error.h"

namespace farthing::kernels {

namespace {

template <class T>
T config_value(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attribute) {
  T value{};
  size_t written = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, attribute, &value, sizeof value, &written) != CUBLAS_STATUS_SUCCESS) {
    return T{};
  }
  return value;
}

// The configuration cuBLASLt reports, as cublasLt.h's enum values (cublasLtMatmulTile_t,
// cublasLtMatmulStages_t, cublasLtClusterShape_t).
std::string algorithm_text(const cublasLtMatmulAlgo_t& algo) {
  return error_detail::concat(
      "algo ", config_value<int32_t>(algo, CUBLASLT_ALGO_CONFIG_ID),
      " tile ", config_value<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_TILE_ID),
      " stages ", config_value<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID),
      " cluster ", config_value<uint16_t>(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID),
      " swizzle ", config_value<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING),
      " custom ", config_value<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION),
      " split_k ", config_value<int32_t>(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM));
}

// Bytes a column-major layout spans: ld * (cols - 1) + rows elements.
size_t layout_bytes(cublasLtMatrixLayout_t layout) {
  uint32_t type = 0;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0;
  size_t written = 0;
  cublasLtMatrixLayoutGetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_TYPE, &type, sizeof type, &written);
  cublasLtMatrixLayoutGetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_ROWS, &rows, sizeof rows, &written);
  cublasLtMatrixLayoutGetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_COLS, &cols, sizeof cols, &written);
  cublasLtMatrixLayoutGetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_LD, &ld, sizeof ld, &written);
  size_t element = 4;
  switch (cudaDataType_t(type)) {
    case CUDA_R_16BF:
    case CUDA_R_16F: element = 2; break;
    case CUDA_R_8F_E4M3:
    case CUDA_R_8F_E5M2: element = 1; break;
    default: break;
  }
  return (size_t(ld) * (cols > 0 ? cols - 1 : 0) + rows) * element;
}

// Where algo sits among the plan's candidates, or -1.
int candidate_index(const LtPlan& plan, const cublasLtMatmulAlgo_t& algo) {
  const GemmAlgorithmBits bits = lt_algorithm_bits(algo);
  for (size_t i = 0; i < plan.candidates.size(); ++i) {
    if (plan.candidates[i] == bits) return int(i);
  }
  return -1;
}

bool same_algo(const cublasLtMatmulAlgo_t& a, const cublasLtMatmulAlgo_t& b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

}  // namespace

void lt_planner_forget(LtPlanner& planner, const LtPlan& plan) noexcept { planner.forget(plan); }

void LtPlanner::set_planning(GemmAlgorithmChoice choice, bool log) {
  choice_ = choice;
  log_ = log;
}

const std::string& LtPlanner::device_name() {
  if (device_name_.empty()) {
    int device = 0;
    FARTHING_CUDA_CHECK(cudaGetDevice(&device));
    cudaDeviceProp properties{};
    FARTHING_CUDA_CHECK(cudaGetDeviceProperties(&properties, device));
    device_name_ = properties.name;
  }
  return device_name_;
}

cublasStatus_t LtPlanner::plan(cublasLtHandle_t handle, LtPlan& plan, std::string key, double flops,
                               uint64_t workspace_bytes, int alignment) {
  const bool timing_candidates = choice_ == GemmAlgorithmChoice::kTimed && !adopted_;
  const cublasStatus_t status = lt_find_algorithms(handle, plan, workspace_bytes, alignment,
                                                   timing_candidates ? kCandidates : 1, plan.candidates);
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  plan.planner = this;
  plan.handle = handle;
  plan.key = std::move(key);
  plan.flops = flops;
  plan.workspace_bytes = workspace_bytes;
  plan.algo = lt_algorithm(plan.candidates.front());
  plan.how = "the heuristic's first result";
  plans_.push_back(&plan);
  if (adopted_) take_book_choice(plan);
  plan.to_time = timing_candidates || log_;
  return CUBLAS_STATUS_SUCCESS;
}

void LtPlanner::take_book_choice(LtPlan& plan) {
  plan.algo = lt_algorithm(plan.candidates.front());
  const auto it = book_.choices.find(plan.key);
  if (it == book_.choices.end()) {
    plan.how = "the heuristic's first result (the book has no choice for this plan)";
    return;
  }
  const cublasLtMatmulAlgo_t algo = lt_algorithm(it->second);
  cublasLtMatmulHeuristicResult_t result{};
  const cublasStatus_t status = cublasLtMatmulAlgoCheck(plan.handle, plan.desc, plan.layout_b, plan.layout_a,
                                                        plan.layout_c, plan.layout_c, &algo, &result);
  const uint32_t scheme = config_value<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME);
  if (status != CUBLAS_STATUS_SUCCESS || result.workspaceSize > plan.workspace_bytes ||
      scheme != CUBLASLT_REDUCTION_SCHEME_NONE) {
    // Never silent: the record says the book's choice was refused, and why.
    plan.how = error_detail::concat(
        "the heuristic's first result: the book's choice does not fit this plan (",
        status != CUBLAS_STATUS_SUCCESS ? cublasLtGetStatusName(status)
        : scheme != CUBLASLT_REDUCTION_SCHEME_NONE ? "a split-K reduction"
                                                   : "needs more workspace",
        ")");
    return;
  }
  plan.algo = algo;
  const int index = candidate_index(plan, algo);
  plan.how = index >= 0 ? error_detail::concat("the book's choice: candidate ", index + 1, " of ",
                                               plan.candidates.size(), " here")
                        : std::string("the book's choice (not among this rank's candidates)");
}

void LtPlanner::time_first_call(LtPlan& plan, const float* alpha, const void* lt_a, const void* lt_b,
                                const float* beta, const void* c, void* d, void* workspace, size_t workspace_bytes,
                                cudaStream_t stream) {
  plan.to_time = false;
  const bool candidates = choice_ == GemmAlgorithmChoice::kTimed && !adopted_;
  const std::vector<GemmAlgorithmBits> algos = candidates ? plan.candidates : std::vector{lt_algorithm_bits(plan.algo)};
  // The real call comes after and overwrites D, unless D is also the C it reads.
  void* target = d;
  void* scratch = nullptr;
  if (*beta != 0.0f && c == d) {
    const size_t bytes = layout_bytes(plan.layout_c);
    if (cudaMallocAsync(&scratch, bytes, stream) != cudaSuccess) {
      static_cast<void>(cudaGetLastError());  // the failed allocation only; nothing else is pending
      plan.not_timed = error_detail::concat("no device memory for a ", bytes, "-byte scratch D to time it in");
      return;
    }
    target = scratch;
  }
  cudaEvent_t start = nullptr, stop = nullptr;
  FARTHING_CUDA_CHECK(cudaEventCreate(&start));
  FARTHING_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<double> seconds(algos.size(), -1.0);
  const auto run = [&](const GemmAlgorithmBits& bits) {
    const cublasLtMatmulAlgo_t algo = lt_algorithm(bits);
    return cublasLtMatmul(plan.handle, plan.desc, alpha, lt_a, plan.layout_b, lt_b, plan.layout_a, beta, c,
                          plan.layout_c, target, plan.layout_c, &algo, workspace, workspace_bytes, stream);
  };
  for (size_t i = 0; i < algos.size(); ++i) {
    if (run(algos[i]) != CUBLAS_STATUS_SUCCESS) continue;  // a candidate that will not run: never chosen
    FARTHING_CUDA_CHECK(cudaEventRecord(start, stream));
    bool ran = true;
    for (int r = 0; r < kTimedRuns; ++r) ran = ran && run(algos[i]) == CUBLAS_STATUS_SUCCESS;
    FARTHING_CUDA_CHECK(cudaEventRecord(stop, stream));
    FARTHING_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    FARTHING_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (ran) seconds[i] = double(ms) * 1e-3 / kTimedRuns;
  }
  static_cast<void>(cudaEventDestroy(start));
  static_cast<void>(cudaEventDestroy(stop));
  if (scratch != nullptr) FARTHING_CUDA_CHECK(cudaFreeAsync(scratch, stream));
  plan.seconds = seconds.front();  // the algorithm it runs now: under kTimed the heuristic's first until a book
  if (candidates) plan.candidate_seconds = std::move(seconds);
}

cublasStatus_t LtPlanner::matmul(LtPlan& plan, const float* alpha, const void* lt_a, const void* lt_b,
                                 const float* beta, const void* c, void* d, void* workspace, size_t workspace_bytes,
                                 cudaStream_t stream) {
  if (plan.to_time) {
    time_first_call(plan, alpha, lt_a, lt_b, beta, c, d, workspace, workspace_bytes, stream);
    // A plan timed as candidates is recorded once its choice is known (adopt).
    const bool waits_for_book = choice_ == GemmAlgorithmChoice::kTimed && !adopted_;
    if (log_ && !waits_for_book) add_record(plan, plan.how);
  }
  return cublasLtMatmul(plan.handle, plan.desc, alpha, lt_a, plan.layout_b, lt_b, plan.layout_a, beta, c,
                        plan.layout_c, d, plan.layout_c, &plan.algo, workspace, workspace_bytes, stream);
}

GemmPlanBook LtPlanner::book() const {
  GemmPlanBook book;
  if (adopted_) return book_;
  int device = 0;
  cudaDeviceProp properties{};
  if (cudaGetDevice(&device) == cudaSuccess && cudaGetDeviceProperties(&properties, device) == cudaSuccess) {
    book.device = properties.name;
  }
  book.library_version = int64_t(cublasLtGetVersion());
  for (const LtPlan* plan : plans_) {
    int best = -1;
    for (size_t i = 0; i < plan->candidate_seconds.size(); ++i) {
      const double s = plan->candidate_seconds[i];
      if (s > 0.0 && (best < 0 || s < plan->candidate_seconds[size_t(best)])) best = int(i);
    }
    if (best >= 0) book.choices[plan->key] = plan->candidates[size_t(best)];
  }
  return book;
}

std::string LtPlanner::adopt(const GemmPlanBook& book) {
  const int64_t version = int64_t(cublasLtGetVersion());
  if (book.device != device_name() || book.library_version != version) {
    return error_detail::concat("the GEMM choices were made on ", book.device.empty() ? "(no device)" : book.device,
                                " with cuBLASLt ", book.library_version, ", and this is ", device_name(),
                                " with cuBLASLt ", version);
  }
  book_ = book;
  adopted_ = true;
  for (LtPlan* plan : plans_) {
    const cublasLtMatmulAlgo_t before = plan->algo;
    take_book_choice(*plan);
    if (plan->to_time) continue;  // not called yet: timed and recorded at its first call
    const int index = candidate_index(*plan, plan->algo);
    plan->seconds = index >= 0 && size_t(index) < plan->candidate_seconds.size() ? plan->candidate_seconds[size_t(index)]
                    : same_algo(before, plan->algo)                             ? plan->seconds
                                                                                : -1.0;
    if (log_ && (!plan->recorded || !same_algo(before, plan->algo))) add_record(*plan, plan->how);
  }
  return "";
}

void LtPlanner::add_record(LtPlan& plan, std::string how) {
  GemmPlanRecord record;
  record.key = plan.key;
  record.algorithm = algorithm_text(plan.algo);
  record.tflops = plan.seconds > 0.0 ? plan.flops / plan.seconds * 1e-12 : 0.0;
  for (const double s : plan.candidate_seconds) record.candidate_tflops.push_back(s > 0.0 ? plan.flops / s * 1e-12 : 0.0);
  record.how = plan.not_timed.empty() ? std::move(how) : how + "; not timed: " + plan.not_timed;
  records_.push_back(std::move(record));
  plan.recorded = true;
}

void LtPlanner::forget(const LtPlan& plan) noexcept {
  const auto it = std::find(plans_.begin(), plans_.end(), &plan);
  if (it != plans_.end()) plans_.erase(it);
}

}  // namespace farthing::kernels
