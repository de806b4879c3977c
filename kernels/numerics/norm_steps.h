// norm_steps.h — the per-element and per-row scalar steps of RMSNorm and LayerNorm, forward and
// backward, written once for kernels/cpu/nn_cpu.cpp and kernels/cuda/norm_cuda.cu.
//
// The row sums themselves (sum of squares, mean, variance, the backward dot products) are
// reductions: each backend sums in its own order (the CPU in SIMD lanes, the GPU in a fixed
// tree), so norm outputs agree to fp32 rounding of those sums, not bitwise. Everything else —
// how a sum becomes rstd, how rstd scales an element, each gradient term — is one definition
// here, rounded in the order written (no contraction on either side).
// Relies on: host_device.h (IEEE sqrtf and division on both sides: no rsqrt, no fast-math).
// Tested by: tests/kernels/test_nn_ops_parity.cpp, tests/models/test_gradcheck.cpp, tests/models/test_model_goldens.cpp, the model goldens, tests/kernels/test_nn_ops_parity.cpp.
#pragma once

#include <cmath>

#include "kernels/numerics/host_device.h"

namespace farthing::numerics {

// NOTE: as Hugging Face: rsqrt(mean + eps) in fp32 as 1 / sqrt (IEEE, correctly rounded on
// both backends; rsqrtf would be an approximation on the GPU).
FARTHING_HD float norm_rstd_f32(float sum, float c, float eps) { return 1.0f / sqrtf(sum / c + eps); }

// RMSNorm: out = w * (x * rstd).
FARTHING_HD float rmsnorm_out_f32(float x, float s, float w) { return w * (x * s); }
// RMSNorm backward: k = dot * s^3 / c from dot = sum_i w_i dy_i x_i; dx_i = w dy s - x k.
FARTHING_HD float rmsnorm_dx_coeff_f32(float dot, float s, float c) { return dot * s * s * s / c; }
FARTHING_HD float rmsnorm_dx_f32(float w, float g, float x, float s, float k) { return w * g * s - x * k; }
// dw_i += dy_i * (x_i * s)
FARTHING_HD float rmsnorm_dw_term_f32(float g, float x, float s) { return g * (x * s); }

// LayerNorm: squared deviation (variance term), normalized value, output.
FARTHING_HD float layernorm_dev2_f32(float x, float m) { return (x - m) * (x - m); }
FARTHING_HD float layernorm_norm_f32(float x, float m, float s) { return (x - m) * s; }
FARTHING_HD float layernorm_out_f32(float x, float m, float s, float w, float b) { return (x - m) * s * w + b; }
// LayerNorm backward: dx_i = (w dy - mean(w dy) - norm * mean(w dy norm)) * s.
FARTHING_HD float layernorm_dx_f32(float w, float g, float norm, float dn_mean, float dn_norm_mean, float s) {
  return (w * g - dn_mean - norm * dn_norm_mean) * s;
}

}  // namespace farthing::numerics
