// gemm_fp8_cublaslt.cu — see gemm_fp8_cublaslt.h.
//
// Row-major C (m, n) is column-major Cᵀ (n, m) = Bk · Akᵀ in cuBLASLt's terms, where Bk (n, k)
// and Ak (m, k) are the row-major K-major forms of op(B)ᵀ and op(A): cuBLASLt's "A" is our B
// side and its "B" our A side (as in matmul_cublaslt.cu), with transa = T, transb = N (TN).
#include "kernels/cuda/gemm_fp8_cublaslt.h"

#include <cublasLt.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <tuple>

#include "kernels/cuda/cublaslt_check.h"
#include "kernels/cuda/cublaslt_plan.h"
#include "kernels/cuda/cublaslt_planner.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/fp8_cuda.h"
#include "kernels/cuda/matmul_cublaslt.h"
#include "kernels/numerics/fp8_workspace.h"


namespace farthing::kernels {

namespace nm = farthing::numerics;

namespace {

// The workspace's layout is kernels/numerics/fp8_workspace.h's, part by part.
constexpr int64_t kAlign = nm::kFp8LtAlign;
constexpr int64_t round_up(int64_t x, int64_t to) { return nm::fp8_round_up(x, to); }

constexpr int64_t scale_budget_floats(int64_t elems) { return nm::fp8_lt_scale_budget_floats(elems); }

// How one operand reaches cuBLASLt: stored (rows, cols), reduced over its columns (k_is_cols)
// or its rows. In K-major form it is (outer, k).
struct Side {
  bool transpose = false;  // codes transposed into the workspace (the operand is reduced over rows)
  int32_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
  // Scale (o, kb) of the K-major form sits at src[o * src_o + kb * src_k] in s_inv and must sit
  // at dst[o * dst_o + kb * dst_k] for cuBLASLt: outer tiles x k tiles.
  int64_t outer_tiles = 1, k_tiles = 1, src_o = 0, src_k = 0, dst_o = 0, dst_k = 0, dst_floats = 1;
  bool rearrange = false;
};

// The side for a tiling, or a reason why cuBLASLt cannot take it.
const char* describe_side(const Fp8Operand& x, bool k_is_cols, Side& side) {
  const int64_t outer = k_is_cols ? x.rows : x.cols, k = k_is_cols ? x.cols : x.rows;
  side.transpose = !k_is_cols;
  if (x.tiling == Fp8Tiling::kTensor) return nullptr;  // SCALAR_32F, the pointer as is
  const int64_t tile_cols = nm::fp8_tile_cols(x.tiling, x.cols);
  // s_inv is row-major over the stored tile grid: tile (tr, tc) at tr * tile_cols + tc.
  side.src_o = k_is_cols ? tile_cols : 1;
  side.src_k = k_is_cols ? 1 : tile_cols;
  side.k_tiles = nm::fp8_ceil_tiles(k);
  const bool along_k = (k_is_cols && x.tiling == Fp8Tiling::kRow1x128) || (!k_is_cols && x.tiling == Fp8Tiling::kCol128x1);
  if (along_k) {
    // NOTE: each k tile's column of scales starts 16 bytes apart: the outer dimension padded to a
    // multiple of 4 floats, as TransformerEngine's "GEMM-ready" 1-D block scales are for the same
    // cuBLASLt mode. m = 1 was declined on the H200 with the column unpadded.
    side.mode = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    side.outer_tiles = outer;
    side.dst_o = 1;  // outer fastest
    side.dst_k = round_up(outer, 4);
    side.dst_floats = side.dst_k * side.k_tiles;
  } else if (x.tiling == Fp8Tiling::kBlock128) {
    side.mode = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
    side.outer_tiles = nm::fp8_ceil_tiles(outer);
    side.dst_o = round_up(side.k_tiles, 4);  // k fastest, rows padded to 16 bytes
    side.dst_k = 1;
    side.dst_floats = side.outer_tiles * side.dst_o;
  } else {
    return "tiles along the outer dimension (a scale per k element) are not a cuBLASLt scale mode";
  }
  side.rearrange = !((side.outer_tiles == 1 || side.src_o == side.dst_o) && (side.k_tiles == 1 || side.src_k == side.dst_k));
  return nullptr;
}

cudaDataType_t fp8_type(Fp8Format f) { return f == Fp8Format::kE4M3 ? CUDA_R_8F_E4M3 : CUDA_R_8F_E5M2; }

int alignment_of(uintptr_t bits) {
  int alignment = 256;
  while (alignment > 1 && (bits & uintptr_t(alignment - 1)) != 0) alignment /= 2;
  return alignment;
}

// (m, n, k, ldc, trans_a, trans_b, tiling_a, tiling_b, format_a, format_b, alignment)
using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int, int, int, int, int, int, int>;

struct Plan : LtPlan {
  bool fp8 = false;        // false: the dense fallback
  bool verified = false;   // a cuBLASLt call has succeeded (until then a refusal falls back)
  std::string reason;      // why the fallback
  Side bk, ak;             // cuBLASLt's A (our B side) and B (our A side)
};

// Builds the FP8 descriptor and asks the heuristic; false (with the reason) when cuBLASLt
// declines. Scale pointers are set per call; the heuristic is asked with the workspace's scale
// slots in their place (any valid 16-byte aligned device address will do).
// NOTE: with no scale pointer set, the heuristic answers CUBLAS_STATUS_INVALID_VALUE for every
// VEC128 / BLK128x128 pair (H200, cuBLASLt 13.1), while the per-tensor plans (where a null pointer
// means a scale of 1) are found; NVIDIA's block-scaled sample sets the pointers before asking.
bool plan_fp8(LtPlanner& planner, cublasLtHandle_t handle, Plan& p, const GemmShape& s, const Fp8Operand& a,
              const Fp8Operand& b, int alignment, const float* ak_scales_slot, const float* bk_scales_slot,
              std::string& reason) {
  const auto fail = [&](const char* what, cublasStatus_t status) {
    reason = error_detail::concat(what, " (", cublasLtGetStatusName(status), ")");
    return false;
  };
  cublasStatus_t st = cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  if (st != CUBLAS_STATUS_SUCCESS) return fail("cublasLtMatmulDescCreate", st);
  const cublasOperation_t op_t = CUBLAS_OP_T, op_n = CUBLAS_OP_N;
  const int8_t no_fast_accum = 0;
  const int32_t mode_bk = p.bk.mode, mode_ak = p.ak.mode;
  if ((st = cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_t, sizeof op_t)) != CUBLAS_STATUS_SUCCESS ||
      (st = cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_n, sizeof op_n)) != CUBLAS_STATUS_SUCCESS ||
      (st = cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &no_fast_accum,
                                           sizeof no_fast_accum)) != CUBLAS_STATUS_SUCCESS ||
      (st = cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode_bk, sizeof mode_bk)) !=
          CUBLAS_STATUS_SUCCESS ||
      (st = cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode_ak, sizeof mode_ak)) !=
          CUBLAS_STATUS_SUCCESS) {
    return fail("FP8 descriptor attributes", st);
  }
  if (p.bk.mode != CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F &&
      ((st = cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &bk_scales_slot,
                                            sizeof bk_scales_slot)) != CUBLAS_STATUS_SUCCESS ||
       (st = cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &ak_scales_slot,
                                            sizeof ak_scales_slot)) != CUBLAS_STATUS_SUCCESS)) {
    return fail("FP8 scale pointers", st);
  }
  // Column-major: Bk is (k x n), ld k, transposed; Ak is (k x m), ld k; C is (n x m), ld ldc.
  if ((st = cublasLtMatrixLayoutCreate(&p.layout_b, fp8_type(b.format), uint64_t(s.k), uint64_t(s.n), s.k)) !=
          CUBLAS_STATUS_SUCCESS ||
      (st = cublasLtMatrixLayoutCreate(&p.layout_a, fp8_type(a.format), uint64_t(s.k), uint64_t(s.m), s.k)) !=
          CUBLAS_STATUS_SUCCESS ||
      (st = cublasLtMatrixLayoutCreate(&p.layout_c, CUDA_R_32F, uint64_t(s.n), uint64_t(s.m), s.ldc)) !=
          CUBLAS_STATUS_SUCCESS) {
    return fail("FP8 matrix layouts", st);
  }
  const auto format = [](Fp8Format f) { return f == Fp8Format::kE4M3 ? "e4m3" : "e5m2"; };
  const std::string key = error_detail::concat(
      "fp8 ", format(a.format), "x", format(b.format), " m ", s.m, " n ", s.n, " k ", s.k, " lda ", s.lda, " ldb ",
      s.ldb, " ldc ", s.ldc, " trans ", s.trans_a == Trans::kT ? 'T' : 'N', s.trans_b == Trans::kT ? 'T' : 'N',
      " tilings ", int(a.tiling), ",", int(b.tiling), " out f32 align ", alignment);
  st = planner.plan(handle, p, key, 2.0 * double(s.m) * double(s.n) * double(s.k),
                    uint64_t(MatmulFp8Lt::kLtWorkspaceBytes), alignment);
  if (st != CUBLAS_STATUS_SUCCESS) return fail("the heuristic gave no algorithm", st);
  return true;
}

// A plan that falls back is never silent: one line per shape, whether or not plans are logged
// (a silent fallback would look like a slow FP8 GEMM).
void note_fallback(const GemmShape& s, const std::string& reason) {
  std::fprintf(stderr, "farthing: note: an FP8 GEMM (m=%lld n=%lld k=%lld) runs as dequantize + bf16 GEMM: %s\n",
               (long long)s.m, (long long)s.n, (long long)s.k, reason.c_str());
}

}  // namespace

struct MatmulFp8Lt::State {
  MatmulLt* dense = nullptr;
  cublasLtHandle_t handle = nullptr;
  std::map<Key, std::unique_ptr<Plan>> plans;
  bool log = false;
  ~State() {
    plans.clear();
    if (handle != nullptr) cublasLtDestroy(handle);
  }
};

MatmulFp8Lt::MatmulFp8Lt(MatmulLt& dense) : state_(std::make_unique<State>()) {
  state_->dense = &dense;
  const char* log = std::getenv("FARTHING_FP8_PLAN_LOG");
  state_->log = log != nullptr && log[0] != '\0' && log[0] != '0';
}

MatmulFp8Lt::~MatmulFp8Lt() = default;

size_t MatmulFp8Lt::fp8_plans() const {
  size_t n = 0;
  for (const auto& [key, plan] : state_->plans) n += plan->fp8 ? 1 : 0;
  return n;
}

size_t MatmulFp8Lt::fallback_plans() const { return state_->plans.size() - fp8_plans(); }

int64_t MatmulFp8Lt::workspace_bytes(int64_t a_elems, int64_t b_elems, bool power_of_two) {
  return nm::fp8_matmul_workspace_bytes(nm::Fp8GemmEngine::kCublasLt, a_elems, b_elems, power_of_two);
}

void MatmulFp8Lt::run(const GemmShape& shape, const Fp8Operand& a, const Fp8Operand& b, float* c, bool accumulate,
                      void* workspace, cudaStream_t stream) {
  State& st = *state_;
  GemmShape s = shape;
  if (s.ldc == 0) s.ldc = s.n;
  s.lda = a.cols;  // FP8 operands are dense (fp8_op_checks.h)
  s.ldb = b.cols;
  if (s.m <= 0 || s.n <= 0 || s.k <= 0) {  // nothing to multiply: the dense GEMM's empty cases
    st.dense->run(GemmDtype::kBF16, s, nullptr, nullptr, c, accumulate, stream);
    return;
  }
  const bool ta = s.trans_a == Trans::kT, tb = s.trans_b == Trans::kT;
  auto* ws = static_cast<uint8_t*>(workspace);
  // The FP8 path's workspace parts: cuBLASLt's scratch, Ak's and Bk's codes, their scales.
  uint8_t* lt_ws = ws;
  uint8_t* ak_codes_ws = lt_ws + kLtWorkspaceBytes;
  uint8_t* bk_codes_ws = ak_codes_ws + round_up(a.rows * a.cols, kAlign);
  auto* ak_scales_ws = reinterpret_cast<float*>(bk_codes_ws + round_up(b.rows * b.cols, kAlign));
  auto* bk_scales_ws = reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(ak_scales_ws) +
                                                round_up(4 * scale_budget_floats(a.rows * a.cols), kAlign));
  const uint8_t* ak_codes = ta ? ak_codes_ws : a.codes;
  const uint8_t* bk_codes = tb ? b.codes : bk_codes_ws;
  const int alignment = alignment_of(reinterpret_cast<uintptr_t>(ak_codes) | reinterpret_cast<uintptr_t>(bk_codes) |
                                     reinterpret_cast<uintptr_t>(c));
  const Key key{s.m, s.n, s.k, s.ldc, int(ta), int(tb), int(a.tiling), int(b.tiling), int(a.format), int(b.format),
                alignment};
  auto it = st.plans.find(key);
  if (it == st.plans.end()) {
    auto plan = std::make_unique<Plan>();
    Plan& p = *plan;
    // Our A is reduced over its columns unless transposed; our B over its rows unless transposed.
    const char* why = describe_side(a, !ta, p.ak);
    if (why == nullptr) why = describe_side(b, tb, p.bk);
    const int32_t scalar = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F, blk = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
    if (why == nullptr && (p.ak.mode == scalar) != (p.bk.mode == scalar)) {
      why = "a per-tensor scale with a tiled one: no sm_90 cuBLASLt scale-mode pair";
    }
    if (why == nullptr && p.ak.mode == blk && p.bk.mode == blk) {
      why = "128 x 128 blocks on both operands: no sm_90 cuBLASLt scale-mode pair";
    }
    if (why == nullptr && a.format == Fp8Format::kE5M2 && b.format == Fp8Format::kE5M2) {
      why = "E5M2 x E5M2: cuBLASLt has no FP8 GEMM for it";
    }
    if (why == nullptr && s.k % 16 != 0) why = "k is not a multiple of 16 (FP8 rows must be 16-byte multiples)";
    if (why == nullptr && (p.ak.dst_floats > scale_budget_floats(a.rows * a.cols) ||
                           p.bk.dst_floats > scale_budget_floats(b.rows * b.cols))) {
      why = "the rearranged scales exceed the workspace's budget for them";
    }
    if (why != nullptr) {
      p.reason = why;
    } else {
      if (st.handle == nullptr) FARTHING_CUBLASLT_CHECK(cublasLtCreate(&st.handle));
      p.fp8 = plan_fp8(st.dense->planner(), st.handle, p, s, a, b, alignment, ak_scales_ws, bk_scales_ws, p.reason);
    }
    if (!p.fp8) note_fallback(s, p.reason);
    if (st.log) {
      std::fprintf(stderr, "matmul_fp8 plan m=%lld n=%lld k=%lld trans=%c%c tilings=%d,%d formats=%d,%d align=%d: %s%s\n",
                   (long long)s.m, (long long)s.n, (long long)s.k, ta ? 'T' : 'N', tb ? 'T' : 'N', int(a.tiling),
                   int(b.tiling), int(a.format), int(b.format), alignment, p.fp8 ? "cuBLASLt FP8" : "fallback: ",
                   p.fp8 ? "" : p.reason.c_str());
    }
    it = st.plans.emplace(key, std::move(plan)).first;
  }
  Plan& p = *it->second;

  if (p.fp8) {
    if (ta) fp8_transpose_codes_cuda(a.codes, ak_codes_ws, a.rows, a.cols, stream);
    if (!tb) fp8_transpose_codes_cuda(b.codes, bk_codes_ws, b.rows, b.cols, stream);
    // Scales: as stored where the layout already matches and the pointer is 16-byte aligned.
    const auto scales_for = [&](const Side& side, const float* src, float* dst_ws) -> const float* {
      if (side.mode == CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F) return src;
      const bool aligned = (reinterpret_cast<uintptr_t>(src) & 15u) == 0;
      if (!side.rearrange && aligned) return src;
      const int64_t src_o = side.outer_tiles == 1 ? 0 : side.src_o, src_k = side.k_tiles == 1 ? 0 : side.src_k;
      fp8_copy_scales_cuda(src, src_o, src_k, dst_ws, side.dst_o, side.dst_k, side.outer_tiles, side.k_tiles, stream);
      return dst_ws;
    };
    const float* ak_scales = scales_for(p.ak, a.scale_inv, ak_scales_ws);
    const float* bk_scales = scales_for(p.bk, b.scale_inv, bk_scales_ws);
    FARTHING_CUBLASLT_CHECK(
        cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &bk_scales, sizeof bk_scales));
    FARTHING_CUBLASLT_CHECK(
        cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &ak_scales, sizeof ak_scales));
    const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    const cublasStatus_t status =
        st.dense->planner().matmul(p, &alpha, bk_codes, ak_codes, &beta, c, c, lt_ws, size_t(kLtWorkspaceBytes), stream);
    if (status == CUBLAS_STATUS_SUCCESS) {
      p.verified = true;
      return;
    }
    // A refusal on a plan's first call (an unsupported combination the heuristic let through):
    // the plan falls back for good. Later failures are errors.
    if (p.verified || (status != CUBLAS_STATUS_NOT_SUPPORTED && status != CUBLAS_STATUS_INVALID_VALUE)) {
      FARTHING_CUBLASLT_CHECK(status);
    }
    p.fp8 = false;
    p.reason = error_detail::concat("cublasLtMatmul refused the plan (", cublasLtGetStatusName(status), ")");
    note_fallback(s, p.reason);
  }

  // The fallback: both operands dequantized as stored (what fp8_matmul_cpu does), then the dense
  // GEMM with the caller's transposes. The FP8 path's parts of the workspace are not used.
  const bool bf16 = a.power_of_two && b.power_of_two;  // q * s_inv exact in bf16
  const int64_t width = bf16 ? 2 : 4;
  void* wa = ws;
  void* wb = ws + round_up(a.rows * a.cols * width, kAlign);
  if (bf16) {
    fp8_dequantize_bf16_cuda(a, static_cast<uint16_t*>(wa), stream);
    fp8_dequantize_bf16_cuda(b, static_cast<uint16_t*>(wb), stream);
  } else {
    fp8_dequantize_f32_cuda(a, static_cast<float*>(wa), stream);
    fp8_dequantize_f32_cuda(b, static_cast<float*>(wb), stream);
  }
  st.dense->run(bf16 ? GemmDtype::kBF16 : GemmDtype::kF32, s, wa, wb, c, accumulate, stream);
}

}  // namespace farthing::kernels
