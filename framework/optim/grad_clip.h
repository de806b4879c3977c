// grad_clip.h — global gradient norm, non-finite count and the clip factor.
//
// Each rank sums squares (and counts non-finite values) over its own shards; one reduction
// through the ReduceHook (an all-reduce sum the communicator provides; the identity at world
// size 1) makes them global. The clip factor and the loss-scale unscale are folded into the
// fused step as one gradient scale, so clipping costs no extra pass over the gradients.
// The optimizer only reports non-finite gradients; whether to skip the step or fail is the
// caller's policy. Relies on: nothing but <functional>. Tested by: tests/optim/test_optim_config.cpp (GradClip.*).
#pragma once

#include <cstdint>
#include <functional>
#include <span>

namespace farthing::optim {

// Sums `values` elementwise over all ranks, in place.
using ReduceHook = std::function<void(std::span<double> values)>;

struct GradOptions {
  double max_grad_norm = 0.0;  // 0: no clipping
  double loss_scale = 1.0;     // gradients arrive multiplied by this (fp16 loss scaling)
};

struct GradReport {
  double grad_norm = 0.0;      // global L2 norm of the unscaled gradients (before clipping)
  int64_t nonfinite = 0;       // inf or NaN gradient values, all ranks
  double clip_factor = 1.0;    // min(1, max_norm / (norm + 1e-6)), as torch's clip_grad_norm_
  double grad_scale = 1.0;     // clip_factor / loss_scale: what the step multiplies g by
};

// From the global sum of squares (of the scaled gradients) and non-finite count.
GradReport make_grad_report(double global_sum_squares, int64_t global_nonfinite, const GradOptions& options);

}  // namespace farthing::optim
