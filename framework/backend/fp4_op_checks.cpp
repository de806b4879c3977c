// fp4_op_checks.cpp — see fp4_op_checks.h.
#include "framework/backend/fp4_op_checks.h"

#include "framework/core/error.h"
#include "kernels/numerics/hadamard.h"

namespace farthing {

void check_fp4_quantize_args(const kernels::Fp4QuantizeArgs& a) {
  FARTHING_CHECK((a.x_f32 == nullptr) != (a.x_bf16 == nullptr), "fp4_quantize: give exactly one of x_f32, x_bf16");
  FARTHING_CHECK(a.rows > 0 && a.cols > 0, "fp4_quantize: empty matrix (", a.rows, " x ", a.cols, ")");
  FARTHING_CHECK(a.block == 16 || a.block == 32, "fp4_quantize: block of ", a.block, " elements, expected 16 or 32");
  FARTHING_CHECK(a.rht_size == 0 || (numerics::hadamard_size_ok(a.rht_size) && a.rht_signs != nullptr),
                 "fp4_quantize: Hadamard size ", a.rht_size, ", expected 0 (none), 4, 16, 64 or 256 with its signs");
  FARTHING_CHECK(!a.sr_prescale || a.scale == kernels::Fp4Scale::kE8M0,
                 "fp4_quantize: the 3/4 pre-scale (sr_prescale) is for E8M0 scales only");
  FARTHING_CHECK(a.codes != nullptr && a.scales != nullptr && a.decode_scale != nullptr && a.workspace != nullptr,
                 "fp4_quantize: codes, scales, decode_scale and workspace are required");
}

void check_fp4_matmul_operands(int64_t m, int64_t n, int64_t k, const kernels::Fp4Operand& a,
                               const kernels::Fp4Operand& b) {
  FARTHING_CHECK(a.rows == m && b.rows == n && a.cols == k && b.cols == k, "matmul_fp4: operands (", a.rows, " x ",
                 a.cols, ") and (", b.rows, " x ", b.cols, ") do not fit the GEMM (m ", m, ", n ", n, ", k ", k,
                 "; both operands are stored with k as columns)");
  FARTHING_CHECK(a.block == b.block && a.scale == b.scale, "matmul_fp4: the operands' block formats differ");
  FARTHING_CHECK(a.codes != nullptr && a.scales != nullptr && a.decode_scale != nullptr && b.codes != nullptr &&
                     b.scales != nullptr && b.decode_scale != nullptr,
                 "matmul_fp4: operand codes and scales are required");
}

}  // namespace farthing
