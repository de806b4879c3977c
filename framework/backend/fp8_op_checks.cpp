// fp8_op_checks.cpp — see fp8_op_checks.h.
#include "framework/backend/fp8_op_checks.h"

#include "framework/core/error.h"

namespace farthing {

using kernels::Trans;

void check_fp8_quantize_args(const kernels::Fp8QuantizeArgs& a) {
  FARTHING_CHECK((a.x_f32 == nullptr) != (a.x_bf16 == nullptr), "fp8_quantize: give exactly one of x_f32, x_bf16");
  FARTHING_CHECK(a.rows > 0 && a.cols > 0, "fp8_quantize: empty matrix (", a.rows, " x ", a.cols, ")");
  FARTHING_CHECK(a.codes != nullptr && a.scale_inv != nullptr, "fp8_quantize: codes and scale_inv are required");
  FARTHING_CHECK(a.given_scale == nullptr || a.tiling == kernels::Fp8Tiling::kTensor,
                 "fp8_quantize: a given (delayed) scale needs per-tensor tiling");
  FARTHING_CHECK(a.margin >= 0 && a.margin <= 32, "fp8_quantize: margin ", a.margin, " outside 0..32");
}

void check_fp8_matmul_operands(const kernels::GemmShape& s, const kernels::Fp8Operand& a,
                               const kernels::Fp8Operand& b) {
  const int64_t a_rows = s.trans_a == Trans::kN ? s.m : s.k, a_cols = s.trans_a == Trans::kN ? s.k : s.m;
  const int64_t b_rows = s.trans_b == Trans::kN ? s.k : s.n, b_cols = s.trans_b == Trans::kN ? s.n : s.k;
  FARTHING_CHECK(a.rows == a_rows && a.cols == a_cols && b.rows == b_rows && b.cols == b_cols, "matmul_fp8: operands (",
                 a.rows, " x ", a.cols, ") and (", b.rows, " x ", b.cols, ") do not fit the GEMM (m ", s.m, ", n ", s.n,
                 ", k ", s.k, ")");
  FARTHING_CHECK((s.lda == 0 || s.lda == a.cols) && (s.ldb == 0 || s.ldb == b.cols),
                 "matmul_fp8: FP8 operands are dense (lda ", s.lda, ", ldb ", s.ldb, ")");
  FARTHING_CHECK(a.codes != nullptr && a.scale_inv != nullptr && b.codes != nullptr && b.scale_inv != nullptr,
                 "matmul_fp8: operand codes and scales are required");
}

}  // namespace farthing
