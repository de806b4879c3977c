// fp4_op_checks.h — the argument checks of NnOps' FP4 ops, shared by every backend so each
// refuses the same calls with the same message.
// Relies on: kernels/numerics/fp4_operand.h. Tested by: tests/kernels/test_fp4_cpu.cpp.
#pragma once

#include "kernels/numerics/fp4_operand.h"

namespace farthing {

void check_fp4_quantize_args(const kernels::Fp4QuantizeArgs& args);
void check_fp4_matmul_operands(int64_t m, int64_t n, int64_t k, const kernels::Fp4Operand& a,
                               const kernels::Fp4Operand& b);

}  // namespace farthing
