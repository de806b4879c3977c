// gemm_bias.h — the bias a GEMM adds to its output, where the output is stored as bf16.
//
// A linear layer's bias joins the fp32 accumulation (after the residual C, where there is one)
// before the output's one rounding. For an fp32 output the bias is the fp32 parameter. For a bf16
// output the bias operand is the parameter rounded to nearest-even bf16, widened exactly, then
// added in fp32: cuBLASLt's bias epilogue takes a bias of D's type (CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE
// with compute 32F), and PyTorch's autocast rounds a bf16 linear's bias the same way. Every
// backend's bf16-output GEMM adds this value, so CPU and CUDA differ only by the GEMM's own
// summation order (docs/numerics.md §10).
// Relies on: bf16.h. Tested by: tests/kernels/test_matmul_cpu.cpp (the contract, bit for bit),
// tests/kernels/test_nn_ops_parity.cpp (matmul_bf16out_*_bias rows).
#pragma once

#include "kernels/numerics/bf16.h"

namespace farthing::numerics {

// The bits of the bias operand of a bf16-output GEMM (what cuBLASLt's epilogue reads).
FARTHING_HD uint16_t bf16_output_bias_bits(float bias) { return f32_to_bf16_rne(bias); }

// The value that bias adds to the fp32 accumulation.
FARTHING_HD float bf16_output_bias(float bias) { return bf16_to_f32(bf16_output_bias_bits(bias)); }

}  // namespace farthing::numerics
