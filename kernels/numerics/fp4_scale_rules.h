// fp4_scale_rules.h — which of fp4_scales.h's rules a quantized operand's scale format uses, one
// call per scalar step, shared by every backend's FP4 kernels (kernels/cpu/fp4_cpu.cpp,
// kernels/cuda/fp4_cuda.cu) so the CPU and the GPU make each step with the same function:
//   the tensor's encode and decode scales (NVFP4's fp32 pair; 1 for MXFP4's E8M0 alone),
//   a block's scale code from its amax, the multiplier its elements are encoded with,
//   a block scale's value without the tensor scale, and the GEMM's output step.
// Relies on: fp4_scales.h, fp4_operand.h. Tested by: tests/kernels/test_fp4_cpu.cpp and the
// fp4 rows of tests/kernels/test_nn_ops_parity.cpp (CPU against CUDA, bit for bit).
#pragma once

#include <cstdint>

#include "kernels/numerics/fp4_operand.h"
#include "kernels/numerics/fp4_scales.h"
#include "kernels/numerics/host_device.h"
#include "kernels/numerics/minifloat.h"

namespace farthing::kernels {

// s_enc from the amax of the whole (transformed) operand; E8M0 has no tensor scale.
FARTHING_HD float fp4_tensor_encode_scale(Fp4Scale scale, float tensor_amax) {
  return scale == Fp4Scale::kE4M3 ? numerics::nvfp4_global_encode_scale(tensor_amax) : 1.0f;
}

// Tseng et al.'s 3/4 pre-scale ("Training LLMs with MXFP4", arXiv 2502.20586, §3): MX v1.0's
// floor rule puts a block's largest |x| / X in [4, 8), so elements above 6 clip, and a clipped
// element's stochastic rounding is biased (always down to 6). Encoding with 3/4 of the
// multiplier maps [4, 8) to [3, 6): nothing clips, every element's SR is unbiased, and the
// operand's decode scale 4/3 (the GEMM's output is scaled by 16/9 for two such operands) undoes
// it. The block scale still comes from the unscaled amax. 3/4 times a power of two is exact, so
// the product x * (3/4 · 2^-e) is the one rounding, as x * 2^-e was none.
inline constexpr float kFp4SrPrescale = 0.75f;
inline constexpr float kFp4SrPrescaleDecode = 4.0f / 3.0f;  // fp32(4/3), rounded once to nearest

// s_dec, what the GEMM's output (or a dequantized value) is finally multiplied by.
FARTHING_HD float fp4_tensor_decode_scale(Fp4Scale scale, float encode_scale, bool sr_prescale) {
  const float unscaled = scale == Fp4Scale::kE4M3 ? numerics::nvfp4_global_decode_scale(encode_scale) : 1.0f;
  return sr_prescale ? kFp4SrPrescaleDecode : unscaled;  // E8M0 only (fp4_op_checks.cpp)
}

// The scale code of a block (or 2D tile) of this amax.
FARTHING_HD uint8_t fp4_block_scale_code(Fp4Scale scale, float block_amax, float encode_scale) {
  return scale == Fp4Scale::kE8M0 ? numerics::mxfp4_scale_from_amax(block_amax)
                                  : numerics::nvfp4_block_scale(block_amax, encode_scale);
}

// The multiplier a block's elements are encoded with. decode_scale: the tensor's s_dec (E4M3).
FARTHING_HD float fp4_element_multiplier(Fp4Scale scale, uint8_t code, float decode_scale, bool sr_prescale) {
  const float multiplier = scale == Fp4Scale::kE8M0 ? numerics::mxfp4_encode_multiplier(code)
                                                    : numerics::nvfp4_encode_multiplier(code, decode_scale);
  return sr_prescale ? multiplier * kFp4SrPrescale : multiplier;
}

// The block scale's value without the tensor scale: exact.
FARTHING_HD float fp4_block_scale_value(Fp4Scale scale, uint8_t code) {
  return scale == Fp4Scale::kE8M0 ? numerics::e8m0_to_f32(code) : numerics::e4m3_to_f32(code);
}

// An element as the GEMM reads it, e2m1 · block scale (at most 2 x 4 significant bits: exact in
// bf16 down to its smallest subnormal), NaN canonical.
FARTHING_HD float fp4_element_unscaled(Fp4Scale scale, uint8_t code, uint8_t scale_code) {
  return numerics::canonical_nan(numerics::e2m1_to_f32(code) * fp4_block_scale_value(scale, scale_code));
}

// The GEMM's output: the product of the unscaled operands times alpha = s_dec(A) · s_dec(B), as a
// block-scaled FP4 tensor-core GEMM applies the per-tensor scales; one rounding for alpha, one for
// the product, one for the sum.
FARTHING_HD float fp4_gemm_alpha(float a_decode_scale, float b_decode_scale) { return a_decode_scale * b_decode_scale; }
FARTHING_HD float fp4_gemm_output(float c, float alpha, float product, bool accumulate) {
  return accumulate ? c + alpha * product : alpha * product;
}

}  // namespace farthing::kernels
