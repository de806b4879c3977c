// matmul_cpu.h — C (+)= op(A) · op(B) on the host through oneDNN, with primitives cached by
// shape, strides and dtype so that a training step never rebuilds one.
//
// C is cut into tiles whose shapes depend on (m, n, k) only (gemm_tiling.h); each tile's whole
// K reduction runs in one thread, so C's bits do not depend on the thread count (or, through it,
// on the world size). They may differ between ISAs (oneDNN's AVX2, AVX-512 and AMX kernels).
//
// A and B are row-major with leading dimensions lda/ldb (in elements); op(X) = X or X^T.
// C is always fp32 (fp32 accumulation). In bf16 (fp16) mode A and B hold bf16 (fp16) bit
// patterns; where the processor has no native GEMM for that type (oneDNN would refuse or
// fall back to its reference kernel) the operands are widened to fp32 exactly and multiplied
// by the fp32 GEMM: a bf16 x bf16 (fp16 x fp16) product is exact in fp32, so the result is
// still "narrow inputs, fp32 accumulation".
// Relies on: oneDNN (DNNL::dnnl), OpenMP. Tested by: tests/kernels/test_matmul_cpu.cpp.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/numerics/op_shapes.h"

namespace farthing::kernels {

// C(m, n) = op(A)(m, k) · op(B)(k, n), or C += ... when accumulate is true.
void matmul_cpu(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, float* c,
                bool accumulate);

// True when oneDNN runs GEMMs of this dtype natively here (bf16: AVX-512-BF16 or AMX), false
// when the widening fallback is used. Always true for kF32.
bool gemm_is_native_cpu(GemmDtype dtype);
inline bool bf16_gemm_is_native_cpu() { return gemm_is_native_cpu(GemmDtype::kBF16); }

// oneDNN's implementation name for a GEMM of this dtype and shape (for benchmark output).
std::string matmul_impl_name_cpu(GemmDtype dtype, const GemmShape& shape);

// Number of distinct primitives built so far (tests check that repeated calls reuse them).
int64_t matmul_primitive_count_cpu();

}  // namespace farthing::kernels
