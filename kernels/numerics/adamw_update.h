// adamw_update.h — one AdamW element update, written once for every backend.
//
// The scalars of a step (bias corrections, step size, decay factor, gradient scale) are
// computed once on the host in double by make_adamw_scalars() and passed to the kernels as
// float; the element function does only fp32 arithmetic, with every fused multiply-add
// written explicitly (the build forbids contraction), so CPU and GPU agree bit for bit.
// Relies on: host_device.h, <cmath>. Tested by: tests/optim/test_adamw_golden.cpp (against
// torch.optim.AdamW) and the partition-invariance and 8-bit tests in tests/optim/.
#pragma once

#include <cmath>

#include "kernels/numerics/host_device.h"

namespace farthing::numerics {

// Everything the element update needs, already rounded to fp32.
struct AdamWScalars {
  float grad_scale;       // clip factor / loss scale, folded into g
  float decay_factor;     // 1 - lr * weight_decay
  float lerp_weight;      // 1 - beta1: the weight of g in m's lerp
  bool lerp_weight_small; // lerp_weight < 0.5: which form of the lerp (see below)
  float lerp_weight_m1;   // lerp_weight - 1, for the large-weight form
  float beta2;
  float one_minus_beta2;
  float bias_correction2_sqrt;  // sqrt(1 - beta2^t)
  float eps;
  float neg_step_size;    // -lr / (1 - beta1^t)
};

// Host side, double precision, as torch computes these from Python floats; `step` counts
// from 1 (the step being taken).
inline AdamWScalars make_adamw_scalars(double lr, double beta1, double beta2, double eps,
                                       double weight_decay, long long step, double grad_scale) {
  const double t = double(step);
  const double bias_correction1 = 1.0 - std::pow(beta1, t);
  const double bias_correction2 = 1.0 - std::pow(beta2, t);
  AdamWScalars s{};
  s.grad_scale = float(grad_scale);
  s.decay_factor = float(1.0 - lr * weight_decay);
  s.lerp_weight = float(1.0 - beta1);
  s.lerp_weight_small = std::fabs(s.lerp_weight) < 0.5f;
  s.lerp_weight_m1 = s.lerp_weight - 1.0f;
  s.beta2 = float(beta2);
  s.one_minus_beta2 = float(1.0 - beta2);
  s.bias_correction2_sqrt = float(std::sqrt(bias_correction2));
  s.eps = float(eps);
  s.neg_step_size = float(-(lr / bias_correction1));
  return s;
}

// One element: g is the raw gradient (unscaled, unclipped); p, m, v are updated in place.
//
// NOTE: the order of operations is torch.optim.AdamW's single-tensor CPU path
// (foreach=False), operation by operation, as its vectorized ATen kernels compute them
// (checked against torch 2.15 on AVX2 by tools/goldens/gen_adamw_golden.py, which verifies
// this exact formula in numpy before writing the golden):
//   p.mul_(1 - lr*wd)                         p = p * decay
//   exp_avg.lerp_(g, 1 - beta1)               m = fma(w, g - m, m)       (w < 0.5)
//                                             m = fma(w - 1, g - m, g)   (w >= 0.5)
//   exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)
//                                             v = fma((1 - beta2) * g, g, v * beta2)
//   denom = (exp_avg_sq.sqrt() / sqrt(bc2)).add_(eps)
//   p.addcdiv_(exp_avg, denom, value=-lr/bc1) p = p + (-step_size * m) / denom
// The fmas are where ATen's vector kernels use fmadd; they are written as fmaf so that no
// compiler flag can change them. Decay-before-update, the lerp form of m and eps outside the
// sqrt are PyTorch's choices (bitsandbytes decays after the update and folds eps as
// c2*eps; llm.c adds wd*p inside the step); matching PyTorch makes a 32-bit farthing run
// comparable with a PyTorch run step by step.
// One known difference: torch's CPU sqrt on large tensors goes through MKL's vector maths
// (within one ulp, not correctly rounded); here sqrt is IEEE (correctly rounded on CPU and
// GPU), so an element can differ from torch by an ulp of its update, never more.
FARTHING_HD void adamw_update_element(const AdamWScalars& s, float grad, float& p, float& m, float& v) {
  const float g = grad * s.grad_scale;
  p = p * s.decay_factor;
  const float diff = g - m;
  m = s.lerp_weight_small ? fmaf(s.lerp_weight, diff, m) : fmaf(s.lerp_weight_m1, diff, g);
  v = fmaf(s.one_minus_beta2 * g, g, v * s.beta2);
  const float denom = sqrtf(v) / s.bias_correction2_sqrt + s.eps;
  p = p + (s.neg_step_size * m) / denom;
}

}  // namespace farthing::numerics
