// grad_clip_rule.h — the gradient norm, clip factor and the step's gradient scale from the
// gradients' global sum of squares: one definition for the host (optim::make_grad_report) and for
// the optimizer kernels that read the sums in the device's memory (AdamWSegment::clip_sums), so
// that clipping decided on the device gives the host's bits.
// Relies on: host_device.h. Tested by: tests/optim/test_optim_config.cpp (GradClip.*), and through
// the trainer by tests/train/loop/test_step_host_waits.cpp (clipped on the device = on the host).
#pragma once

#include <cmath>

#include "kernels/numerics/host_device.h"

namespace farthing::numerics {

struct GradClip {
  double grad_norm;    // of the unscaled gradients
  double clip_factor;  // min(1, max_norm / (norm + 1e-6)); 1 without clipping or for a non-finite norm
  double grad_scale;   // clip_factor / loss_scale: what the step multiplies g by
};

// sum_squares: of the gradients as they are (carrying loss_scale); max_grad_norm 0: no clipping.
// NOTE: torch.nn.utils.clip_grad_norm_'s rule, eps included, so clipped runs compare.
FARTHING_HD GradClip grad_clip_of(double sum_squares, double max_grad_norm, double loss_scale) {
  GradClip c;
  c.grad_norm = sqrt(sum_squares) / loss_scale;
  c.clip_factor = 1.0;
  const bool finite = c.grad_norm - c.grad_norm == 0.0;  // false for inf and NaN (no fast-math)
  if (max_grad_norm > 0.0 && finite) {
    const double factor = max_grad_norm / (c.grad_norm + 1e-6);
    c.clip_factor = factor < 1.0 ? factor : 1.0;
  }
  c.grad_scale = c.clip_factor / loss_scale;
  return c;
}

}  // namespace farthing::numerics
