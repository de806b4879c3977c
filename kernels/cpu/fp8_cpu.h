// fp8_cpu.h — FP8 quantization and the exact FP8 GEMM emulation on the host.
//
// Quantization is fp8_scaling.h's scalar definitions looped over tiles: per-tile amax (a max of
// ordered bits, so the same whatever the thread count), per-tile scale, then the cast. The GEMM
// emulation dequantizes both operands (q * s_inv) and multiplies them with fp32 accumulation:
// with power-of-two scales the dequantized values are exact in bf16, so the bf16 GEMM computes
// exactly what an FP8 GEMM with fp32 accumulation computes, up to the order of the sums.
// NOTE: exact down to bf16's smallest subnormal (2^-133): in a tile whose amax is below ~2^-115
// (scales near the 2^126 clamp), the smallest codes times s_inv fall below it and round. With
// other scales each dequantized value is q * s_inv rounded once to fp32, and the GEMM runs in
// fp32 — within one fp32 rounding per operand of the device's FP8 GEMM, not exact.
// Relies on: kernels/numerics/fp8_operand.h, matmul_cpu.h. Tested by: tests/kernels/test_fp8_cpu.cpp.
#pragma once

#include <cstdint>

#include "kernels/numerics/fp8_operand.h"
#include "kernels/numerics/op_shapes.h"

namespace farthing::kernels {

void fp8_quantize_cpu(const Fp8QuantizeArgs& args);

// out = q * s_inv for every element: fp32, or bf16 (exact only with power-of-two scales: the
// caller checks power_of_two).
void fp8_dequantize_f32_cpu(const Fp8Operand& x, float* out);
void fp8_dequantize_bf16_cpu(const Fp8Operand& x, uint16_t* out);

// C(m, n) (+)= op(dequant A) · op(dequant B), with shape's transposes as in matmul_cpu; a and b
// are the operands as stored (a: m x k, or k x m when trans_a). workspace: numerics::
// fp8_matmul_workspace_bytes(Fp8GemmEngine::kEmulated, ...) bytes (kernels/numerics/fp8_workspace.h).
void fp8_matmul_cpu(const GemmShape& shape, const Fp8Operand& a, const Fp8Operand& b, float* c, bool accumulate,
                    void* workspace);

}  // namespace farthing::kernels
