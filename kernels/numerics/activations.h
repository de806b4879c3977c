// activations.h — the scalar GELU (tanh form), SiLU, SwiGLU and GeGLU maths, forward and derivative.
//
// Written once for kernels/cpu/nn_cpu.cpp and the CUDA kernels (kernels/cuda/activation_cuda.cu),
// so both round the same operations in the same order: with contraction off on both sides
// (-ffp-contract=off, -fmad=false) and exp_f32 instead of a library exp, the results are the
// same bits on any backend. Every line is a plain fp32 operation in the order written.
// Relies on: exp_f32.h, host_device.h. Tested by: tests/kernels/test_nn_ops_parity.cpp, tests/models/test_gradcheck.cpp, tests/models/test_model_goldens.cpp, the model goldens
// (CPU) and tests/kernels/test_nn_ops_parity.cpp (CPU vs CUDA, bitwise).
#pragma once

#include "kernels/numerics/exp_f32.h"
#include "kernels/numerics/host_device.h"

namespace farthing::numerics {

inline constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)
inline constexpr float kGeluCubic = 0.044715f;

// GPT-2's gelu_new, 0.5 v (1 + tanh(u)) with u = sqrt(2/pi) (v + 0.044715 v^3), computed as
// v * sigmoid(2u): the same function (0.5 (1 + tanh(u)) = 1 / (1 + e^(-2u))), which needs only
// exp and so vectorizes; it is also well conditioned where tanh(u) -> -1.
FARTHING_HD float gelu_tanh_f32(float v) {
  const float u = kGeluScale * (v + kGeluCubic * v * v * v);
  return v / (1.0f + exp_f32(-2.0f * u));
}

// d/dv [v s(2u)] = s + v s (1 - s) 2 u'(v), u'(v) = sqrt(2/pi) (1 + 3 * 0.044715 v^2).
FARTHING_HD float gelu_tanh_grad_f32(float v) {
  const float u = kGeluScale * (v + kGeluCubic * v * v * v);
  const float s = 1.0f / (1.0f + exp_f32(-2.0f * u));
  const float du = kGeluScale * (1.0f + 3.0f * kGeluCubic * v * v);
  return s + v * s * (1.0f - s) * 2.0f * du;
}

// silu(g) * u, SwiGLU's forward for one channel.
FARTHING_HD float swiglu_f32(float g, float u) { return g / (1.0f + exp_f32(-g)) * u; }

// SwiGLU's backward for one channel: dg and du from da = dL/d(silu(g) u).
FARTHING_HD void swiglu_grad_f32(float da, float g, float u, float& dg, float& du) {
  const float sig = 1.0f / (1.0f + exp_f32(-g));
  const float silu = g * sig;
  du = da * silu;
  dg = da * u * (sig * (1.0f + g * (1.0f - sig)));
}

// gelu_tanh(g) * u, GeGLU's forward for one channel (Gemma 3's MLP, hidden_activation
// gelu_pytorch_tanh): the same GELU as GPT-2's.
FARTHING_HD float geglu_f32(float g, float u) { return gelu_tanh_f32(g) * u; }

// GeGLU's backward for one channel: dg and du from da = dL/d(gelu_tanh(g) u).
FARTHING_HD void geglu_grad_f32(float da, float g, float u, float& dg, float& du) {
  du = da * gelu_tanh_f32(g);
  dg = da * u * gelu_tanh_grad_f32(g);
}

}  // namespace farthing::numerics
