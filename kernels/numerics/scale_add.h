// scale_add.h — out = x * s + a for one element: the embedding's scale (Gemma 3 multiplies the
// looked-up rows by sqrt(hidden)) and the residual add after a post-norm (Gemma 3's sandwich
// norms: mid = x + norm(attention), s = 1).
//
// Written once for kernels/cpu/nn_cpu.cpp and kernels/cuda/scale_add_cuda.cu. Two fp32
// operations in this order, never contracted into a fused multiply-add (-ffp-contract=off,
// -fmad=false): s = 1 makes the product exact, so the residual add rounds once, as torch's
// `residual + hidden_states` does; with a = 0 the product rounds once, as torch's
// `embedding * scale` does.
// Relies on: host_device.h. Tested by: tests/kernels/test_nn_ops_parity.cpp (CPU vs CUDA, bitwise),
// tests/models/test_model_goldens.cpp (gemma3_tiny).
#pragma once

#include "kernels/numerics/host_device.h"

namespace farthing::numerics {

FARTHING_HD float scale_add_f32(float x, float s, float a) {
  const float scaled = x * s;
  return scaled + a;
}

}  // namespace farthing::numerics
