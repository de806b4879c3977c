// attention_steps.h — the scalar steps of softmax attention, written once for
// kernels/cpu/attention_cpu.cpp and kernels/cuda/attention_cuda.cu.
//
// The dot products and the softmax sums are reductions that each backend orders its own way
// (the CPU through oneDNN GEMMs, the GPU in fixed per-thread orders), so attention agrees to
// fp32 rounding, not bitwise; what turns a score into a probability and a probability into a
// score gradient is defined here, once.
// Relies on: exp_f32.h, host_device.h. Tested by: the model goldens (CPU) and
// tests/kernels/test_nn_ops_parity.cpp (CPU vs CUDA).
#pragma once

#include <cmath>

#include "kernels/numerics/exp_f32.h"
#include "kernels/numerics/host_device.h"

namespace farthing::numerics {

// 1 / sqrt(head_dim) (or of the score scalar that stands in for it: AttentionShape::scale), IEEE
// on both sides (never rsqrtf).
FARTHING_HD float attention_scale_f32(int64_t head_dim) { return 1.0f / sqrtf(float(head_dim)); }

// The first key query position i sees under a sliding window of `window` keys (0: no window, key
// 0): i - window + 1, or 0 near the start. Every kernel masks keys below it.
FARTHING_HD int64_t attention_first_key(int64_t query, int64_t window) {
  return window > 0 && query >= window ? query - window + 1 : 0;
}

// Forward / decode: p = e^(score - row max), score already scaled.
FARTHING_HD float softmax_numerator_f32(float score, float row_max) { return exp_f32(score - row_max); }

// Backward: p recomputed from the unscaled dot q.k and the row's log-sum-exp.
FARTHING_HD float attention_prob_from_lse_f32(float dot, float scale, float lse) { return exp_f32(dot * scale - lse); }

// Backward: dS = p (dP - D) * scale, D = dO . O of the query row.
FARTHING_HD float attention_ds_f32(float p, float dp, float d, float scale) { return p * (dp - d) * scale; }

}  // namespace farthing::numerics
