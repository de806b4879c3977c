// fp4_cpu.h — FP4 quantization (NVFP4, MXFP4) and the exact FP4 GEMM emulation on the host.
//
// Quantization is fp4_scales.h's scalar rules and hadamard.h's transform looped over an operand
// (fp4_operand.h says what is written). The GEMM dequantizes each operand *without* its tensor
// scale — e2m1 · block scale, at most 2 x 4 significant bits, exact in bf16 — multiplies them with
// the bf16 GEMM (fp32 accumulation; the products of such values are exact in fp32), and scales the
// result by s_dec(A) · s_dec(B), as a block-scaled FP4 tensor-core GEMM does (the per-tensor
// scales go into its alpha). So it computes what the hardware computes, up to the order of the
// fp32 sums.
// NOTE: exact down to bf16's smallest subnormal (2^-133); an MXFP4 block whose scale is near
// 2^-127 (amax below ~2^-124) can fall under it. Not a speed path: it exists so the FP4 recipes
// train, are tested and can be studied on any machine.
// Relies on: kernels/numerics/fp4_block.h, hadamard.h, fp4_operand.h, matmul_cpu.h.
// Tested by: tests/kernels/test_fp4_cpu.cpp.
#pragma once

#include <cstdint>

#include "kernels/numerics/fp4_operand.h"
#include "kernels/numerics/op_shapes.h"

namespace farthing::kernels {

void fp4_quantize_cpu(const Fp4QuantizeArgs& args);

// Every element of the operand as fp32, its tensor scale included: e2m1 · scale · s_dec.
void fp4_dequantize_f32_cpu(const Fp4Operand& x, float* out);

// C(m, n) (+)= A(m, k) · B(n, k)^T of two FP4 operands (both stored with k, the reduced
// dimension, as columns). workspace: fp4_matmul_workspace_bytes(m, n, k) bytes.
void fp4_matmul_cpu(int64_t m, int64_t n, int64_t k, const Fp4Operand& a, const Fp4Operand& b, float* c,
                    bool accumulate, void* workspace);
int64_t fp4_matmul_workspace_bytes(int64_t m, int64_t n, int64_t k);

}  // namespace farthing::kernels
