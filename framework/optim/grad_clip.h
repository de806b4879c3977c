// grad_clip.h — global gradient norm, non-finite count and the clip factor.
//
// Each rank sums squares (and counts non-finite values) over its own shards; one reduction
// through the ReduceHook (an all-reduce sum the communicator provides; the identity at world
// size 1) makes them global. The clip factor and the loss-scale unscale are folded into the
// fused step as one gradient scale, so clipping costs no extra pass over the gradients.
// The optimizer only reports non-finite gradients; whether to skip the step or fail is the
// caller's policy. GradHistogram: an optional diagnostic (gradient magnitudes by power of two),
// which the trainer fills only when asked (Trainer::set_grad_histogram).
// Relies on: nothing but the standard library. Tested by: tests/optim/test_optim_config.cpp (GradClip.*),
// tests/train/loop/test_bench_precision.sh (GradHistogram, through `farthing bench precision`).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

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

// How many gradient values lie in each power-of-two band of magnitude, the loss scale divided
// out: counts[i] holds 2^(kMinLog2 + i) <= |g| / loss_scale < 2^(kMinLog2 + i + 1), the first
// and last bands also everything below and above. Zeros and inf/NaN are counted apart.
struct GradHistogram {
  static constexpr int kMinLog2 = -48, kMaxLog2 = 8;
  double loss_scale = 1.0;  // what the gradients carried (divided out before bucketing)
  int64_t zeros = 0, nonfinite = 0;
  std::vector<int64_t> counts = std::vector<int64_t>(size_t(kMaxLog2 - kMinLog2 + 1), 0);
};
// Adds n values to h: f32, or bf16 bit patterns.
void add_grad_magnitudes(GradHistogram& h, const float* g, int64_t n);
void add_grad_magnitudes_bf16(GradHistogram& h, const uint16_t* g, int64_t n);

// Throws, naming the option, unless loss_scale is finite and > 0 and max_grad_norm >= 0.
void check_grad_options(const GradOptions& options);

// From the global sum of squares (of the scaled gradients) and non-finite count.
GradReport make_grad_report(double global_sum_squares, int64_t global_nonfinite, const GradOptions& options);

}  // namespace farthing::optim
