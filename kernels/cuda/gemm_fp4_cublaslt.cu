// gemm_fp4_cublaslt.cu — see gemm_fp4_cublaslt.h.
//
// Row-major C (m, n) is column-major Cᵀ (n, m) = B · Aᵀ in cuBLASLt's terms: cuBLASLt's "A" is
// our B (k x n column-major, ld k, transposed) and its "B" our A (k x m, ld k), TN, as in
// gemm_fp8_cublaslt.cu.
#include "kernels/cuda/gemm_fp4_cublaslt.h"

#include <cublasLt.h>

#include <cstdio>
#include <map>
#include <string>
#include <tuple>

#include "kernels/cuda/cublaslt_check.h"
#include "kernels/cuda/cublaslt_plan.h"
#include "kernels/cuda/cublaslt_planner.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/fp4_cuda.h"
#include "kernels/cuda/matmul_cublaslt.h"
#include "kernels/numerics/fp4_workspace.h"

namespace farthing::kernels {

namespace nm = farthing::numerics;

namespace {

constexpr int64_t kAlign = nm::kFp4LtAlign;
int64_t up(int64_t x) { return nm::fp4_lt_round_up(x, kAlign); }

// (m, n, k, block, scale format)
using Key = std::tuple<int64_t, int64_t, int64_t, int, int>;

struct Plan : LtPlan {
  bool fp4 = false;       // false: the emulation
  bool verified = false;  // a cuBLASLt call has succeeded (until then a refusal falls back)
  std::string reason;     // why the emulation, where the GPU has FP4 tensor cores
};

// The workspace's parts, each on a kAlign boundary (fp4_workspace.h sizes the larger layout).
struct LtParts {
  float* product;
  uint8_t *lt, *bk_codes, *ak_codes, *bk_scales, *ak_scales;
  LtParts(void* ws, int64_t m, int64_t n, int64_t k, int64_t blocks) {
    auto* at = static_cast<uint8_t*>(ws);
    product = reinterpret_cast<float*>(at);
    lt = at + up(m * n * 4);
    bk_codes = lt + nm::kFp4LtScratchBytes;
    ak_codes = bk_codes + up((n * k + 1) / 2);
    bk_scales = ak_codes + up((m * k + 1) / 2);
    ak_scales = bk_scales + up(nm::fp4_lt_scale_bytes(n, blocks));
  }
};
struct EmulatedParts {
  uint16_t *a, *b;
  float* product;
  EmulatedParts(void* ws, int64_t m, int64_t n, int64_t k) {
    auto* at = static_cast<uint8_t*>(ws);
    a = reinterpret_cast<uint16_t*>(at);
    b = reinterpret_cast<uint16_t*>(at + up(m * k * 2));
    product = reinterpret_cast<float*>(at + up(m * k * 2) + up(n * k * 2));
  }
};

// Builds the block-scaled FP4 descriptor and asks the heuristic; false (with the reason) when
// cuBLASLt declines. The scale pointers are set to the workspace's slots before asking (the FP8
// path found the heuristic declining block-scaled modes without them, gemm_fp8_cublaslt.cu).
bool plan_fp4(LtPlanner& planner, cublasLtHandle_t handle, Plan& p, int64_t m, int64_t n, int64_t k, Fp4Scale scale,
              const LtParts& parts, std::string& reason) {
  const auto fail = [&](const char* what, cublasStatus_t status) {
    reason = error_detail::concat(what, " (", cublasLtGetStatusName(status), ")");
    return false;
  };
  cublasStatus_t st = cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  if (st != CUBLAS_STATUS_SUCCESS) return fail("cublasLtMatmulDescCreate", st);
  const cublasOperation_t op_t = CUBLAS_OP_T, op_n = CUBLAS_OP_N;
  const int32_t mode = scale == Fp4Scale::kE4M3 ? CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3
                                                : CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0;
  const void* bk_scales = parts.bk_scales;
  const void* ak_scales = parts.ak_scales;
  if ((st = cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_t, sizeof op_t)) != CUBLAS_STATUS_SUCCESS ||
      (st = cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_n, sizeof op_n)) != CUBLAS_STATUS_SUCCESS ||
      (st = cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode, sizeof mode)) !=
          CUBLAS_STATUS_SUCCESS ||
      (st = cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode, sizeof mode)) !=
          CUBLAS_STATUS_SUCCESS ||
      (st = cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &bk_scales, sizeof bk_scales)) !=
          CUBLAS_STATUS_SUCCESS ||
      (st = cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &ak_scales, sizeof ak_scales)) !=
          CUBLAS_STATUS_SUCCESS) {
    return fail("FP4 descriptor attributes", st);
  }
  if ((st = cublasLtMatrixLayoutCreate(&p.layout_b, CUDA_R_4F_E2M1, uint64_t(k), uint64_t(n), k)) !=
          CUBLAS_STATUS_SUCCESS ||
      (st = cublasLtMatrixLayoutCreate(&p.layout_a, CUDA_R_4F_E2M1, uint64_t(k), uint64_t(m), k)) !=
          CUBLAS_STATUS_SUCCESS ||
      (st = cublasLtMatrixLayoutCreate(&p.layout_c, CUDA_R_32F, uint64_t(n), uint64_t(m), n)) != CUBLAS_STATUS_SUCCESS) {
    return fail("FP4 matrix layouts", st);
  }
  const std::string key = error_detail::concat("fp4 e2m1 ", scale == Fp4Scale::kE4M3 ? "nvfp4" : "mxfp4", " m ", m,
                                               " n ", n, " k ", k, " trans TN out f32");
  st = planner.plan(handle, p, key, 2.0 * double(m) * double(n) * double(k), uint64_t(nm::kFp4LtScratchBytes), 0);
  if (st != CUBLAS_STATUS_SUCCESS) return fail("the heuristic gave no algorithm", st);
  return true;
}

// Where the GPU has FP4 tensor cores, an emulated shape is never silent: one line per shape.
void note_emulated(int64_t m, int64_t n, int64_t k, const std::string& reason) {
  std::fprintf(stderr,
               "farthing: note: an FP4 GEMM (m=%lld n=%lld k=%lld) runs emulated (dequantize + bf16 GEMM): %s\n",
               (long long)m, (long long)n, (long long)k, reason.c_str());
}

}  // namespace

struct MatmulFp4Lt::State {
  MatmulLt* dense = nullptr;
  bool tensor_cores = false;
  cublasLtHandle_t handle = nullptr;
  std::map<Key, std::unique_ptr<Plan>> plans;
  ~State() {
    plans.clear();
    if (handle != nullptr) cublasLtDestroy(handle);
  }
};

MatmulFp4Lt::MatmulFp4Lt(MatmulLt& dense, bool tensor_cores) : state_(std::make_unique<State>()) {
  state_->dense = &dense;
  state_->tensor_cores = tensor_cores;
}

MatmulFp4Lt::~MatmulFp4Lt() = default;

size_t MatmulFp4Lt::fp4_plans() const {
  size_t n = 0;
  for (const auto& [key, plan] : state_->plans) n += plan->fp4 ? 1 : 0;
  return n;
}

size_t MatmulFp4Lt::emulated_plans() const { return state_->plans.size() - fp4_plans(); }

void MatmulFp4Lt::run(int64_t m, int64_t n, int64_t k, const Fp4Operand& a, const Fp4Operand& b, float* c,
                      bool accumulate, void* workspace, cudaStream_t stream) {
  State& st = *state_;
  const int64_t blocks = fp4_blocks_per_row(k, a.block);
  const LtParts lt(workspace, m, n, k, blocks);
  const Key key{m, n, k, a.block, int(a.scale)};
  auto it = st.plans.find(key);
  if (it == st.plans.end()) {
    auto plan = std::make_unique<Plan>();
    if (!st.tensor_cores) {
      plan->reason = "no FP4 tensor cores";
    } else if (k % 32 != 0) {
      plan->reason = "k is not a multiple of 32 (packed FP4 rows must be 16-byte multiples)";
    } else {
      if (st.handle == nullptr) FARTHING_CUBLASLT_CHECK(cublasLtCreate(&st.handle));
      plan->fp4 = plan_fp4(st.dense->planner(), st.handle, *plan, m, n, k, a.scale, lt, plan->reason);
    }
    if (st.tensor_cores && !plan->fp4) note_emulated(m, n, k, plan->reason);
    it = st.plans.emplace(key, std::move(plan)).first;
  }
  Plan& p = *it->second;

  if (p.fp4) {
    fp4_pack_codes_cuda(b.codes, n * k, lt.bk_codes, stream);
    fp4_pack_codes_cuda(a.codes, m * k, lt.ak_codes, stream);
    fp4_tile_scales_cuda(b.scales, n, blocks, lt.bk_scales, stream);
    fp4_tile_scales_cuda(a.scales, m, blocks, lt.ak_scales, stream);
    const float alpha = 1.0f, beta = 0.0f;
    const cublasStatus_t status = st.dense->planner().matmul(p, &alpha, lt.bk_codes, lt.ak_codes, &beta, lt.product,
                                                             lt.product, lt.lt, size_t(nm::kFp4LtScratchBytes), stream);
    if (status == CUBLAS_STATUS_SUCCESS) {
      p.verified = true;
      fp4_gemm_epilogue_cuda(c, lt.product, a.decode_scale, b.decode_scale, m * n, accumulate, stream);
      return;
    }
    // A refusal on a plan's first call: the plan is emulated for good. Later failures are errors.
    if (p.verified || (status != CUBLAS_STATUS_NOT_SUPPORTED && status != CUBLAS_STATUS_INVALID_VALUE)) {
      FARTHING_CUBLASLT_CHECK(status);
    }
    p.fp4 = false;
    p.reason = error_detail::concat("cublasLtMatmul refused the plan (", cublasLtGetStatusName(status), ")");
    note_emulated(m, n, k, p.reason);
  }

  // The emulation: what fp4_matmul_cpu computes (the FP4 path's parts of the workspace unused).
  const EmulatedParts e(workspace, m, n, k);
  fp4_dequantize_unscaled_bf16_cuda(a, e.a, stream);
  fp4_dequantize_unscaled_bf16_cuda(b, e.b, stream);
  GemmShape shape{m, n, k};
  shape.trans_b = Trans::kT;
  st.dense->run(GemmDtype::kBF16, shape, e.a, e.b, e.product, false, stream);
  fp4_gemm_epilogue_cuda(c, e.product, a.decode_scale, b.decode_scale, m * n, accumulate, stream);
}

}  // namespace farthing::kernels
