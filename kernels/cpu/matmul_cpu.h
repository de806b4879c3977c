// matmul_cpu.h — C (+)= op(A) · op(B) on the host through oneDNN, with primitives cached by
// shape, strides and dtype so that a training step never rebuilds one.
//
// C is cut into tiles whose shapes depend on (m, n, k) only (gemm_tiling.h); each tile's whole
// K reduction runs in one thread, so C's bits do not depend on the thread count (or, through it,
// on the world size). They may differ between ISAs (oneDNN's AVX2, AVX-512 and AMX kernels).
//
// A and B are row-major with leading dimensions lda/ldb (in elements); op(X) = X or X^T.
// C is fp32 (fp32 accumulation), or bf16 rounded once from the fp32 tile (matmul_bf16_out_cpu).
// In bf16 (fp16) mode A and B hold bf16 (fp16) bit patterns; where the processor has no native
// GEMM for that type (oneDNN would refuse or fall back to its reference kernel) the operands
// are widened to fp32 exactly and multiplied by the fp32 GEMM: a bf16 x bf16 (fp16 x fp16)
// product is exact in fp32, so the result is still "narrow inputs, fp32 accumulation".
// Relies on: oneDNN (DNNL::dnnl), OpenMP. Tested by: tests/kernels/test_matmul_cpu.cpp.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/numerics/op_shapes.h"

namespace farthing::kernels {

// C(m, n) = op(A)(m, k) · op(B)(k, n), or C += ... when accumulate is true.
void matmul_cpu(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, float* c,
                bool accumulate);

// C(m, n) += op(A) · op(B), the product formed whole first and then added to C once: each element
// becomes C + (its whole K-sum), one rounding of C's old value. matmul_cpu's accumulate instead
// hands C to oneDNN's sum post-op, which adds C in before the last K-block (above 64 to 256
// rows of K, by ISA), so a running sum over calls would depend on where K is cut. Each tile is
// computed as matmul_cpu computes it without accumulate, into the thread's staging rows (C's
// row stride), then added: onto a zero C, bit for bit matmul_cpu with accumulate.
// The gradients kept in place across micro-batches use it (docs/parameter_store.md).
void matmul_add_product_cpu(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, float* c);

// C(m, n) = bf16(op(A) · op(B) + bf16(bias)), bias (n, fp32) or null: a bf16 GEMM output (the
// MLP's in-projection under bf16 activations). Each tile is computed in fp32 as above (the same
// primitive, C's row stride) into the thread's staging rows, the bias rounded to bf16
// (numerics/gemm_bias.h) is added in fp32 and the sum is rounded to nearest even once as it is
// stored: bit for bit matmul_cpu into fp32, bias_add_cpu of the rounded bias, then narrowing,
// without an fp32 C. With `add` (bf16, C's layout; may be C itself) the staging rows start as its
// widened values and the primitive accumulates onto them, as matmul_cpu does onto an fp32 C
// holding them: bit for bit a widening copy, matmul_cpu with accumulate, bias_add_cpu of the
// rounded bias, then narrowing (the residual stream under bf16 activations).
// Each thread keeps its staging rows (tile rows x ldc floats) between calls, as it keeps the
// widening copies.
void matmul_bf16_out_cpu(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, const float* bias,
                         const uint16_t* add, uint16_t* c);

// True when oneDNN runs GEMMs of this dtype natively here (bf16: AVX-512-BF16 or AMX), false
// when the widening fallback is used. Always true for kF32.
bool gemm_is_native_cpu(GemmDtype dtype);
inline bool bf16_gemm_is_native_cpu() { return gemm_is_native_cpu(GemmDtype::kBF16); }

// oneDNN's implementation name for a GEMM of this dtype and shape (for benchmark output).
std::string matmul_impl_name_cpu(GemmDtype dtype, const GemmShape& shape);

// The ISA oneDNN dispatches to in this process, spelled as ONEDNN_MAX_CPU_ISA spells it ("AVX2",
// "AVX512_CORE", "AVX512_CORE_BF16", ...): the processor's own, or the cap where one is set below
// it (tests/support/with_onednn_isa_cap.sh).
std::string onednn_cpu_isa_cpu();

// Number of distinct primitives built so far (tests check that repeated calls reuse them).
int64_t matmul_primitive_count_cpu();

}  // namespace farthing::kernels
