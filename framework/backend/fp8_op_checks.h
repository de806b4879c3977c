// fp8_op_checks.h — the argument checks of NnOps' FP8 ops, shared by every backend so each
// refuses the same calls with the same message.
// Relies on: kernels/numerics/fp8_operand.h, op_shapes.h. Tested by: tests/kernels/test_fp8_cpu.cpp.
#pragma once

#include "kernels/numerics/fp8_operand.h"
#include "kernels/numerics/op_shapes.h"

namespace farthing {

void check_fp8_quantize_args(const kernels::Fp8QuantizeArgs& args);
void check_fp8_matmul_operands(const kernels::GemmShape& shape, const kernels::Fp8Operand& a,
                               const kernels::Fp8Operand& b);

}  // namespace farthing
